// The chart's Grafana dashboard against real data: a real Prometheus (2.42,
// tests/cluster/prometheus.sh) scrapes the real operator's /metrics while the
// operator admits and refuses pods, runs a gate, promotes one release, rolls
// back another and holds a third in a canary pause on the real control plane.
// Then every query of every panel of helm/lockstep/dashboards/lockstep.json,
// with Grafana's variables filled in, must parse and return series: a panel
// whose metric the operator does not export (a renamed metric, a wrong label)
// fails here. The canary step gauges come and go with their release.
// docs/observability.md is the contract.
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/prometheus/prometheus_world.h"
#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kDashboard =
    std::string(LOCKSTEP_SOURCE_DIR) + "/helm/lockstep/dashboards/lockstep.json";
const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000003";
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";

std::string package(char c) { return "registry.example/models/gpt2@sha256:" + std::string(64, c); }

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
    std::string error;
    PrometheusWorld::Options options;
    options.scrapeTargets = {"127.0.0.1:" + std::to_string(op_->metricsPort())};
    options.scrapeToken = metricsScraperToken();
    prom_ = PrometheusWorld::start(options, error);
    ASSERT_NE(prom_, nullptr) << error;
    ns_ = uniqueName("dash");
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

  CommandResult createRelease(const std::string& name, const std::string& pkg, json stages) {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}, {"namespace", ns_}}},
               {"spec",
                {{"model", "gpt2"},
                 {"package", pkg},
                 {"runtimeEnvRef", {{"name", "torch"}}},
                 {"closureHash", hash_},
                 {"stages", std::move(stages)}}}};
    return kubectl({"create", "-f", "-"}, mr.dump());
  }

  static json gate(const std::string& name) {
    json tmpl = {
        {"metadata",
         {{"annotations",
           {{"lockstep.dev/test-termination-message", ""}, {"lockstep.dev/test-duration", "1s"}}}}},
        {"spec", {{"containers", json::array({{{"name", name}}})}}}};
    return {{"name", name},
            {"gate", {{"template", tmpl}, {"metrics", json::array()}, {"timeout", "5m"}}}};
  }

  static json prod(json steps) {
    json tmpl = {{"spec", {{"containers", json::array({{{"name", "server"}}})}}}};
    return {{"name", "prod"},
            {"serving", {{"template", tmpl}, {"replicas", 2}, {"port", 8080}}},
            {"canary", {{"steps", std::move(steps)}, {"progressDeadline", "2m"}}}};
  }

  json waitPhase(const std::string& name, const std::string& phase) {
    json last;
    bool ok = eventually(
        [&] {
          last = kubectlJson({"get", "mr", name, "-n", ns_});
          return !last.is_discarded() && last.contains("status") && last["status"].is_object() &&
                 last["status"].value("phase", "") == phase;
        },
        std::chrono::seconds(150));
    EXPECT_TRUE(ok) << name << ": phase " << phase << " not reached: " << last.dump(2);
    return last;
  }

  // The operator's own exposition: name -> value of the release's canary series
  // (lockstep_release_canary_step, lockstep_release_canary_weight), empty when it has none.
  std::map<std::string, std::string> canarySeries(const std::string& release) {
    std::map<std::string, std::string> out;
    std::istringstream lines(op_->scrapeMetrics());
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

  static OperatorProcess* op_;
  std::unique_ptr<PrometheusWorld> prom_;
  std::string ns_, hash_;
};

OperatorProcess* DashboardClusterTest::op_ = nullptr;

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
      {"spec", {{"containers", json::array({{{"name", "c"}, {"image", kImage}}})}}}};
  auto denied = kubectl({"create", "-f", "-"}, pod.dump());
  ASSERT_NE(denied.exitCode, 0) << "a pod with a stale closure hash was admitted";

  // r1: a gate, then one canary step: promoted (gate results, durations, a promotion).
  ASSERT_EQ(createRelease("r1", package('1'),
                          json::array({gate("eval"), prod(json::array({{{"weight", 50}}}))}))
                .exitCode,
            0);
  waitPhase("r1", "Promoted");

  // r2: held in an indefinite pause (the canary step gauges), then aborted:
  // rolled back with reason Aborted, and its canary series are gone.
  ASSERT_EQ(
      createRelease("r2", package('2'),
                    json::array({prod(json::array({{{"weight", 50}, {"pause", "Indefinite"}}}))}))
          .exitCode,
      0);
  waitPhase("r2", "Canary");
  const std::map<std::string, std::string> pausedAtFirstStep = {
      {"lockstep_release_canary_step", "0"}, {"lockstep_release_canary_weight", "50"}};
  EXPECT_TRUE(eventually([&] { return canarySeries("r2") == pausedAtFirstStep; }))
      << json(canarySeries("r2")).dump();
  ASSERT_EQ(kubectl({"annotate", "mr", "r2", "-n", ns_, "lockstep.dev/abort=" + who.out}).exitCode,
            0);
  json r2 = waitPhase("r2", "RolledBack");
  EXPECT_EQ(r2.value("/status/canary/reason"_json_pointer, std::string()), "Aborted")
      << r2["status"].dump(2);
  EXPECT_TRUE(eventually([&] { return canarySeries("r2").empty(); }))
      << "the canary series of a rolled-back release stay: " << json(canarySeries("r2")).dump();

  // r3: two steps, paused in the first: its canary series exist while the panels are checked.
  ASSERT_EQ(createRelease("r3", package('3'),
                          json::array({prod(json::array(
                              {{{"weight", 25}, {"pause", "Indefinite"}}, {{"weight", 100}}}))}))
                .exitCode,
            0);
  waitPhase("r3", "Canary");
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
