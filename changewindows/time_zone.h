// An IANA time zone (tzdata, read from the system's zoneinfo files), and the calendar
// arithmetic of civil times. The one adapter of cctz (Google's civil-time and time-zone
// library, the core of Abseil's time): cctz_time_zone.cc.
// Instants are seconds since the Unix epoch, as the planners' clocks give them.
// Thread-safety: a TimeZone is an immutable value, safe to share; cctz caches loaded zones
// behind its own lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "changewindows/civil_time.h"
#include "common/status.h"

namespace lockstep::changewindows {

class TimeZone {
 public:
  // The zone `name` ("Europe/Berlin", "America/New_York", "UTC"). Only a name of the tz
  // database's form is looked up (letters, digits, '_', '+', '-', '/'-separated parts, no
  // "..", not "localtime"): the name comes from a tenant's object and is a file name below
  // the zoneinfo directory. InvalidArgument when it is no such zone.
  static StatusOr<TimeZone> load(const std::string& name);

  const std::string& name() const { return name_; }

  // The instant of the local time `local`, as RFC 5545 section 3.3.5 reads a local time: a
  // time skipped by a transition (02:30 on a spring-forward day) is taken with the offset
  // before the gap (so it is 03:30 of the new offset); a time that occurs twice (02:30 on a
  // fall-back day) is its first occurrence.
  int64_t toInstant(const CivilSecond& local) const;
  CivilSecond toCivil(int64_t instant) const;
  // RFC 3339 with this zone's offset: "2026-12-04T16:00:00+01:00".
  std::string format(int64_t instant) const;

 private:
  struct Impl;
  TimeZone(std::string name, std::shared_ptr<const Impl> impl)
      : name_(std::move(name)), impl_(std::move(impl)) {}
  std::string name_;
  std::shared_ptr<const Impl> impl_;
};

// `c` moved by `days` calendar days (the wall-clock time kept), and by `seconds` of wall
// clock, normalised ("2026-01-31T23:00:00" + 0 days + 3600 s is "2026-02-01T00:00:00").
CivilSecond addCivil(const CivilSecond& c, int64_t days, int64_t seconds = 0);
// Civil seconds from `a` to `b` (wall-clock difference, no zone).
int64_t civilDifference(const CivilSecond& b, const CivilSecond& a);

}  // namespace lockstep::changewindows
