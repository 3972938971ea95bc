#include "changewindows/window_duration.h"

#include <gtest/gtest.h>

namespace lockstep::changewindows {
namespace {

TEST(WindowDuration, ExactHoursMinutesSecondsAndCalendarDays) {
  struct Case {
    const char* text;
    int64_t days, seconds;
  };
  for (const Case& c : {Case{"64h", 0, 64 * 3600}, Case{"90m", 0, 5400}, Case{"1h30m", 0, 5400},
                        Case{"2d16h", 2, 16 * 3600}, Case{"1d", 1, 0}, Case{"366d", 366, 0},
                        Case{"1m", 0, 60}, Case{"3600s", 0, 3600}, Case{"1h0m30s", 0, 3630}}) {
    const StatusOr<WindowDuration> d = parseWindowDuration(c.text);
    ASSERT_TRUE(d.isOk()) << c.text << ": " << d.status().toString();
    EXPECT_EQ(d->days, c.days) << c.text;
    EXPECT_EQ(d->seconds, c.seconds) << c.text;
  }
}

TEST(WindowDuration, RefusesWhatIsNotADurationOrOutOfBounds) {
  for (const char* text : {"", "64", "h", "1.5h", "30m1h", "1h1h", "-1h", "1w", "PT1H", " 1h",
                           "1h ", "59s", "0h", "367d", "366d1s", "9999999999999h"}) {
    const StatusOr<WindowDuration> d = parseWindowDuration(text);
    EXPECT_FALSE(d.isOk()) << "\"" << text << "\" was accepted";
  }
  EXPECT_NE(parseWindowDuration("30m1h").status().message().find("\"30m1h\" is not a duration"),
            std::string::npos);
  EXPECT_NE(parseWindowDuration("367d").status().message().find("longer than 366d"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::changewindows
