// The one file that calls libical. libical 3.0 reports errors through the return value
// (ICAL_NO_RECURRENCE, a null iterator) and icalerrno; it never throws. Its
// icalrecur_iterator_set_start loses the phase of an HOURLY rule with an INTERVAL (and
// misplaces BYWEEKNO) in 3.0.16, so it is not used: the iteration starts from a DTSTART
// moved forward by whole periods instead, which keeps every phase (tests/changewindows:
// vectors from python-dateutil).
#include <libical/ical.h>

#include <cstdlib>
#include <string>

#include "changewindows/recurrence.h"
#include "changewindows/time_zone.h"

namespace lockstep::changewindows {

struct Recurrence::Impl {
  icalrecurrencetype rule;
};

namespace {

icaltimetype toIcal(const CivilSecond& c) {
  icaltimetype t = icaltime_null_time();
  t.year = static_cast<int>(c.year);
  t.month = c.month;
  t.day = c.day;
  t.hour = c.hour;
  t.minute = c.minute;
  t.second = c.second;
  t.is_date = 0;
  t.zone = nullptr;  // floating: the rule is expanded in wall-clock time
  return t;
}

CivilSecond fromIcal(const icaltimetype& t) {
  return {t.year, t.month, t.day, t.hour, t.minute, t.second};
}

// DTSTART for an iteration that must reach `from`: the anchor moved by whole periods
// (INTERVAL units of FREQ) to one period before the last period start at or before `from`.
// The anchor is the first second of a year, so a whole number of hours, days, weeks, months
// or years from it keeps every field the rule takes from DTSTART; one period back covers
// the days of a WEEKLY period that come before its DTSTART.
CivilSecond iterationStart(const icalrecurrencetype& r, const CivilSecond& from) {
  const int64_t interval = r.interval > 0 ? r.interval : 1;
  const CivilSecond& a = kRecurrenceAnchor;
  if (from <= a) return a;
  int64_t units = 0;  // whole FREQ units from the anchor to `from`
  switch (r.freq) {
    case ICAL_HOURLY_RECURRENCE:
      units = civilDifference(from, a) / 3600;
      break;
    case ICAL_DAILY_RECURRENCE:
      units = civilDifference(from, a) / 86400;
      break;
    case ICAL_WEEKLY_RECURRENCE:
      units = civilDifference(from, a) / (int64_t{7} * 86400);
      break;
    case ICAL_MONTHLY_RECURRENCE:
      units = (from.year - a.year) * 12 + (from.month - a.month);
      break;
    case ICAL_YEARLY_RECURRENCE:
      units = from.year - a.year;
      break;
    default:
      return a;
  }
  const int64_t periods = units / interval - 1;
  if (periods <= 0) return a;
  const int64_t move = periods * interval;
  switch (r.freq) {
    case ICAL_HOURLY_RECURRENCE:
      return addCivil(a, 0, move * 3600);
    case ICAL_DAILY_RECURRENCE:
      return addCivil(a, move);
    case ICAL_WEEKLY_RECURRENCE:
      return addCivil(a, move * 7);
    case ICAL_MONTHLY_RECURRENCE:
      return {a.year + move / 12, static_cast<int>(1 + move % 12), 1, 0, 0, 0};
    default:  // yearly
      return {a.year + move, 1, 1, 0, 0, 0};
  }
}

}  // namespace

StatusOr<Recurrence> Recurrence::parse(std::string_view rule) {
  std::string text(rule);
  if (text.rfind("RRULE:", 0) == 0) text.erase(0, 6);
  if (text.empty()) return invalidArgument("is empty");
  if (text.find_first_of("\r\n") != std::string::npos) {
    return invalidArgument("is one RRULE value, without DTSTART or other lines");
  }
  icalrecurrencetype r = icalrecurrencetype_from_string(text.c_str());
  if (r.rscale != nullptr) {
    std::free(r.rscale);  // libical strdup()s it
    return invalidArgument(
        "RSCALE (RFC 7529) is not supported: windows use the Gregorian calendar");
  }
  if (r.freq == ICAL_NO_RECURRENCE) {
    return invalidArgument("\"" + text +
                           "\" is not an RFC 5545 recurrence rule (libical refused it: a "
                           "missing or unknown FREQ, an unknown part, or a value out of range)");
  }
  if (r.freq == ICAL_SECONDLY_RECURRENCE || r.freq == ICAL_MINUTELY_RECURRENCE) {
    return invalidArgument(std::string("FREQ=") + icalrecur_freq_to_string(r.freq) +
                           " is not supported: a change window recurs at most HOURLY");
  }
  // One minute and one second value at most: a window then starts at most once an hour of
  // wall clock, which bounds the occurrences an evaluation looks at (changewindows/evaluate.h).
  if (r.by_minute[0] != ICAL_RECURRENCE_ARRAY_MAX && r.by_minute[1] != ICAL_RECURRENCE_ARRAY_MAX) {
    return invalidArgument(
        "BYMINUTE lists one minute at most: a change window recurs at most hourly");
  }
  if (r.by_second[0] != ICAL_RECURRENCE_ARRAY_MAX && r.by_second[1] != ICAL_RECURRENCE_ARRAY_MAX) {
    return invalidArgument(
        "BYSECOND lists one second at most: a change window recurs at most hourly");
  }
  // Parts that can never match make libical search for a first occurrence for about a
  // second of CPU before it gives up (a MONTHLY rule with BYDAY=53MO). The bounds below can
  // refuse no rule that could fire; a never-matching rule they miss still costs that second,
  // once, when the windows are compiled.
  for (int i = 0; i < ICAL_BY_DAY_SIZE && r.by_day[i] != ICAL_RECURRENCE_ARRAY_MAX; ++i) {
    const int position = icalrecurrencetype_day_position(r.by_day[i]);
    if (position == 0) continue;
    const int most = r.freq == ICAL_MONTHLY_RECURRENCE  ? 5
                     : r.freq == ICAL_YEARLY_RECURRENCE ? 53
                                                        : 0;
    if (most == 0) {
      return invalidArgument(
          "a numbered BYDAY (\"-1FR\") needs FREQ=MONTHLY or FREQ=YEARLY (RFC 5545)");
    }
    if (position > most || position < -most) {
      return invalidArgument("BYDAY position " + std::to_string(position) +
                             " never matches: " + (most == 5 ? "a month" : "a year") +
                             " has at most " + std::to_string(most) + " of each weekday");
    }
  }
  if (r.by_set_pos[0] != ICAL_RECURRENCE_ARRAY_MAX) {
    // libical 3.0 applies BYSETPOS to the days of a month or a year only; on other rules it
    // would be ignored without a word.
    const int most = r.freq == ICAL_MONTHLY_RECURRENCE  ? 31
                     : r.freq == ICAL_YEARLY_RECURRENCE ? 366
                                                        : 0;
    if (most == 0) {
      return invalidArgument(
          "BYSETPOS needs FREQ=MONTHLY or FREQ=YEARLY (it selects among the days of a month or a "
          "year)");
    }
    for (int i = 0; i < ICAL_BY_SETPOS_SIZE && r.by_set_pos[i] != ICAL_RECURRENCE_ARRAY_MAX; ++i) {
      if (r.by_set_pos[i] > most || r.by_set_pos[i] < -most) {
        return invalidArgument("BYSETPOS " + std::to_string(r.by_set_pos[i]) +
                               " never matches: " + (most == 31 ? "a month" : "a year") +
                               " has at most " + std::to_string(most) + " days");
      }
    }
  }
  if (r.count > 0) {
    return invalidArgument(
        "COUNT is not supported (it would count occurrences from 1970-01-01, the rule's "
        "DTSTART): bound the rule with UNTIL");
  }
  Recurrence out;
  out.text_ = text;
  if (!icaltime_is_null_time(r.until)) {
    if (icaltime_is_utc(r.until)) {
      out.untilUtc_ = static_cast<int64_t>(icaltime_as_timet(r.until));
      r.until = icaltime_null_time();
    } else if (r.until.is_date) {
      // A date UNTIL includes that whole day of the window's time zone.
      r.until.is_date = 0;
      r.until.hour = 23;
      r.until.minute = 59;
      r.until.second = 59;
    }
  }
  // An iterator checks what parsing does not (BYMONTHDAY=30 with BYMONTH=2: no day can match).
  icalrecur_iterator* it = icalrecur_iterator_new(r, toIcal(kRecurrenceAnchor));
  if (it == nullptr) {
    return invalidArgument("\"" + text +
                           "\" cannot be expanded (libical refused it: its parts leave no "
                           "date that could match)");
  }
  icalrecur_iterator_free(it);
  out.impl_ = std::make_shared<const Impl>(Impl{r});
  return out;
}

std::vector<CivilSecond> Recurrence::starts(const CivilSecond& from, const CivilSecond& to,
                                            size_t limit, bool* truncated) const {
  std::vector<CivilSecond> out;
  if (truncated != nullptr) *truncated = false;
  if (to < from) return out;
  // UNTIL no later than `to`: libical looks for a matching time period by period and gives
  // up only at UNTIL or in the year 2582, so an HOURLY rule whose parts never match
  // ("BYYEARDAY=366;BYMONTH=1") would take seconds without it.
  icalrecurrencetype r = impl_->rule;
  if (icaltime_is_null_time(r.until) || icaltime_compare(toIcal(to), r.until) < 0) {
    r.until = toIcal(to);
  }
  icalrecur_iterator* it = icalrecur_iterator_new(r, toIcal(iterationStart(r, from)));
  if (it == nullptr) return out;
  for (;;) {
    const icaltimetype t = icalrecur_iterator_next(it);
    if (icaltime_is_null_time(t)) break;
    const CivilSecond c = fromIcal(t);
    if (c < from) continue;
    if (to < c) break;
    if (out.size() == limit) {
      if (truncated != nullptr) *truncated = true;
      break;
    }
    out.push_back(c);
  }
  icalrecur_iterator_free(it);
  return out;
}

}  // namespace lockstep::changewindows
