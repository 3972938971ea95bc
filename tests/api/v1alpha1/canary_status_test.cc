// status.canary typed (api/v1alpha1/canary_status.h): a status with every
// field round-trips, every malformed member is refused naming its path, and
// members this version does not know survive a decode and an encode.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "api/v1alpha1/canary_status.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

// A status.canary with every field the CRD (and the planner) knows, shaped as
// the planner writes it mid-rollout: step 2 of 3 after two passed steps,
// analysis running, a promotion requested, a window pause recorded.
json everyField() {
  return json::parse(R"json({
    "phase": "Progressing",
    "capacity": "drain",
    "startedAt": "2026-11-30T09:00:00Z",
    "step": 2,
    "stepStartedAt": "2026-11-30T09:20:00Z",
    "weightReachedAt": "2026-11-30T09:22:00Z",
    "lastProgressAt": "2026-11-30T09:22:00Z",
    "podsToTarget": 0,
    "windowPausedAt": "2026-11-30T09:25:00Z",
    "promotion": "FullWeight",
    "promotedBy": "alice",
    "abortedBy": "bob",
    "reason": "AnalysisRunning",
    "message": "step 3/3 at weight 100%: analysis 1 of 3 measurements",
    "rollbackStartedAt": "2026-11-30T09:30:00Z",
    "finishedAt": "2026-11-30T09:31:00Z",
    "modelUid": "6f1c2b9e-0000-4000-8000-000000000001",
    "anchorUid": "6f1c2b9e-0000-4000-8000-000000000002",
    "knownGood": {"release": "gpt2-v1", "package": "registry.example/gpt2@sha256:aa",
                  "closureHash": "sha256:bb"},
    "analysis": {
      "phase": "Running",
      "message": "1 of 3 measurements (0 failed, 1 consecutive errors)",
      "count": 1, "successful": 1, "failed": 0, "errors": 1, "consecutiveErrors": 1,
      "lastMeasuredAt": "2026-11-30T09:23:30Z",
      "lastWasError": true,
      "measurements": [
        {"at": "2026-11-30T09:23:00Z", "value": 0.0125},
        {"at": "2026-11-30T09:23:30Z", "error": "empty result"}
      ]
    },
    "passedSteps": [
      {"step": 0, "weight": 25, "startedAt": "2026-11-30T09:00:00Z",
       "weightReachedAt": "2026-11-30T09:02:00Z", "passedAt": "2026-11-30T09:10:00Z"},
      {"step": 1, "weight": 50, "startedAt": "2026-11-30T09:10:00Z",
       "weightReachedAt": "2026-11-30T09:12:00Z", "passedAt": "2026-11-30T09:20:00Z",
       "promotedBy": "carol",
       "analysis": {"count": 3, "successful": 2, "failed": 1, "errors": 0}}
    ]
  })json");
}

// Every leaf of `j` as (JSON pointer, the value there).
void leaves(const json& j, const json::json_pointer& at,
            std::vector<std::pair<json::json_pointer, json>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) leaves(v, at / k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) leaves(j[i], at / i, out);
  } else {
    out.emplace_back(at, j);
  }
}

// "/passedSteps/1/analysis/failed" → "status.canary.passedSteps[1].analysis.failed".
std::string fieldPath(const json::json_pointer& p) {
  std::string out = "status.canary";
  std::istringstream in(p.to_string());
  std::string token;
  std::getline(in, token, '/');  // before the leading '/'
  while (std::getline(in, token, '/')) {
    const bool index = token.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + token + "]" : "." + token;
  }
  return out;
}

std::string errorOfCanaryStatus(const json& j) {
  auto s = decodeCanaryStatus(j);
  return s.isOk() ? "(decoded)" : s.status().message();
}

TEST(CanaryStatus, EveryFieldRoundTrips) {
  const json written = everyField();
  auto s = decodeCanaryStatus(written);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  // Typed, not parked in `extra`: every member of the fixture is a known field.
  EXPECT_TRUE(s->extra.empty()) << s->extra.dump();
  ASSERT_TRUE(s->knownGood && s->analysis && s->passedSteps);
  EXPECT_TRUE(s->knownGood->extra.empty());
  EXPECT_TRUE(s->analysis->extra.empty());
  for (const CanaryMeasurement& m : s->analysis->measurements.value()) EXPECT_TRUE(m.extra.empty());
  for (const PassedStep& p : *s->passedSteps) {
    EXPECT_TRUE(p.extra.empty());
    if (p.analysis) {
      EXPECT_TRUE(p.analysis->extra.empty());
    }
  }
  EXPECT_EQ(s->step, 2);
  EXPECT_EQ(s->podsToTarget, 0);
  EXPECT_EQ(s->knownGoodRelease(), "gpt2-v1");
  EXPECT_EQ(s->analysis->lastWasError, true);
  EXPECT_EQ(s->analysis->measurements->at(0).value, 0.0125);
  EXPECT_EQ(s->analysis->measurements->at(1).error, "empty result");
  EXPECT_FALSE(s->analysis->measurements->at(1).value.has_value());
  ASSERT_EQ(s->passedSteps->size(), 2u);
  EXPECT_EQ(s->passedSteps->at(1).promotedBy, "carol");
  EXPECT_EQ(s->passedSteps->at(1).analysis->failed, 1);
  EXPECT_FALSE(s->passedSteps->at(0).analysis.has_value());

  const json encoded = encodeCanaryStatus(*s);
  EXPECT_EQ(encoded, written) << encoded.dump(2);
  EXPECT_EQ(encoded.dump(), written.dump()) << "the same bytes";
  // And back: the typed value survives its own encoding.
  auto again = decodeCanaryStatus(encoded);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(encodeCanaryStatus(*again), written);
}

TEST(CanaryStatus, AbsentStaysAbsent) {
  // A started canary records only what it reached: nothing is filled in.
  const json written = {{"phase", "Promoted"}, {"finishedAt", "2026-11-30T10:00:00Z"}};
  auto s = decodeCanaryStatus(written);
  ASSERT_TRUE(s.isOk());
  EXPECT_FALSE(s->step.has_value());
  EXPECT_FALSE(s->weightReachedAt.has_value());
  EXPECT_FALSE(s->knownGood.has_value());
  EXPECT_EQ(s->knownGoodRelease(), "");
  EXPECT_EQ(encodeCanaryStatus(*s), written);
  // A null member reads as absent.
  auto nulls = decodeCanaryStatus({{"phase", "Progressing"}, {"step", nullptr}});
  ASSERT_TRUE(nulls.isOk());
  EXPECT_FALSE(nulls->step.has_value());
  EXPECT_EQ(encodeCanaryStatus(*nulls), json({{"phase", "Progressing"}}));
  EXPECT_EQ(encodeCanaryStatus(CanaryStatus{}), json::object());
}

// Each leaf of the fixture replaced by a value of another type: refused, and
// the error names that very member.
TEST(CanaryStatus, EveryMalformedMemberIsNamed) {
  const json good = everyField();
  std::vector<std::pair<json::json_pointer, json>> all;
  leaves(good, json::json_pointer(), all);
  ASSERT_GT(all.size(), 40u);
  for (const auto& [at, value] : all) {
    json bad = good;
    std::string want;
    if (value.is_string()) {
      bad[at] = 7;
      want = "must be a string";
    } else if (value.is_boolean()) {
      bad[at] = "yes";
      want = "must be a boolean";
    } else if (value.is_number_integer()) {
      bad[at] = 1.5;  // a number, not an integer
      want = "must be an integer";
    } else {
      bad[at] = "0.1";
      want = "must be a number";
    }
    EXPECT_EQ(errorOfCanaryStatus(bad), fieldPath(at) + ": " + want) << at.to_string();
  }
}

TEST(CanaryStatus, MalformedShapesAreNamed) {
  const json good = everyField();
  struct Case {
    std::function<void(json&)> breakIt;
    std::string error;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j = "Progressing"; }, "status.canary: must be an object"},
      {[](json& j) { j["knownGood"] = "gpt2-v1"; }, "status.canary.knownGood: must be an object"},
      {[](json& j) { j["analysis"] = json::array(); }, "status.canary.analysis: must be an object"},
      {[](json& j) { j["analysis"]["measurements"] = json::object(); },
       "status.canary.analysis.measurements: must be an array"},
      {[](json& j) { j["analysis"]["measurements"][1] = "empty result"; },
       "status.canary.analysis.measurements[1]: must be an object"},
      {[](json& j) {
         j["passedSteps"] = {{"step", 0}};
       },
       "status.canary.passedSteps: must be an array"},
      {[](json& j) { j["passedSteps"][1].erase("step"); },
       "status.canary.passedSteps[1].step: is required"},
      {[](json& j) { j["passedSteps"][0]["analysis"] = 3; },
       "status.canary.passedSteps[0].analysis: must be an object"},
      {[](json& j) { j["step"] = "2"; }, "status.canary.step: must be an integer"},
      {[](json& j) { j["step"] = 9223372036854775808ULL; },
       "status.canary.step: must be an integer of at most 64 bits"},
  };
  for (const Case& c : cases) {
    json bad = good;
    c.breakIt(bad);
    EXPECT_EQ(errorOfCanaryStatus(bad), c.error);
  }
  // The planner's own range repairs are not the decoder's: any integer step decodes.
  json negative = good;
  negative["step"] = -1;
  EXPECT_EQ(errorOfCanaryStatus(negative), "(decoded)");
  // The path is the caller's.
  auto named = decodeCanaryStatus({{"step", true}}, "items[3].status.canary");
  ASSERT_FALSE(named.isOk());
  EXPECT_EQ(named.status().message(), "items[3].status.canary.step: must be an integer");
}

TEST(CanaryStatus, UnknownMembersSurviveAtEveryLevel) {
  json written = everyField();
  written["trafficSplit"] = {{"mesh", "istio"}, {"weights", {90, 10}}};
  written["knownGood"]["runtimeRevision"] = 4;
  written["analysis"]["provider"] = "platform";
  written["analysis"]["measurements"][0]["query"] = "sum(rate(errors[1m]))";
  written["passedSteps"][0]["note"] = "held by a window";
  written["passedSteps"][1]["analysis"]["inconclusive"] = 0;
  auto s = decodeCanaryStatus(written);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ(s->extra, json({{"trafficSplit", written["trafficSplit"]}}));
  EXPECT_EQ(s->knownGood->extra, json({{"runtimeRevision", 4}}));
  EXPECT_EQ(encodeCanaryStatus(*s), written);
  // Changed by a planner, they are still there.
  s->step = 0;
  s->passedSteps->pop_back();
  json changed = encodeCanaryStatus(*s);
  EXPECT_EQ(changed["trafficSplit"], written["trafficSplit"]);
  EXPECT_EQ(changed["analysis"]["measurements"][0]["query"], "sum(rate(errors[1m]))");
  EXPECT_EQ(changed["passedSteps"][0]["note"], "held by a window");
  EXPECT_EQ(changed["step"], 0);
}

TEST(CanaryStatusRead, AbsentDecodedOrRefused) {
  CanaryStatusRead none = readCanaryStatus(json());
  EXPECT_FALSE(none.written);
  EXPECT_EQ(none.get(), nullptr);
  EXPECT_EQ(none.error, "");
  EXPECT_FALSE(none.orEmpty().phase.has_value());

  CanaryStatusRead read;
  read = everyField();  // assigning the JSON decodes it
  EXPECT_TRUE(read.written);
  ASSERT_NE(read.get(), nullptr);
  EXPECT_EQ(read.get()->step, 2);
  EXPECT_EQ(read.error, "");

  json bad = everyField();
  bad["analysis"]["count"] = "one";
  read = bad;
  EXPECT_TRUE(read.written);
  EXPECT_EQ(read.get(), nullptr) << "nothing is read from a refused status";
  EXPECT_FALSE(read.orEmpty().step.has_value());
  EXPECT_EQ(read.error, "status.canary.analysis.count: must be an integer");
  EXPECT_EQ(read.refused, bad) << "kept as written";
}

// The API server gives a number the operator wrote as 0.0 back as the integer
// 0: read and written back it stays 0 (the bytes of a status, and of the prod
// record built from it, do not change); changed by a planner it is the new number.
TEST(CanaryStatus, AMeasurementWrittenAsAnIntegerKeepsItsForm) {
  json written = everyField();
  written["analysis"]["measurements"] = json::parse(
      R"([{"value": 0}, {"value": 1}, {"value": -3}, {"value": 0.5}, {"value": 2.0}
])");
  auto s = decodeCanaryStatus(written);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ((*s->analysis->measurements)[1].value, 1.0);
  EXPECT_EQ(encodeCanaryStatus(*s).dump(), written.dump());
  (*s->analysis->measurements)[0].value = 0.25;
  (*s->analysis->measurements)[1].value = 1.0;
  json changed = encodeCanaryStatus(*s)["analysis"]["measurements"];
  EXPECT_EQ(changed[0].dump(), R"({"value":0.25})");
  EXPECT_EQ(changed[1].dump(), R"({"value":1})") << "the same number: as written";
  CanaryMeasurement fresh;
  fresh.value = 1.0;
  CanaryAnalysisStatus a;
  a.measurements = std::vector<CanaryMeasurement>{fresh};
  CanaryStatus planned;
  planned.analysis = a;
  EXPECT_EQ(encodeCanaryStatus(planned)["analysis"]["measurements"][0].dump(), R"({"value":1.0})")
      << "a number the planner measured is written as one";
}

// readReleaseCanary(): a ModelRelease object's status.canary, read.
TEST(CanaryStatusRead, OfAReleaseObject) {
  EXPECT_FALSE(readReleaseCanary(json()).written);
  EXPECT_FALSE(readReleaseCanary({{"status", {{"phase", "Pending"}}}}).written);
  EXPECT_FALSE(readReleaseCanary({{"status", "broken"}}).written);
  CanaryStatusRead read = readReleaseCanary({{"status", {{"canary", everyField()}}}});
  ASSERT_NE(read.get(), nullptr);
  EXPECT_EQ(read.get()->knownGoodRelease(), "gpt2-v1");
  read = readReleaseCanary({{"status", {{"canary", {{"step", -1.5}}}}}});
  EXPECT_EQ(read.error, "status.canary.step: must be an integer");
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
