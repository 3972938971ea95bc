// The ModelRelease controller against the real control plane: the operator
// binary (chart RBAC, chart webhook configuration, leader election) runs gate
// Jobs on KWOK nodes in an enforcing namespace. KWOK ends each gate pod with the
// termination message the test puts in the pod template's annotation
// lockstep.dev/test-termination-message (tests/cluster/kwok/stages.yaml).
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string& kImage = kTestImage;
const std::string kPackage = testPackage('c');

json minMetric(const std::string& name, double min) { return {{"name", name}, {"min", min}}; }

class ModelReleaseControllerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator(), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "mr"}), "");
    ns_ = w_.ns();
    hash_ = w_.hash();
  }
  void TearDown() override { w_.tearDown(HasFailure()); }
  static OperatorProcess* op() { return &ReleaseWorld::op(); }

  void applyRuntimeEnv(const std::string& lock) {
    json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "RuntimeEnv"},
                {"metadata", {{"name", "torch"}, {"namespace", ns_}}},
                {"spec", {{"image", kImage}, {"lock", {{"inline", lock}}}}}};
    auto r = kubectl({"apply", "-f", "-"}, rte.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  CommandResult createRelease(const std::string& name, const json& stages) {
    return w_.createRelease(name, kPackage, stages);
  }
  json release(const std::string& name) { return w_.get("mr", name); }
  // Approves `stage` as kApprover, who holds the chart's approver role in the
  // test namespace: the creator (the admin user running kubectl, recorded by
  // the mutating webhook) may not approve its own release.
  CommandResult approve(const std::string& name, const std::string& stage) {
    kubectl({"create", "rolebinding", "release-approver", "-n", ns_,
             "--clusterrole=lockstep-release-approver", std::string("--user=") + kApprover});
    return kubectl({"--as=" + std::string(kApprover), "annotate", "mr", name, "-n", ns_,
                    "approve.lockstep.dev/" + stage + "=" + kApprover});
  }
  static constexpr const char* kApprover = "release-approver";
  json waitPhase(const std::string& name, const std::string& phase,
                 std::chrono::seconds timeout = std::chrono::seconds(90)) {
    return w_.waitPhase(name, phase, timeout);
  }

  static json stageOf(const json& mr, const std::string& name) {
    for (const json& s : mr["status"]["stages"]) {
      if (s["name"] == name) return s;
    }
    return json::object();
  }

  static std::string condition(const json& mr, const std::string& type,
                               const char* field = "status") {
    return conditionField(mr, type, field);
  }

  json jobs(const std::string& release) {
    return kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=" + release});
  }

  ReleaseWorld w_;
  std::string ns_, hash_;
};

TEST_F(ModelReleaseControllerTest, EvalThenCiPassWithMetricsAndEvidence) {
  json stages = json::array({gateStage("eval", R"({"accuracy":0.84,"loss":1.9})", "1s",
                                       json::array({minMetric("accuracy", 0.82)})),
                             gateStage("ci", "")});
  auto r = createRelease("v7", stages);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  json mr = waitPhase("v7", "Validated");
  EXPECT_EQ(condition(mr, "Ready"), "True");
  EXPECT_EQ(condition(mr, "Ready", "reason"), "Validated");
  EXPECT_EQ(mr["status"]["validatedClosureHash"], hash_);
  json eval = stageOf(mr, "eval");
  EXPECT_EQ(eval["phase"], "Succeeded");
  EXPECT_EQ(eval["metrics"]["accuracy"], 0.84);
  EXPECT_EQ(eval["metrics"]["loss"], 1.9);
  EXPECT_EQ(eval["evidence"]["package"], kPackage);
  EXPECT_EQ(eval["evidence"]["closureHash"], hash_);
  EXPECT_EQ(eval["evidence"]["image"], kImage);
  EXPECT_FALSE(eval["evidence"].value("jobUID", "").empty());
  EXPECT_FALSE(eval.value("startedAt", "").empty());
  EXPECT_FALSE(eval.value("finishedAt", "").empty());
  EXPECT_EQ(eval["packageMount"], "ImageVolume");
  EXPECT_EQ(stageOf(mr, "ci")["phase"], "Succeeded");

  // The gate pods ran on the validated runtime, by digest, with the package by digest,
  // and were admitted by the pod webhook of this enforcing namespace.
  json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/release=v7"});
  ASSERT_EQ(pods["items"].size(), 2u) << pods.dump();
  for (const json& p : pods["items"]) {
    EXPECT_EQ(p["metadata"]["annotations"]["lockstep.dev/closure-hash"], hash_);
    EXPECT_EQ(p["metadata"]["labels"]["lockstep.dev/runtime-env"], "torch");
    EXPECT_EQ(p["spec"]["containers"][0]["image"], kImage);
    bool mounted = false;
    for (const json& v : p["spec"]["volumes"]) {
      if (v.contains("image")) mounted = v["image"]["reference"] == kPackage;
    }
    EXPECT_TRUE(mounted) << p["spec"]["volumes"].dump();
    EXPECT_EQ(p["status"]["phase"], "Succeeded");
  }
  json j = jobs("v7");
  EXPECT_EQ(j["items"].size(), 2u);
  for (const json& job : j["items"]) {
    EXPECT_EQ(job["metadata"]["ownerReferences"][0]["kind"], "ModelRelease");
    EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  }
  // Events tell the story (written off the reconcile path: they may trail the status).
  std::string events;
  EXPECT_TRUE(eventually([&] {
    events = kubectl({"get", "events", "-n", ns_, "--field-selector", "involvedObject.name=v7",
                      "-o", "custom-columns=R:.reason"})
                 .out;
    return events.find("Validated") != std::string::npos;
  }));
  for (const char* reason : {"StageStarted", "StageSucceeded", "Validated"}) {
    EXPECT_NE(events.find(reason), std::string::npos) << reason << "\n" << events;
  }
  EXPECT_NE(op()->scrapeMetrics().find(
                "lockstep_release_stage_results_total{result=\"succeeded\",stage=\"eval\"}"),
            std::string::npos);
}

TEST_F(ModelReleaseControllerTest, MetricBelowThresholdFailsAtEvalAndStartsNoCi) {
  json stages = json::array(
      {gateStage("eval", R"({"accuracy":0.71})", "1s", json::array({minMetric("accuracy", 0.82)})),
       gateStage("ci", "")});
  ASSERT_EQ(createRelease("low", stages).exitCode, 0);
  json mr = waitPhase("low", "Failed");
  EXPECT_EQ(stageOf(mr, "eval")["phase"], "Failed");
  EXPECT_EQ(stageOf(mr, "eval")["message"], "metric \"accuracy\" is 0.71, below the minimum 0.82");
  EXPECT_EQ(condition(mr, "Stalled"), "True");
  EXPECT_EQ(condition(mr, "Ready", "reason"), "GateFailed");
  EXPECT_EQ(stageOf(mr, "ci")["phase"], "Pending");
  EXPECT_EQ(jobs("low")["items"].size(), 1u) << "a ci Job was created";
}

TEST_F(ModelReleaseControllerTest, BadReportsAndDeadlinesFailWithTheExactReason) {
  ASSERT_EQ(
      createRelease("notjson", json::array({gateStage("eval", "accuracy=0.9", "1s",
                                                      json::array({minMetric("accuracy", 0.5)}))}))
          .exitCode,
      0);
  ASSERT_EQ(
      createRelease("missing", json::array({gateStage("eval", R"({"loss":1})", "1s",
                                                      json::array({minMetric("accuracy", 0.5)}))}))
          .exitCode,
      0);
  ASSERT_EQ(createRelease("slow", json::array({gateStage("eval", "", "60s", json::array(), "3s")}))
                .exitCode,
            0);
  json mr = waitPhase("notjson", "Failed");
  EXPECT_EQ(stageOf(mr, "eval")["message"],
            "termination message of container \"eval\" is not a JSON object: \"accuracy=0.9\"");
  mr = waitPhase("missing", "Failed");
  EXPECT_EQ(stageOf(mr, "eval")["message"],
            "metric \"accuracy\" is missing from the termination message of container \"eval\"");
  mr = waitPhase("slow", "Failed");
  EXPECT_EQ(condition(mr, "Ready", "reason"), "GateTimedOut");
  EXPECT_NE(stageOf(mr, "eval")["message"].get<std::string>().find(
                "timed out after 3s (Job slow-eval-1: DeadlineExceeded)"),
            std::string::npos)
      << stageOf(mr, "eval").dump();
}

TEST_F(ModelReleaseControllerTest, ManualApprovalWaitsAndAbortStopsARunningEval) {
  json ci = gateStage("ci", "");
  ci["approval"] = "Manual";
  ASSERT_EQ(createRelease("gated", json::array({gateStage("eval", ""), ci})).exitCode, 0);
  json mr = waitPhase("gated", "Testing");
  ASSERT_TRUE(eventually([&] {
    mr = release("gated");
    return stageOf(mr, "ci").value("phase", "") == "WaitingForApproval";
  })) << mr["status"].dump(2);
  EXPECT_EQ(condition(mr, "Ready", "reason"), "WaitingForApproval");
  EXPECT_EQ(jobs("gated")["items"].size(), 1u);
  std::string user = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"}).out;
  ASSERT_FALSE(user.empty());
  EXPECT_EQ(release("gated")["metadata"]["annotations"].value("lockstep.dev/created-by", ""), user);
  auto r = approve("gated", "ci");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  mr = waitPhase("gated", "Validated");
  EXPECT_EQ(stageOf(mr, "ci")["approvedBy"], kApprover);

  // Abort while eval runs (a long Job).
  ASSERT_EQ(createRelease("stopme", json::array({gateStage("eval", "", "300s")})).exitCode, 0);
  ASSERT_TRUE(eventually([&] { return jobs("stopme")["items"].size() == 1; }));
  r = kubectl({"annotate", "mr", "stopme", "-n", ns_, "lockstep.dev/abort=" + user});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  mr = waitPhase("stopme", "Failed");
  EXPECT_EQ(condition(mr, "Ready", "reason"), "Aborted");
  EXPECT_EQ(stageOf(mr, "eval")["message"], "aborted by " + user);
  EXPECT_TRUE(eventually([&] { return jobs("stopme")["items"].empty(); })) << jobs("stopme").dump();
}

TEST_F(ModelReleaseControllerTest, LockChangeDuringEvalMakesTheReleaseStaleAndStartsNoCi) {
  json stages = json::array({gateStage("eval", "", "8s"), gateStage("ci", "")});
  ASSERT_EQ(createRelease("drift", stages).exitCode, 0);
  ASSERT_TRUE(eventually([&] { return jobs("drift")["items"].size() == 1; }));
  applyRuntimeEnv(kTestOtherLock);
  json mr;
  ASSERT_TRUE(eventually([&] {
    mr = release("drift");
    return condition(mr, "Stale") == "True" &&
           stageOf(mr, "eval").value("phase", "") == "Succeeded";
  })) << mr["status"].dump(2);
  EXPECT_EQ(condition(mr, "Stalled", "reason"), "RuntimeStale");
  EXPECT_NE(condition(mr, "Stale", "message").find(hash_), std::string::npos);
  EXPECT_EQ(stageOf(mr, "eval")["evidence"]["closureHash"], hash_);
  EXPECT_EQ(stageOf(mr, "ci")["phase"], "Pending");
  EXPECT_EQ(jobs("drift")["items"].size(), 1u) << "ci started on a stale runtime";
}

TEST_F(ModelReleaseControllerTest, KilledOperatorResumesWithOneJobPerStage) {
  json ci = gateStage("ci", "");
  ci["approval"] = "Manual";
  json stages = json::array(
      {gateStage("eval", R"({"accuracy":0.9})", "6s", json::array({minMetric("accuracy", 0.5)})),
       ci});
  ASSERT_EQ(createRelease("crash", stages).exitCode, 0);
  // SIGKILL while the eval Job runs.
  ASSERT_TRUE(eventually([&] { return jobs("crash")["items"].size() == 1; }));
  op()->stop(SIGKILL);
  ASSERT_EQ(op()->start(), "");
  json mr;
  ASSERT_TRUE(eventually([&] {
    mr = release("crash");
    return stageOf(mr, "ci").value("phase", "") == "WaitingForApproval";
  })) << mr["status"].dump(2);
  // SIGKILL while waiting for approval.
  op()->stop(SIGKILL);
  ASSERT_EQ(op()->start(), "");
  auto approved = approve("crash", "ci");
  ASSERT_EQ(approved.exitCode, 0) << approved.err;
  mr = waitPhase("crash", "Validated");
  EXPECT_EQ(stageOf(mr, "eval")["metrics"]["accuracy"], 0.9);
  json j = jobs("crash");
  ASSERT_EQ(j["items"].size(), 2u) << j.dump();
  std::set<std::string> names;
  for (const json& job : j["items"]) names.insert(job["metadata"]["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"crash-eval-1", "crash-ci-1"}));
}

}  // namespace
}  // namespace lockstep::testing
