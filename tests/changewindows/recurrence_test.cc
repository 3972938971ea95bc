#include "changewindows/recurrence.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tests/changewindows/test_time.h"

namespace lockstep::changewindows {
namespace {

using testing::civil;

std::vector<std::string> firstStarts(const std::string& rule, const std::string& from, size_t n) {
  StatusOr<Recurrence> r = Recurrence::parse(rule);
  EXPECT_TRUE(r.isOk()) << rule << ": " << r.status().toString();
  if (!r.isOk()) return {};
  bool truncated = false;
  std::vector<std::string> out;
  for (const CivilSecond& c : r->starts(civil(from), civil("2099-01-01T00:00:00"), n, &truncated)) {
    out.push_back(formatCivil(c));
  }
  return out;
}

// The first three starts at or after `from` of rules with DTSTART 1970-01-01T00:00:00, from
// python-dateutil 2.9.0 (rrulestr(rule, dtstart=datetime(1970, 1, 1)).after(from, inc=True)),
// an RRULE implementation independent of libical. The rules with an INTERVAL check that the
// iteration, which starts close to `from` rather than at 1970, keeps each period's phase
// (libical's own icalrecur_iterator_set_start loses it for HOURLY).
struct Vector {
  const char* rule;
  const char* from;
  std::vector<std::string> starts;
};
const std::vector<Vector> kDateutilVectors = {
    {"FREQ=HOURLY;INTERVAL=5",
     "2026-12-01T00:00:00",
     {"2026-12-01T03:00:00", "2026-12-01T08:00:00", "2026-12-01T13:00:00"}},
    {"FREQ=HOURLY;INTERVAL=5",
     "2026-03-29T01:30:00",
     {"2026-03-29T06:00:00", "2026-03-29T11:00:00", "2026-03-29T16:00:00"}},
    {"FREQ=HOURLY;INTERVAL=7;BYMINUTE=15",
     "2026-12-01T00:00:00",
     {"2026-12-01T06:15:00", "2026-12-01T13:15:00", "2026-12-01T20:15:00"}},
    {"FREQ=HOURLY;INTERVAL=7;BYMINUTE=15",
     "2026-03-29T01:30:00",
     {"2026-03-29T05:15:00", "2026-03-29T12:15:00", "2026-03-29T19:15:00"}},
    {"FREQ=DAILY;INTERVAL=3;BYHOUR=2,14",
     "2026-12-01T00:00:00",
     {"2026-12-03T02:00:00", "2026-12-03T14:00:00", "2026-12-06T02:00:00"}},
    {"FREQ=DAILY;INTERVAL=3;BYHOUR=2,14",
     "2026-03-29T01:30:00",
     {"2026-03-29T02:00:00", "2026-03-29T14:00:00", "2026-04-01T02:00:00"}},
    {"FREQ=WEEKLY;INTERVAL=3",
     "2026-12-01T00:00:00",
     {"2026-12-03T00:00:00", "2026-12-24T00:00:00", "2027-01-14T00:00:00"}},
    {"FREQ=WEEKLY;INTERVAL=3",
     "2026-03-29T01:30:00",
     {"2026-04-16T00:00:00", "2026-05-07T00:00:00", "2026-05-28T00:00:00"}},
    {"FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR;BYHOUR=9",
     "2026-12-01T00:00:00",
     {"2026-12-04T09:00:00", "2026-12-14T09:00:00", "2026-12-18T09:00:00"}},
    {"FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR;BYHOUR=9",
     "2026-03-29T01:30:00",
     {"2026-04-06T09:00:00", "2026-04-10T09:00:00", "2026-04-20T09:00:00"}},
    {"FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR;BYHOUR=9;WKST=SU",
     "2026-12-01T00:00:00",
     {"2026-12-04T09:00:00", "2026-12-14T09:00:00", "2026-12-18T09:00:00"}},
    {"FREQ=MONTHLY;INTERVAL=5;BYMONTHDAY=10",
     "2026-12-01T00:00:00",
     {"2027-02-10T00:00:00", "2027-07-10T00:00:00", "2027-12-10T00:00:00"}},
    {"FREQ=MONTHLY;INTERVAL=5;BYMONTHDAY=10",
     "2026-03-29T01:30:00",
     {"2026-04-10T00:00:00", "2026-09-10T00:00:00", "2027-02-10T00:00:00"}},
    {"FREQ=MONTHLY;INTERVAL=2;BYDAY=-1FR;BYHOUR=18",
     "2026-12-01T00:00:00",
     {"2027-01-29T18:00:00", "2027-03-26T18:00:00", "2027-05-28T18:00:00"}},
    {"FREQ=MONTHLY;INTERVAL=2;BYDAY=-1FR;BYHOUR=18",
     "2026-03-29T01:30:00",
     {"2026-05-29T18:00:00", "2026-07-31T18:00:00", "2026-09-25T18:00:00"}},
    {"FREQ=YEARLY;INTERVAL=3;BYMONTH=12;BYMONTHDAY=24",
     "2026-12-01T00:00:00",
     {"2027-12-24T00:00:00", "2030-12-24T00:00:00", "2033-12-24T00:00:00"}},
    {"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
     "2026-12-01T00:00:00",
     {"2028-02-29T00:00:00", "2032-02-29T00:00:00", "2036-02-29T00:00:00"}},
    {"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=17",
     "2026-12-01T00:00:00",
     {"2026-12-31T17:00:00", "2027-01-29T17:00:00", "2027-02-26T17:00:00"}},
    {"FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=17",
     "2026-03-29T01:30:00",
     {"2026-03-31T17:00:00", "2026-04-30T17:00:00", "2026-05-29T17:00:00"}},
    {"FREQ=YEARLY;BYWEEKNO=1;BYDAY=MO",
     "2026-12-01T00:00:00",
     {"2027-01-04T00:00:00", "2028-01-03T00:00:00", "2029-01-01T00:00:00"}},
};

TEST(Recurrence, MatchesPythonDateutil) {
  for (const Vector& v : kDateutilVectors) {
    EXPECT_EQ(firstStarts(v.rule, v.from, 3), v.starts) << v.rule << " from " << v.from;
  }
}

TEST(Recurrence, TheAnchorFillsWhatTheRuleLeavesOut) {
  // BYHOUR=16 alone: 16:00:00. WEEKLY without BYDAY: Thursdays (1970-01-01 was one).
  EXPECT_EQ(firstStarts("FREQ=WEEKLY;BYDAY=FR;BYHOUR=16", "2026-12-01T00:00:00", 2),
            (std::vector<std::string>{"2026-12-04T16:00:00", "2026-12-11T16:00:00"}));
  EXPECT_EQ(firstStarts("FREQ=WEEKLY", "2026-12-01T00:00:00", 1),
            (std::vector<std::string>{"2026-12-03T00:00:00"}));
  // "RRULE:" in front is accepted; lower case too (libical reads it).
  EXPECT_EQ(firstStarts("RRULE:FREQ=DAILY;BYHOUR=22", "2026-12-01T23:00:00", 1),
            (std::vector<std::string>{"2026-12-02T22:00:00"}));
}

TEST(Recurrence, UntilLocalDateAndUtc) {
  // A local UNTIL is inclusive; a date UNTIL includes its whole day.
  EXPECT_EQ(firstStarts("FREQ=DAILY;BYHOUR=9;UNTIL=20261202T090000", "2026-12-01T00:00:00", 5),
            (std::vector<std::string>{"2026-12-01T09:00:00", "2026-12-02T09:00:00"}));
  EXPECT_EQ(firstStarts("FREQ=DAILY;BYHOUR=9;UNTIL=20261202", "2026-12-01T00:00:00", 5),
            (std::vector<std::string>{"2026-12-01T09:00:00", "2026-12-02T09:00:00"}));
  // A UTC UNTIL is left to the caller, who compares instants.
  StatusOr<Recurrence> r = Recurrence::parse("FREQ=DAILY;UNTIL=20261203T080000Z");
  ASSERT_TRUE(r.isOk());
  ASSERT_TRUE(r->untilUtc().has_value());
  EXPECT_EQ(*r->untilUtc(), testing::utc("2026-12-03T08:00:00"));
}

TEST(Recurrence, NumberedDaysAndSetPositionsThatCanMatch) {
  EXPECT_EQ(firstStarts("FREQ=MONTHLY;BYDAY=5FR", "2026-12-01T00:00:00", 1),
            (std::vector<std::string>{"2027-01-29T00:00:00"}));
  EXPECT_EQ(firstStarts("FREQ=YEARLY;BYDAY=-53TH", "2026-01-01T00:00:00", 1),
            (std::vector<std::string>{"2026-01-01T00:00:00"}));
  // The last weekday of the month.
  EXPECT_EQ(firstStarts("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1", "2027-01-01T00:00:00", 2),
            (std::vector<std::string>{"2027-01-29T00:00:00", "2027-02-26T00:00:00"}));
}

TEST(Recurrence, LimitTruncates) {
  StatusOr<Recurrence> r = Recurrence::parse("FREQ=HOURLY");
  ASSERT_TRUE(r.isOk());
  bool truncated = false;
  EXPECT_EQ(
      r->starts(civil("2026-01-01T00:00:00"), civil("2026-01-02T00:00:00"), 5, &truncated).size(),
      5U);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(
      r->starts(civil("2026-01-01T00:00:00"), civil("2026-01-01T04:00:00"), 5, &truncated).size(),
      5U);
  EXPECT_FALSE(truncated);
}

TEST(Recurrence, ARuleWhosePartsNeverMatchEndsAtTheRangeNotInTheYear2582) {
  // libical steps hour by hour looking for day 366 in January; without UNTIL at the end of
  // the range it would search until 2582 (16 s on the machine this was written on).
  StatusOr<Recurrence> r = Recurrence::parse("FREQ=HOURLY;BYYEARDAY=366;BYMONTH=1");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  bool truncated = true;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(r->starts(civil("2026-12-01T00:00:00"), civil("2027-12-01T00:00:00"), 100, &truncated)
                  .empty());
  EXPECT_FALSE(truncated);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST(Recurrence, RefusesWhatIsNotAWindowRule) {
  struct Case {
    const char* rule;
    const char* says;
  };
  for (const Case& c : {
           Case{"", "is empty"},
           Case{"garbage", "not an RFC 5545 recurrence rule"},
           Case{"FREQ=WEEKLY;BYDAY=XX", "not an RFC 5545 recurrence rule"},
           Case{"FREQ=WEEKLY;BYDAY=FR;FOO=1", "not an RFC 5545 recurrence rule"},
           Case{"FREQ=DAILY;BYHOUR=25", "not an RFC 5545 recurrence rule"},
           Case{"BYDAY=FR", "not an RFC 5545 recurrence rule"},
           Case{"FREQ=MINUTELY", "at most HOURLY"},
           Case{"FREQ=SECONDLY", "at most HOURLY"},
           Case{"FREQ=HOURLY;BYMINUTE=0,30", "BYMINUTE lists one minute"},
           Case{"FREQ=HOURLY;BYSECOND=0,30", "BYSECOND lists one second"},
           Case{"FREQ=WEEKLY;COUNT=3", "COUNT is not supported"},
           Case{"FREQ=MONTHLY;RSCALE=HEBREW", "RSCALE"},
           Case{"DTSTART:20260101T000000\nRRULE:FREQ=DAILY", "one RRULE value"},
           Case{"FREQ=MONTHLY;BYDAY=53MO", "BYDAY position 53 never matches: a month"},
           Case{"FREQ=MONTHLY;BYDAY=-6SU", "BYDAY position -6 never matches"},
           Case{"FREQ=YEARLY;BYDAY=54MO", "54"},
           Case{"FREQ=WEEKLY;BYDAY=1MO", "needs FREQ=MONTHLY or FREQ=YEARLY"},
           Case{"FREQ=MONTHLY;BYSETPOS=366", "BYSETPOS 366 never matches"},
           Case{"FREQ=MONTHLY;BYSETPOS=-32", "BYSETPOS -32 never matches: a month"},
           // libical would ignore it there.
           Case{"FREQ=DAILY;BYHOUR=9,17;BYSETPOS=-1", "BYSETPOS needs FREQ=MONTHLY"},
           // Parses, but no date can match: February has no 30th.
           Case{"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "cannot be expanded"},
       }) {
    StatusOr<Recurrence> r = Recurrence::parse(c.rule);
    ASSERT_FALSE(r.isOk()) << "\"" << c.rule << "\" parsed";
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.rule << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace lockstep::changewindows
