// The chart's Grafana dashboard against real data: a real Prometheus (2.42,
// tests/cluster/prometheus.sh) scrapes the real operator's /metrics while the
// operator admits and refuses pods, runs a gate, promotes one release, rolls
// back another and holds a third in a canary pause on the real control plane.
// Then every query of every panel of helm/lockstep/dashboards/lockstep.json,
// with Grafana's variables filled in, must parse and return series: a panel
// whose metric the operator does not export (a renamed metric, a wrong label)
// fails here. The canary step gauges come and go with their release.
// docs/observability.md is the contract.
// The release world (tests/support/release_world.h) runs the operator, the
// namespace and RuntimeEnv; this test adds a Prometheus of its own that
// scrapes the operator's /metrics, and the invariant monitor watches model gpt2.
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/prometheus/prometheus_world.h"
#include "tests/support/cluster_env.h"
#include "tests/support/release_world.h"

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kDashboard =
    std::string(LOCKSTEP_SOURCE_DIR) + "/helm/lockstep/dashboards/lockstep.json";

// Grafana's variables as the dashboard would send them for this test's data.
std::string fillVariables(std::string expr, const std::string& ns, const std::string& model) {
  const std::pair<const char*, std::string> vars[] = {
      {"$__rate_interval", "30s"}, {"$__range", "1h"}, {"$namespace", ns}, {"$model", model}};
  for (const auto& [name, value] : vars) {
    for (size_t at = expr.find(name); at != std::string::npos; at = expr.find(name, at)) {
      expr.replace(at, std::string(name).size(), value);
      at += value.size();
    }
  }
  return expr;
}

class DashboardClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator(), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void SetUp() override {
    ASSERT_EQ(world_.setUp({.nsPrefix = "dash", .monitor = true}), "");
    std::string error;
    PrometheusWorld::Options options;
    options.scrapeTargets = {"127.0.0.1:" + std::to_string(ReleaseWorld::op().metricsPort())};
    options.scrapeToken = metricsScraperToken();
    prom_ = PrometheusWorld::start(options, error);
    ASSERT_NE(prom_, nullptr) << error;
    ns_ = world_.ns();
  }
  void TearDown() override {
    world_.tearDown(HasFailure());
    prom_.reset();
  }

  // The operator's own exposition: name -> value of the release's canary series
  // (lockstep_release_canary_step, lockstep_release_canary_weight), empty when it has none.
  std::map<std::string, std::string> canarySeries(const std::string& release) {
    std::map<std::string, std::string> out;
    std::istringstream lines(ReleaseWorld::op().scrapeMetrics());
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("lockstep_release_canary_", 0) != 0 ||
          line.find("namespace=\"" + ns_ + "\"") == std::string::npos ||
          line.find("release=\"" + release + "\"") == std::string::npos ||
          line.find("model=\"gpt2\"") == std::string::npos)
        continue;
      out[line.substr(0, line.find('{'))] = line.substr(line.rfind(' ') + 1);
    }
    return out;
  }

  // One instant query: the decoded response, or a discarded value.
  json query(const std::string& expr) {
    auto r = run({"curl", "-sS", "--max-time", "5", "-G", prom_->url() + "/api/v1/query",
                  "--data-urlencode", "query=" + expr});
    return json::parse(r.out, nullptr, false);
  }

  ReleaseWorld world_;
  std::unique_ptr<PrometheusWorld> prom_;
  std::string ns_;
};

TEST_F(DashboardClusterTest, EveryPanelQueryReturnsSeriesOfTheRunningOperator) {
  auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_EQ(who.exitCode, 0) << who.err;

  // Admission: a pod whose closure hash is not the RuntimeEnv's is denied
  // (serving pods below are allowed).
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "stale"},
        {"namespace", ns_},
        {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
        {"annotations", {{"lockstep.dev/closure-hash", "sha256:" + std::string(64, '0')}}}}},
      {"spec", {{"containers", json::array({{{"name", "c"}, {"image", kTestImage}}})}}}};
  auto denied = kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_NE(denied.exitCode, 0) << "a pod with a stale closure hash was admitted";

  // r1: a gate, then one canary step: promoted (gate results, durations, a promotion).
  ASSERT_EQ(world_
                .create(world_.release("r1", testPackage('1'))
                            .withGate(gateStage("eval"))
                            .withProdStage(prodStage(json::array({canaryStep(50)}))))
                .exitCode,
            0);
  world_.waitPhase("r1", "Promoted");

  // r2: held in an indefinite pause (the canary step gauges), then aborted:
  // rolled back with reason Aborted, and its canary series are gone.
  ASSERT_EQ(world_
                .create(world_.release("r2", testPackage('2'))
                            .withProdStage(prodStage(json::array({canaryStep(50, "Indefinite")}))))
                .exitCode,
            0);
  world_.waitPhase("r2", "Canary");
  const std::map<std::string, std::string> pausedAtFirstStep = {
      {"lockstep_release_canary_step", "0"}, {"lockstep_release_canary_weight", "50"}};
  EXPECT_TRUE(eventually([&] { return canarySeries("r2") == pausedAtFirstStep; }))
      << json(canarySeries("r2")).dump();
  ASSERT_EQ(kubectl({"annotate", "mr", "r2", "-n", ns_, "lockstep.dev/abort=" + who.out}).exitCode,
            0);
  json r2 = world_.waitPhase("r2", "RolledBack");
  EXPECT_EQ(r2.value("/status/canary/reason"_json_pointer, std::string()), "Aborted")
      << r2["status"].dump(2);
  EXPECT_TRUE(eventually([&] { return canarySeries("r2").empty(); }))
      << "the canary series of a rolled-back release stay: " << json(canarySeries("r2")).dump();

  // r3: two steps, paused in the first: its canary series exist while the panels are checked.
  ASSERT_EQ(world_
                .create(world_.release("r3", testPackage('3'))
                            .withProdStage(prodStage(
                                json::array({canaryStep(25, "Indefinite"), canaryStep(100)}))))
                .exitCode,
            0);
  world_.waitPhase("r3", "Canary");
  ASSERT_TRUE(eventually([&] {
    return canarySeries("r3")["lockstep_release_canary_weight"] == "25";
  })) << json(canarySeries("r3")).dump();

  // Every panel's every query, as Grafana would send it for model gpt2 in ns_.
  json dashboard = json::parse(readFile(kDashboard), nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << kDashboard << " is not valid JSON";
  int checked = 0;
  for (const json& panel : dashboard.at("panels")) {
    if (panel.value("type", "") == "row") continue;
    for (const json& target : panel.value("targets", json::array())) {
      const std::string expr = fillVariables(target.value("expr", ""), ns_, "gpt2");
      SCOPED_TRACE(panel.value("title", "") + ": " + expr);
      ASSERT_EQ(expr.find('$'), std::string::npos) << "a Grafana variable this test does not fill";
      json last;
      bool ok = eventually([&] {
        last = query(expr);
        return !last.is_discarded() && last.value("status", "") == "success" &&
               last["data"].value("resultType", "") == "vector" && !last["data"]["result"].empty();
      });
      EXPECT_TRUE(ok) << "the query parses and returns series; last answer: " << last.dump();
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
  // The rollback panel shows the reason; the canary step panel shows r3 at step 1 (1-based).
  json rollbacks =
      query(fillVariables("sum by (model, reason) (increase(lockstep_release_rollbacks_total"
                          "{model=~\"$model\"}[$__range]))",
                          ns_, "gpt2"));
  ASSERT_FALSE(rollbacks.is_discarded());
  ASSERT_EQ(rollbacks["data"]["result"].size(), 1u) << rollbacks.dump();
  EXPECT_EQ(rollbacks["data"]["result"][0]["metric"]["reason"], "Aborted");
  json steps =
      query("max by (namespace, model, release) (lockstep_release_canary_step{namespace=\"" + ns_ +
            "\"}) + 1");
  ASSERT_FALSE(steps.is_discarded());
  ASSERT_EQ(steps["data"]["result"].size(), 1u) << steps.dump();
  EXPECT_EQ(steps["data"]["result"][0]["metric"]["release"], "r3");
  EXPECT_EQ(steps["data"]["result"][0]["value"][1], "1");

  // A deleted release's canary series go.
  ASSERT_EQ(kubectl({"delete", "mr", "r3", "-n", ns_}).exitCode, 0);
  EXPECT_TRUE(eventually([&] { return canarySeries("r3").empty(); }))
      << "the canary series of a deleted release stay: " << json(canarySeries("r3")).dump();
}

}  // namespace
}  // namespace lockstep::testing
