// How long a change window stays open after each occurrence: "64h", "90m", "1h30m", "2d16h".
// Hours, minutes and seconds are exact time; days (d) are calendar days of the window's time
// zone, as RFC 5545 reads a duration's days and hours: "2d16h" from a Friday 16:00 ends on
// Monday 08:00 local, also across a DST change, where "64h" ends at 07:00 or 09:00.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace lockstep::changewindows {

inline constexpr int64_t kMinWindowSeconds = 60;             // 1m
inline constexpr int64_t kMaxWindowSeconds = 366 * 86400LL;  // 366d

struct WindowDuration {
  int64_t days = 0;     // calendar days
  int64_t seconds = 0;  // exact seconds

  // The longest it can last: each calendar day counts 25 hours (a fall-back day).
  int64_t maxSeconds() const { return days * 25 * 3600 + seconds; }
};

// Integers with units d, h, m, s, each at most once and in that order ("2d16h", "1h30m");
// InvalidArgument saying why, without the field path. Between 1m and 366d (a day counted as
// 24 hours).
StatusOr<WindowDuration> parseWindowDuration(std::string_view text);

}  // namespace lockstep::changewindows
