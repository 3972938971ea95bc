// Smoke tests of the local test world itself: the real kube-apiserver,
// controller-manager, scheduler and KWOK nodes behave like a cluster.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

json getJson(const std::vector<std::string>& args) { return kubectlJson(args); }

class ClusterSmokeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = uniqueName("smoke");
    auto r = kubectl({"create", "namespace", ns_});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  void TearDown() override { kubectl({"delete", "namespace", ns_, "--wait=false"}); }

  void apply(const std::string& yaml) {
    auto r = kubectl({"apply", "-n", ns_, "-f", "-"}, yaml);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  std::string ns_;
};

TEST_F(ClusterSmokeTest, ServerReportsPinnedVersion) {
  auto v = json::parse(kubectl({"version", "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(v.is_object());
  std::string server = v["serverVersion"]["gitVersion"];
  std::string client = v["clientVersion"]["gitVersion"];
  EXPECT_EQ(server, "v1.36.3");
  EXPECT_EQ(client, "v1.36.3");
}

TEST_F(ClusterSmokeTest, FiveKwokNodesAreReadyWithGpuLabels) {
  json nodes = getJson({"get", "nodes", "-l", "type=kwok"});
  ASSERT_EQ(nodes["items"].size(), 5u);
  int gpu = 0, oldDriver = 0;
  for (const auto& n : nodes["items"]) {
    bool ready = false;
    for (const auto& c : n["status"]["conditions"]) {
      if (c["type"] == "Ready") ready = c["status"] == "True";
    }
    EXPECT_TRUE(ready) << n["metadata"]["name"];
    const auto& labels = n["metadata"]["labels"];
    if (labels.contains("nvidia.com/cuda.driver.major")) {
      ++gpu;
      EXPECT_EQ(n["status"]["allocatable"]["nvidia.com/gpu"], "8");
      if (labels["nvidia.com/cuda.driver.major"] == "535") ++oldDriver;
    }
  }
  EXPECT_EQ(gpu, 3);
  EXPECT_EQ(oldDriver, 1);
}

TEST_F(ClusterSmokeTest, DeploymentReachesReadyAndIsGarbageCollected) {
  apply(R"(
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.example/web:1}]
)");
  ASSERT_TRUE(eventually([&] {
    json d = getJson({"get", "deployment", "web", "-n", ns_});
    return d.is_object() && d["status"].value("readyReplicas", 0) == 3;
  })) << kubectl({"describe", "deployment", "web", "-n", ns_}).out;

  json pods = getJson({"get", "pods", "-n", ns_, "-l", "app=web"});
  ASSERT_EQ(pods["items"].size(), 3u);
  for (const auto& p : pods["items"]) {
    EXPECT_EQ(p["status"]["phase"], "Running");
    std::string node = p["spec"].value("nodeName", "");
    json n = getJson({"get", "node", node});
    EXPECT_EQ(n["metadata"]["annotations"]["kwok.x-k8s.io/node"], "fake") << node;
  }

  auto r = kubectl({"delete", "deployment", "web", "-n", ns_});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(eventually([&] {
    json rs = getJson({"get", "replicasets", "-n", ns_, "-l", "app=web"});
    json p = getJson({"get", "pods", "-n", ns_, "-l", "app=web"});
    return rs.is_object() && p.is_object() && rs["items"].empty() && p["items"].empty();
  })) << "garbage collector left ReplicaSets or pods behind";
}

TEST_F(ClusterSmokeTest, GpuPodLandsOnlyOnGpuNodes) {
  for (int i = 0; i < 4; ++i) {
    apply("apiVersion: v1\nkind: Pod\nmetadata: {name: gpu-" + std::to_string(i) +
          "}\nspec:\n  containers:\n  - name: c\n    image: registry.example/train:1\n"
          "    resources: {limits: {nvidia.com/gpu: 1}}\n");
  }
  apply(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: too-big}\nspec:\n  containers:\n"
      "  - name: c\n    image: registry.example/train:1\n"
      "    resources: {limits: {nvidia.com/gpu: 9}}\n");
  ASSERT_TRUE(eventually([&] {
    json pods = getJson({"get", "pods", "-n", ns_});
    int running = 0;
    for (const auto& p : pods["items"]) running += p["status"].value("phase", "") == "Running";
    return running == 4;
  }));
  json pods = getJson({"get", "pods", "-n", ns_});
  for (const auto& p : pods["items"]) {
    std::string name = p["metadata"]["name"];
    std::string node = p["spec"].value("nodeName", "");
    if (name == "too-big") {
      // No node has 9 GPUs: the scheduler must leave it Pending, not squeeze it anywhere.
      EXPECT_EQ(node, "");
      EXPECT_EQ(p["status"]["phase"], "Pending");
      continue;
    }
    json n = getJson({"get", "node", node});
    EXPECT_TRUE(n["metadata"]["labels"].contains("nvidia.com/cuda.driver.major"))
        << name << " scheduled on non-GPU node " << node;
  }
}

TEST_F(ClusterSmokeTest, JobCompletesAndFailureIsOnDemand) {
  apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: ok}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: eval, image: registry.example/eval:1}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {lockstep.dev/test-outcome: fail}}
    spec:
      restartPolicy: Never
      containers: [{name: eval, image: registry.example/eval:1}]
)");
  auto condition = [&](const std::string& job, const std::string& type) {
    json j = getJson({"get", "job", job, "-n", ns_});
    if (!j.is_object()) return false;
    for (const auto& c : j["status"].value("conditions", json::array())) {
      if (c["type"] == type && c["status"] == "True") return true;
    }
    return false;
  };
  EXPECT_TRUE(eventually([&] { return condition("ok", "Complete"); }))
      << kubectl({"describe", "job", "ok", "-n", ns_}).out;
  EXPECT_TRUE(eventually([&] { return condition("bad", "Failed"); }))
      << kubectl({"describe", "job", "bad", "-n", ns_}).out;
  EXPECT_FALSE(condition("bad", "Complete"));
}

}  // namespace
}  // namespace lockstep::testing
