// Tests of the canary GPU pre-check (controllers/modelrelease/prod/gpu_capacity.h).
#include "controllers/modelrelease/prod/gpu_capacity.h"

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/model_release.h"

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;

TEST(CanaryGpu, PreCheckFitsNodeByNode) {
  EXPECT_TRUE(gpuPreCheck({2, {1, 1, 1}}, 1).go == false);  // 3 free, but no node has 2
  EXPECT_TRUE(gpuPreCheck({2, {1, 2}}, 1).go);
  EXPECT_FALSE(gpuPreCheck({2, {2, 1}}, 2).go);
  EXPECT_TRUE(gpuPreCheck({1, {0, 0}}, 0).go);
  EXPECT_TRUE(gpuPreCheck({0, {}}, 3).go);  // no GPU requested
  auto check = gpuPreCheck({1, {0, 0}}, 1);
  EXPECT_FALSE(check.go);
  EXPECT_NE(check.message.find("2 compatible node(s) have 0 free GPU(s)"), std::string::npos)
      << check.message;
}

json gpuNode(const std::string& name, const std::string& gpus, const std::string& driverMajor,
             bool unschedulable = false) {
  json n = {{"metadata",
             {{"name", name},
              {"labels",
               {{"nvidia.com/cuda.driver.major", driverMajor},
                {"nvidia.com/cuda.driver.minor", "10"},
                {"nvidia.com/cuda.driver.rev", "0"}}}}},
            {"spec", json::object()},
            {"status", {{"allocatable", {{"cpu", "64"}, {"nvidia.com/gpu", gpus}}}}}};
  if (unschedulable) n["spec"]["unschedulable"] = true;
  return n;
}

json boundPod(const std::string& node, int gpus, const std::string& phase = "Running",
              bool asLimit = false) {
  json res = {{asLimit ? "limits" : "requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
  return {
      {"spec",
       {{"nodeName", node}, {"containers", json::array({{{"name", "c"}, {"resources", res}}})}}},
      {"status", {{"phase", phase}}}};
}

TEST(CanaryPlan, GpuCapacityCountsFreeGpusOnCompatibleNodesOnly) {
  std::vector<json> nodes = {gpuNode("gpu-a", "8", "570"), gpuNode("gpu-b", "8", "570"),
                             gpuNode("gpu-old", "8", "525"), gpuNode("gpu-off", "8", "570", true),
                             gpuNode("cpu", "0", "570")};
  std::vector<json> pods = {boundPod("gpu-a", 4), boundPod("gpu-a", 3, "Running", true),
                            boundPod("gpu-a", 8, "Succeeded"), boundPod("gpu-b", 8),
                            boundPod("gpu-old", 1)};
  GpuCapacity cap = gpuCapacityOf(2, nodes, pods, "550.54.14");
  EXPECT_EQ(cap.gpusPerPod, 2);
  // gpu-a: 8 - 4 - 3 (a limit counts as the request; a Succeeded pod holds nothing);
  // gpu-b full; gpu-old's driver is too old, gpu-off is cordoned, cpu has no GPU.
  EXPECT_EQ(cap.freePerNode, (std::vector<int64_t>{1, 0}));
  EXPECT_FALSE(gpuPreCheck(cap, 1).go);
  // Without a driver floor, the old-driver node counts too.
  EXPECT_EQ(gpuCapacityOf(2, nodes, pods, "").freePerNode, (std::vector<int64_t>{1, 0, 7}));
}

TEST(CanaryPlan, PodGpuRequestCountsLikeTheScheduler) {
  json spec = {
      {"containers", json::array({{{"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}},
                                  {{"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}},
                                  {{"resources", {{"requests", {{"cpu", "1"}}}}}}})},
      {"initContainers",
       json::array({{{"resources", {{"requests", {{"nvidia.com/gpu", "2"}}}}}}})}};
  EXPECT_EQ(podGpuRequest(spec), 3);
  spec["initContainers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "4";
  EXPECT_EQ(podGpuRequest(spec), 4);  // the largest init container wins
  spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "500m";
  spec["initContainers"] = json::array();
  EXPECT_EQ(podGpuRequest(spec), 2);  // a malformed quantity counts as 0
  EXPECT_EQ(podGpuRequest(json("not a spec")), 0);
}

// The memo counts again exactly when the node or the pod cache moved, per
// minimum driver, and hands back what the last count found otherwise.
TEST(CanaryGpu, CountMemoCountsAgainOnlyWhenACacheMoved) {
  GpuCountMemo memo;
  int counts = 0;
  std::vector<int64_t> found = {3, 1};
  auto count = [&] {
    ++counts;
    return found;
  };
  EXPECT_EQ(memo.freePerNode("550", 1, 1, count), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(counts, 1);
  found = {0, 0};  // what a count would find now: not asked while nothing moved
  EXPECT_EQ(memo.freePerNode("550", 1, 1, count), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(counts, 1);
  EXPECT_EQ(memo.freePerNode("550", 1, 2, count), (std::vector<int64_t>{0, 0}));  // a pod moved
  EXPECT_EQ(counts, 2);
  found = {5};
  EXPECT_EQ(memo.freePerNode("550", 2, 2, count), (std::vector<int64_t>{5}));  // a node moved
  EXPECT_EQ(counts, 3);
  // Another driver has a count of its own; the first one's is kept.
  found = {9};
  EXPECT_EQ(memo.freePerNode("", 2, 2, count), (std::vector<int64_t>{9}));
  EXPECT_EQ(counts, 4);
  EXPECT_EQ(memo.freePerNode("550", 2, 2, count), (std::vector<int64_t>{5}));
  EXPECT_EQ(counts, 4);
  // A version that went back (a cache re-created) is a move as well.
  EXPECT_EQ(memo.freePerNode("550", 1, 2, count), (std::vector<int64_t>{9}));
  EXPECT_EQ(counts, 5);
}

std::vector<kube::ObjectPtr> objects(const std::vector<json>& xs) {
  std::vector<kube::ObjectPtr> out;
  for (const json& x : xs) out.push_back(std::make_shared<const kube::Object>(x));
  return out;
}

// What gpuCapacityOf counts over the same objects.
std::vector<int64_t> counted(const std::vector<kube::ObjectPtr>& nodes,
                             const std::vector<kube::ObjectPtr>& pods, const std::string& driver) {
  std::vector<json> n, p;
  for (const auto& x : nodes) n.push_back(*x);
  for (const auto& x : pods) p.push_back(*x);
  return gpuCapacityOf(1, n, p, driver).freePerNode;
}

TEST(CanaryGpu, TheTallyCountsAsGpuCapacityOfAcrossNewVersionsOfItsObjects) {
  GpuTally tally;
  std::vector<kube::ObjectPtr> nodes =
      objects({gpuNode("gpu-a", "8", "570"), gpuNode("gpu-b", "8", "570"),
               gpuNode("gpu-old", "8", "525"), gpuNode("gpu-off", "8", "570", true)});
  std::vector<kube::ObjectPtr> pods =
      objects({boundPod("gpu-a", 4), boundPod("gpu-a", 8, "Succeeded"), boundPod("gpu-b", 2),
               boundPod("gpu-old", 1), boundPod("", 1)});
  auto expectAsCounted = [&](const std::string& driver, const std::vector<int64_t>& want) {
    EXPECT_EQ(counted(nodes, pods, driver), want);  // the pure count agrees with the case
    EXPECT_EQ(tally.freePerNode(nodes, pods, driver), want);
  };
  expectAsCounted("550.54.14", {4, 6});
  expectAsCounted("550.54.14", {4, 6});  // nothing changed
  expectAsCounted("", {4, 6, 7});        // another floor: each node judged against it
  // A pod's new version: bound elsewhere, then finished; a pod gone, one added.
  pods[2] = objects({boundPod("gpu-a", 2)})[0];
  expectAsCounted("550.54.14", {2, 8});
  pods[0] = objects({boundPod("gpu-a", 4, "Failed")})[0];
  expectAsCounted("550.54.14", {6, 8});
  pods.erase(pods.begin() + 2);
  pods.push_back(objects({boundPod("gpu-b", 3)})[0]);
  expectAsCounted("550.54.14", {8, 5});
  // A node's new version: cordoned, a driver upgrade, more GPUs.
  nodes[0] = objects({gpuNode("gpu-a", "8", "570", true)})[0];
  nodes[2] = objects({gpuNode("gpu-old", "8", "570")})[0];
  nodes[1] = objects({gpuNode("gpu-b", "16", "570")})[0];
  expectAsCounted("550.54.14", {13, 7});
  // Objects gone and come back as new objects of the same names.
  nodes = objects({gpuNode("gpu-a", "4", "570")});
  pods = objects({boundPod("gpu-a", 1)});
  expectAsCounted("550.54.14", {3});
}

}  // namespace
}  // namespace lockstep::controllers
