// spec.verify.schedule: the cron parser's errors and the next run time (UTC, Unix seconds).
#include "verify/schedule.h"

#include <gtest/gtest.h>

namespace lockstep::verify {
namespace {

// 2026-12-01T17:20:30Z, a Tuesday.
constexpr int64_t kTue = 1796145630;

int64_t next(const std::string& text, int64_t after) {
  auto s = parseSchedule(text);
  EXPECT_TRUE(s.isOk()) << s.status().message();
  if (!s.isOk()) return -1;
  return nextRun(*s, after).value_or(-1);
}

std::string error(const std::string& text) {
  auto s = parseSchedule(text);
  return s.isOk() ? "" : s.status().message();
}

TEST(Schedule, TheTestClockIsWhatItSays) {
  // 2026-12-01 is day 20788 since 1970-01-01: 20788 * 86400 + 17:20:30.
  EXPECT_EQ(kTue, 20788LL * 86400 + 17 * 3600 + 20 * 60 + 30);
}

TEST(Schedule, MacrosRunAtTheirNextBoundary) {
  const int64_t day = 20788LL * 86400;  // 2026-12-01T00:00:00Z
  EXPECT_EQ(next("@hourly", kTue), day + 18 * 3600);
  EXPECT_EQ(next("@daily", kTue), day + 86400);
  EXPECT_EQ(next("@midnight", kTue), day + 86400);
  // The next Sunday 00:00: 2026-12-06.
  EXPECT_EQ(next("@weekly", kTue), day + 5 * 86400);
  EXPECT_EQ(next("@monthly", kTue), 20819LL * 86400);  // 2027-01-01
  EXPECT_EQ(next("@yearly", kTue), 20819LL * 86400);
  EXPECT_EQ(next("@annually", kTue), 20819LL * 86400);
}

TEST(Schedule, IsStrictlyAfterTheGivenTime) {
  const int64_t sunday = (20788LL + 5) * 86400;
  EXPECT_EQ(next("@weekly", sunday), sunday + 7 * 86400);
  EXPECT_EQ(next("@weekly", sunday - 1), sunday);
  EXPECT_EQ(next("* * * * *", kTue), kTue - 30 + 60);
}

TEST(Schedule, FieldsListsRangesStepsAndNames) {
  const int64_t day = 20788LL * 86400;
  EXPECT_EQ(next("*/15 * * * *", kTue), day + 17 * 3600 + 30 * 60);
  EXPECT_EQ(next("5,50 17 * * *", kTue), day + 17 * 3600 + 50 * 60);
  EXPECT_EQ(next("0 9-17/4 * * *", kTue), day + 86400 + 9 * 3600);  // 9, 13, 17: 17:00 passed
  EXPECT_EQ(next("30 3 * * mon-fri", kTue), day + 86400 + 3 * 3600 + 30 * 60);  // Wednesday
  EXPECT_EQ(next("0 0 * * SAT", kTue), day + 4 * 86400);
  EXPECT_EQ(next("0 0 * * 7", kTue), day + 5 * 86400);    // 7 is Sunday too
  EXPECT_EQ(next("0 0 1 feb *", kTue), 20850LL * 86400);  // 2027-02-01
}

TEST(Schedule, BothDayFieldsRestrictedMatchEither) {
  // Vixie cron: the 15th of a month OR any Friday; the first after Tue 1 Dec is Fri 4 Dec.
  const int64_t day = 20788LL * 86400;
  EXPECT_EQ(next("0 12 15 * fri", kTue), day + 3 * 86400 + 12 * 3600);
  // Day of month alone: the 15th.
  EXPECT_EQ(next("0 12 15 * *", kTue), day + 14 * 86400 + 12 * 3600);
}

TEST(Schedule, LeapDaysAndImpossibleDates) {
  // The next 29 February after December 2026 is in 2028.
  EXPECT_EQ(next("0 0 29 2 *", kTue), 21243LL * 86400);
  auto s = parseSchedule("0 0 30 2 *");
  ASSERT_TRUE(s.isOk());
  EXPECT_FALSE(nextRun(*s, kTue).has_value());
}

TEST(Schedule, ErrorsNameTheFieldAndWhatIsWrong) {
  EXPECT_EQ(error("0 25 * * *"),
            "schedule \"0 25 * * *\": field 2 (hour): 25 is out of range 0-23");
  EXPECT_EQ(error("61 * * * *"),
            "schedule \"61 * * * *\": field 1 (minute): 61 is out of range 0-59");
  EXPECT_EQ(error("0 0 0 * *"),
            "schedule \"0 0 0 * *\": field 3 (day of month): 0 is out of range 1-31");
  EXPECT_EQ(error("0 0 * 13 *"),
            "schedule \"0 0 * 13 *\": field 4 (month): 13 is out of range 1-12");
  EXPECT_EQ(error("0 0 * * funday"),
            "schedule \"0 0 * * funday\": field 5 (day of week): \"funday\" is not a number or a "
            "three-letter name");
  EXPECT_EQ(error("*/0 * * * *"),
            "schedule \"*/0 * * * *\": field 1 (minute): step \"0\" is not a whole number of at "
            "least 1");
  EXPECT_EQ(error("0 17-9 * * *"),
            "schedule \"0 17-9 * * *\": field 2 (hour): range 17-9 runs backwards (17 > 9)");
  EXPECT_EQ(error("0 1,,2 * * *"),
            "schedule \"0 1,,2 * * *\": field 2 (hour): empty list element in \"1,,2\"");
  EXPECT_EQ(error("0 0 * *"),
            "schedule \"0 0 * *\": 4 field(s), want 5 (minute hour day-of-month month "
            "day-of-week) or a macro such as @weekly");
  EXPECT_EQ(error(""),
            "schedule \"\": 0 field(s), want 5 (minute hour day-of-month month day-of-week) or a "
            "macro such as @weekly");
  EXPECT_EQ(error("@fortnightly"),
            "schedule \"@fortnightly\": unknown macro (use @hourly, @daily, @midnight, @weekly, "
            "@monthly, @yearly or @annually, or five fields)");
}

}  // namespace
}  // namespace lockstep::verify
