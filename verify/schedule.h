// The schedule of scheduled runtime verification (RuntimeEnv spec.verify.schedule):
// a cron expression, five fields (minute hour day-of-month month day-of-week) or a
// macro (@hourly, @daily/@midnight, @weekly, @monthly, @yearly/@annually), evaluated in
// UTC. Fields take `*`, numbers, ranges `a-b`, lists `a,b` and steps `*/n`, `a-b/n`,
// `a/n`; months and weekdays also take three-letter names (jan, mon); weekday 7 is
// Sunday. As in Vixie cron, when both day fields are restricted a day matching either
// one matches. No clock: times are inputs (Unix seconds). Thread-safety: pure functions.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::verify {

struct Schedule {
  std::string text;
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> daysOfMonth;  // 1..31
  std::bitset<13> months;       // 1..12
  std::bitset<7> daysOfWeek;    // 0 = Sunday
  bool anyDayOfMonth = true;    // the field was `*`
  bool anyDayOfWeek = true;
};

// kInvalidArgument naming the field and what is wrong with it:
//   schedule "0 25 * * *": field 2 (hour): 25 is out of range 0-23
StatusOr<Schedule> parseSchedule(std::string_view text);

// The first whole minute strictly after `afterUnix` the schedule matches; nullopt when
// none comes within eight years (e.g. "0 0 30 2 *", February 30th).
std::optional<int64_t> nextRun(const Schedule& schedule, int64_t afterUnix);

}  // namespace lockstep::verify
