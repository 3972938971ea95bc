// A local wall-clock time (a civil time: no zone, no offset), the unit in which an RFC 5545
// recurrence rule is expanded; changewindows/time_zone.h maps it to and from instants.
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

namespace lockstep::changewindows {

struct CivilSecond {
  int64_t year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0;
  int minute = 0;
  int second = 0;

  auto tuple() const { return std::tie(year, month, day, hour, minute, second); }
  bool operator==(const CivilSecond& o) const { return tuple() == o.tuple(); }
  bool operator<(const CivilSecond& o) const { return tuple() < o.tuple(); }
  bool operator<=(const CivilSecond& o) const { return !(o < *this); }
};

// "2026-12-04T16:00:00"
std::string formatCivil(const CivilSecond& c);

}  // namespace lockstep::changewindows
