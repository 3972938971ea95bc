// The ModelRelease controller against the real control plane: the operator
// binary (chart RBAC, chart webhook configuration, leader election) runs gate
// Jobs on KWOK nodes in an enforcing namespace. KWOK ends each gate pod with the
// termination message the test puts in the pod template's annotation
// lockstep.dev/test-termination-message (tests/cluster/kwok/stages.yaml).
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kDigest =
    "sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kImage = "registry.example/runtimes/torch@" + kDigest;
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
const std::string kOtherLock = "numpy==2.0.0 --hash=sha256:" + std::string(64, 'b') + "\n";

// A gate stage whose pods end with `message` after `duration`.
json gate(const std::string& name, const std::string& message, json metrics = json::array(),
          const std::string& duration = "1s", const std::string& timeout = "10m") {
  json tmpl = {
      {"metadata",
       {{"annotations",
         {{"lockstep.dev/test-termination-message", message},
          {"lockstep.dev/test-duration", duration}}}}},
      {"spec",
       {{"containers", json::array({{{"name", name}, {"command", {"python", "gate.py"}}}})}}}};
  return {{"name", name},
          {"gate", {{"template", tmpl}, {"metrics", metrics}, {"timeout", timeout}}}};
}

json minMetric(const std::string& name, double min) { return {{"name", name}, {"min", min}}; }

class ModelReleaseControllerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    OperatorProcess::installClusterPieces(sharedWebhookPort());
    op_ = new OperatorProcess();
    ASSERT_EQ(op_->start(), "");
  }
  static void TearDownTestSuite() {
    delete op_;
    op_ = nullptr;
    OperatorProcess::uninstallWebhooks();
  }
  void SetUp() override {
    if (!op_->running()) {
      ASSERT_EQ(op_->start(), "");
    }
    ns_ = uniqueName("mr");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
    ASSERT_EQ(kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce"}).exitCode, 0);
    hash_ = applyReadyRuntimeEnv(ns_, "torch", kImage, kLock);
    ASSERT_FALSE(hash_.empty()) << "RuntimeEnv torch never became Ready";
  }
  void TearDown() override {
    if (HasFailure() && op_) std::cerr << "operator log tail:\n" << op_->log() << std::endl;
    auto r = kubectl({"delete", "namespace", ns_, "--timeout=120s"});
    EXPECT_EQ(r.exitCode, 0) << "namespace did not finish deleting: " << r.err;
  }

  void applyRuntimeEnv(const std::string& lock) {
    json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "RuntimeEnv"},
                {"metadata", {{"name", "torch"}, {"namespace", ns_}}},
                {"spec", {{"image", kImage}, {"lock", {{"inline", lock}}}}}};
    auto r = kubectl({"apply", "-f", "-"}, rte.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  CommandResult createRelease(const std::string& name, const json& stages) {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}, {"namespace", ns_}}},
               {"spec",
                {{"model", "gpt2"},
                 {"package", kPackage},
                 {"runtimeEnvRef", {{"name", "torch"}}},
                 {"closureHash", hash_},
                 {"stages", stages}}}};
    return kubectl({"create", "-f", "-"}, mr.dump());
  }

  json release(const std::string& name) { return kubectlJson({"get", "mr", name, "-n", ns_}); }

  // Waits for status.phase; returns the release.
  json waitPhase(const std::string& name, const std::string& phase,
                 std::chrono::seconds timeout = std::chrono::seconds(90)) {
    json last;
    bool ok = eventually(
        [&] {
          last = release(name);
          return !last.is_discarded() && last["status"].value("phase", "") == phase;
        },
        timeout);
    EXPECT_TRUE(ok) << "phase " << phase << " not reached: " << last["status"].dump(2);
    return last;
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

  static OperatorProcess* op_;
  std::string ns_, hash_;
};

OperatorProcess* ModelReleaseControllerTest::op_ = nullptr;

TEST_F(ModelReleaseControllerTest, EvalThenCiPassWithMetricsAndEvidence) {
  json stages = json::array(
      {gate("eval", R"({"accuracy":0.84,"loss":1.9})", json::array({minMetric("accuracy", 0.82)})),
       gate("ci", "")});
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
  EXPECT_NE(op_->scrapeMetrics().find(
                "lockstep_release_stage_results_total{result=\"succeeded\",stage=\"eval\"}"),
            std::string::npos);
}

TEST_F(ModelReleaseControllerTest, MetricBelowThresholdFailsAtEvalAndStartsNoCi) {
  json stages =
      json::array({gate("eval", R"({"accuracy":0.71})", json::array({minMetric("accuracy", 0.82)})),
                   gate("ci", "")});
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
  ASSERT_EQ(createRelease("notjson", json::array({gate("eval", "accuracy=0.9",
                                                       json::array({minMetric("accuracy", 0.5)}))}))
                .exitCode,
            0);
  ASSERT_EQ(createRelease("missing", json::array({gate("eval", R"({"loss":1})",
                                                       json::array({minMetric("accuracy", 0.5)}))}))
                .exitCode,
            0);
  ASSERT_EQ(
      createRelease("slow", json::array({gate("eval", "", json::array(), "60s", "3s")})).exitCode,
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
  json ci = gate("ci", "");
  ci["approval"] = "Manual";
  ASSERT_EQ(createRelease("gated", json::array({gate("eval", ""), ci})).exitCode, 0);
  json mr = waitPhase("gated", "Testing");
  ASSERT_TRUE(eventually([&] {
    mr = release("gated");
    return stageOf(mr, "ci").value("phase", "") == "WaitingForApproval";
  })) << mr["status"].dump(2);
  EXPECT_EQ(condition(mr, "Ready", "reason"), "WaitingForApproval");
  EXPECT_EQ(jobs("gated")["items"].size(), 1u);
  std::string user = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"}).out;
  ASSERT_FALSE(user.empty());
  auto r = kubectl({"annotate", "mr", "gated", "-n", ns_, "approve.lockstep.dev/ci=" + user});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  mr = waitPhase("gated", "Validated");
  EXPECT_EQ(stageOf(mr, "ci")["approvedBy"], user);

  // Abort while eval runs (a long Job).
  ASSERT_EQ(
      createRelease("stopme", json::array({gate("eval", "", json::array(), "300s")})).exitCode, 0);
  ASSERT_TRUE(eventually([&] { return jobs("stopme")["items"].size() == 1; }));
  r = kubectl({"annotate", "mr", "stopme", "-n", ns_, "lockstep.dev/abort=" + user});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  mr = waitPhase("stopme", "Failed");
  EXPECT_EQ(condition(mr, "Ready", "reason"), "Aborted");
  EXPECT_EQ(stageOf(mr, "eval")["message"], "aborted by " + user);
  EXPECT_TRUE(eventually([&] { return jobs("stopme")["items"].empty(); })) << jobs("stopme").dump();
}

TEST_F(ModelReleaseControllerTest, LockChangeDuringEvalMakesTheReleaseStaleAndStartsNoCi) {
  json stages = json::array({gate("eval", "", json::array(), "8s"), gate("ci", "")});
  ASSERT_EQ(createRelease("drift", stages).exitCode, 0);
  ASSERT_TRUE(eventually([&] { return jobs("drift")["items"].size() == 1; }));
  applyRuntimeEnv(kOtherLock);
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
  json ci = gate("ci", "");
  ci["approval"] = "Manual";
  json stages = json::array(
      {gate("eval", R"({"accuracy":0.9})", json::array({minMetric("accuracy", 0.5)}), "6s"), ci});
  ASSERT_EQ(createRelease("crash", stages).exitCode, 0);
  // SIGKILL while the eval Job runs.
  ASSERT_TRUE(eventually([&] { return jobs("crash")["items"].size() == 1; }));
  op_->stop(SIGKILL);
  ASSERT_EQ(op_->start(), "");
  json mr;
  ASSERT_TRUE(eventually([&] {
    mr = release("crash");
    return stageOf(mr, "ci").value("phase", "") == "WaitingForApproval";
  })) << mr["status"].dump(2);
  // SIGKILL while waiting for approval.
  op_->stop(SIGKILL);
  ASSERT_EQ(op_->start(), "");
  std::string user = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"}).out;
  ASSERT_EQ(
      kubectl({"annotate", "mr", "crash", "-n", ns_, "approve.lockstep.dev/ci=" + user}).exitCode,
      0);
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
