// Instants for the change-window tests, written as the UTC time they are.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "changewindows/time_zone.h"

namespace lockstep::changewindows::testing {

// "2026-03-29T01:00:00": a civil time; utc(): that time in UTC as seconds since the epoch.
inline CivilSecond civil(const std::string& text) {
  CivilSecond c;
  long long year = 0;
  std::sscanf(text.c_str(), "%lld-%d-%dT%d:%d:%d", &year, &c.month, &c.day, &c.hour, &c.minute,
              &c.second);
  c.year = year;
  return c;
}

inline int64_t utc(const std::string& text) {
  return TimeZone::load("UTC").value().toInstant(civil(text));
}

}  // namespace lockstep::changewindows::testing
