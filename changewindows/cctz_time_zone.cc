// The one file that calls cctz (Debian libcctz-dev). cctz reads tzdata's compiled zoneinfo
// files (the tzdata package; TZDIR moves them) and does not throw.
#include <cctz/civil_time.h>
#include <cctz/time_zone.h>

#include <chrono>

#include "changewindows/time_zone.h"

namespace lockstep::changewindows {

struct TimeZone::Impl {
  cctz::time_zone zone;
};

namespace {

using Seconds = std::chrono::time_point<std::chrono::system_clock, cctz::seconds>;

cctz::civil_second toCctz(const CivilSecond& c) {
  return cctz::civil_second(c.year, c.month, c.day, c.hour, c.minute, c.second);
}

CivilSecond fromCctz(const cctz::civil_second& c) {
  return {static_cast<int64_t>(c.year()), c.month(), c.day(), c.hour(), c.minute(), c.second()};
}

// A name of the tz database's form: non-empty parts of [A-Za-z0-9_+-] joined by '/'. cctz
// opens <zoneinfo dir>/<name>, so anything else (a "..", an absolute path) could name
// another file.
bool tzdbName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "localtime") return false;
  if (name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos) {
    return false;
  }
  for (char ch : name) {
    const bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '+' || ch == '-' || ch == '/';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

StatusOr<TimeZone> TimeZone::load(const std::string& name) {
  if (!tzdbName(name)) {
    return invalidArgument("\"" + name + "\" is not a time zone name of the tz database (" +
                           "\"Europe/Berlin\", \"UTC\")");
  }
  cctz::time_zone zone;
  // "UTC" is built into cctz; every other name must be a zoneinfo file.
  if (!cctz::load_time_zone(name, &zone)) {
    return invalidArgument("unknown time zone \"" + name +
                           "\" (not in the tz database; is tzdata installed?)");
  }
  return TimeZone(name, std::make_shared<const Impl>(Impl{zone}));
}

int64_t TimeZone::toInstant(const CivilSecond& local) const {
  // `pre` is RFC 5545's reading: for a skipped time, the offset before the transition; for
  // a repeated time, its first occurrence (also the pre-transition offset).
  const cctz::time_zone::civil_lookup lookup = impl_->zone.lookup(toCctz(local));
  return lookup.pre.time_since_epoch().count();
}

CivilSecond TimeZone::toCivil(int64_t instant) const {
  return fromCctz(cctz::convert(Seconds(cctz::seconds(instant)), impl_->zone));
}

std::string TimeZone::format(int64_t instant) const {
  return cctz::format("%Y-%m-%dT%H:%M:%S%Ez", Seconds(cctz::seconds(instant)), impl_->zone);
}

CivilSecond addCivil(const CivilSecond& c, int64_t days, int64_t seconds) {
  // civil_day arithmetic keeps the calendar; civil_second arithmetic normalises the clock.
  const cctz::civil_second base = toCctz(c);
  const cctz::civil_day day = cctz::civil_day(base) + days;
  const cctz::civil_second moved(day.year(), day.month(), day.day(), base.hour(), base.minute(),
                                 base.second());
  return fromCctz(moved + seconds);
}

int64_t civilDifference(const CivilSecond& b, const CivilSecond& a) {
  return toCctz(b) - toCctz(a);
}

}  // namespace lockstep::changewindows
