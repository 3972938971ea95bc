#include "changewindows/evaluate.h"

#include <gtest/gtest.h>

#include "tests/changewindows/test_time.h"

namespace lockstep::changewindows {
namespace {

namespace v1 = api::v1alpha1;
using testing::utc;

v1::ChangeWindowSpec window(const std::string& kind, const std::string& rrule,
                            const std::string& duration, const std::string& zone = "UTC") {
  v1::ChangeWindowSpec w;
  w.kind = kind;
  w.rrule = rrule;
  w.duration = duration;
  w.timeZone = zone;
  return w;
}

std::vector<ChangeWindow> compile(const std::vector<v1::ChangeWindowSpec>& specs) {
  StatusOr<std::vector<ChangeWindow>> w = compileChangeWindows(specs);
  EXPECT_TRUE(w.isOk()) << w.status().toString();
  return w.isOk() ? *w : std::vector<ChangeWindow>{};
}

// One row of a scripted clock: at `at` the model is open or not, and (when given) the next
// instant it opens or closes.
struct Tick {
  const char* at;
  bool open;
  const char* next = nullptr;  // nextClose when open, nextOpen when closed; "" for none
};

void expectTicks(const std::vector<ChangeWindow>& windows, const std::vector<Tick>& ticks) {
  for (const Tick& t : ticks) {
    const WindowEvaluation e = evaluateChangeWindows(windows, utc(t.at));
    EXPECT_EQ(e.state.open, t.open) << "at " << t.at << ": " << e.message;
    if (t.next == nullptr) continue;
    const std::optional<int64_t>& next = t.open ? e.nextClose : e.nextOpen;
    if (std::string(t.next).empty()) {
      EXPECT_FALSE(next.has_value()) << "at " << t.at << ": " << e.message;
    } else {
      ASSERT_TRUE(next.has_value()) << "at " << t.at << ": " << e.message;
      EXPECT_EQ(*next, utc(t.next)) << "at " << t.at << ": " << e.message;
    }
  }
}

TEST(EvaluateChangeWindows, NoWindowIsOpenForever) {
  const WindowEvaluation e = evaluateChangeWindows({}, utc("2026-12-04T16:00:00"));
  EXPECT_TRUE(e.state.open);
  EXPECT_TRUE(e.state.deciding.empty());
  EXPECT_FALSE(e.nextTransition.has_value());
  EXPECT_EQ(e.message, "open: no change window");
}

TEST(EvaluateChangeWindows, BerlinWeekendFreezeAcrossSpringForward) {
  v1::ChangeWindowSpec freeze =
      window("Deny", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16", "2d16h", "Europe/Berlin");
  freeze.name = "weekend-freeze";
  // Fri 2026-03-27 16:00 CET is 15:00Z; the clocks go forward on Sunday; 2d16h ends on
  // Monday 08:00 CEST, 06:00Z.
  expectTicks(compile({freeze}), {
                                     {"2026-03-27T14:59:59", true, "2026-03-27T15:00:00"},
                                     {"2026-03-27T15:00:00", false, "2026-03-30T06:00:00"},
                                     {"2026-03-29T01:30:00", false, "2026-03-30T06:00:00"},
                                     {"2026-03-30T05:59:59", false},
                                     {"2026-03-30T06:00:00", true, "2026-04-03T14:00:00"},
                                 });
  const WindowEvaluation e = evaluateChangeWindows(compile({freeze}), utc("2026-03-28T12:00:00"));
  EXPECT_EQ(e.state.deciding, std::vector<size_t>{0});
  EXPECT_EQ(e.message,
            "closed by Deny window \"weekend-freeze\" (spec.changeWindows[0]); opens "
            "2026-03-30T08:00:00+02:00; work in flight: finishStep; rollbacks allowed");
  // 64h is exact time: it ends at 09:00 CEST, 07:00Z.
  freeze.duration = "64h";
  expectTicks(compile({freeze}), {{"2026-03-28T12:00:00", false, "2026-03-30T07:00:00"}});
}

TEST(EvaluateChangeWindows, BerlinWeekendFreezeAcrossFallBack) {
  v1::ChangeWindowSpec freeze =
      window("Deny", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16", "2d16h", "Europe/Berlin");
  // Fri 2026-10-23 16:00 CEST is 14:00Z; Monday 08:00 CET is 07:00Z.
  expectTicks(compile({freeze}), {
                                     {"2026-10-23T13:59:59", true, "2026-10-23T14:00:00"},
                                     {"2026-10-25T01:30:00", false, "2026-10-26T07:00:00"},
                                     {"2026-10-26T07:00:00", true, "2026-10-30T15:00:00"},
                                 });
  freeze.duration = "64h";  // 14:00Z + 64h: Monday 06:00Z, 07:00 CET
  expectTicks(compile({freeze}), {{"2026-10-24T12:00:00", false, "2026-10-26T06:00:00"}});
}

TEST(EvaluateChangeWindows, WindowAtASkippedAndARepeatedLocalTime) {
  const auto windows =
      compile({window("Deny", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "1h", "Europe/Berlin")});
  expectTicks(windows, {
                           // 2026-03-29 02:30 does not exist: taken with +01:00, 01:30Z.
                           {"2026-03-29T01:15:00", true, "2026-03-29T01:30:00"},
                           {"2026-03-29T01:45:00", false, "2026-03-29T02:30:00"},
                           // the next day 02:30 is CEST: 00:30Z.
                           {"2026-03-29T03:00:00", true, "2026-03-30T00:30:00"},
                           // 2026-10-25 02:30 happens twice: the window is the first, 00:30Z
                           // (CEST), and not again at 01:30Z (CET).
                           {"2026-10-24T23:00:00", true, "2026-10-25T00:30:00"},
                           {"2026-10-25T01:00:00", false, "2026-10-25T01:30:00"},
                           {"2026-10-25T01:45:00", true, "2026-10-26T01:30:00"},
                       });
}

TEST(EvaluateChangeWindows, NewYorkNightlyWindowAcrossMidnightAndDst) {
  const auto windows = compile({window("Deny", "FREQ=DAILY;BYHOUR=22", "4h", "America/New_York")});
  expectTicks(windows, {
                           // 2026-03-07 22:00 EST is 03:00Z on the 8th; 4h later the clocks
                           // have gone forward: 07:00Z is 03:00 EDT.
                           {"2026-03-08T02:59:59", true, "2026-03-08T03:00:00"},
                           {"2026-03-08T05:00:00", false, "2026-03-08T07:00:00"},
                           // 2026-03-08 22:00 EDT is 02:00Z on the 9th.
                           {"2026-03-08T07:00:00", true, "2026-03-09T02:00:00"},
                           // 2026-10-31 22:00 EDT is 02:00Z; 4h later it is 01:00 EST, 06:00Z.
                           {"2026-11-01T05:59:59", false, "2026-11-01T06:00:00"},
                           // 2026-11-01 22:00 EST is 03:00Z on the 2nd.
                           {"2026-11-01T06:00:00", true, "2026-11-02T03:00:00"},
                       });
}

TEST(EvaluateChangeWindows, UtcWindowAcrossMidnight) {
  const auto windows = compile({window("Deny", "FREQ=DAILY;BYHOUR=22", "4h")});
  expectTicks(windows, {
                           {"2026-12-01T21:59:59", true, "2026-12-01T22:00:00"},
                           {"2026-12-01T23:30:00", false, "2026-12-02T02:00:00"},
                           {"2026-12-02T01:59:59", false, "2026-12-02T02:00:00"},
                           {"2026-12-02T02:00:00", true, "2026-12-02T22:00:00"},
                       });
}

TEST(EvaluateChangeWindows, DenyWinsOverAnOverlappingAllow) {
  v1::ChangeWindowSpec office = window("Allow", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9", "8h");
  v1::ChangeWindowSpec friday = window("Deny", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=12", "8h");
  friday.inFlight = "pause";
  const auto windows = compile({office, friday});
  // Friday 2026-12-04.
  WindowEvaluation e = evaluateChangeWindows(windows, utc("2026-12-04T10:00:00"));
  EXPECT_TRUE(e.state.open);
  EXPECT_EQ(e.state.deciding, std::vector<size_t>{0});
  EXPECT_EQ(e.nextTransition, utc("2026-12-04T12:00:00"));
  EXPECT_EQ(e.nextClose, utc("2026-12-04T12:00:00"));

  e = evaluateChangeWindows(windows, utc("2026-12-04T13:00:00"));
  EXPECT_FALSE(e.state.open);
  EXPECT_EQ(e.state.deciding, std::vector<size_t>{1});
  EXPECT_EQ(e.state.inFlight, InFlight::kPause);
  EXPECT_TRUE(e.state.rollbacksAllowed);
  // The Allow window ends at 17:00 but the Deny window still decides; at 20:00 the model is
  // still closed, now by being outside every Allow window: another answer (work in flight
  // finishes its step rather than pausing), and it opens on Monday.
  EXPECT_EQ(e.nextTransition, utc("2026-12-04T20:00:00"));
  EXPECT_EQ(e.nextOpen, utc("2026-12-07T09:00:00"));
  EXPECT_EQ(e.message,
            "closed by Deny window (spec.changeWindows[1]); opens 2026-12-07T09:00:00+00:00; work "
            "in flight: pause; rollbacks allowed");

  e = evaluateChangeWindows(windows, utc("2026-12-05T12:00:00"));
  EXPECT_FALSE(e.state.open);
  EXPECT_EQ(e.state.deciding, std::vector<size_t>{0});
  EXPECT_EQ(e.state.inFlight, InFlight::kFinishStep);
  EXPECT_TRUE(e.state.rollbacksAllowed);
  EXPECT_EQ(e.nextOpen, utc("2026-12-07T09:00:00"));
  EXPECT_EQ(e.message,
            "closed: outside every Allow window; opens 2026-12-07T09:00:00+00:00; work in flight: "
            "finishStep; rollbacks allowed");
}

TEST(EvaluateChangeWindows, ADenyWindowMayRefuseRollbacks) {
  v1::ChangeWindowSpec freeze = window("Deny", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=12", "8h");
  freeze.rollbacks = "Deny";
  const auto windows = compile({window("Deny", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=10", "4h"), freeze});
  WindowEvaluation e = evaluateChangeWindows(windows, utc("2026-12-04T11:00:00"));
  EXPECT_FALSE(e.state.open);
  EXPECT_TRUE(e.state.rollbacksAllowed);
  // From 12:00 both decide; one refusing rollbacks is enough. Still closed: a transition all
  // the same, since the answer about rollbacks changes.
  EXPECT_EQ(e.nextTransition, utc("2026-12-04T12:00:00"));
  EXPECT_EQ(e.nextOpen, utc("2026-12-04T20:00:00"));
  e = evaluateChangeWindows(windows, utc("2026-12-04T13:00:00"));
  EXPECT_EQ(e.state.deciding, (std::vector<size_t>{0, 1}));
  EXPECT_FALSE(e.state.rollbacksAllowed);
  EXPECT_NE(e.message.find("rollbacks refused"), std::string::npos) << e.message;
}

TEST(EvaluateChangeWindows, OutsideAllowWindowsTheStrictestInFlightAndRollbacksApply) {
  v1::ChangeWindowSpec mornings = window("Allow", "FREQ=DAILY;BYHOUR=8", "2h");
  v1::ChangeWindowSpec evenings = window("Allow", "FREQ=DAILY;BYHOUR=18", "2h");
  evenings.inFlight = "abort";
  evenings.rollbacks = "Deny";
  const WindowEvaluation e =
      evaluateChangeWindows(compile({mornings, evenings}), utc("2026-12-01T12:00:00"));
  EXPECT_FALSE(e.state.open);
  EXPECT_EQ(e.state.deciding, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(e.state.inFlight, InFlight::kAbort);
  EXPECT_FALSE(e.state.rollbacksAllowed);
  EXPECT_EQ(e.nextOpen, utc("2026-12-01T18:00:00"));
}

TEST(EvaluateChangeWindows, OverlappingOccurrencesOfOneWindowMerge) {
  // Every hour for 90 minutes: never a gap, so never a transition.
  const WindowEvaluation e = evaluateChangeWindows(compile({window("Deny", "FREQ=HOURLY", "90m")}),
                                                   utc("2026-12-01T12:34:56"));
  EXPECT_FALSE(e.state.open);
  EXPECT_FALSE(e.nextTransition.has_value());
  EXPECT_FALSE(e.nextOpen.has_value());
  EXPECT_EQ(e.horizon, utc("2026-12-01T12:34:56") + kHorizonSeconds);
}

TEST(EvaluateChangeWindows, ARuleThatNeverFiresAgain) {
  // An Allow window that ended for good closes the model for good; a Deny window that ended
  // for good closes nothing.
  const auto over = window("Allow", "FREQ=DAILY;BYHOUR=9;UNTIL=20200101T000000", "8h");
  WindowEvaluation e = evaluateChangeWindows(compile({over}), utc("2026-12-01T10:00:00"));
  EXPECT_FALSE(e.state.open);
  EXPECT_FALSE(e.nextOpen.has_value());
  EXPECT_FALSE(e.nextTransition.has_value());
  EXPECT_NE(e.message.find("does not open before 2028-01-05T10:00:00+00:00"), std::string::npos)
      << e.message;
  e = evaluateChangeWindows(compile({window("Deny", "FREQ=DAILY;UNTIL=20200101T000000", "8h")}),
                            utc("2026-12-01T10:00:00"));
  EXPECT_TRUE(e.state.open);
  EXPECT_FALSE(e.nextTransition.has_value());
}

TEST(EvaluateChangeWindows, UntilInUtcIsAnInstant) {
  // 09:00 in Berlin in December is 08:00Z: the last occurrence is on the 3rd, UNTIL inclusive.
  const auto windows = compile(
      {window("Deny", "FREQ=DAILY;BYHOUR=9;UNTIL=20261203T080000Z", "1h", "Europe/Berlin")});
  expectTicks(windows, {
                           {"2026-12-03T08:30:00", false, "2026-12-03T09:00:00"},
                           {"2026-12-03T10:00:00", true, ""},
                           {"2026-12-04T08:30:00", true, ""},
                       });
}

TEST(EvaluateChangeWindows, AYearlyWindowIsFoundWithinTheHorizon) {
  const auto windows = compile({window("Deny", "FREQ=YEARLY;BYMONTH=12;BYMONTHDAY=24", "3d")});
  expectTicks(windows, {
                           {"2026-12-26T23:59:59", false, "2026-12-27T00:00:00"},
                           {"2026-12-28T00:00:00", true, "2027-12-24T00:00:00"},
                       });
}

}  // namespace
}  // namespace lockstep::changewindows
