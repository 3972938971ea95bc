// The invariant monitor against the real cluster (must-show 2 of issue 19).
// The test plays a planner that gets the surge rollback order wrong: it
// switches stable and canary at once, scaling stable back up and the canary
// down as soon as the new stable pod runs, without waiting for it to be Ready.
// In the world with warm-up (the serving pods' default) the model then has
// fewer than N Ready pods for the warm-up's length, and the monitor says so;
// in the world without warm-up (pods Ready as they start, the old test world)
// the same wrong order is never seen. Both runs are in one test.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/invariant_monitor.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '7');

// A Deployment of model "sim" as Lockstep builds them (labels, annotations,
// surge strategy), running `release`.
json deployment(const std::string& track, const std::string& release, int replicas, bool warmup) {
  json labels = {{"lockstep.dev/model", "sim"},
                 {"lockstep.dev/track", track},
                 {"lockstep.dev/release", release}};
  json annotations = {{"lockstep.dev/package", "pkg-" + release},
                      {"lockstep.dev/closure-hash", "hash-" + release}};
  if (!warmup) {
    annotations["lockstep.dev/test-warmup"] = "0s";
    annotations["lockstep.dev/test-termination"] = "0s";
  }
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "sim-" + track}, {"labels", labels}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", labels}}},
        {"strategy",
         {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", 1}, {"maxUnavailable", 0}}}}},
        {"template",
         {{"metadata", {{"labels", labels}, {"annotations", annotations}}},
          {"spec", {{"containers", json::array({{{"name", "server"}, {"image", kImage}}})}}}}}}}};
}

struct Pods {
  int ready = 0, running = 0, existing = 0;  // not terminating
};

Pods podsOf(const std::string& ns, const std::string& track) {
  Pods out;
  json pods = kubectlJson({"get", "pods", "-n", ns, "-l", "lockstep.dev/track=" + track});
  if (pods.is_discarded()) return out;
  for (const json& p : pods["items"]) {
    if (p["metadata"].contains("deletionTimestamp")) continue;
    ++out.existing;
    if (p["status"].value("phase", "") == "Running") ++out.running;
    for (const json& c : p["status"].value("conditions", json::array()))
      if (c["type"] == "Ready" && c["status"] == "True") ++out.ready;
  }
  return out;
}

void scale(const std::string& ns, const std::string& track, int replicas) {
  auto r = kubectl(
      {"scale", "deployment", "sim-" + track, "-n", ns, "--replicas=" + std::to_string(replicas)});
  ASSERT_EQ(r.exitCode, 0) << r.err;
}

// Lockstep's CRDs, established: the monitor watches the Model kind, whatever its
// options, and this binary may be the first on a fresh cluster.
void installCrds() {
  ASSERT_EQ(kubectl({"apply", "-f", std::string(LOCKSTEP_SOURCE_DIR) + "/crds"}).exitCode, 0);
  ASSERT_EQ(kubectl({"wait", "--for", "condition=Established", "-f",
                     std::string(LOCKSTEP_SOURCE_DIR) + "/crds", "--timeout=60s"})
                .exitCode,
            0);
}

// A canary step at 50% done right, then the wrong rollback. The monitor's report.
std::string wrongRollback(bool warmup) {
  const std::string ns = uniqueName(warmup ? "surge-warm" : "surge-kind");
  EXPECT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  MonitorOptions options;
  options.ns = ns;
  options.model = "sim";
  options.replicas = 2;
  options.capacity = "surge";
  options.validated = {{"pkg-v1", kImage, "hash-v1"}, {"pkg-v2", kImage, "hash-v2"}};
  std::string error;
  auto monitor = InvariantMonitor::start(kubeconfigPath(), options, error);
  EXPECT_NE(monitor, nullptr) << error;
  if (!monitor) return "no monitor";
  for (const json& d :
       {deployment("stable", "v1", 2, warmup), deployment("canary", "v2", 0, warmup)})
    EXPECT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, d.dump()).exitCode, 0);
  EXPECT_TRUE(eventually([&] { return podsOf(ns, "stable").ready == 2; }));

  // The canary step, in surge order: a canary pod, Ready, then one stable pod less.
  scale(ns, "canary", 1);
  EXPECT_TRUE(eventually([&] { return podsOf(ns, "canary").ready == 1; }));
  scale(ns, "stable", 1);
  EXPECT_TRUE(eventually([&] { return podsOf(ns, "stable").existing == 1; }));

  // The wrong rollback: stable back to 2 and, once its new pod runs (Ready or
  // not), the canary to 0.
  scale(ns, "stable", 2);
  EXPECT_TRUE(eventually([&] { return podsOf(ns, "stable").running == 2; }));
  scale(ns, "canary", 0);
  EXPECT_TRUE(eventually(
      [&] { return podsOf(ns, "stable").ready == 2 && podsOf(ns, "canary").existing == 0; }));
  std::string report = monitor->report();
  EXPECT_GT(monitor->events(), 0);
  monitor.reset();
  EXPECT_EQ(kubectl({"delete", "namespace", ns, "--timeout=120s"}).exitCode, 0);
  return report;
}

TEST(InvariantMonitorClusterTest, AWrongSurgeRollbackFailsWithWarmUpAndPassesWithout) {
  ASSERT_NO_FATAL_FAILURE(installCrds());
  std::string warm = wrongRollback(/*warmup=*/true);
  std::cout << "with warm-up:\n" << warm << "\n";
  EXPECT_NE(warm.find("invariant violated: ready: 1 Ready serving pod(s) < 2 (N=2, surge)"),
            std::string::npos)
      << warm;
  EXPECT_NE(warm.find("pod sim-canary-"), std::string::npos) << "the trail names the pods:\n"
                                                             << warm;
  std::string kind = wrongRollback(/*warmup=*/false);
  EXPECT_EQ(kind, "") << "without warm-up the same order is never seen";
}

// A release created while the monitor's releases' watch is behind (as after a
// kube-apiserver restart, when each watch reconnects after its own backoff):
// its pod is checked against a fresh list, so it is no violation; a pod no
// release validated still is one, with the same fresh list.
TEST(InvariantMonitorClusterTest, ALaggingReleaseWatchIsCheckedAgainstAFreshList) {
  ASSERT_EQ(kubectl({"apply", "-f", std::string(LOCKSTEP_SOURCE_DIR) + "/crds"}).exitCode, 0);
  ASSERT_EQ(kubectl({"wait", "--for", "condition=Established", "crd/modelreleases.lockstep.dev",
                     "--timeout=60s"})
                .exitCode,
            0);
  const std::string ns = uniqueName("lagging-watch");
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  MonitorOptions options;
  options.ns = ns;
  options.model = "sim";
  options.runtimeImage = kImage;
  options.grace = std::chrono::milliseconds(2000);
  std::string error;
  auto monitor = InvariantMonitor::start(kubeconfigPath(), options, error);
  ASSERT_NE(monitor, nullptr) << error;
  monitor->stopWatching("release");

  const std::string package = "registry.example/models/sim@sha256:" + std::string(64, '1');
  const std::string hash = "sha256:" + std::string(64, '2');
  json release = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "v1"}}},
      {"spec",
       {{"model", "sim"},
        {"package", package},
        {"runtimeEnvRef", {{"name", "torch"}}},
        {"closureHash", hash},
        {"stages", json::array({{{"name", "eval"},
                                 {"gate",
                                  {{"template", {{"spec", {{"containers", json::array()}}}}},
                                   {"metrics", json::array()}}}}})}}}};
  auto created = kubectl({"create", "-n", ns, "-f", "-"}, release.dump());
  ASSERT_EQ(created.exitCode, 0) << created.err;
  json d = deployment("stable", "v1", 1, /*warmup=*/false);
  d["spec"]["template"]["metadata"]["annotations"]["lockstep.dev/package"] = package;
  d["spec"]["template"]["metadata"]["annotations"]["lockstep.dev/closure-hash"] = hash;
  ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, d.dump()).exitCode, 0);
  EXPECT_TRUE(eventually([&] { return podsOf(ns, "stable").ready == 1; }));
  std::this_thread::sleep_for(options.grace + std::chrono::seconds(3));  // the grace, two ticks
  EXPECT_EQ(monitor->report(), "") << "the fresh list validates v1's pod";

  // A pod of a triple no release validated: a violation, fresh list or not.
  ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"},
                    deployment("canary", "v9", 1, /*warmup=*/false).dump())
                .exitCode,
            0);
  EXPECT_TRUE(eventually([&] {
    return monitor->report().find("invariant violated: triple: pod sim-canary-") !=
           std::string::npos;
  })) << monitor->report();
  EXPECT_NE(monitor->report().find("which no release validated"), std::string::npos);
  monitor.reset();
  EXPECT_EQ(kubectl({"delete", "namespace", ns, "--timeout=120s"}).exitCode, 0);
}

}  // namespace
}  // namespace lockstep::testing
