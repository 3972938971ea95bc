// An RFC 5545 recurrence rule (RRULE), parsed and expanded in local wall-clock time. The one
// adapter of libical (Debian libical-dev): ical_recurrence.cc. No hand-written RRULE code:
// libical parses the rule and generates its occurrences; this class only chooses DTSTART
// and where the iteration begins.
//
// DTSTART is kRecurrenceAnchor, 1970-01-01T00:00:00 in the window's time zone, for every
// rule: what a rule leaves out takes the anchor's value (BYHOUR=16 alone is 16:00:00; a
// WEEKLY rule without BYDAY falls on Thursdays, the anchor's weekday; INTERVAL counts
// periods from the anchor's). COUNT is refused (it would count from 1970), and so are
// SECONDLY, MINUTELY and more than one BYMINUTE or BYSECOND value (a window starts at most
// once an hour of wall clock), and RSCALE.
// Thread-safety: an immutable value, safe to share; expansion allocates its own iterator.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "changewindows/civil_time.h"
#include "common/status.h"

namespace lockstep::changewindows {

inline constexpr CivilSecond kRecurrenceAnchor{1970, 1, 1, 0, 0, 0};

class Recurrence {
 public:
  // `rule` is the RRULE value ("FREQ=WEEKLY;BYDAY=FR;BYHOUR=16"); a leading "RRULE:" is
  // accepted. InvalidArgument saying what is wrong, without the field path (the caller
  // adds it).
  static StatusOr<Recurrence> parse(std::string_view rule);

  // The occurrence starts in [from, to] (local time), ascending, at most `limit` of them;
  // *truncated says whether the limit cut the list short. A rule's UNTIL in local time (or
  // a date, read as the end of that day) is applied here; an UNTIL in UTC is not (the
  // caller compares instants with untilUtc()).
  std::vector<CivilSecond> starts(const CivilSecond& from, const CivilSecond& to, size_t limit,
                                  bool* truncated) const;

  // UNTIL when the rule gives it in UTC ("UNTIL=20261231T230000Z"), in seconds since the
  // epoch: no occurrence starting after it counts.
  std::optional<int64_t> untilUtc() const { return untilUtc_; }

  const std::string& text() const { return text_; }

 private:
  struct Impl;
  std::string text_;
  std::optional<int64_t> untilUtc_;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace lockstep::changewindows
