// The GPU pre-check's CPU cost per reconcile (controllers/modelrelease/prod/
// gpu_capacity.h): the shell runs gpuCapacityOf over every cached node and
// unfinished pod in each reconcile of a release in prod, and countReadyPods
// (canary_observe.h) over the model's pods. Both read the objects through the
// typed views (operator/kube/views.h); this says what that costs.
//
//   bench_gpu_capacity [nodes] [pods] [modelPods] [repetitions]
//
// Nodes are whole (labels, taints, conditions, allocatable) as the node
// informer holds them; pods are slimmed as the shared pod cache holds them
// (controllers/common/cached_pods.h); the model's pods are whole (conditions,
// container statuses, owner references), a tenth terminating. Medians of the
// CPU time per call over the repetitions are printed.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cpu_timing.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/gpu_capacity.h"

namespace {

using nlohmann::json;

using lockstep::bench::cpuSeconds;
using lockstep::bench::median;

json node(int i) {
  const std::string name = "gpu-node-" + std::to_string(i);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"uid", "uid-" + name},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"kubernetes.io/arch", "amd64"},
              {"node.kubernetes.io/instance-type", "p4d.24xlarge"},
              {"nvidia.com/cuda.driver.major", "570"},
              {"nvidia.com/cuda.driver.minor", "86"},
              {"nvidia.com/cuda.driver.rev", "15"},
              {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}}}}},
          {"spec",
           {{"podCIDR", "10.244.0.0/24"},
            {"taints",
             json::array(
                 {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}})}}},
          {"status",
           {{"capacity", {{"cpu", "96"}, {"memory", "1152Gi"}, {"nvidia.com/gpu", "16"}}},
            {"allocatable", {{"cpu", "95500m"}, {"memory", "1150Gi"}, {"nvidia.com/gpu", "16"}}},
            {"conditions", json::array({{{"type", "MemoryPressure"}, {"status", "False"}},
                                        {{"type", "DiskPressure"}, {"status", "False"}},
                                        {{"type", "PIDPressure"}, {"status", "False"}},
                                        {{"type", "Ready"}, {"status", "True"}}})}}}};
}

json slimPod(int i, int nodes) {
  const std::string name = "serve-" + std::to_string(i);
  return {{"metadata",
           {{"name", name},
            {"namespace", "team-" + std::to_string(i % 20)},
            {"uid", "uid-" + name},
            {"resourceVersion", std::to_string(1000 + i)},
            {"labels", {{"app", "serve"}, {"pod-template-hash", "7d9f8"}}},
            {"annotations", json::object()}}},
          {"spec",
           {{"nodeName", "gpu-node-" + std::to_string(i % nodes)},
            {"containers",
             json::array({{{"name", "server"},
                           {"image", "registry.example/serve@sha256:" + std::string(64, 'a')},
                           {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}}})},
            {"initContainers", json::array()},
            {"ephemeralContainers", json::array()},
            {"volumes", json::array()}}},
          {"status", {{"phase", "Running"}}}};
}

json modelPod(int i) {
  const std::string name = "gpt2-stable-7d9f8-" + std::to_string(i);
  json p = {{"metadata",
             {{"name", name},
              {"namespace", "ml"},
              {"uid", "uid-" + name},
              {"creationTimestamp", "2026-12-03T20:00:" + std::to_string(10 + i % 50) + "Z"},
              {"labels",
               {{"lockstep.dev/model", "gpt2"},
                {"lockstep.dev/track", "stable"},
                {"lockstep.dev/release", "gpt2-v1"},
                {"pod-template-hash", "7d9f8"}}},
              {"ownerReferences", json::array({{{"apiVersion", "apps/v1"},
                                                {"kind", "ReplicaSet"},
                                                {"name", "gpt2-stable-7d9f8"},
                                                {"uid", "rs"},
                                                {"controller", true}}})}}},
            {"spec", {{"nodeName", "gpu-node-" + std::to_string(i % 50)}}},
            {"status",
             {{"phase", "Running"},
              {"conditions", json::array({{{"type", "Initialized"}, {"status", "True"}},
                                          {{"type", "Ready"}, {"status", "True"}},
                                          {{"type", "ContainersReady"}, {"status", "True"}},
                                          {{"type", "PodScheduled"}, {"status", "True"}}})},
              {"containerStatuses",
               json::array({{{"name", "server"}, {"ready", true}, {"restartCount", 0}}})}}}};
  if (i % 10 == 0) p["metadata"]["deletionTimestamp"] = "2026-12-03T20:05:00Z";
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1000;
  const int pods = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10000;
  const int modelPods = argc > 3 ? std::max(1, std::atoi(argv[3])) : 100;
  const int reps = argc > 4 ? std::max(1, std::atoi(argv[4])) : 21;
  std::vector<json> nodeObjects, podObjects, model;
  for (int i = 0; i < nodes; ++i) nodeObjects.push_back(node(i));
  for (int i = 0; i < pods; ++i) podObjects.push_back(slimPod(i, nodes));
  for (int i = 0; i < modelPods; ++i) model.push_back(modelPod(i));
  std::vector<const json*> n, p;
  for (const json& x : nodeObjects) n.push_back(&x);
  for (const json& x : podObjects) p.push_back(&x);

  std::vector<double> capacity, ready;
  int64_t free = 0;
  int count = 0;
  for (int r = 0; r < reps; ++r) {
    double t0 = cpuSeconds();
    const auto cap = lockstep::controllers::gpuCapacityOf(1, n, p, "550.54.14");
    capacity.push_back(cpuSeconds() - t0);
    free = 0;
    for (int64_t f : cap.freePerNode) free += f;
    t0 = cpuSeconds();
    count = lockstep::controllers::countReadyPods(model, "stable", "gpt2-v1");
    ready.push_back(cpuSeconds() - t0);
  }
  std::printf("gpuCapacityOf: %d nodes, %d pods: %.3f ms per call (median of %d; %lld GPUs free)\n",
              nodes, pods, median(capacity) * 1e3, reps, static_cast<long long>(free));
  std::printf("countReadyPods: %d pods of the model: %.1f us per call (%d Ready)\n", modelPods,
              median(ready) * 1e6, count);
  return 0;
}
