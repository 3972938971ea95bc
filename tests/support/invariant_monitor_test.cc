// The invariant monitor's checks over hand-made worlds (the pure part; the
// watches are exercised by invariant_monitor_cluster_test.cc).
#include "tests/support/invariant_monitor.h"

#include <gtest/gtest.h>

namespace lockstep::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kImage = "registry.example/torch@sha256:" + std::string(64, '1');

json pod(const std::string& release, const std::string& track, bool ready,
         const std::string& hash = "h1", bool terminating = false) {
  json p = {
      {"metadata",
       {{"name", track + "-" + release},
        {"labels", {{"lockstep.dev/track", track}, {"lockstep.dev/release", release}}},
        {"annotations",
         {{"lockstep.dev/package", "pkg-" + release}, {"lockstep.dev/closure-hash", hash}}}}},
      {"spec", {{"containers", json::array({{{"name", "server"}, {"image", kImage}}})}}},
      {"status",
       {{"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  if (terminating) p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  return p;
}

json release(const std::string& name, const std::string& phase, int replicas = 2,
             const std::string& capacity = "surge") {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"model", "gpt2"},
            {"package", "pkg-" + name},
            {"closureHash", "h1"},
            {"stages", json::array({{{"name", "prod"},
                                     {"serving", {{"replicas", replicas}}},
                                     {"canary", {{"capacity", capacity}}}}})}}},
          {"status", {{"phase", phase}}}};
}

ModelWorld world() {
  ModelWorld w;
  w.model = "gpt2";
  w.runtimeImage = kImage;
  w.releases["v1"] = release("v1", "Promoted");
  w.modelObject = {{"status", {{"prod", {{"release", "v1"}}}}}};
  return w;
}

std::string only(const std::vector<std::string>& v) { return v.size() == 1 ? v[0] : ""; }

TEST(InvariantsTest, ReadyPodsCountOnlyAfterTheFirstRolloutReachedN) {
  ModelWorld w = world();
  MonitorOptions o;
  MonitorState s;
  Clock::time_point t{};
  w.pods["a"] = pod("v1", "stable", true);
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty()) << "first rollout: 1 of 2 is fine";
  w.pods["b"] = pod("v1", "stable", true);
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty());
  w.pods["b"] = pod("v1", "stable", true, "h1", /*terminating=*/true);
  EXPECT_EQ(only(checkInvariants(w, o, s, t)),
            "ready: 1 Ready serving pod(s) < 2 (N=2, surge); Ready by track/release: stable/v1=1");
  // In drain mode (the release in the canary slot drains) N-1 is allowed.
  w.releases["v2"] = release("v2", "Canary", 2, "drain");
  w.modelObject["status"]["canary"] = {{"release", "v2"}};
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty());
  w.pods.erase("a");
  EXPECT_NE(only(checkInvariants(w, o, s, t)).find("ready: 0 Ready"), std::string::npos);
}

// N-1 only where the operator drains: the Model's capacity, or a manual
// rollback whose stable Deployment trades one pod at a time (maxSurge 0).
TEST(InvariantsTest, TheModelsCapacityAndARollbacksOnePodTradeAllowNMinusOne) {
  ModelWorld w = world();
  MonitorOptions o;
  MonitorState s;
  Clock::time_point t{};
  w.pods["a"] = pod("v1", "stable", true);
  w.pods["b"] = pod("v1", "stable", true);
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty());
  w.pods["b"] = pod("v1", "stable", true, "h1", /*terminating=*/true);
  ASSERT_FALSE(checkInvariants(w, o, s, t).empty()) << "surge: N";
  w.modelObject["spec"]["capacity"] = "drain";
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty()) << "the Model drains";
  w.modelObject["spec"].erase("capacity");
  // A rollback to v1, stable rolling with maxSurge 0.
  w.modelObject["status"]["history"] =
      json::array({{{"action", "Promoted"}, {"release", "v0"}},
                   {{"action", "Rollback"}, {"release", "v1"}, {"from", "v0"}}});
  w.deployments["gpt2-stable"] = {
      {"spec", {{"strategy", {{"rollingUpdate", {{"maxSurge", 1}, {"maxUnavailable", 0}}}}}}}};
  EXPECT_FALSE(checkInvariants(w, o, s, t).empty()) << "a surge rollback keeps N";
  w.deployments["gpt2-stable"]["spec"]["strategy"]["rollingUpdate"] = {{"maxSurge", 0},
                                                                       {"maxUnavailable", 1}};
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty()) << "the one-pod trade: N-1";
  w.pods.erase("a");
  EXPECT_FALSE(checkInvariants(w, o, s, t).empty()) << "never below N-1";
}

// Issue 28 (must-show 7): a Ready serving pod runs what the Model names: its
// prod or its canary; the prod before only while stable is rolling.
TEST(InvariantsTest, EveryReadyPodRunsContentTheModelNames) {
  ModelWorld w = world();
  auto rec = [](const std::string& r) {
    return json{{"release", r}, {"package", "pkg-" + r}, {"runtime", {{"closureHash", "h1"}}}};
  };
  w.modelObject["status"]["prod"] = rec("v2");
  w.modelObject["status"]["history"] = json::array({{{"action", "Promoted"},
                                                     {"release", "v1"},
                                                     {"package", "pkg-v1"},
                                                     {"runtime", {{"closureHash", "h1"}}}},
                                                    {{"action", "RolledBack"},
                                                     {"release", "v9"},
                                                     {"package", "pkg-v9"},
                                                     {"runtime", {{"closureHash", "h1"}}}},
                                                    {{"action", "Promoted"},
                                                     {"release", "v2"},
                                                     {"package", "pkg-v2"},
                                                     {"runtime", {{"closureHash", "h1"}}}}});
  w.releases["v2"] = release("v2", "Promoted");
  w.deployments["gpt2-stable"] = {
      {"metadata", {{"generation", 4}}},
      {"spec", {{"replicas", 2}}},
      {"status", {{"observedGeneration", 4}, {"updatedReplicas", 2}, {"replicas", 2}}}};
  MonitorOptions o;
  o.grace = std::chrono::milliseconds(1000);
  MonitorState s;
  Clock::time_point t{};
  auto served = [&](Clock::time_point at) {
    std::vector<std::string> out;
    for (const std::string& v : checkInvariants(w, o, s, at))
      if (v.rfind("served:", 0) == 0) out.push_back(v);
    return out;
  };
  w.pods["a"] = pod("v2", "stable", true);
  w.pods["b"] = pod("v2", "stable", true);
  EXPECT_TRUE(served(t).empty());
  // A pod of v1 (the prod before), Ready while stable has finished rolling.
  w.pods["c"] = pod("v1", "stable", true);
  EXPECT_TRUE(served(t).empty()) << "a moment's grace";
  EXPECT_EQ(only(served(t + 2s)),
            "served: Ready pod c (stable/v1) runs package pkg-v1 with closure hash h1, not the "
            "content of the Model's prod (v2)");
  // While stable is rolling, the prod before is allowed; never the rolled-back v9.
  w.deployments["gpt2-stable"]["status"]["updatedReplicas"] = 1;
  EXPECT_TRUE(served(t + 3s).empty());
  w.pods["d"] = pod("v9", "canary", true);
  served(t + 3s);
  EXPECT_EQ(only(served(t + 5s)),
            "served: Ready pod d (canary/v9) runs package pkg-v9 with closure hash h1, not the "
            "content of the Model's prod (v2) or the prod before it (v1, stable rolling)");
  // A canary the Model names is fine; a pod not Ready or Terminating is not serving.
  w.modelObject["status"]["canary"] = rec("v9");
  EXPECT_TRUE(served(t + 6s).empty());
  w.modelObject["status"].erase("canary");
  w.pods["d"] = pod("v9", "canary", false);
  EXPECT_TRUE(served(t + 7s).empty());
  w.pods["d"] = pod("v9", "canary", true, "h1", /*terminating=*/true);
  EXPECT_TRUE(served(t + 8s).empty());
  // v10 took the canary slot from v9 and drains v9's canary first: while the
  // canary Deployment still carries v9's template, v9's pods serve.
  w.modelObject["status"]["canary"] = rec("v10");
  w.releases["v9"] = release("v9", "Superseded");
  w.deployments["gpt2-canary"] = {
      {"spec",
       {{"replicas", 1},
        {"template", {{"metadata", {{"labels", {{"lockstep.dev/release", "v9"}}}}}}}}}};
  w.pods["d"] = pod("v9", "canary", true);
  EXPECT_TRUE(served(t + 9s).empty());
  EXPECT_TRUE(served(t + 12s).empty()) << "draining";
  // Once the canary Deployment carries v10, a Ready v9 pod is a violation.
  w.deployments["gpt2-canary"]["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"] =
      "v10";
  served(t + 13s);
  EXPECT_NE(only(served(t + 15s)).find("served: Ready pod d (canary/v9)"), std::string::npos);
}

TEST(InvariantsTest, ATripleNoReleaseValidatedIsAViolationOnceItLasts) {
  ModelWorld w = world();
  MonitorOptions o;
  MonitorState s;
  Clock::time_point t{};
  w.pods["a"] = pod("v1", "stable", true);
  w.pods["x"] = pod("v1", "stable", true, "h-other");
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty()) << "within the grace";
  std::string v = only(checkInvariants(w, o, s, t + 6s));
  EXPECT_NE(v.find("triple: pod x runs (package pkg-v1, image " + kImage +
                   ", closure hash h-other), which no release validated"),
            std::string::npos)
      << v;
  // A gate's evidence validates its triple (and then only what the gates ran on counts).
  w.releases["v1"]["status"]["stages"] = json::array(
      {{{"evidence", {{"package", "pkg-v1"}, {"image", kImage}, {"closureHash", "h-other"}}}}});
  EXPECT_TRUE(checkInvariants(w, o, s, t + 7s).empty()) << "pod a's grace starts";
  std::string a = only(checkInvariants(w, o, s, t + 13s));
  EXPECT_NE(a.find("triple: pod a runs"), std::string::npos) << a;
  w.pods["a"] = pod("v1", "stable", true, "h-other");
  EXPECT_TRUE(checkInvariants(w, o, s, t + 14s).empty());
}

// Issue 28: the content the Model records as prod is validated content even
// when no release object validates it any more (deleted after promotion).
TEST(InvariantsTest, TheModelsRecordedProdContentIsValidWithoutItsRelease) {
  ModelWorld w = world();
  MonitorOptions o;
  MonitorState s;
  Clock::time_point t{};
  w.releases.clear();
  w.pods["a"] = pod("v1", "stable", true, "h-prod");
  w.pods["b"] = pod("v1", "stable", true, "h-prod");
  auto joined = [](const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& x : v) out += x + "\n";
    return out;
  };
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty()) << "within the grace";
  EXPECT_NE(joined(checkInvariants(w, o, s, t + 6s)).find("triple: pod a runs"), std::string::npos);
  w.modelObject["status"]["prod"] = {{"release", "v1"},
                                     {"package", "pkg-v1"},
                                     {"runtime", {{"image", kImage}, {"closureHash", "h-prod"}}}};
  EXPECT_TRUE(checkInvariants(w, o, s, t + 7s).empty());
  // Another runtime than the record's is still a violation.
  w.pods["b"] = pod("v1", "stable", true, "h-other");
  EXPECT_TRUE(checkInvariants(w, o, s, t + 8s).empty()) << "within the grace";
  const std::string late = joined(checkInvariants(w, o, s, t + 14s));
  EXPECT_NE(late.find("triple: pod b runs"), std::string::npos) << late;
  // And it is not what the Model names as prod (the served invariant).
  EXPECT_NE(late.find("served: Ready pod b (stable/v1) runs package pkg-v1 with closure hash "
                      "h-other, not the content of the Model's prod (v1)"),
            std::string::npos)
      << late;
}

TEST(InvariantsTest, TwoPromotedOrTwoCanariesAreViolationsOnceTheyLast) {
  ModelWorld w = world();
  MonitorOptions o;
  MonitorState s;
  Clock::time_point t{};
  w.releases["v2"] = release("v2", "Promoted");
  w.releases["v3"] = release("v3", "Canary");
  w.releases["v4"] = release("v4", "Canary");
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty()) << "the displaced one has its grace";
  auto v = checkInvariants(w, o, s, t + 5s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], "promoted: 2 releases of model gpt2 are Promoted: v1, v2");
  EXPECT_EQ(v[1], "canary: 2 releases of model gpt2 hold the canary slot: v3, v4");
  w.releases["v1"]["status"]["phase"] = "Superseded";
  w.releases["v3"]["status"]["phase"] = "Superseded";
  EXPECT_TRUE(checkInvariants(w, o, s, t + 6s).empty());
}

TEST(InvariantsTest, PassedStepsWithAGapAreAViolation) {
  ModelWorld w = world();
  MonitorOptions o;
  MonitorState s;
  w.releases["v1"]["status"]["canary"]["passedSteps"] = json::array({{{"step", 0}}, {{"step", 1}}});
  EXPECT_TRUE(checkInvariants(w, o, s, Clock::time_point{}).empty());
  w.releases["v1"]["status"]["canary"]["passedSteps"] = json::array({{{"step", 0}}, {{"step", 2}}});
  EXPECT_EQ(only(checkInvariants(w, o, s, Clock::time_point{})),
            R"(steps: release v1 passedSteps [{"step":0},{"step":2}] skips step 1)");
}

TEST(InvariantsTest, FixedReplicasArmWithoutReleases) {
  ModelWorld w;
  w.model = "sim";
  MonitorOptions o;
  o.replicas = 2;
  o.validated = {{"pkg-v1", kImage, "h1"}};
  MonitorState s;
  Clock::time_point t{};
  w.pods["a"] = pod("v1", "stable", true);
  w.pods["b"] = pod("v1", "stable", true);
  EXPECT_TRUE(checkInvariants(w, o, s, t).empty());
  w.pods["b"] = pod("v1", "stable", false);
  EXPECT_NE(only(checkInvariants(w, o, s, t)).find("ready: 1 Ready"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::testing
