// Faults during the prod stage (issue 14, must-show 6), against the real
// control plane and a real Prometheus: the operator is SIGKILLed during a
// canary pause, during an analysis and during a rollback; kube-apiserver is
// restarted during a canary; the leader changes during a canary. Each run must
// end in the state of the uninterrupted run (UninterruptedRunsAreTheReference):
// the same phase, conditions and canary outcome, every step recorded in
// status.canary.passedSteps in order with its pause and analysis complete, one
// `<model>-stable` and one `<model>-canary` Deployment, one ReplicaSet per
// template revision and one Job per gate. The moment of each fault is found by
// polling the release's status (a step, a reason, a measurement count), never
// by sleeping. Serving pods warm up and terminate slowly (docs/testing.md) and
// the invariant monitor watches every run.
#include <sys/types.h>

#include <algorithm>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

constexpr int kReplicas = 2;
constexpr int kIntervalSeconds = 3;
constexpr int kMeasurements = 3;

std::string package(char c) { return testPackage(c); }

// Seconds since the epoch of an RFC 3339 UTC time as the operator writes it.
int64_t unixOf(const std::string& rfc3339) {
  std::tm tm{};
  if (strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return -1;
  return static_cast<int64_t>(timegm(&tm));
}

// Sum of a Prometheus text-format counter over the series whose labels contain `match`.
double counterSum(const std::string& metrics, const std::string& name, const std::string& match) {
  double sum = 0;
  size_t at = 0;
  while ((at = metrics.find(name + "{", at)) != std::string::npos) {
    size_t eol = metrics.find('\n', at);
    std::string line = metrics.substr(at, eol - at);
    at = eol;
    if (line.find(match) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// Lease durations short enough that a killed leader's successor (a restarted
// process has a new identity) takes over within seconds.
const std::vector<std::string>& fastLease() {
  static const std::vector<std::string> args = {"--leader-elect-lease-duration=6s",
                                                "--leader-elect-renew-deadline=4s",
                                                "--leader-elect-retry-period=1s"};
  return args;
}

// The canary of the fault runs: two steps, the first analysed and paused.
struct Shape {
  // step 1: longer than its analysis: 3 measurements 3 s apart, the first
  // 12 s after the weight is Ready (initialDelay: the canary is scraped by then).
  int pauseSeconds = 20;
  std::string capacity = "surge";
  bool indefinite = false;  // step 1 pauses until promoted (the rollback run)
};

class CanaryFaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator(fastLease()), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "faults", .prometheus = true, .monitor = true}), "");
    ns_ = w_.ns();
    hash_ = w_.hash();
  }
  void TearDown() override {
    for (const std::string& node : cordoned_) kubectl({"uncordon", node});
    w_.tearDown(HasFailure());
  }
  static OperatorProcess* op() { return &ReleaseWorld::op(); }

  // ---- releases ------------------------------------------------------------------------------

  json gateStage() {
    json tmpl = {{"metadata",
                  {{"annotations",
                    {{"lockstep.dev/test-termination-message", R"({"accuracy":0.9})"},
                     {"lockstep.dev/test-duration", "1s"}}}}},
                 {"spec", {{"containers", json::array({{{"name", "eval"}}})}}}};
    return {{"name", "eval"},
            {"gate",
             {{"template", tmpl},
              {"metrics", json::array({{{"name", "accuracy"}, {"min", 0.5}}})},
              {"timeout", "5m"}}}};
  }

  json prodStage(json steps, const std::string& capacity = "surge") {
    return ProdStageBuilder(std::move(steps))
        .replicas(kReplicas)
        .capacity(capacity)
        .progressDeadline("3m")
        .build();
  }

  json analysis(int count) {
    return w_.analysedStep(0, count, "", "", std::to_string(kIntervalSeconds) + "s")["analysis"];
  }

  void createRelease(const std::string& name, const std::string& pkg, const json& stages) {
    auto r = w_.createRelease(name, pkg, stages);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // v1, the model's first release: one step at 100%, promoted; it is the
  // stable track (the last known-good) of the canary under test.
  void promoteBaseline() {
    createRelease("v1", package('1'), json::array({prodStage(json::array({{{"weight", 100}}}))}));
    json v1 = waitPhase("v1", "Promoted");
    ASSERT_EQ(statusField(v1), "Promoted");
    ASSERT_TRUE(eventually([&] {
      return readyPods() == std::map<std::string, int>{{"stable/v1", 2}};
    })) << json(readyPods()).dump();
  }

  // v2 (or another name): an eval gate, then two canary steps: 50% with a pause
  // and an analysis of kMeasurements measurements, then 100% with a short pause.
  void createCanary(const std::string& name, const Shape& shape = {}) {
    json step1 = {{"weight", 50}, {"analysis", analysis(shape.indefinite ? 100 : kMeasurements)}};
    step1["pause"] = shape.indefinite ? "Indefinite" : std::to_string(shape.pauseSeconds) + "s";
    json step2 = {{"weight", 100}, {"pause", "2s"}};
    createRelease(
        name, package('2'),
        json::array({gateStage(), prodStage(json::array({step1, step2}), shape.capacity)}));
  }

  // ---- observation ---------------------------------------------------------------------------

  json get(const std::string& kind, const std::string& name) { return w_.get(kind, name); }

  json canaryOf(const std::string& name) {
    json mr = get("mr", name);
    if (mr.is_discarded() || !mr.contains("status")) return json::object();
    return mr["status"].value("canary", json::object());
  }

  json waitPhase(const std::string& name, const std::string& phase,
                 std::chrono::seconds timeout = std::chrono::seconds(180)) {
    return w_.waitPhase(name, phase, timeout);
  }

  // Waits until `probe` holds for status.canary of `name`; returns that status.canary.
  json waitCanary(const std::string& name, const std::function<bool(const json&)>& probe,
                  const std::string& what) {
    json c;
    bool ok = eventually(
        [&] {
          c = canaryOf(name);
          return probe(c);
        },
        std::chrono::seconds(180));
    EXPECT_TRUE(ok) << name << ": " << what << " never seen; status.canary: " << c.dump(2);
    return c;
  }

  std::map<std::string, int> readyPods() { return w_.readyPods(); }

  // What must be equal between an interrupted and an uninterrupted run:
  // timestamps, resourceVersions and messages with times left out.
  static json outcome(const json& mr) {
    const json& st = mr["status"];
    json conditions = json::array();
    for (const json& c : st.value("conditions", json::array()))
      conditions.push_back({{"type", c["type"]}, {"status", c["status"]}, {"reason", c["reason"]}});
    std::sort(conditions.begin(), conditions.end(),
              [](const json& a, const json& b) { return a["type"] < b["type"]; });
    const json& canary = st.value("canary", json::object());
    json steps = json::array();
    for (const json& s : canary.value("passedSteps", json::array())) {
      json rec = {{"step", s["step"]}, {"weight", s["weight"]}};
      if (s.contains("analysis")) rec["analysis"] = s["analysis"];
      steps.push_back(rec);
    }
    json stages = json::array();
    for (const json& s : st.value("stages", json::array()))
      stages.push_back(
          {{"name", s["name"]}, {"phase", s["phase"]}, {"attempt", s.value("attempt", 0)}});
    return {{"phase", st.value("phase", "")},
            {"conditions", conditions},
            {"stages", stages},
            {"canary",
             {{"phase", canary.value("phase", "")},
              {"step", canary.value("step", -1)},
              {"reason", canary.value("reason", "")},
              {"knownGood", canary.value("/knownGood/release"_json_pointer, std::string())},
              {"passedSteps", steps}}}};
  }

  // Every recorded step ran in order, for at least its pause, after the previous one.
  void expectStepsInOrder(const json& mr, const std::vector<int>& pauses) {
    const json steps = mr.value("/status/canary/passedSteps"_json_pointer, json::array());
    ASSERT_EQ(steps.size(), pauses.size()) << steps.dump(2);
    int64_t previousPassed = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
      SCOPED_TRACE("passed step " + std::to_string(i));
      const json& s = steps[i];
      EXPECT_EQ(s["step"], static_cast<int>(i));
      int64_t started = unixOf(s.value("startedAt", ""));
      int64_t reached = unixOf(s.value("weightReachedAt", ""));
      int64_t passed = unixOf(s.value("passedAt", ""));
      EXPECT_GE(started, previousPassed);
      EXPECT_GE(reached, started);
      EXPECT_GE(passed, reached + pauses[i]) << "the pause of step " << i + 1 << " was cut short";
      previousPassed = passed;
    }
  }

  // One Deployment per track, one ReplicaSet per (track, release) template, and
  // the Jobs named.
  void expectNoDuplicates(const std::map<std::string, std::set<std::string>>& releasesPerTrack,
                          const std::set<std::string>& jobNames) {
    json deps = kubectlJson({"get", "deployments", "-n", ns_});
    ASSERT_FALSE(deps.is_discarded());
    std::set<std::string> names;
    for (const json& d : deps["items"]) names.insert(d["metadata"]["name"].get<std::string>());
    EXPECT_EQ(names, (std::set<std::string>{"gpt2-canary", "gpt2-stable"})) << deps.dump();
    EXPECT_EQ(deps["items"].size(), 2u);

    json rss = kubectlJson({"get", "replicasets", "-n", ns_});
    ASSERT_FALSE(rss.is_discarded());
    std::map<std::string, std::multiset<std::string>> seen;
    for (const json& rs : rss["items"]) {
      const json& l = rs["spec"]["template"]["metadata"]["labels"];
      seen[l.value("lockstep.dev/track", "")].insert(l.value("lockstep.dev/release", ""));
    }
    for (const auto& [track, want] : releasesPerTrack) {
      const std::multiset<std::string>& got = seen[track];
      EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), want) << track;
      EXPECT_EQ(got.size(), want.size()) << track << ": more than one ReplicaSet per release";
    }
    EXPECT_EQ(seen.size(), releasesPerTrack.size());

    json jobs = kubectlJson({"get", "jobs", "-n", ns_});
    ASSERT_FALSE(jobs.is_discarded());
    std::multiset<std::string> got;
    for (const json& j : jobs["items"]) got.insert(j["metadata"]["name"].get<std::string>());
    EXPECT_EQ(got, std::multiset<std::string>(jobNames.begin(), jobNames.end()));
  }

  // The Model's history lists each promotion and rollback once, in order.
  void expectHistory(const std::vector<std::pair<std::string, std::string>>& want) {
    json model = get("models.lockstep.dev", "gpt2");
    json history = model.value("/status/history"_json_pointer, json::array());
    std::vector<std::pair<std::string, std::string>> got;
    for (const json& h : history) got.emplace_back(h["release"], h["action"]);
    EXPECT_EQ(got, want) << history.dump(2);
  }

  // Promoted like the uninterrupted run: outcome, steps, prod objects, history.
  void expectPromotedLikeUninterrupted(const std::string& name, const Shape& shape = {}) {
    json mr = waitPhase(name, "Promoted");
    // The analysis waits its initialDelay: no measurement before the new canary
    // pods were scraped, so none is an error (an empty vector).
    EXPECT_EQ(outcome(mr), promotedOutcome()) << outcome(mr).dump(2);
    expectStepsInOrder(mr, {shape.pauseSeconds, 2});
    EXPECT_TRUE(eventually([&] {
      return readyPods() == std::map<std::string, int>{{"stable/" + name, kReplicas}};
    })) << json(readyPods()).dump();
    EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);
    waitPhase("v1", "Superseded", std::chrono::seconds(60));
    expectNoDuplicates({{"stable", {"v1", name}}, {"canary", {name}}}, {name + "-eval-1"});
    expectHistory({{"v1", "Promoted"}, {name, "Promoted"}});
  }

  static json condition(const char* type, const char* status, const char* reason) {
    return {{"type", type}, {"status", status}, {"reason", reason}};
  }

  // The outcome of the uninterrupted promotion (asserted by UninterruptedRunsAreTheReference).
  static json promotedOutcome() {
    json analysed = {
        {"count", kMeasurements}, {"successful", kMeasurements}, {"failed", 0}, {"errors", 0}};
    return {{"phase", "Promoted"},
            {"conditions", json::array({condition("Degraded", "False", "StablePodsReady"),
                                        condition("Ready", "True", "Promoted"),
                                        condition("Reconciling", "False", "Idle"),
                                        condition("Stale", "False", "ClosureHashMatches"),
                                        condition("Stalled", "False", "Progressing")})},
            {"stages", json::array({{{"name", "eval"}, {"phase", "Succeeded"}, {"attempt", 1}},
                                    {{"name", "prod"}, {"phase", "Succeeded"}, {"attempt", 0}}})},
            {"canary",
             {{"phase", "Promoted"},
              {"step", 1},
              {"reason", "Promoted"},
              {"knownGood", "v1"},
              {"passedSteps", json::array({{{"step", 0}, {"weight", 50}, {"analysis", analysed}},
                                           {{"step", 1}, {"weight", 100}}})}}}};
  }

  // The outcome of the uninterrupted rollback of the drain canary.
  static json rolledBackOutcome() {
    return {{"phase", "RolledBack"},
            {"conditions", json::array({condition("Ready", "False", "AnalysisFailed"),
                                        condition("Reconciling", "False", "Idle"),
                                        condition("Stale", "False", "ClosureHashMatches"),
                                        condition("Stalled", "True", "AnalysisFailed")})},
            {"stages", json::array({{{"name", "eval"}, {"phase", "Succeeded"}, {"attempt", 1}},
                                    {{"name", "prod"}, {"phase", "Failed"}, {"attempt", 0}}})},
            {"canary",
             {{"phase", "RolledBack"},
              {"step", 0},
              {"reason", "AnalysisFailed"},
              {"knownGood", "v1"},
              {"passedSteps", json::array()}}}};
  }

  // r2: a drain canary (indefinite pause at 50%, analysed every interval) that
  // has taken one good measurement; the test then raises the error ratio.
  void startDrainCanaryToFail() {
    Shape shape;
    shape.capacity = "drain";
    shape.indefinite = true;
    createCanary("r2", shape);
    waitCanary(
        "r2",
        [](const json& c) {
          return c.value("step", -1) == 0 && c.value("/analysis/count"_json_pointer, 0) >= 1;
        },
        "a good measurement at 50%");
    EXPECT_EQ(readyPods(), (std::map<std::string, int>{{"stable/v1", 1}, {"canary/r2", 1}}));
  }

  // Rolled back like the uninterrupted run: outcome, prod back on v1, one
  // rollback in the history and one RollingBack Event.
  void expectRolledBackLikeUninterrupted() {
    json r2 = waitPhase("r2", "RolledBack");
    EXPECT_EQ(outcome(r2), rolledBackOutcome()) << outcome(r2).dump(2);
    EXPECT_TRUE(eventually([&] {
      return readyPods() == std::map<std::string, int>{{"stable/v1", kReplicas}};
    })) << json(readyPods()).dump();
    EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);
    EXPECT_EQ(get("deployment",
                  "gpt2-stable")["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"],
              "v1");
    EXPECT_EQ(get("mr", "v1")["status"]["phase"], "Promoted");
    expectNoDuplicates({{"stable", {"v1"}}, {"canary", {"r2"}}}, {"r2-eval-1"});
    expectHistory({{"v1", "Promoted"}, {"r2", "RolledBack"}});
    // Events are written off the reconcile path: wait for the first, then there is one.
    json events;
    int count = 0;
    EXPECT_TRUE(eventually([&] {
      events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                            "involvedObject.name=r2,reason=RollingBack"});
      count = 0;
      for (const json& e : events["items"]) count += e.value("count", 1);
      return count > 0;
    }));
    EXPECT_EQ(count, 1) << events.dump(2);
  }

  // Kills the operator and starts it again (same flags).
  void killAndRestart() {
    op()->stop(SIGKILL);
    ASSERT_EQ(op()->start(fastLease()), "");
  }

  // The operator's Lease holder ("" when there is none).
  static std::string leaseHolder() {
    json lease = kubectlJson({"get", "lease", "lockstep-operator", "-n", kOperatorNamespace});
    if (lease.is_discarded()) return "";
    return lease.value("/spec/holderIdentity"_json_pointer, std::string());
  }

  std::vector<std::string> nodes() {
    std::vector<std::string> out;
    json n = kubectlJson({"get", "nodes"});
    for (const json& node : n["items"]) out.push_back(node["metadata"]["name"].get<std::string>());
    return out;
  }

  ReleaseWorld w_;
  std::string ns_, hash_;
  std::vector<std::string> cordoned_;
};

// The references: an uninterrupted promotion and an uninterrupted rollback, with
// the shapes of the fault runs below.
TEST_F(CanaryFaultsTest, UninterruptedPromotionIsTheReference) {
  promoteBaseline();
  createCanary("v2");
  expectPromotedLikeUninterrupted("v2");
}

TEST_F(CanaryFaultsTest, UninterruptedRollbackIsTheReference) {
  promoteBaseline();
  startDrainCanaryToFail();
  ASSERT_TRUE(w_.prom().setRate("r2", 0.5));
  expectRolledBackLikeUninterrupted();
}

TEST_F(CanaryFaultsTest, KilledDuringAPauseEndsLikeTheUninterruptedRun) {
  promoteBaseline();
  createCanary("v2");
  // The analysis is done and only the pause of step 1 holds the canary.
  json c = waitCanary(
      "v2",
      [](const json& c) {
        return c.value("step", -1) == 0 && c.value("reason", "") == "CanaryPaused";
      },
      "step 1 paused after its analysis");
  ASSERT_EQ(c.value("/analysis/phase"_json_pointer, std::string()), "Passed") << c.dump(2);
  killAndRestart();
  expectPromotedLikeUninterrupted("v2");
}

TEST_F(CanaryFaultsTest, KilledDuringAnAnalysisNeitherResetsNorDoubleCountsMeasurements) {
  promoteBaseline();
  Shape shape;
  // Room to see the step's analysis complete before step 2: the restart and the
  // lease hand-over take up to ~15 s of it.
  shape.pauseSeconds = 30;
  createCanary("v2", shape);
  json atKill = waitCanary(
      "v2",
      [](const json& c) {
        return c.value("step", -1) == 0 && c.value("/analysis/count"_json_pointer, 0) == 1 &&
               c.value("/analysis/phase"_json_pointer, std::string()) == "Running";
      },
      "one measurement of step 1");
  killAndRestart();
  json before = atKill["analysis"]["measurements"];
  ASSERT_EQ(before.size(), 1u) << atKill.dump(2);

  // The same step's analysis, completed by the restarted operator.
  json done = waitCanary(
      "v2",
      [](const json& c) {
        return c.value("step", -1) != 0 ||
               c.value("/analysis/phase"_json_pointer, std::string()) != "Running";
      },
      "the analysis of step 1 finished");
  ASSERT_EQ(done.value("step", -1), 0) << "step 2 started before the analysis was seen finished; "
                                          "raise the pause: "
                                       << done.dump(2);
  const json& a = done["analysis"];
  EXPECT_EQ(a["phase"], "Passed") << a.dump(2);
  EXPECT_EQ(a["count"], kMeasurements);
  EXPECT_EQ(a["successful"], kMeasurements);
  EXPECT_EQ(a["failed"], 0);
  EXPECT_EQ(a["errors"], 0);  // initialDelay: no measurement before the canary was scraped
  const json& ms = a["measurements"];
  ASSERT_EQ(ms.size(), static_cast<size_t>(kMeasurements)) << a.dump(2);
  // Not reset: the measurement taken before the kill is still the first one.
  EXPECT_EQ(ms[0], before[0]);
  // Not double-counted: measurements are an interval apart (a repeat would not be).
  for (size_t i = 1; i < ms.size(); ++i) {
    EXPECT_GE(unixOf(ms[i]["at"]) - unixOf(ms[i - 1]["at"]), kIntervalSeconds) << a.dump(2);
  }
  expectPromotedLikeUninterrupted("v2", shape);
}

TEST_F(CanaryFaultsTest, KilledDuringARollbackEndsRolledBackOnce) {
  promoteBaseline();
  startDrainCanaryToFail();
  // No node takes new pods: the drain rollback restores a stable pod that cannot
  // start, so the rollback holds (canary kept) until the nodes come back.
  for (const std::string& node : nodes()) {
    ASSERT_EQ(kubectl({"cordon", node}).exitCode, 0);
    cordoned_.push_back(node);
  }
  ASSERT_TRUE(w_.prom().setRate("r2", 0.5));
  json c = waitCanary(
      "r2", [](const json& c) { return c.value("phase", "") == "RollingBack"; }, "RollingBack");
  EXPECT_EQ(c.value("reason", ""), "AnalysisFailed") << c.dump(2);
  killAndRestart();
  // The restarted operator reconciles r2 (the rollback requeues while it waits)
  // and keeps the canary: stable is not back yet.
  ASSERT_TRUE(eventually([&] {
    return counterSum(op()->scrapeMetrics(), "lockstep_reconcile_total",
                      "controller=\"modelrelease\"") >= 3;
  })) << op()->scrapeMetrics();
  EXPECT_EQ(canaryOf("r2").value("phase", ""), "RollingBack");
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 1);
  EXPECT_EQ(get("deployment", "gpt2-stable")["spec"]["replicas"], kReplicas);
  for (const std::string& node : cordoned_) ASSERT_EQ(kubectl({"uncordon", node}).exitCode, 0);
  cordoned_.clear();

  expectRolledBackLikeUninterrupted();
}

TEST_F(CanaryFaultsTest, ApiServerRestartDuringACanaryEndsLikeTheUninterruptedRun) {
  // Lease durations longer than the restart: the operator keeps its lease and
  // must recover its watches and writes (Forbidden answers while the new API
  // server's RBAC cache fills, broken watches) rather than restart. With the
  // chart's 15 s / 10 s, a restart slower than the renew deadline makes the
  // operator exit for its Deployment to restart it; the kill tests cover that.
  ASSERT_EQ(op()->stop(), "");
  ASSERT_EQ(op()->start({"--leader-elect-lease-duration=120s", "--leader-elect-renew-deadline=90s",
                         "--leader-elect-retry-period=2s"}),
            "");
  promoteBaseline();
  createCanary("v2");
  std::string holder = leaseHolder();
  ASSERT_FALSE(holder.empty());
  waitCanary(
      "v2",
      [](const json& c) {
        return c.value("step", -1) == 0 && c.value("/analysis/count"_json_pointer, 0) >= 1;
      },
      "the analysis of step 1 under way");
  auto r = clusterScript({"restart-apiserver"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectPromotedLikeUninterrupted("v2");
  // The operator rode out the restart: same process, still the leader.
  EXPECT_TRUE(op()->alive()) << "the operator exited";
  EXPECT_EQ(leaseHolder(), holder);
  ASSERT_EQ(op()->stop(), "");
  ASSERT_EQ(op()->start(fastLease()), "");
}

TEST_F(CanaryFaultsTest, LeaderChangeDuringAPauseEndsLikeTheUninterruptedRun) {
  // Replica B takes the (released) lease; A then runs as the standby that also
  // serves admission on the port the webhook configuration names.
  ASSERT_EQ(op()->stop(), "");
  OperatorProcess b;
  std::vector<std::string> bArgs = fastLease();
  bArgs.push_back("--webhook-port=" + std::to_string(freePort()));
  ASSERT_EQ(b.start(bArgs), "");
  ASSERT_TRUE(eventually([&] {
    return counterSum(b.scrapeMetrics(), "lockstep_leader_election_is_leader", "") == 1;
  }));
  ASSERT_EQ(op()->start(fastLease()), "");
  std::string holderB = leaseHolder();
  ASSERT_FALSE(holderB.empty());
  EXPECT_EQ(counterSum(op()->scrapeMetrics(), "lockstep_leader_election_is_leader", ""), 0);

  promoteBaseline();
  createCanary("v2");
  waitCanary(
      "v2",
      [](const json& c) {
        return c.value("step", -1) == 0 && c.value("reason", "") == "CanaryPaused";
      },
      "step 1 paused");
  b.stop(SIGKILL);
  ASSERT_TRUE(eventually([&] {
    std::string holder = leaseHolder();
    return !holder.empty() && holder != holderB;
  })) << "the standby never took the lease";
  expectPromotedLikeUninterrupted("v2");
  EXPECT_EQ(counterSum(op()->scrapeMetrics(), "lockstep_leader_election_is_leader", ""), 1);
}

}  // namespace
}  // namespace lockstep::testing
