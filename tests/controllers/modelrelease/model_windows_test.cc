// ModelWindows: a Model's spec.changeWindows compiled (libical, cctz: the real
// libraries) once per generation and evaluated at the instant given.
#include "controllers/modelrelease/model_windows.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace lockstep::controllers {
namespace {

using nlohmann::json;

// 2026-12-04T15:00:00Z, a Friday.
constexpr int64_t kFriday15 = 1796396400;

json model(json windows, int64_t generation = 1, const std::string& uid = "u1") {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "Model"},
          {"metadata",
           {{"name", "gpt2"}, {"namespace", "ml"}, {"uid", uid}, {"generation", generation}}},
          {"spec", {{"changeWindows", std::move(windows)}}}};
}

json fridayFreeze(const std::string& inFlight = "pause", const std::string& rollbacks = "Allow") {
  // Fridays 16:00 UTC for 2 days 16 hours.
  return json::array({{{"name", "weekend-freeze"},
                       {"kind", "Deny"},
                       {"rrule", "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16"},
                       {"duration", "2d16h"},
                       {"timeZone", "UTC"},
                       {"inFlight", inFlight},
                       {"rollbacks", rollbacks}}});
}

TEST(ModelWindows, OpenBeforeADenyWindowClosedInsideItWithItsInFlightAndRollbacks) {
  ModelWindows windows;
  EXPECT_FALSE(windows.closedAt(model(json::array()), kFriday15).has_value()) << "no windows";
  json m = model(fridayFreeze("pause", "Deny"));
  EXPECT_FALSE(windows.closedAt(m, kFriday15).has_value()) << "an hour before the freeze";
  auto closed = windows.closedAt(m, kFriday15 + 3600 + 60);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->inFlight, ClosedWindow::InFlight::kPause);
  EXPECT_FALSE(closed->rollbacksAllowed);
  EXPECT_NE(closed->message.find("weekend-freeze"), std::string::npos) << closed->message;
  // It opens Monday 08:00 UTC: 2 days 16 hours after Friday 16:00.
  EXPECT_EQ(closed->nextTransition, kFriday15 + 3600 + (2 * 24 + 16) * 3600);
  EXPECT_EQ(closed->requeueSeconds(kFriday15 + 3600 + 60), 3600) << "looked at hourly at most";
}

TEST(ModelWindows, ANewGenerationIsCompiledAgainAndUnreadableWindowsKeepTheModelClosed) {
  ModelWindows windows;
  const int64_t inside = kFriday15 + 7200;
  ASSERT_TRUE(windows.closedAt(model(fridayFreeze()), inside).has_value());
  // Generation 2 drops the window: open (the cache follows the generation).
  EXPECT_FALSE(windows.closedAt(model(json::array(), 2), inside).has_value());
  // Generation 3's rule cannot be read: closed, naming the field.
  json bad = fridayFreeze();
  bad[0]["rrule"] = "FREQ=FORTNIGHTLY";
  auto closed = windows.closedAt(model(bad, 3), kFriday15);
  ASSERT_TRUE(closed.has_value());
  EXPECT_NE(closed->message.find("spec.changeWindows[0].rrule"), std::string::npos)
      << closed->message;
  EXPECT_NE(closed->message.find("nothing new starts until they are fixed"), std::string::npos);
  // A re-created Model (another uid) at generation 1 is compiled anew.
  EXPECT_FALSE(windows.closedAt(model(json::array(), 1, "u2"), inside).has_value());
}

}  // namespace
}  // namespace lockstep::controllers
