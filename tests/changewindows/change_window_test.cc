#include "changewindows/change_window.h"

#include <gtest/gtest.h>

namespace lockstep::changewindows {
namespace {

namespace v1 = api::v1alpha1;

v1::ChangeWindowSpec freeze() {
  v1::ChangeWindowSpec w;
  w.name = "weekend-freeze";
  w.kind = "Deny";
  w.rrule = "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16";
  w.duration = "2d16h";
  w.timeZone = "Europe/Berlin";
  return w;
}

TEST(CompileChangeWindows, CompilesWithDefaults) {
  v1::ChangeWindowSpec allow;
  allow.kind = "Allow";
  allow.rrule = "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH;BYHOUR=9";
  allow.duration = "8h";
  StatusOr<std::vector<ChangeWindow>> w = compileChangeWindows({freeze(), allow});
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  ASSERT_EQ(w->size(), 2U);
  EXPECT_TRUE((*w)[0].deny);
  EXPECT_EQ((*w)[0].zone.name(), "Europe/Berlin");
  EXPECT_EQ((*w)[0].duration.days, 2);
  EXPECT_EQ((*w)[0].label(), "Deny window \"weekend-freeze\" (spec.changeWindows[0])");
  EXPECT_FALSE((*w)[1].deny);
  EXPECT_EQ((*w)[1].index, 1U);
  EXPECT_EQ((*w)[1].zone.name(), "UTC");  // the default
  EXPECT_EQ((*w)[1].inFlight, InFlight::kFinishStep);
  EXPECT_FALSE((*w)[1].rollbacksDenied);
  EXPECT_EQ((*w)[1].label(), "Allow window (spec.changeWindows[1])");
}

TEST(CompileChangeWindows, EveryErrorNamesItsFieldPath) {
  v1::ChangeWindowSpec badRule = freeze();
  badRule.rrule = "FREQ=WEEKLY;BYDAY=XX";
  v1::ChangeWindowSpec badZone = freeze();
  badZone.timeZone = "Europe/Berlim";
  v1::ChangeWindowSpec badEnums = freeze();
  badEnums.kind = "deny";
  badEnums.inFlight = "stop";
  badEnums.rollbacks = "Maybe";
  badEnums.duration = "64";
  StatusOr<std::vector<ChangeWindow>> w =
      compileChangeWindows({freeze(), badRule, badZone, badEnums});
  ASSERT_FALSE(w.isOk());
  const std::string& m = w.status().message();
  for (const char* expected :
       {"spec.changeWindows[1].rrule: \"FREQ=WEEKLY;BYDAY=XX\" is not an RFC 5545 recurrence rule",
        "spec.changeWindows[2].timeZone: unknown time zone \"Europe/Berlim\"",
        "spec.changeWindows[3].kind: must be Allow or Deny, got \"deny\"",
        "spec.changeWindows[3].inFlight: must be finishStep, pause or abort, got \"stop\"",
        "spec.changeWindows[3].rollbacks: must be Allow or Deny, got \"Maybe\"",
        "spec.changeWindows[3].duration: \"64\" is not a duration"}) {
    EXPECT_NE(m.find(expected), std::string::npos) << "missing: " << expected << "\nin: " << m;
  }
  EXPECT_EQ(m.find("spec.changeWindows[0]"), std::string::npos) << m;
}

TEST(CompileChangeWindows, Bounds) {
  std::vector<v1::ChangeWindowSpec> many(v1::kMaxChangeWindows + 1, freeze());
  StatusOr<std::vector<ChangeWindow>> w = compileChangeWindows(many);
  ASSERT_FALSE(w.isOk());
  EXPECT_NE(w.status().message().find("spec.changeWindows: at most 20 windows, got 21"),
            std::string::npos);
  v1::ChangeWindowSpec longRule = freeze();
  longRule.rrule = "FREQ=DAILY;" + std::string(600, 'X');
  v1::ChangeWindowSpec longName = freeze();
  longName.name = std::string(64, 'n');
  w = compileChangeWindows({longRule, longName}, "spec.changeWindows");
  ASSERT_FALSE(w.isOk());
  EXPECT_NE(w.status().message().find("spec.changeWindows[0].rrule: longer than 512 characters"),
            std::string::npos);
  EXPECT_NE(w.status().message().find("spec.changeWindows[1].name: longer than 63 characters"),
            std::string::npos);
}

TEST(CompileChangeWindows, DecodedFromTheModel) {
  // What the API server stores, through the api typed view: defaults for absent fields, a
  // mistyped field read as "" and refused by name.
  const nlohmann::json model = nlohmann::json::parse(R"({
    "metadata": {"name": "gpt2", "namespace": "ml"},
    "spec": {"changeWindows": [
      {"kind": "Deny", "rrule": "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16", "duration": "64h",
       "timeZone": "Europe/Berlin", "inFlight": "pause", "rollbacks": "Deny"},
      {"kind": "Allow", "rrule": "FREQ=DAILY;BYHOUR=9", "duration": "8h"},
      {"kind": "Allow", "rrule": 7, "duration": "8h"}]}})");
  const v1::Model m = v1::decodeModel(model);
  ASSERT_EQ(m.spec.changeWindows.size(), 3U);
  StatusOr<std::vector<ChangeWindow>> w =
      compileChangeWindows({m.spec.changeWindows[0], m.spec.changeWindows[1]});
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  EXPECT_EQ((*w)[0].inFlight, InFlight::kPause);
  EXPECT_TRUE((*w)[0].rollbacksDenied);
  EXPECT_EQ((*w)[1].zone.name(), "UTC");
  w = compileChangeWindows(m.spec.changeWindows);
  ASSERT_FALSE(w.isOk());
  EXPECT_NE(w.status().message().find("spec.changeWindows[2].rrule: is empty"), std::string::npos)
      << w.status().message();
}

}  // namespace
}  // namespace lockstep::changewindows
