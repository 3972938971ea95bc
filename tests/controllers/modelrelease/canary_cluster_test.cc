// The prod stage against the real control plane and a real Prometheus: the
// operator binary runs canaries of one model on KWOK nodes (pods become Ready),
// measures the canary's error ratio from Prometheus 2.42 scraping the test
// exporter (tests/cluster/prometheus.sh), promotes or rolls back, and records
// both on the model's anchor ConfigMap. docs/rollouts.md is the contract.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/prometheus/prometheus_world.h"
#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000002";
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
const std::string kErrorRatio =
    R"(sum(rate(lockstep_test_requests_total{track="canary",code="500"}[5s])) / )"
    R"(sum(rate(lockstep_test_requests_total{track="canary"}[5s])))";

std::string package(char c) { return "registry.example/models/gpt2@sha256:" + std::string(64, c); }

class CanaryClusterTest : public ::testing::Test {
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
    if (!op_->running()) ASSERT_EQ(op_->start(), "");
    std::string error;
    prom_ = PrometheusWorld::start({}, error);
    ASSERT_NE(prom_, nullptr) << error;
    ns_ = uniqueName("canary");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
    ASSERT_EQ(kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce"}).exitCode, 0);
    hash_ = applyReadyRuntimeEnv(ns_, "torch", kImage, kLock);
    ASSERT_FALSE(hash_.empty()) << "RuntimeEnv torch never became Ready";
  }
  void TearDown() override {
    if (HasFailure() && op_) std::cerr << "operator log tail:\n" << op_->log() << std::endl;
    auto r = kubectl({"delete", "namespace", ns_, "--timeout=120s"});
    EXPECT_EQ(r.exitCode, 0) << "namespace did not finish deleting: " << r.err;
    prom_.reset();
  }

  json prodStage(json steps, int replicas = 2) {
    json tmpl = {{"spec", {{"containers", json::array({{{"name", "server"}}})}}}};
    return {{"name", "prod"},
            {"serving", {{"template", tmpl}, {"replicas", replicas}, {"port", 8080}}},
            {"canary", {{"steps", std::move(steps)}, {"progressDeadline", "2m"}}}};
  }

  json analysedStep(int weight, int count) {
    return {{"weight", weight},
            {"analysis",
             {{"prometheus",
               {{"address", prom_->url()},
                {"query", kErrorRatio},
                {"max", 0.1},
                {"interval", "2s"},
                {"count", count}}}}}};
  }

  CommandResult createRelease(const std::string& name, const std::string& pkg, const json& stages) {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}, {"namespace", ns_}}},
               {"spec",
                {{"model", "gpt2"},
                 {"package", pkg},
                 {"runtimeEnvRef", {{"name", "torch"}}},
                 {"closureHash", hash_},
                 {"stages", stages}}}};
    return kubectl({"create", "-f", "-"}, mr.dump());
  }

  json get(const std::string& kind, const std::string& name) {
    return kubectlJson({"get", kind, name, "-n", ns_});
  }

  json waitPhase(const std::string& name, const std::string& phase,
                 std::chrono::seconds timeout = std::chrono::seconds(150)) {
    json last;
    bool ok = eventually(
        [&] {
          last = get("mr", name);
          return !last.is_discarded() && last.contains("status") && last["status"].is_object() &&
                 last["status"].value("phase", "") == phase;
        },
        timeout);
    EXPECT_TRUE(ok) << name << ": phase " << phase << " not reached: " << last["status"].dump(2);
    return last;
  }

  static std::string condition(const json& mr, const std::string& type,
                               const char* field = "status") {
    for (const json& c : mr["status"]["conditions"]) {
      if (c["type"] == type) return c.value(field, "");
    }
    return "";
  }

  // Ready serving pods per (track, release) of the model.
  std::map<std::string, int> readyPods() {
    std::map<std::string, int> out;
    json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/model=gpt2"});
    for (const json& p : pods["items"]) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      bool ready = false;
      for (const json& c : p["status"].value("conditions", json::array()))
        ready = ready || (c["type"] == "Ready" && c["status"] == "True");
      if (!ready) continue;
      const json& l = p["metadata"]["labels"];
      out[l.value("lockstep.dev/track", "") + "/" + l.value("lockstep.dev/release", "")]++;
    }
    return out;
  }

  static OperatorProcess* op_;
  std::unique_ptr<PrometheusWorld> prom_;
  std::string ns_, hash_;
};

OperatorProcess* CanaryClusterTest::op_ = nullptr;

// Must-show 1 and 2 of issue 14: v1 and v2 promoted through analysed canary
// steps (v1 superseded), then v3's canary error ratio is high: automatic
// rollback, prod stays on v2, the anchor's history says why.
TEST_F(CanaryClusterTest, PromotesThroughAnalysedStepsThenRollsBackABadCanary) {
  ASSERT_TRUE(prom_->setRate("canary", 0.0));
  ASSERT_EQ(createRelease("v1", package('1'),
                          json::array({prodStage(json::array({analysedStep(50, 2)}))}))
                .exitCode,
            0);
  json v1 = waitPhase("v1", "Promoted");
  EXPECT_EQ(condition(v1, "Ready"), "True");
  EXPECT_EQ(v1["status"]["canary"]["phase"], "Promoted");
  // Promoted after its analysis passed: both measurements taken and within max.
  EXPECT_EQ(v1.value("/status/canary/analysis/successful"_json_pointer, 0), 2)
      << v1["status"].dump(2);
  json stable = get("deployment", "gpt2-stable");
  EXPECT_EQ(stable["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"], "v1");
  EXPECT_EQ(stable["spec"]["template"]["metadata"]["annotations"]["lockstep.dev/closure-hash"],
            hash_);
  EXPECT_EQ(stable["spec"]["replicas"], 2);
  EXPECT_TRUE(eventually([&] { return readyPods()["stable/v1"] == 2; }))
      << json(readyPods()).dump();

  // v2: two steps, the first analysed; v1 becomes Superseded.
  ASSERT_EQ(createRelease("v2", package('2'),
                          json::array({prodStage(json::array(
                              {analysedStep(50, 2), json{{"weight", 100}, {"pause", "2s"}}}))}))
                .exitCode,
            0);
  json v2 = waitPhase("v2", "Promoted");
  EXPECT_EQ(v2["status"]["canary"]["knownGood"]["release"], "v1");
  EXPECT_EQ(v2.value("/status/canary/step"_json_pointer, -1), 1) << v2["status"].dump(2);
  waitPhase("v1", "Superseded", std::chrono::seconds(30));
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/v2"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);

  // v3: the canary serves errors: the analysis fails and v3 is rolled back.
  ASSERT_TRUE(prom_->setRate("canary", 0.5));
  ASSERT_EQ(createRelease(
                "v3", package('3'),
                json::array({prodStage(json::array({analysedStep(50, 3), json{{"weight", 100}}}))}))
                .exitCode,
            0);
  json v3 = waitPhase("v3", "RolledBack");
  EXPECT_EQ(condition(v3, "Stalled"), "True");
  EXPECT_EQ(condition(v3, "Stalled", "reason"), "AnalysisFailed") << v3["status"].dump(2);
  EXPECT_EQ(v3.value("/status/canary/analysis/phase"_json_pointer, std::string()), "Failed")
      << v3["status"].dump(2);
  EXPECT_GE(v3.value("/status/canary/analysis/failed"_json_pointer, 0), 1);
  // Prod never left v2: stable still runs it at full size, the canary is gone.
  stable = get("deployment", "gpt2-stable");
  EXPECT_EQ(stable["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"], "v2");
  EXPECT_EQ(stable["spec"]["replicas"], 2);
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/v2"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  EXPECT_EQ(get("mr", "v2")["status"]["phase"], "Promoted");

  json anchor = get("configmap", "lockstep-model-gpt2");
  EXPECT_EQ(anchor["data"]["promoted"], "v2");
  EXPECT_EQ(anchor["data"].value("canary", ""), "");
  json history = json::parse(anchor["data"].value("history", "[]"));
  ASSERT_EQ(history.size(), 3u) << history.dump(2);
  EXPECT_EQ(history[0]["release"], "v1");
  EXPECT_EQ(history[1]["release"], "v2");
  EXPECT_EQ(history[2]["action"], "RolledBack");
  EXPECT_EQ(history[2]["reason"], "AnalysisFailed");

  json events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                             "involvedObject.name=v3,reason=RollingBack"});
  EXPECT_FALSE(events["items"].empty()) << "no RollingBack Event for v3";
  std::string metrics = op_->scrapeMetrics();
  EXPECT_NE(
      metrics.find(R"(lockstep_release_rollbacks_total{model="gpt2",reason="AnalysisFailed"})"),
      std::string::npos);
}

// Must-show 4 (part): an indefinite pause holds until `promote.lockstep.dev/<step>`.
TEST_F(CanaryClusterTest, IndefinitePauseWaitsForPromote) {
  ASSERT_EQ(
      createRelease(
          "p1", package('4'),
          json::array({prodStage(json::array({json{{"weight", 50}, {"pause", "Indefinite"}}}))}))
          .exitCode,
      0);
  json p1 = waitPhase("p1", "Canary");
  EXPECT_TRUE(eventually([&] {
    json mr = get("mr", "p1");
    return condition(mr, "Ready", "reason") == "CanaryPaused";
  })) << get("mr", "p1")["status"].dump(2);
  auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_EQ(who.exitCode, 0) << who.err;
  // The webhook checks the value (the user's own name) and the RBAC verb promote.
  auto wrong = kubectl({"annotate", "mr", "p1", "-n", ns_, "promote.lockstep.dev/0=someone-else"});
  EXPECT_NE(wrong.exitCode, 0);
  EXPECT_NE(wrong.err.find("must be your own user name"), std::string::npos) << wrong.err;
  auto r = kubectl({"annotate", "mr", "p1", "-n", ns_, "promote.lockstep.dev/0=" + who.out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  p1 = waitPhase("p1", "Promoted");
  EXPECT_EQ(get("deployment",
                "gpt2-stable")["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"],
            "p1");
}

}  // namespace
}  // namespace lockstep::testing
