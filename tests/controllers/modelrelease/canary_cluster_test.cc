// The prod stage against the real control plane and a real Prometheus: the
// operator binary runs canaries of one model on KWOK nodes (serving pods warm
// up before they are Ready and stay Terminating a while, docs/testing.md),
// measures the canary's error ratio from Prometheus 2.42 scraping the
// simulated model server's per-pod series (tests/cluster/prometheus.sh),
// promotes or rolls back, and records both on the model's Model.
// The invariant monitor (tests/support/invariant_monitor.h) watches every
// test's model. docs/rollouts.md is the contract.
#include <chrono>
#include <ctime>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

std::string package(char c) { return testPackage(c); }

// The lockstep CLI, with the test cluster's kubeconfig.
CommandResult lockstepCli(std::vector<std::string> args) {
  args.insert(args.begin(), LOCKSTEP_CLI_BIN);
  args.push_back("--kubeconfig=" + kubeconfigPath());
  return run(args);
}

std::string fillEveryGpuNow();

class CanaryClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator(), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "canary", .prometheus = true, .monitor = true}), "");
    ns_ = w_.ns();
    hash_ = w_.hash();
  }
  void TearDown() override {
    // Other tenants' namespaces go even when the test failed: their pods hold
    // GPUs the next test on this cluster needs.
    for (const std::string& ns : tenants_) kubectl({"delete", "namespace", ns, "--wait=false"});
    w_.tearDown(HasFailure());
  }

  json prodStage(json steps, int replicas = 2) {
    return ProdStageBuilder(std::move(steps)).replicas(replicas).build();
  }
  json analysedStep(int weight, int count, const std::string& address = "") {
    return w_.analysedStep(weight, count, "", address);
  }
  CommandResult createRelease(const std::string& name, const std::string& pkg, const json& stages) {
    return w_.createRelease(name, pkg, stages);
  }
  json get(const std::string& kind, const std::string& name) { return w_.get(kind, name); }
  json waitPhase(const std::string& name, const std::string& phase,
                 std::chrono::seconds timeout = std::chrono::seconds(150)) {
    return w_.waitPhase(name, phase, timeout);
  }
  static std::string condition(const json& mr, const std::string& type,
                               const char* field = "status") {
    return conditionField(mr, type, field);
  }
  std::map<std::string, int> readyPods() { return w_.readyPods(); }
  std::string stableRelease() { return w_.stableRelease(); }
  int jobsOf(const std::string& release) {
    json jobs = kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=" + release});
    return jobs.is_discarded() ? -1 : static_cast<int>(jobs["items"].size());
  }
  PrometheusWorld* prom() { return &w_.prom(); }
  // No pod of this namespace is terminating (their GPUs are free again).
  bool noneTerminating() {
    json pods = kubectlJson({"get", "pods", "-n", ns_});
    if (pods.is_discarded()) return false;
    for (const json& p : pods["items"])
      if (p["metadata"].contains("deletionTimestamp")) return false;
    return true;
  }

  // The RuntimeEnv asks for CUDA 12.8 (driver 570.26): gpu-0 and gpu-1 are
  // compatible, gpu-old-0 is not.
  void needCuda128() {
    json accel = {{"spec", {{"accelerator", {{"cuda", "12.8"}}}}}};
    ASSERT_EQ(
        kubectl({"patch", "rte", "torch", "-n", ns_, "--type=merge", "-p", accel.dump()}).exitCode,
        0);
    ASSERT_TRUE(eventually([&] {
      json rte = get("rte", "torch");
      return rte.value("/status/minDriver"_json_pointer, std::string()) != "" &&
             rte.value("/status/compatibleNodes"_json_pointer, 0) == 2;
    })) << get("rte", "torch")["status"].dump(2);
  }
  // A prod stage whose pods take one GPU each, on the 570 driver's nodes.
  json gpuStage(json steps, const std::string& capacity, const std::string& deadline = "20s") {
    json stage = prodStage(std::move(steps));
    stage["serving"]["template"]["spec"]["containers"][0]["resources"] = {
        {"requests", {{"nvidia.com/gpu", "1"}}}, {"limits", {{"nvidia.com/gpu", "1"}}}};
    // Only on nodes with the driver the runtime needs (as users pin GPU pods).
    stage["serving"]["template"]["spec"]["nodeSelector"] = {
        {"nvidia.com/cuda.driver.major", "570"}};
    stage["canary"]["capacity"] = capacity;
    stage["canary"]["progressDeadline"] = deadline;
    return stage;
  }

  // Other tenants' pods (in a namespace of their own, deleted at TearDown) take
  // every GPU left on the three GPU nodes; the namespace.
  std::string fillEveryGpu() {
    tenants_.push_back(fillEveryGpuNow());
    return tenants_.back();
  }

  ReleaseWorld w_;
  std::string ns_, hash_;
  std::vector<std::string> tenants_;
};

// Must-show 1 and 2 of issue 14: v1 and v2 promoted through analysed canary
// steps (v1 superseded), then v3's canary error ratio is high: automatic
// rollback, prod stays on v2, the Model's history says why.
TEST_F(CanaryClusterTest, PromotesThroughAnalysedStepsThenRollsBackABadCanary) {
  ASSERT_EQ(createRelease("v1", package('1'),
                          json::array({prodStage(json::array({analysedStep(50, 2)}))}))
                .exitCode,
            0);
  json v1 = waitPhase("v1", "Promoted");
  EXPECT_EQ(condition(v1, "Ready"), "True");
  // What a user (or a CI pipeline) waits with.
  auto waited = kubectl({"wait", "--for=condition=Ready", "mr/v1", "-n", ns_, "--timeout=20s"});
  EXPECT_EQ(waited.exitCode, 0) << waited.err;
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
  ASSERT_TRUE(prom()->setRate("v3", 0.5));
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

  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v2");
  EXPECT_FALSE(model.contains("/status/canary"_json_pointer)) << model["status"].dump(2);
  json history = model.value("/status/history"_json_pointer, json::array());
  ASSERT_EQ(history.size(), 3u) << history.dump(2);
  EXPECT_EQ(history[0]["release"], "v1");
  EXPECT_EQ(history[1]["release"], "v2");
  EXPECT_EQ(history[2]["action"], "RolledBack");
  EXPECT_EQ(history[2]["reason"], "AnalysisFailed");

  // Events are written off the reconcile path: they may trail the status.
  EXPECT_TRUE(eventually([&] {
    return !kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                         "involvedObject.name=v3,reason=RollingBack"})["items"]
                .empty();
  })) << "no RollingBack Event for v3";
  std::string metrics = ReleaseWorld::op().scrapeMetrics();
  EXPECT_NE(
      metrics.find(R"(lockstep_release_rollbacks_total{model="gpt2",reason="AnalysisFailed"})"),
      std::string::npos);
}

// A PromQL instant query against the world's Prometheus: the result vector.
json promQuery(const std::string& url, const std::string& query) {
  auto r = run({"curl", "-sS", "--fail", "--max-time", "5", "-G", url + "/api/v1/query",
                "--data-urlencode", "query=" + query});
  if (r.exitCode != 0) return json();
  json body = json::parse(r.out, nullptr, false);
  return body.is_discarded() ? json() : body.value("/data/result"_json_pointer, json());
}

// Must-show 3 of issue 19: a canary analysed over the simulator's per-release
// series. h2 is healthy: its pods never fail a request, so their code="500"
// series never exists; the query's `or vector(0)` makes that a ratio of 0 and
// the analysis passes. f3 serves well for a minute of measurements, then
// fails half its requests: the error series appears and the analysis fails.
TEST_F(CanaryClusterTest, AnalysisOverPerReleaseSeriesHealthyWithoutErrorSeriesThenFailing) {
  ASSERT_EQ(
      createRelease("v1", package('1'), json::array({prodStage(json::array({canaryStep(100)}))}))
          .exitCode,
      0);
  waitPhase("v1", "Promoted");

  json healthy = w_.analysedStep(50, 3, w_.releaseErrorRatio("h2"));
  ASSERT_EQ(createRelease("h2", package('2'),
                          json::array({prodStage(json::array({healthy, canaryStep(100)}))}))
                .exitCode,
            0);
  json h2 = waitPhase("h2", "Promoted");
  json passed = h2.value("/status/canary/passedSteps"_json_pointer, json::array());
  ASSERT_EQ(passed.size(), 2u) << h2["status"].dump(2);
  EXPECT_EQ(passed[0].value("/analysis/successful"_json_pointer, 0), 3) << passed.dump(2);
  EXPECT_EQ(passed[0].value("/analysis/failed"_json_pointer, -1), 0) << passed.dump(2);
  json served = promQuery(w_.prom().url(), R"(lockstep_test_requests_total{namespace=")" + ns_ +
                                               R"(",release="h2",code="200"})");
  EXPECT_FALSE(served.empty()) << "h2's pods were scraped";
  json errors = promQuery(w_.prom().url(), R"(lockstep_test_requests_total{namespace=")" + ns_ +
                                               R"(",release="h2",code="500"})");
  EXPECT_TRUE(errors.is_array() && errors.empty())
      << "no error, so no error series: " << errors.dump();

  // f3: measured every 5 s; after a minute of passing measurements its pods fail.
  json failing = w_.analysedStep(50, 40, w_.releaseErrorRatio("f3"), "", "5s");
  ASSERT_EQ(createRelease("f3", package('3'),
                          json::array({prodStage(json::array({failing, canaryStep(100)}))}))
                .exitCode,
            0);
  ASSERT_TRUE(eventually(
      [&] {
        return get("mr", "f3").value("/status/canary/analysis/successful"_json_pointer, 0) >= 12;
      },
      std::chrono::seconds(150)))
      << get("mr", "f3")["status"].dump(2);
  errors = promQuery(w_.prom().url(), R"(lockstep_test_requests_total{namespace=")" + ns_ +
                                          R"(",release="f3",code="500"})");
  EXPECT_TRUE(errors.is_array() && errors.empty()) << errors.dump();
  ASSERT_TRUE(prom()->setRate("f3", 0.5));
  json f3 = waitPhase("f3", "RolledBack", std::chrono::seconds(60));
  EXPECT_EQ(condition(f3, "Stalled", "reason"), "AnalysisFailed") << f3["status"].dump(2);
  EXPECT_GE(f3.value("/status/canary/analysis/successful"_json_pointer, 0), 12);
  EXPECT_GE(f3.value("/status/canary/analysis/failed"_json_pointer, 0), 1);
  // RolledBack waits until the canary pods are gone, and their series with
  // them (stale): ask for the last 5 minutes, not the current instant.
  errors = promQuery(w_.prom().url(), R"(last_over_time(lockstep_test_requests_total{namespace=")" +
                                          ns_ + R"(",release="f3",code="500"}[5m]))");
  EXPECT_FALSE(errors.empty()) << "the error series existed after the first error";
  EXPECT_EQ(stableRelease(), "h2");
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
  // Issue 29 (must-show 3): actions only for the present. A promote for a
  // step the canary is not paused at is refused (written early, it would end
  // that later pause the moment it is reached).
  auto early = kubectl({"annotate", "mr", "p1", "-n", ns_, "promote.lockstep.dev/3=" + who.out});
  EXPECT_NE(early.exitCode, 0);
  EXPECT_NE(early.err.find("promote.lockstep.dev/3\"]: the canary is at step 0, not step 3"),
            std::string::npos)
      << early.err;
  auto r = kubectl({"annotate", "mr", "p1", "-n", ns_, "promote.lockstep.dev/0=" + who.out});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  p1 = waitPhase("p1", "Promoted");
  EXPECT_EQ(get("deployment",
                "gpt2-stable")["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"],
            "p1");
  // A rollback for a revision the Model does not have yet (prod is at 1) is refused.
  ASSERT_TRUE(eventually([&] {
    return get("models.lockstep.dev", "gpt2").value("/status/revision"_json_pointer, 0) == 1;
  }));
  auto future = kubectl({"annotate", "mr", "p1", "-n", ns_, "rollback.lockstep.dev/2=" + who.out});
  EXPECT_NE(future.exitCode, 0);
  EXPECT_NE(future.err.find("the model's prod is at revision 1, not 2"), std::string::npos)
      << future.err;
  // An abort while the release waits for its runtime ends it; no canary pod is ever made.
  json waiting = w_.release("p2", package('5'))
                     .withProdStage(ProdStageBuilder(json::array({json{{"weight", 50}}})))
                     .build();
  waiting["spec"]["runtimeEnvRef"]["name"] = "not-yet";
  ASSERT_EQ(kubectl({"create", "-f", "-"}, waiting.dump()).exitCode, 0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "p2"), "Ready", "reason") == "RuntimeEnvNotFound";
  })) << get("mr", "p2")["status"].dump(2);
  ASSERT_EQ(kubectl({"annotate", "mr", "p2", "-n", ns_, "lockstep.dev/abort=" + who.out}).exitCode,
            0);
  json p2 = waitPhase("p2", "Failed", std::chrono::seconds(30));
  EXPECT_EQ(condition(p2, "Ready", "reason"), "Aborted") << p2["status"].dump(2);
  EXPECT_FALSE(p2["status"].contains("canary")) << p2["status"].dump(2);
  json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/release=p2"});
  EXPECT_TRUE(!pods.is_discarded() && pods["items"].empty()) << pods.dump(2);
  EXPECT_EQ(stableRelease(), "p1");
}

// Must-show 4: abort of a canary; `lockstep model rollback` after a promotion
// restores the previous release in one step without any gate Job, and
// `lockstep model history` shows every promotion and rollback.
TEST_F(CanaryClusterTest, AbortThenModelRollbackWithoutGates) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(createRelease("r1", package('1'), json::array({gateStage("eval"), prodStage(oneStep)}))
                .exitCode,
            0);
  waitPhase("r1", "Promoted");
  ASSERT_EQ(createRelease("r2", package('2'), json::array({gateStage("eval"), prodStage(oneStep)}))
                .exitCode,
            0);
  waitPhase("r2", "Promoted");
  waitPhase("r1", "Superseded", std::chrono::seconds(30));
  ASSERT_EQ(jobsOf("r1"), 1);

  // r3 pauses in canary; `lockstep release abort` rolls it back, prod stays on r2.
  ASSERT_EQ(
      createRelease(
          "r3", package('3'),
          json::array({prodStage(json::array({json{{"weight", 50}, {"pause", "Indefinite"}}}))}))
          .exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "r3"), "Ready", "reason") == "CanaryPaused";
  })) << get("mr", "r3")["status"].dump(2);
  // A rollback while a canary is in flight is refused by the CLI, writing nothing.
  auto busy = lockstepCli({"model", "rollback", "gpt2", "-n", ns_});
  EXPECT_EQ(busy.exitCode, 1);
  EXPECT_NE(busy.err.find("release \"r3\" is in canary on model \"gpt2\"; abort it first"),
            std::string::npos)
      << busy.err;
  auto abort = lockstepCli({"release", "abort", "r3", "-n", ns_});
  ASSERT_EQ(abort.exitCode, 0) << abort.err;
  json r3 = waitPhase("r3", "RolledBack");
  EXPECT_EQ(condition(r3, "Stalled", "reason"), "Aborted") << r3["status"].dump(2);
  EXPECT_EQ(stableRelease(), "r2");
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);

  // Roll the model back to r1: no gate runs, stable takes r1's template.
  auto rb = lockstepCli({"model", "rollback", "gpt2", "-n", ns_, "--wait", "--timeout=2m"});
  ASSERT_EQ(rb.exitCode, 0) << rb.out << rb.err;
  EXPECT_NE(rb.out.find("rollback from \"r2\" to \"r1\" requested by"), std::string::npos)
      << rb.out;
  json r1 = waitPhase("r1", "Promoted", std::chrono::seconds(60));
  // Ready only once stable has its N Ready pods (issue 20).
  ASSERT_TRUE(eventually([&] {
    r1 = get("mr", "r1");
    return condition(r1, "Ready") == "True";
  })) << r1["status"].dump(2);
  EXPECT_EQ(readyPods()["stable/r1"], 2) << json(readyPods()).dump();
  EXPECT_EQ(condition(r1, "Ready", "reason"), "ManualRollback") << r1["status"].dump(2);
  EXPECT_EQ(r1.value("/status/rollback/from"_json_pointer, std::string()), "r2");
  waitPhase("r2", "Superseded", std::chrono::seconds(30));
  EXPECT_EQ(stableRelease(), "r1");
  EXPECT_EQ(get("deployment", "gpt2-stable")["spec"]["template"]["metadata"]["annotations"]
                                            ["lockstep.dev/closure-hash"],
            hash_);
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/r1"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  EXPECT_EQ(jobsOf("r1"), 1) << "a rollback must not run r1's gates again";
  // The request is spent: prod stays on r1 and nothing replays it.
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "r1");
  EXPECT_EQ(model.value("/status/revision"_json_pointer, 0), 3);  // r1, r2, then the rollback

  auto history = lockstepCli({"model", "history", "gpt2", "-n", ns_});
  ASSERT_EQ(history.exitCode, 0) << history.err;
  EXPECT_NE(history.out.find("prod runs: r1"), std::string::npos) << history.out;
  for (const char* want : {"Promoted", "RolledBack", "Aborted", "Rollback", "from r2 by"})
    EXPECT_NE(history.out.find(want), std::string::npos) << want << "\n" << history.out;
  std::string metrics = ReleaseWorld::op().scrapeMetrics();
  EXPECT_NE(
      metrics.find(R"(lockstep_release_rollbacks_total{model="gpt2",reason="ManualRollback"})"),
      std::string::npos);
}

// Must-show 5: two releases of one model in flight: the newer takes the canary,
// the older is Superseded; never two Promoted.
TEST_F(CanaryClusterTest, NewerReleaseSupersedesTheOneInCanary) {
  json paused = json::array({json{{"weight", 50}, {"pause", "Indefinite"}}});
  ASSERT_EQ(createRelease("a1", package('5'), json::array({prodStage(paused)})).exitCode, 0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "a1"), "Ready", "reason") == "CanaryPaused";
  })) << get("mr", "a1")["status"].dump(2);
  ASSERT_EQ(createRelease("a2", package('6'),
                          json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  waitPhase("a2", "Promoted");
  waitPhase("a1", "Superseded", std::chrono::seconds(30));
  EXPECT_EQ(stableRelease(), "a2");
  json list = kubectlJson({"get", "mr", "-n", ns_});
  int promoted = 0;
  for (const json& mr : list["items"])
    promoted += mr.value("/status/phase"_json_pointer, std::string()) == "Promoted";
  EXPECT_EQ(promoted, 1);
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/a2"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
}

// Must-show 8: Prometheus unreachable during analysis: each failed query is an
// error, never a pass; after consecutiveErrorLimit the step fails.
TEST_F(CanaryClusterTest, UnreachablePrometheusFailsTheStepAfterTheErrorLimit) {
  ASSERT_EQ(createRelease("u1", package('7'),
                          json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  waitPhase("u1", "Promoted");
  // A port nobody listens on (a closed Prometheus).
  json step = analysedStep(50, 3, "http://127.0.0.1:1");
  step["analysis"]["prometheus"]["consecutiveErrorLimit"] = 2;
  ASSERT_EQ(
      createRelease("u2", package('8'), json::array({prodStage(json::array({step}))})).exitCode, 0);
  json u2 = waitPhase("u2", "RolledBack", std::chrono::seconds(180));
  EXPECT_EQ(condition(u2, "Stalled", "reason"), "AnalysisError") << u2["status"].dump(2);
  EXPECT_EQ(u2.value("/status/canary/analysis/successful"_json_pointer, -1), 0);
  EXPECT_GE(u2.value("/status/canary/analysis/errors"_json_pointer, 0), 3) << u2["status"].dump(2);
  EXPECT_EQ(stableRelease(), "u1");
  EXPECT_EQ(get("mr", "u1")["status"]["phase"], "Promoted");
}

// The runtime moves on: a new lock, a new closure hash, revision 2 of
// RuntimeEnv torch (revision 1, the world's lock, stays pinned by the
// releases built for it).
void editLock(ReleaseWorld& w) {
  json patch = {{"spec", {{"lock", {{"inline", kTestOtherLock}}}}}};
  ASSERT_EQ(
      kubectl({"patch", "rte", "torch", "-n", w.ns(), "--type=merge", "-p", patch.dump()}).exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    json rte = w.get("rte", "torch");
    return rte.value("/status/closureHash"_json_pointer, w.hash()) != w.hash() &&
           rte.value("/status/currentRevision"_json_pointer, 0) == 2;
  })) << w.get("rte", "torch")["status"].dump(2);
}

// The names of the pods of `track` running `release`, not terminating.
std::set<std::string> podsOf(ReleaseWorld& w, const std::string& track,
                             const std::string& release) {
  std::set<std::string> out;
  json pods = kubectlJson({"get", "pods", "-n", w.ns(), "-l",
                           "lockstep.dev/track=" + track + ",lockstep.dev/release=" + release});
  if (pods.is_discarded()) return out;
  for (const json& p : pods["items"]) {
    if (!p["metadata"].contains("deletionTimestamp")) out.insert(p["metadata"]["name"]);
  }
  return out;
}

// A node drain's eviction, after the lock edit: one stable pod of `release`
// is deleted, and its ReplicaSet re-creates it on the release's pinned
// revision (the old closure hash): admitted, Ready, prod back at full size.
void expectDeletedStablePodComesBack(ReleaseWorld& w, const std::string& release) {
  const std::string key = "stable/" + release;
  const int ready = w.readyPods()[key];
  ASSERT_GT(ready, 0) << json(w.readyPods()).dump();
  std::set<std::string> before = podsOf(w, "stable", release);
  ASSERT_FALSE(before.empty());
  // The deletion takes one Ready pod away until its replacement warms up: the
  // monitor's ready invariant sees that on purpose; every other one stays strict.
  InvariantMonitor* monitor = w.monitor();
  if (monitor != nullptr) {
    EXPECT_EQ(monitor->report(), "") << "before the deletion";
  }
  const std::string victim = *before.begin();
  ASSERT_EQ(kubectl({"delete", "pod", victim, "-n", w.ns(), "--wait=false"}).exitCode, 0);
  EXPECT_TRUE(eventually([&] {
    std::set<std::string> now = podsOf(w, "stable", release);
    return now.count(victim) == 0 && now.size() == before.size() && w.readyPods()[key] == ready;
  })) << json(w.readyPods()).dump()
      << w.get("deployment", w.model() + "-stable")["status"].dump(2);
  if (monitor != nullptr) {
    for (const InvariantMonitor::Violation& v : monitor->violations())
      EXPECT_EQ(v.invariant.rfind("ready: ", 0), 0u) << v.invariant << "\n" << v.trail;
    monitor->clear();
  }
  for (const std::string& name : podsOf(w, "stable", release)) {
    json pod = w.get("pod", name);
    EXPECT_EQ(
        pod.value("/metadata/annotations/lockstep.dev~1closure-hash"_json_pointer, std::string()),
        w.hash())
        << name;
  }
  json stable = w.get("deployment", w.model() + "-stable");
  for (const json& c : stable.value("/status/conditions"_json_pointer, json::array()))
    EXPECT_NE(c.value("type", ""), "ReplicaFailure") << c.dump();
}

// Events of object `name` in the world's namespace, one "reason: message" a line.
std::string eventsOf(ReleaseWorld& w, const std::string& name) {
  json events = kubectlJson(
      {"get", "events", "-n", w.ns(), "--field-selector", "involvedObject.name=" + name});
  std::string out;
  if (events.is_discarded()) return out;
  for (const json& e : events["items"])
    out += e.value("reason", "") + ": " + e.value("message", "") + "\n";
  return out;
}

// The value of env var `var` in the first container of a pod spec ("" when unset).
std::string envOf(const json& podSpec, const std::string& var) {
  for (const json& e : podSpec.value("/containers/0/env"_json_pointer, json::array()))
    if (e.value("name", "") == var) return e.value("value", "");
  return "";
}

// docs/rollouts.md, "Prod heals", during a canary: the canary Deployment's
// template edited by hand (an env var Lockstep sets, LOCKSTEP_RELEASE, set to
// `other` as `kubectl set env` would) is applied again from `release`, the
// release whose canary holds the slot, with a Warning Event ProdRestored on it
// naming the drift; its canary pods all run its template again, as many Ready
// as before, and nothing rolls back.
void expectCanaryTemplateHealed(ReleaseWorld& w, const std::string& release,
                                const std::string& other) {
  const std::string canary = w.model() + "-canary";
  auto templateSpec = [&] {
    return w.get("deployment", canary).value("/spec/template/spec"_json_pointer, json::object());
  };
  const std::string container =
      templateSpec().value("/containers/0/name"_json_pointer, std::string());
  ASSERT_FALSE(container.empty()) << w.get("deployment", canary).dump(2);
  ASSERT_EQ(envOf(templateSpec(), "LOCKSTEP_RELEASE"), release);
  const std::string key = "canary/" + release;
  const int ready = w.readyPods()[key];
  ASSERT_GT(ready, 0) << json(w.readyPods()).dump();
  // The edit rolls the canary's pods twice (to the edit and back): the monitor's
  // ready invariant sees that on purpose; every other one stays strict.
  InvariantMonitor* monitor = w.monitor();
  if (monitor != nullptr) {
    EXPECT_EQ(monitor->report(), "") << "before the canary template edit";
  }
  ASSERT_EQ(kubectl({"set", "env", "deployment/" + canary, "-n", w.ns(), "-c", container,
                     "LOCKSTEP_RELEASE=" + other})
                .exitCode,
            0);
  const std::string said = "ProdRestored: Deployment " + canary +
                           " spec.template.spec.containers[\"" + container +
                           "\"].env[\"LOCKSTEP_RELEASE\"].value is \"" + other + "\", not \"" +
                           release + "\": restored to release " + release +
                           "'s serving objects (release " + release + "'s canary holds the slot)";
  EXPECT_TRUE(eventually([&] { return eventsOf(w, release).find(said) != std::string::npos; }))
      << said << "\n"
      << eventsOf(w, release);
  EXPECT_TRUE(eventually([&] {
    if (envOf(templateSpec(), "LOCKSTEP_RELEASE") != release) return false;
    if (w.readyPods()[key] != ready) return false;
    json pods = kubectlJson({"get", "pods", "-n", w.ns(), "-l", "lockstep.dev/track=canary"});
    if (pods.is_discarded()) return false;
    for (const json& p : pods["items"]) {
      if (!p["metadata"].contains("deletionTimestamp") &&
          envOf(p["spec"], "LOCKSTEP_RELEASE") != release)
        return false;
    }
    return true;
  })) << templateSpec().dump(2)
      << json(w.readyPods()).dump();
  if (monitor != nullptr) {
    for (const InvariantMonitor::Violation& v : monitor->violations())
      EXPECT_EQ(v.invariant.rfind("ready: ", 0), 0u) << v.invariant << "\n" << v.trail;
    monitor->clear();
  }
}

// A MutatingAdmissionPolicy and its binding (namespace `ns` only), as a
// cluster's own mutating policy could be: every canary pod of `release`
// created while it stands claims closure `hash` (the pod, never its
// Deployment's template, so there is nothing for the operator to heal).
// Deleted when the object goes. error() says why it is not in force.
class ClaimPolicy {
 public:
  ClaimPolicy(const std::string& ns, const std::string& release, const std::string& hash)
      : name_(ns + "-claims") {
    auto labelIs = [](const std::string& key, const std::string& value) {
      return "'" + key + "' in object.metadata.labels && object.metadata.labels['" + key +
             "'] == '" + value + "'";
    };
    json policy;
    policy["apiVersion"] = "admissionregistration.k8s.io/v1";
    policy["kind"] = "MutatingAdmissionPolicy";
    policy["metadata"]["name"] = name_;
    json& spec = policy["spec"];
    spec["failurePolicy"] = "Fail";
    spec["reinvocationPolicy"] = "Never";
    spec["matchConstraints"]["resourceRules"] = json::array({json{{"apiGroups", {""}},
                                                                  {"apiVersions", {"v1"}},
                                                                  {"operations", {"CREATE"}},
                                                                  {"resources", {"pods"}}}});
    spec["matchConditions"] = json::array({json{
        {"name", "canary-pods-of-" + release},
        {"expression", "has(object.metadata.labels) && " + labelIs("lockstep.dev/track", "canary") +
                           " && " + labelIs("lockstep.dev/release", release)}}});
    json mutation;
    mutation["patchType"] = "ApplyConfiguration";
    mutation["applyConfiguration"]["expression"] =
        "Object{metadata: Object.metadata{annotations: {\"lockstep.dev/closure-hash\": \"" + hash +
        "\"}}}";
    spec["mutations"] = json::array({mutation});
    json binding;
    binding["apiVersion"] = "admissionregistration.k8s.io/v1";
    binding["kind"] = "MutatingAdmissionPolicyBinding";
    binding["metadata"]["name"] = name_;
    binding["spec"]["policyName"] = name_;
    binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] = {
        {"kubernetes.io/metadata.name", ns}};
    json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array({policy, binding})}};
    CommandResult r = kubectl({"apply", "-f", "-"}, list.dump());
    if (r.exitCode != 0) error_ = "MutatingAdmissionPolicy " + name_ + ": " + r.err;
  }
  ~ClaimPolicy() {
    kubectl({"delete", "mutatingadmissionpolicybinding", name_, "--ignore-not-found"});
    kubectl({"delete", "mutatingadmissionpolicy", name_, "--ignore-not-found"});
  }
  ClaimPolicy(const ClaimPolicy&) = delete;
  ClaimPolicy& operator=(const ClaimPolicy&) = delete;
  const std::string& error() const { return error_; }

 private:
  std::string name_, error_;
};

// Whether a pod like `deployment`'s (its template's labels but the serving
// one, annotations and spec), created with --dry-run=server, is refused by
// admission with a message containing `expected`; `err` gets kubectl's answer.
bool templatePodRefused(ReleaseWorld& w, const std::string& deployment, const std::string& expected,
                        std::string& err) {
  json tmpl = w.get("deployment", deployment).value("/spec/template"_json_pointer, json());
  if (!tmpl.is_object()) return false;
  tmpl["metadata"]["labels"].erase("lockstep.dev/serving");
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"generateName", deployment + "-probe-"},
                {"labels", tmpl["metadata"]["labels"]},
                {"annotations", tmpl["metadata"]["annotations"]}}},
              {"spec", tmpl["spec"]}};
  CommandResult r =
      kubectl({"create", "--dry-run=server", "-n", w.ns(), "-o", "name", "-f", "-"}, pod.dump());
  err = r.err;
  return r.exitCode != 0 && r.err.find(expected) != std::string::npos;
}

// docs/rollouts.md, "When the runtime moves on": a canary in flight when the
// lock is edited goes on on its pinned revision; only a pod on no admissible
// pair is refused. s0 is stable; s1's canary is paused at 50 % when the lock
// changes: s1 turns Stale, its next step's new canary pod is admitted, and a
// deleted stable pod of s0 comes back. The canary Deployment's template edited
// by hand is put back from s1 ("Prod heals": ProdRestored on s1) and the
// canary goes on. Then a mutating admission policy rewrites new canary pods to
// claim a closure hash that no revision has (the template stays s1's, so there
// is nothing to heal): a drained canary pod's replacement is refused, the
// release rolls back with AdmissionRefused and prod stays on s0.
TEST_F(CanaryClusterTest, CanaryPodsRefusedByAdmissionRollBack) {
  ASSERT_EQ(createRelease("s0", package('8'),
                          json::array({prodStage(json::array({json{{"weight", 100}}}), 4)}))
                .exitCode,
            0);
  waitPhase("s0", "Promoted");
  ASSERT_TRUE(eventually([&] { return readyPods()["stable/s0"] == 4; }))
      << json(readyPods()).dump();
  ASSERT_EQ(createRelease(
                "s1", package('9'),
                json::array({prodStage(json::array({json{{"weight", 50}, {"pause", "Indefinite"}},
                                                    json{{"weight", 75}, {"pause", "Indefinite"}},
                                                    json{{"weight", 100}}}),
                                       4)}))
                .exitCode,
            0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "s1"), "Ready", "reason") == "CanaryPaused" &&
           readyPods()["canary/s1"] == 2;
  })) << get("mr", "s1")["status"].dump(2);

  ASSERT_NO_FATAL_FAILURE(editLock(w_));
  ASSERT_TRUE(eventually([&] { return condition(get("mr", "s1"), "Stale") == "True"; }))
      << get("mr", "s1")["status"].dump(2);
  auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_EQ(who.exitCode, 0) << who.err;
  ASSERT_EQ(
      kubectl({"annotate", "mr", "s1", "-n", ns_, "promote.lockstep.dev/0=" + who.out}).exitCode,
      0);
  // Step 1 (75 %): a canary pod created after the edit, admitted on revision 1.
  ASSERT_TRUE(eventually([&] {
    json mr = get("mr", "s1");
    return mr.value("/status/canary/step"_json_pointer, -1) == 1 &&
           condition(mr, "Ready", "reason") == "CanaryPaused" && readyPods()["canary/s1"] == 3;
  })) << get("mr", "s1")["status"].dump(2)
      << json(readyPods()).dump();
  EXPECT_EQ(get("mr", "s1")["status"]["phase"], "Canary");
  ASSERT_NO_FATAL_FAILURE(expectDeletedStablePodComesBack(w_, "s0"));

  // The canary template edited by hand (an env var Lockstep sets): s1's is
  // applied again, with a ProdRestored Event, and the canary stays at step 1.
  ASSERT_NO_FATAL_FAILURE(expectCanaryTemplateHealed(w_, "s1", "s0"));
  EXPECT_EQ(get("mr", "s1")["status"]["phase"], "Canary");

  // A canary pod on no admissible pair: neither the current revision nor one
  // s1 pins, written by a mutating policy at admission (never in the template).
  const std::string unknown = "sha256:" + std::string(64, 'e');
  ClaimPolicy policy(ns_, "s1", unknown);
  ASSERT_EQ(policy.error(), "");
  // In force once a pod like s1's canary pods is refused for that claim.
  std::string probe;
  ASSERT_TRUE(eventually([&] { return templatePodRefused(w_, "gpt2-canary", unknown, probe); }))
      << probe;
  EXPECT_NE(probe.find("closure"), std::string::npos) << probe;
  InvariantMonitor* monitor = w_.monitor();
  if (monitor != nullptr) {
    EXPECT_EQ(monitor->report(), "") << "before the canary pod's deletion";
  }
  const std::set<std::string> canaryPods = podsOf(w_, "canary", "s1");
  ASSERT_EQ(canaryPods.size(), 3u);
  ASSERT_EQ(kubectl({"delete", "pod", *canaryPods.begin(), "-n", ns_, "--wait=false"}).exitCode, 0);
  json s1 = waitPhase("s1", "RolledBack");
  EXPECT_EQ(condition(s1, "Stalled", "reason"), "AdmissionRefused") << s1["status"].dump(2);
  const std::string message = condition(s1, "Stalled", "message");
  EXPECT_NE(message.find("closure"), std::string::npos) << message;
  EXPECT_NE(message.find(unknown), std::string::npos) << message;
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);
  EXPECT_EQ(stableRelease(), "s0");
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/s0"] == 4 && r.size() == 1;
  })) << json(readyPods()).dump();
  EXPECT_EQ(get("mr", "s0")["status"]["phase"], "Promoted");
  // The refused replacement left prod one Ready pod short until the rollback
  // grew stable: the ready invariant sees that on purpose; the others stay strict.
  if (monitor != nullptr) {
    for (const InvariantMonitor::Violation& v : monitor->violations())
      EXPECT_EQ(v.invariant.rfind("ready: ", 0), 0u) << v.invariant << "\n" << v.trail;
    monitor->clear();
  }
  // s0's revision is pinned, so its stable pods can be re-created: no
  // RollbackTargetStale (written with RollingBack, before the status).
  json warned = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                             "involvedObject.name=s1,reason=RollbackTargetStale"});
  ASSERT_FALSE(warned.is_discarded());
  EXPECT_TRUE(warned["items"].empty()) << warned["items"].dump(2);
}

// A lock edit never takes prod down (issue 21): l1's canary is paused when the
// lock changes; it is promoted on its pinned revision (Stale=True, no new
// stage starts for it), and after the promotion a deleted stable pod is
// re-created on that revision and admitted.
TEST_F(CanaryClusterTest, LockEditDuringACanaryPromotesOnThePinnedRevision) {
  ASSERT_EQ(
      createRelease("l1", package('7'),
                    json::array({prodStage(json::array(
                        {json{{"weight", 50}, {"pause", "Indefinite"}}, json{{"weight", 100}}}))}))
          .exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "l1"), "Ready", "reason") == "CanaryPaused";
  })) << get("mr", "l1")["status"].dump(2);
  ASSERT_NO_FATAL_FAILURE(editLock(w_));
  ASSERT_TRUE(eventually([&] { return condition(get("mr", "l1"), "Stale") == "True"; }))
      << get("mr", "l1")["status"].dump(2);
  auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_EQ(who.exitCode, 0) << who.err;
  ASSERT_EQ(
      kubectl({"annotate", "mr", "l1", "-n", ns_, "promote.lockstep.dev/0=" + who.out}).exitCode,
      0);
  json l1 = waitPhase("l1", "Promoted");
  EXPECT_EQ(condition(l1, "Stale"), "True") << l1["status"].dump(2);
  EXPECT_EQ(stableRelease(), "l1");
  EXPECT_EQ(get("deployment", "gpt2-stable")["spec"]["template"]["metadata"]["annotations"]
                                            ["lockstep.dev/closure-hash"],
            hash_);
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/l1"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  // Revision 1 is l1's: pinned by it, no longer current.
  json rte = get("rte", "torch");
  bool pinned = false;
  for (const json& rev : rte.value("/status/revisions"_json_pointer, json::array())) {
    if (rev.value("number", 0) != 1) continue;
    EXPECT_EQ(rev.value("closureHash", ""), hash_);
    for (const json& by : rev.value("pinnedBy", json::array())) pinned = pinned || by == "l1";
  }
  EXPECT_TRUE(pinned) << rte["status"].dump(2);
  ASSERT_NO_FATAL_FAILURE(expectDeletedStablePodComesBack(w_, "l1"));
}

// ---- Runtime pins (issue 21): what a release pinned is what its pods run ----

// Sets RuntimeEnv torch's inline lock and waits for it to resolve to
// revision `revision`; the new closure hash.
std::string setLock(ReleaseWorld& w, const std::string& lock, int revision) {
  json patch = {{"spec", {{"lock", {{"inline", lock}}}}}};
  EXPECT_EQ(
      kubectl({"patch", "rte", "torch", "-n", w.ns(), "--type=merge", "-p", patch.dump()}).exitCode,
      0);
  EXPECT_TRUE(eventually([&] {
    return w.get("rte", "torch").value("/status/currentRevision"_json_pointer, 0) == revision;
  })) << w.get("rte", "torch")["status"].dump(2);
  return w.get("rte", "torch").value("/status/closureHash"_json_pointer, std::string());
}

// The release's status.runtime.
json pinOf(ReleaseWorld& w, const std::string& release) {
  return w.get("mr", release).value("/status/runtime"_json_pointer, json());
}

// Every pod of `track` running `release` (not terminating) runs exactly
// (`image`, `hash`) of revision `revision`, as does the Deployment's template.
void expectTrackOn(ReleaseWorld& w, const std::string& track, const std::string& release,
                   const std::string& image, const std::string& hash, int revision) {
  json dep = w.get("deployment", w.model() + "-" + track);
  const json& tmpl = dep["spec"]["template"];
  EXPECT_EQ(tmpl.value("/metadata/labels/lockstep.dev~1release"_json_pointer, std::string()),
            release);
  EXPECT_EQ(tmpl.value("/spec/containers/0/image"_json_pointer, std::string()), image)
      << tmpl.dump(2);
  EXPECT_EQ(
      tmpl.value("/metadata/annotations/lockstep.dev~1closure-hash"_json_pointer, std::string()),
      hash);
  EXPECT_EQ(tmpl.value("/metadata/annotations/lockstep.dev~1runtime-revision"_json_pointer,
                       std::string()),
            std::to_string(revision));
  const std::set<std::string> pods = podsOf(w, track, release);
  EXPECT_FALSE(pods.empty()) << track << "/" << release;
  for (const std::string& name : pods) {
    json pod = w.get("pod", name);
    if (pod.is_discarded() || pod.is_null()) continue;  // gone meanwhile
    EXPECT_EQ(pod.value("/spec/containers/0/image"_json_pointer, std::string()), image) << name;
    EXPECT_EQ(
        pod.value("/metadata/annotations/lockstep.dev~1closure-hash"_json_pointer, std::string()),
        hash)
        << name;
  }
}

std::string whoAmI() {
  auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  EXPECT_EQ(who.exitCode, 0) << who.err;
  return who.out;
}

// Whether an Event `reason` on `object` has `text` in its message.
bool eventSays(ReleaseWorld& w, const std::string& object, const std::string& reason,
               const std::string& text) {
  json events = kubectlJson({"get", "events", "-n", w.ns(), "--field-selector",
                             "involvedObject.name=" + object + ",reason=" + reason});
  if (events.is_discarded()) return false;
  for (const json& e : events["items"]) {
    if (e.value("message", "").find(text) != std::string::npos) return true;
  }
  return false;
}

// Must-show 1 of issue 21: the lock is edited while v1 is in prod. Deleted
// stable pods come back on v1's pinned pair, v1 is Stale=True, and v2 (built
// for the new lock) passes its gate and canary while stable still runs
// revision 1: both admitted. The invariant monitor sees every serving pod on a
// validated triple throughout (TearDown).
TEST_F(CanaryClusterTest, LockEditWhileV1IsInProdKeepsProdAndANewReleaseGoesThrough) {
  ASSERT_EQ(
      createRelease("v1", package('1'),
                    json::array({gateStage("eval"), prodStage(json::array({canaryStep(100)}))}))
          .exitCode,
      0);
  waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return readyPods()["stable/v1"] == 2; }))
      << json(readyPods()).dump();
  // v1 pinned revision 1 at its first gate; its gate and serving pods ran it.
  EXPECT_EQ(pinOf(w_, "v1"),
            json({{"revision", 1}, {"image", kTestImage}, {"closureHash", hash_}}));
  expectTrackOn(w_, "stable", "v1", kTestImage, hash_, 1);

  const std::string newHash = setLock(w_, kTestOtherLock, 2);
  ASSERT_NE(newHash, hash_);
  ASSERT_TRUE(eventually([&] { return condition(get("mr", "v1"), "Stale") == "True"; }))
      << get("mr", "v1")["status"].dump(2);
  EXPECT_EQ(condition(get("mr", "v1"), "Stale", "reason"), "ClosureHashChanged");
  EXPECT_EQ(get("mr", "v1")["status"]["phase"], "Promoted");
  ASSERT_NO_FATAL_FAILURE(expectDeletedStablePodComesBack(w_, "v1"));
  expectTrackOn(w_, "stable", "v1", kTestImage, hash_, 1);
  EXPECT_EQ(pinOf(w_, "v1")["revision"], 1);  // never re-pinned

  // v2, packaged for the new lock: gate, then a canary paused at 50 % beside v1's stable.
  ModelReleaseBuilder v2 = w_.release("v2", package('2'));
  v2.closureHash(newHash);
  v2.withGate(gateStage("eval"));
  v2.withGate(prodStage(json::array({canaryStep(50, "Indefinite"), canaryStep(100)})));
  ASSERT_EQ(w_.create(v2).exitCode, 0);
  ASSERT_TRUE(eventually([&] {
    json mr = get("mr", "v2");
    return condition(mr, "Ready", "reason") == "CanaryPaused" && readyPods()["canary/v2"] >= 1 &&
           readyPods()["stable/v1"] >= 1;
  })) << get("mr", "v2")["status"].dump(2)
      << json(readyPods()).dump();
  EXPECT_EQ(pinOf(w_, "v2"),
            json({{"revision", 2}, {"image", kTestImage}, {"closureHash", newHash}}));
  EXPECT_EQ(condition(get("mr", "v2"), "Stale"), "False");
  expectTrackOn(w_, "canary", "v2", kTestImage, newHash, 2);
  expectTrackOn(w_, "stable", "v1", kTestImage, hash_, 1);

  ASSERT_EQ(
      kubectl({"annotate", "mr", "v2", "-n", ns_, "promote.lockstep.dev/0=" + whoAmI()}).exitCode,
      0);
  waitPhase("v2", "Promoted");
  waitPhase("v1", "Superseded", std::chrono::seconds(30));
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/v2"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  expectTrackOn(w_, "stable", "v2", kTestImage, newHash, 2);
  EXPECT_EQ(condition(get("mr", "v2"), "Stale"), "False");
}

// Must-show 2 of issue 21: after a lock edit, a manual rollback to r1 (on
// retained revision 1) runs r1's pinned pair exactly, with a RuntimeMovedOn
// Warning; a rollback to r2 once its revision was pruned is refused, by the
// CLI and by the controller, naming the revision.
TEST_F(CanaryClusterTest, ManualRollbackAfterALockEditRunsTheOldPairAndRefusesAPrunedOne) {
  json oneStep = json::array({canaryStep(100)});
  ASSERT_EQ(createRelease("r1", package('1'), json::array({gateStage("eval"), prodStage(oneStep)}))
                .exitCode,
            0);
  waitPhase("r1", "Promoted");
  const std::string newHash = setLock(w_, kTestOtherLock, 2);
  ModelReleaseBuilder r2 = w_.release("r2", package('2'));
  r2.closureHash(newHash);
  r2.withGate(gateStage("eval"));
  r2.withGate(prodStage(oneStep));
  ASSERT_EQ(w_.create(r2).exitCode, 0);
  waitPhase("r2", "Promoted");
  waitPhase("r1", "Superseded", std::chrono::seconds(30));
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/r2"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();

  // Back to r1: revision 1 is retained (r1 is a rollback target).
  auto rb =
      lockstepCli({"model", "rollback", "gpt2", "--to", "r1", "-n", ns_, "--wait", "--timeout=2m"});
  ASSERT_EQ(rb.exitCode, 0) << rb.out << rb.err;
  EXPECT_NE(rb.err.find("warning: the rollback runs release \"r1\" on its pinned revision 1 (" +
                        kTestImage + ", closure " + hash_ + ")"),
            std::string::npos)
      << rb.err;
  json r1 = waitPhase("r1", "Promoted", std::chrono::seconds(60));
  EXPECT_EQ(condition(r1, "Ready", "reason"), "ManualRollback") << r1["status"].dump(2);
  EXPECT_TRUE(eventSays(w_, "r1", "RuntimeMovedOn", "moved on to revision 2"));
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/r1"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump()
      << get("deployment", "gpt2-stable")["status"].dump(2);
  // The new pods run exactly r1's pair: image digest and closure hash.
  expectTrackOn(w_, "stable", "r1", kTestImage, hash_, 1);
  EXPECT_EQ(jobsOf("r1"), 1) << "a rollback must not run r1's gates again";

  // Keep no rollback targets (the Model's history pins none, the RuntimeEnv
  // retains no unpinned revision), then move the lock on again: r2's revision
  // 2 is neither pinned, current nor the highest, so it is pruned.
  ASSERT_EQ(kubectl({"patch", "models.lockstep.dev", "gpt2", "-n", ns_, "--type=merge", "-p",
                     R"({"spec":{"revisionHistoryLimit":0}})"})
                .exitCode,
            0);
  ASSERT_EQ(kubectl({"patch", "rte", "torch", "-n", ns_, "--type=merge", "-p",
                     R"({"spec":{"revisionHistoryLimit":0}})"})
                .exitCode,
            0);
  const std::string thirdLock = "numpy==2.1.0 --hash=sha256:" + std::string(64, 'd') + "\n";
  setLock(w_, thirdLock, 3);
  ASSERT_TRUE(eventually([&] {
    for (const json& rev :
         get("rte", "torch").value("/status/revisions"_json_pointer, json::array()))
      if (rev.value("number", 0) == 2) return false;
    return true;
  })) << get("rte", "torch")["status"].dump(2);
  auto refused = lockstepCli({"model", "rollback", "gpt2", "--to", "r2", "-n", ns_});
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_NE(refused.err.find("release \"r2\" is pinned to revision 2 (" + kTestImage +
                             ", closure " + newHash + ")"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("pruned"), std::string::npos) << refused.err;
  // The controller refuses the same request, written on the Model as the CLI
  // would write it (the chart's model-rollback policy admits it: verb rollback,
  // the writer's own name, the current revision).
  const std::string revision =
      std::to_string(get("models.lockstep.dev", "gpt2").value("/status/revision"_json_pointer, 0));
  auto asked = kubectl({"annotate", "models.lockstep.dev", "gpt2", "-n", ns_,
                        "rollback.lockstep.dev/" + revision + "=" + whoAmI(),
                        "rollback-to.lockstep.dev/" + revision + "=r2"});
  ASSERT_EQ(asked.exitCode, 0) << asked.err;
  ASSERT_TRUE(eventually([&] {
    return get("mr", "r2").value("/status/rollback/refused"_json_pointer, std::string()) != "";
  })) << get("mr", "r2")["status"].dump(2);
  const std::string why =
      get("mr", "r2").value("/status/rollback/refused"_json_pointer, std::string());
  EXPECT_NE(why.find("revision 2 ("), std::string::npos) << why;
  EXPECT_NE(why.find("pruned"), std::string::npos) << why;
  EXPECT_EQ(stableRelease(), "r1");
  expectTrackOn(w_, "stable", "r1", kTestImage, hash_, 1);
}

// Must-show 3 of issue 21: spec.image swapped with the same lock is a new
// revision (the closure hash does not change); i1, pinned to revision 1, is
// Stale=True (RuntimeRevisionChanged) and its Deployment keeps the pinned
// image, also for a re-created pod; i2, validated on the new image, runs it
// in canary and in stable; a rollback to i1 applies stable from i1's pin (the
// old image), with a warning that the runtime moved on.
TEST_F(CanaryClusterTest, ImageSwapWithTheSameLockIsANewRevisionAndProdKeepsThePinnedImage) {
  ASSERT_EQ(
      createRelease("i1", package('1'),
                    json::array({gateStage("eval"), prodStage(json::array({canaryStep(100)}))}))
          .exitCode,
      0);
  waitPhase("i1", "Promoted");
  ASSERT_TRUE(eventually([&] { return readyPods()["stable/i1"] == 2; }))
      << json(readyPods()).dump();
  const std::string newImage =
      "registry.example/runtimes/torch@sha256:" + std::string(60, '0') + "5e1f";
  json patch = {{"spec", {{"image", newImage}}}};
  ASSERT_EQ(
      kubectl({"patch", "rte", "torch", "-n", ns_, "--type=merge", "-p", patch.dump()}).exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    json rte = get("rte", "torch");
    return rte.value("/status/currentRevision"_json_pointer, 0) == 2 &&
           rte.value("/status/observedGeneration"_json_pointer, 0) ==
               rte.value("/metadata/generation"_json_pointer, -1);
  })) << get("rte", "torch")["status"].dump(2);
  EXPECT_EQ(get("rte", "torch")["status"]["closureHash"], hash_);  // same lock, same hash
  ASSERT_TRUE(eventually([&] { return condition(get("mr", "i1"), "Stale") == "True"; }))
      << get("mr", "i1")["status"].dump(2);
  EXPECT_EQ(condition(get("mr", "i1"), "Stale", "reason"), "RuntimeRevisionChanged");
  expectTrackOn(w_, "stable", "i1", kTestImage, hash_, 1);
  ASSERT_NO_FATAL_FAILURE(expectDeletedStablePodComesBack(w_, "i1"));
  expectTrackOn(w_, "stable", "i1", kTestImage, hash_, 1);

  // i2 validated on the new image: its canary pods run it, stable keeps i1's.
  ASSERT_EQ(
      createRelease(
          "i2", package('2'),
          json::array({gateStage("eval"),
                       prodStage(json::array({canaryStep(50, "Indefinite"), canaryStep(100)}))}))
          .exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "i2"), "Ready", "reason") == "CanaryPaused" &&
           readyPods()["canary/i2"] >= 1;
  })) << get("mr", "i2")["status"].dump(2);
  EXPECT_EQ(pinOf(w_, "i2"), json({{"revision", 2}, {"image", newImage}, {"closureHash", hash_}}));
  expectTrackOn(w_, "canary", "i2", newImage, hash_, 2);
  expectTrackOn(w_, "stable", "i1", kTestImage, hash_, 1);
  // Promoted, i2's stable runs its own pin (the new image); a rollback to i1
  // applies the stable Deployment again, from i1's pin: the old image.
  ASSERT_EQ(
      kubectl({"annotate", "mr", "i2", "-n", ns_, "promote.lockstep.dev/0=" + whoAmI()}).exitCode,
      0);
  waitPhase("i2", "Promoted");
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/i2"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  expectTrackOn(w_, "stable", "i2", newImage, hash_, 2);
  auto rb =
      lockstepCli({"model", "rollback", "gpt2", "--to", "i1", "-n", ns_, "--wait", "--timeout=2m"});
  ASSERT_EQ(rb.exitCode, 0) << rb.out << rb.err;
  EXPECT_NE(rb.err.find("has moved on to revision 2 (" + newImage), std::string::npos) << rb.err;
  waitPhase("i1", "Promoted", std::chrono::seconds(60));
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/i1"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  expectTrackOn(w_, "stable", "i1", kTestImage, hash_, 1);
  EXPECT_EQ(condition(get("mr", "i1"), "Stale", "reason"), "RuntimeRevisionChanged");
}

// GPUs requested by the pods bound to `node` (any namespace, not finished).
int gpusInUse(const std::string& node) {
  json pods =
      kubectlJson({"get", "pods", "-A", "--field-selector",
                   "spec.nodeName=" + node + ",status.phase!=Succeeded,status.phase!=Failed"});
  int used = 0;
  for (const json& p : pods["items"]) {
    for (const json& c : p["spec"]["containers"]) {
      std::string q = c.value("/resources/requests/nvidia.com~1gpu"_json_pointer, std::string("0"));
      used += std::stoi(q);
    }
  }
  return used;
}

// Other tenants' pods (in a namespace of their own, returned) take every GPU
// left on the three GPU nodes.
std::string fillEveryGpuNow() {
  std::string fill = uniqueName("gpu-fill");
  EXPECT_EQ(kubectl({"create", "namespace", fill}).exitCode, 0);
  for (const std::string node : {"gpu-0", "gpu-1", "gpu-old-0"}) {
    int free = 8 - gpusInUse(node);
    if (free <= 0) continue;
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", "fill-" + node}, {"namespace", fill}}},
                {"spec",
                 {{"nodeName", node},
                  {"containers",
                   json::array({{{"name", "x"},
                                 {"image", "registry.example/fill:1"},
                                 {"resources",
                                  {{"requests", {{"nvidia.com/gpu", std::to_string(free)}}},
                                   {"limits", {{"nvidia.com/gpu", std::to_string(free)}}}}}}})}}}};
    EXPECT_EQ(kubectl({"create", "-f", "-"}, pod.dump()).exitCode, 0) << node;
  }
  for (const std::string node : {"gpu-0", "gpu-1", "gpu-old-0"})
    EXPECT_EQ(gpusInUse(node), 8) << node;
  return fill;
}

// Must-show 7: on GPU nodes filled by other pods, a `surge` canary waits with a
// clear condition, then aborts with InsufficientGPUCapacity (stable untouched);
// a `drain` canary proceeds by scaling stable down first and is promoted.
TEST_F(CanaryClusterTest, ScarceGpusSurgeWaitsThenAbortsDrainProceeds) {
  // Only g4 (at the end) has an analysis: it must fail.
  ASSERT_TRUE(prom()->setRate("g4", 0.5));
  ASSERT_NO_FATAL_FAILURE(needCuda128());
  ASSERT_EQ(createRelease("g1", package('a'),
                          json::array({gpuStage(json::array({json{{"weight", 100}}}), "surge")}))
                .exitCode,
            0);
  waitPhase("g1", "Promoted");
  ASSERT_TRUE(eventually([&] { return readyPods()["stable/g1"] == 2; }))
      << json(readyPods()).dump();
  // The first rollout's canary pods hold their GPUs until they are gone.
  ASSERT_TRUE(eventually([&] { return noneTerminating(); }));

  // Other tenants take every remaining GPU (the old-driver node too, so the
  // scheduler could not place a canary pod anywhere either).
  std::string fill;
  ASSERT_NO_FATAL_FAILURE(fill = fillEveryGpu());

  ASSERT_EQ(createRelease("g2", package('b'),
                          json::array({gpuStage(json::array({json{{"weight", 50}}}), "surge")}))
                .exitCode,
            0);
  std::string waitingMessage;
  ASSERT_TRUE(eventually([&] {
    json mr = get("mr", "g2");
    waitingMessage = condition(mr, "Ready", "message");
    return condition(mr, "Ready", "reason") == "WaitingForGPUCapacity";
  })) << get("mr", "g2")["status"].dump(2);
  EXPECT_NE(waitingMessage.find("0 free GPU(s)"), std::string::npos) << waitingMessage;
  json g2 = waitPhase("g2", "RolledBack", std::chrono::seconds(90));
  EXPECT_EQ(condition(g2, "Stalled", "reason"), "InsufficientGPUCapacity") << g2["status"].dump(2);
  EXPECT_EQ(stableRelease(), "g1");
  EXPECT_EQ(get("deployment", "gpt2-stable")["spec"]["replicas"], 2);
  EXPECT_EQ(readyPods()["stable/g1"], 2);
  json canary = get("deployment", "gpt2-canary");
  EXPECT_TRUE(canary.is_discarded() || canary["spec"]["replicas"] == 0) << canary.dump();

  // Drain: stable gives up a GPU before each canary pod takes one.
  ASSERT_EQ(createRelease(
                "g3", package('c'),
                json::array({gpuStage(json::array({json{{"weight", 50}}, json{{"weight", 100}}}),
                                      "drain", "2m")}))
                .exitCode,
            0);
  json g3 = waitPhase("g3", "Promoted", std::chrono::seconds(180));
  EXPECT_EQ(stableRelease(), "g3");
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/g3"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  for (const std::string node : {"gpu-0", "gpu-1"}) EXPECT_LE(gpusInUse(node), 8) << node;

  // Drain rollback on a full cluster: g4's canary fails its analysis after
  // stable gave its GPU to the canary pod. The rollback grows stable back, the
  // new stable pod is unschedulable (no GPU anywhere), so the canary gives its
  // pod back and stable takes that GPU, instead of waiting forever with a
  // failed canary serving. (g4's pods serve 50 % errors from their first
  // request, so its error series exists once they are scraped.)
  json failing = analysedStep(50, 2);
  ASSERT_EQ(
      createRelease("g4", package('d'), json::array({gpuStage(json::array({failing}), "drain")}))
          .exitCode,
      0);
  // The canary's pod took stable's GPU and became Ready: the step records
  // weightReachedAt only once its weight is Ready. (Polling the pods can miss
  // it: the analysis fails at its first measurement and the rollback takes the
  // pod back within a second.)
  ASSERT_TRUE(eventually(
      [&] {
        return !get("mr", "g4")
                    .value("/status/canary/weightReachedAt"_json_pointer, std::string())
                    .empty();
      },
      std::chrono::seconds(90)))
      << json(readyPods()).dump() << get("mr", "g4")["status"].dump(2);
  json g4 = waitPhase("g4", "RolledBack", std::chrono::seconds(150));
  EXPECT_EQ(g4.value("/status/canary/reason"_json_pointer, std::string()), "AnalysisFailed")
      << g4["status"].dump(2);
  EXPECT_EQ(stableRelease(), "g3");
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/g3"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  for (const std::string node : {"gpu-0", "gpu-1"}) EXPECT_EQ(gpusInUse(node), 8) << node;
  EXPECT_EQ(kubectl({"delete", "namespace", fill, "--timeout=120s"}).exitCode, 0);
}

// Issue 28 must-show 4: a manual rollback on a cluster with no free GPU, in
// the default mode (surge), completes within its deadline and keeps the
// Model's replicas. h1 and h2 were written for 2 pods; the Model says 3. Every
// GPU is taken when `lockstep model rollback --wait` asks for h1: stable trades
// one pod at a time (a surge pod would stay Pending forever), the invariant
// monitor holds N-1 Ready throughout, and --wait returns once 3 pods of h1
// are Ready.
TEST_F(CanaryClusterTest, ManualRollbackOnAFullGpuClusterTradesPodsAndKeepsTheModelsReplicas) {
  ASSERT_NO_FATAL_FAILURE(needCuda128());
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(
      createRelease("h1", package('a'), json::array({gpuStage(oneStep, "surge", "2m")})).exitCode,
      0);
  waitPhase("h1", "Promoted");
  ASSERT_EQ(
      createRelease("h2", package('b'), json::array({gpuStage(oneStep, "surge", "2m")})).exitCode,
      0);
  waitPhase("h2", "Promoted");
  waitPhase("h1", "Superseded", std::chrono::seconds(30));
  // The model's N is 3 from now on, whatever a release says; prod grows to it.
  json modelSpec = {{"spec", {{"replicas", 3}, {"rollbackDeadlineSeconds", 180}}}};
  ASSERT_EQ(kubectl({"patch", "models.lockstep.dev", "gpt2", "-n", ns_, "--type=merge", "-p",
                     modelSpec.dump()})
                .exitCode,
            0);
  ASSERT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/h2"] == 3 && r.size() == 1;
  })) << json(readyPods()).dump();
  ASSERT_TRUE(eventually([&] { return noneTerminating(); }));
  std::string fill;
  ASSERT_NO_FATAL_FAILURE(fill = fillEveryGpu());

  const auto asked = std::chrono::steady_clock::now();
  auto rb =
      lockstepCli({"model", "rollback", "gpt2", "--to", "h1", "-n", ns_, "--wait", "--timeout=4m"});
  const auto took =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - asked);
  ASSERT_EQ(rb.exitCode, 0) << rb.out << rb.err << get("mr", "h1")["status"].dump(2);
  EXPECT_LT(took.count(), 180) << "within the Model's deadline";
  EXPECT_NE(rb.out.find("prod runs release \"h1\" (prod runs this release again"),
            std::string::npos)
      << rb.out;
  json h1 = get("mr", "h1");
  EXPECT_EQ(condition(h1, "Ready"), "True") << h1["status"].dump(2);
  EXPECT_EQ(condition(h1, "Ready", "reason"), "ManualRollback");
  EXPECT_NE(condition(h1, "Ready", "message").find("3/3 stable pods Ready"), std::string::npos)
      << condition(h1, "Ready", "message");
  // The one-pod trade, said in an Event; the Model's replicas kept.
  json events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                             "reason=RollbackTradesPods,involvedObject.name=h1"});
  ASSERT_FALSE(events.is_discarded());
  ASSERT_EQ(events["items"].size(), 1u) << events.dump(2);
  EXPECT_NE(events["items"][0].value("message", "").find("no spare GPU for a surge pod"),
            std::string::npos)
      << events["items"][0].dump(2);
  json stable = get("deployment", "gpt2-stable");
  EXPECT_EQ(stable["spec"]["replicas"], 3);
  EXPECT_EQ(stable.value("/spec/strategy/rollingUpdate/maxSurge"_json_pointer, json()), 0);
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/spec/replicas"_json_pointer, 0), 3);
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "h1");
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/h1"] == 3 && r.size() == 1;
  })) << json(readyPods()).dump();
  for (const std::string node : {"gpu-0", "gpu-1"}) EXPECT_EQ(gpusInUse(node), 8) << node;
  json missed = kubectlJson(
      {"get", "events", "-n", ns_, "--field-selector", "reason=RollbackDeadlineExceeded"});
  EXPECT_TRUE(missed.is_discarded() || missed["items"].empty()) << missed.dump(2);
  EXPECT_EQ(kubectl({"delete", "namespace", fill, "--timeout=120s"}).exitCode, 0);
}

// Issue 29 (change windows, must-show 5 on the real control plane, real time):
// a Deny window that is active now (a daily rule at this UTC second, 100 s
// long, inFlight finishStep) holds what would start: v2's canary at
// its Indefinite pause is promoted by a person, the step passes, and the next
// step waits (WaitingForWindow, the window named) at the same weight with no
// step transition while the window lasts; then it starts and v2 is promoted.
// (Manual rollbacks under a window: unit tests, ReleasePlan.AWindowWith...)
TEST_F(CanaryClusterTest, ADenyWindowHoldsTheNextStepUntilItEnds) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(createRelease("w1", package('1'), json::array({prodStage(oneStep)})).exitCode, 0);
  waitPhase("w1", "Promoted");
  json twoSteps =
      json::array({json{{"weight", 50}, {"pause", "Indefinite"}}, json{{"weight", 100}}});
  ASSERT_EQ(createRelease("w2", package('2'), json::array({prodStage(twoSteps)})).exitCode, 0);
  ASSERT_TRUE(eventually([&] {
    return condition(get("mr", "w2"), "Ready", "reason") == "CanaryPaused";
  })) << get("mr", "w2")["status"].dump(2);

  // The window: from this second, for 100 seconds (BYSECOND: a window can
  // start on any second of the day; 100 s leave the step time to end in it).
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const std::string rule = "FREQ=DAILY;BYHOUR=" + std::to_string(utc.tm_hour) +
                           ";BYMINUTE=" + std::to_string(utc.tm_min) +
                           ";BYSECOND=" + std::to_string(utc.tm_sec);
  const auto windowEnds = std::chrono::system_clock::from_time_t(now + 100);
  json window = {{"spec",
                  {{"changeWindows", json::array({{{"name", "freeze"},
                                                   {"kind", "Deny"},
                                                   {"rrule", rule},
                                                   {"duration", "100s"},
                                                   {"timeZone", "UTC"},
                                                   {"inFlight", "finishStep"}}})}}}};
  ASSERT_EQ(kubectl({"patch", "models.lockstep.dev", "gpt2", "-n", ns_, "--type=merge", "-p",
                     window.dump()})
                .exitCode,
            0);
  // A person ends the pause; the step passes, the next step does not start.
  ASSERT_EQ(
      kubectl({"annotate", "mr", "w2", "-n", ns_, "promote.lockstep.dev/0=" + whoAmI()}).exitCode,
      0);
  json w2;
  ASSERT_TRUE(eventually([&] {
    w2 = get("mr", "w2");
    return condition(w2, "Ready", "reason") == "WaitingForWindow";
  })) << w2["status"].dump(2);
  EXPECT_NE(condition(w2, "Ready", "message").find("step 1 waits for the model's change window"),
            std::string::npos)
      << condition(w2, "Ready", "message");
  EXPECT_NE(condition(w2, "Ready", "message").find("Deny window \"freeze\""), std::string::npos);
  // Held while the window lasts: no step transition, the weight kept.
  const int canaryPods = get("deployment", "gpt2-canary")["spec"].value("replicas", -1);
  while (std::chrono::system_clock::now() < windowEnds - std::chrono::seconds(10)) {
    w2 = get("mr", "w2");
    ASSERT_EQ(w2.value("/status/canary/step"_json_pointer, -1), 0) << w2["status"].dump(2);
    ASSERT_EQ(get("deployment", "gpt2-canary")["spec"].value("replicas", -1), canaryPods);
    std::this_thread::sleep_for(std::chrono::seconds(5));
  }
  // The window ends: step 1 starts and w2 is promoted.
  w2 = waitPhase("w2", "Promoted", std::chrono::seconds(120));
  EXPECT_EQ(stableRelease(), "w2");
  const std::string events =
      kubectl({"get", "events", "-n", ns_, "--field-selector",
               "involvedObject.name=w2,reason=WaitingForWindow", "-o", "name"})
          .out;
  EXPECT_FALSE(events.empty()) << "the wait is said in an Event";
}

// Issue 20: promotion has a step's health checks. v2 serves its 50% step;
// once its promotion starts (all traffic moves to it), its pods crash. The
// release rolls back (CanaryRestarting, during the promotion), never ends
// Promoted, and prod is back on v1's 2 Ready pods.
TEST_F(CanaryClusterTest, PodsThatCrashOnlyAfterFullWeightRollBackInsteadOfPromoting) {
  w_.monitor()->tolerate("ready", "the test makes v2's pods crash once its promotion started");
  ASSERT_EQ(createRelease("v1", package('1'),
                          json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return readyPods()["stable/v1"] == 2; }))
      << json(readyPods()).dump();
  // An 8 s warm-up: the promotion takes a while, the crash comes during it.
  ASSERT_EQ(createRelease(
                "v2", package('2'),
                json::array(
                    {ProdStageBuilder(json::array({json{{"weight", 50}, {"pause", "Indefinite"}}}))
                         .replicas(2)
                         .podAnnotation("lockstep.dev/test-warmup", "8s")
                         .build()}))
                .exitCode,
            0);
  ASSERT_TRUE(
      eventually([&] { return condition(get("mr", "v2"), "Ready", "reason") == "CanaryPaused"; },
                 std::chrono::seconds(90)))
      << get("mr", "v2")["status"].dump(2);
  ASSERT_EQ(
      kubectl({"annotate", "mr", "v2", "-n", ns_, "promote.lockstep.dev/0=" + whoAmI()}).exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return get("mr", "v2").value("/status/canary/phase"_json_pointer, std::string()) == "Promoting";
  })) << get("mr", "v2")["status"].dump(2);
  // Full load: every pod of v2 exits 1 s after Ready from now on.
  auto crash = kubectl({"annotate", "pods", "-n", ns_, "-l", "lockstep.dev/release=v2",
                        "lockstep.dev/test-crash-after=1s", "--overwrite"});
  ASSERT_EQ(crash.exitCode, 0) << crash.err;

  json v2 = waitPhase("v2", "RolledBack", std::chrono::seconds(120));
  EXPECT_EQ(condition(v2, "Stalled", "reason"), "CanaryRestarting") << v2["status"].dump(2);
  EXPECT_NE(v2.value("/status/canary/message"_json_pointer, std::string()).find("promotion ("),
            std::string::npos)
      << v2["status"].dump(2);
  EXPECT_EQ(
      get("models.lockstep.dev", "gpt2").value("/status/prod/release"_json_pointer, std::string()),
      "v1");
  EXPECT_EQ(get("mr", "v1")["status"]["phase"], "Promoted");
  EXPECT_EQ(stableRelease(), "v1");
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);
  EXPECT_TRUE(eventually([&] {
    auto r = readyPods();
    return r["stable/v1"] == 2 && r.size() == 1;
  })) << json(readyPods()).dump();
  EXPECT_TRUE(eventually([&] { return eventSays(w_, "v2", "RollingBack", "promotion ("); }));
}

// Issue 20: a Promoted release keeps being observed. One of v1's two stable
// pods crash-loops: v1 turns Degraded=True ("1/2 stable pods Ready") and
// Ready=False, still Promoted; once the pod is back, Degraded=False, Ready=True.
TEST_F(CanaryClusterTest, APromotedReleaseIsDegradedWhileAStablePodIsDownThenRecovers) {
  w_.monitor()->tolerate("ready", "the test crashes a stable pod of the promoted release");
  ASSERT_EQ(createRelease("v1", package('1'),
                          json::array({prodStage(json::array({json{{"weight", 100}}}))}))
                .exitCode,
            0);
  waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] {
    json v1 = get("mr", "v1");
    return condition(v1, "Degraded") == "False" && condition(v1, "Ready") == "True";
  })) << get("mr", "v1")["status"].dump(2);
  EXPECT_EQ(condition(get("mr", "v1"), "Degraded", "reason"), "StablePodsReady");
  json pods = kubectlJson(
      {"get", "pods", "-n", ns_, "-l", "lockstep.dev/release=v1,lockstep.dev/track=stable"});
  ASSERT_FALSE(pods.is_discarded());
  ASSERT_EQ(pods["items"].size(), 2u) << pods.dump();
  const std::string pod = pods["items"][0]["metadata"]["name"];
  ASSERT_EQ(
      kubectl({"annotate", "pod", pod, "-n", ns_, "lockstep.dev/test-crash-after=1s"}).exitCode, 0);
  ASSERT_TRUE(eventually([&] {
    json v1 = get("mr", "v1");
    return condition(v1, "Degraded") == "True" &&
           condition(v1, "Degraded", "message") == "1/2 stable pods Ready";
  })) << get("mr", "v1")["status"].dump(2);
  json v1 = get("mr", "v1");
  EXPECT_EQ(v1["status"]["phase"], "Promoted");
  EXPECT_EQ(condition(v1, "Degraded", "reason"), "ProdShortOfReadyPods");
  EXPECT_EQ(condition(v1, "Ready", "reason"), "ProdShortOfReadyPods") << v1["status"].dump(2);
  EXPECT_TRUE(eventually(
      [&] { return eventSays(w_, "v1", "ProdShortOfReadyPods", "1/2 stable pods Ready"); }));

  ASSERT_EQ(kubectl({"annotate", "pod", pod, "-n", ns_, "lockstep.dev/test-crash-after-"}).exitCode,
            0);
  ASSERT_TRUE(eventually([&] {
    json r = get("mr", "v1");
    return condition(r, "Degraded") == "False" && condition(r, "Ready") == "True";
  })) << get("mr", "v1")["status"].dump(2);
  EXPECT_EQ(condition(get("mr", "v1"), "Degraded", "message"), "2/2 stable pods Ready");
  EXPECT_TRUE(eventually([&] { return eventSays(w_, "v1", "StablePodsReady", "recovered"); }));
  EXPECT_EQ(get("mr", "v1")["status"]["phase"], "Promoted");
}

// Issue 28, must-show 2: pins come from what prod runs. The Promoted release
// p1 is deleted (prod keeps serving it), then the lock is edited and the
// runtime image swapped: revision 1 stays pinned by the Model's prod under
// p1's name, a deleted stable pod comes back on that pair (admission admits
// it), and deleting the RuntimeEnv waits, naming the Model.
TEST_F(CanaryClusterTest, ADeletedPromotedReleaseStaysPinnedByTheModelsProd) {
  ASSERT_EQ(
      createRelease("p1", package('1'), json::array({prodStage(json::array({canaryStep(100)}))}))
          .exitCode,
      0);
  waitPhase("p1", "Promoted");
  ASSERT_TRUE(eventually([&] { return readyPods()["stable/p1"] == 2; }))
      << json(readyPods()).dump();
  ASSERT_EQ(kubectl({"delete", "mr", "p1", "-n", ns_, "--timeout=30s"}).exitCode, 0);

  setLock(w_, kTestOtherLock, 2);
  const std::string newImage =
      "registry.example/runtimes/torch@sha256:" + std::string(60, '0') + "5e1f";
  json patch = {{"spec", {{"image", newImage}}}};
  ASSERT_EQ(
      kubectl({"patch", "rte", "torch", "-n", ns_, "--type=merge", "-p", patch.dump()}).exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return get("rte", "torch").value("/status/currentRevision"_json_pointer, 0) == 3;
  })) << get("rte", "torch")["status"].dump(2);
  json rte = get("rte", "torch");
  bool pinned = false;
  for (const json& rev : rte.value("/status/revisions"_json_pointer, json::array())) {
    if (rev.value("number", 0) != 1) continue;
    EXPECT_EQ(rev.value("closureHash", ""), hash_);
    for (const json& by : rev.value("pinnedBy", json::array())) pinned = pinned || by == "p1";
  }
  EXPECT_TRUE(pinned) << "no release object, yet prod's pods carry p1: " << rte["status"].dump(2);
  ASSERT_NO_FATAL_FAILURE(expectDeletedStablePodComesBack(w_, "p1"));
  expectTrackOn(w_, "stable", "p1", kTestImage, hash_, 1);

  ASSERT_EQ(kubectl({"delete", "rte", "torch", "-n", ns_, "--wait=false"}).exitCode, 0);
  json waiting;
  EXPECT_TRUE(eventually([&] {
    waiting = get("rte", "torch");
    return condition(waiting, "Terminating") == "True";
  })) << waiting.dump(2);
  EXPECT_EQ(condition(waiting, "Terminating", "reason"), "InUse") << waiting["status"].dump(2);
  const std::string m = condition(waiting, "Terminating", "message");
  EXPECT_NE(m.find("p1 (revision 1, Model gpt2's prod)"), std::string::npos) << m;
  EXPECT_EQ(readyPods()["stable/p1"], 2) << "prod keeps serving";
}

}  // namespace
}  // namespace lockstep::testing
