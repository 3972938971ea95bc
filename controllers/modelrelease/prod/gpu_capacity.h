// GPU capacity for the canary (pure, docs/rollouts.md "GPU capacity"): the
// nvidia.com/gpu a serving pod asks for, which nodes can run the RuntimeEnv's
// pods, the free GPUs on each, and whether new canary pods fit, node by node.
// Thread-safety: pure functions over values; GpuCountMemo is safe for
// concurrent use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/views.h"

namespace lockstep::controllers {

// Free GPUs (allocatable minus requested by scheduled, non-terminated pods) on
// each node compatible with the RuntimeEnv's driver, as the shell counted them.
struct GpuCapacity {
  int64_t gpusPerPod = 0;  // the serving template's nvidia.com/gpu request
  std::vector<int64_t> freePerNode;
};

struct GpuCheck {
  bool go = true;
  std::string message;
};

// Whether `podsToAdd` new pods of `gpusPerPod` GPUs each fit, node by node.
GpuCheck gpuPreCheck(const GpuCapacity& capacity, int podsToAdd);

using kube::kGpuResource;

// The nvidia.com/gpu a pod spec asks for, as the scheduler counts it: the
// larger of the sum over its containers and its largest init container; a
// container's request, else its limit. Malformed quantities count as 0
// (kube::gpuRequestOf; operator/kube/views.h says which are malformed).
int64_t podGpuRequest(const nlohmann::json& podSpec);

// Whether `node` can run the RuntimeEnv's pods: schedulable (not cordoned), it
// has allocatable GPUs, and its GPU feature discovery driver labels
// (nvidia.com/cuda.driver.*) satisfy `minDriver` ("" = any node that reports
// GPUs). Taints are not read (a serving template may tolerate them).
bool gpuNodeCompatible(const kube::NodeGpuView& node, const std::string& minDriver);
bool gpuNodeCompatible(const nlohmann::json& node, const std::string& minDriver);

// Free GPUs on each compatible node among `nodes`: allocatable nvidia.com/gpu
// minus the GPU requests of `pods` bound to it (spec.nodeName) that are not
// Succeeded or Failed. `pods` may include pods of other nodes. One pass over the
// pods, then one over the nodes (the shell runs it in every reconcile of a
// release in prod, over every node and GPU pod it caches).
GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<nlohmann::json>& nodes,
                          const std::vector<nlohmann::json>& pods, const std::string& minDriver);
// The same over objects the caller holds (the shell's cached objects, not copied).
GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<const nlohmann::json*>& nodes,
                          const std::vector<const nlohmann::json*>& pods,
                          const std::string& minDriver);

// The free GPUs per node of the last count for each minimum driver, with the
// versions of the node and pod caches it was counted from (kube::Indexer::version).
// A reconcile whose caches have not moved since takes that count instead of
// counting again: a promotion reconciles its releases several times per change of
// a pod or node (bench/promotion.py's profile: the count was the reconcile's
// largest part), and the count reads nothing else.
class GpuCountMemo {
 public:
  using Count = std::function<std::vector<int64_t>()>;
  // The count for `minDriver` at `nodesVersion` and `podsVersion` (read before the
  // caches' content), from `count` unless the last one was taken at both.
  std::vector<int64_t> freePerNode(const std::string& minDriver, uint64_t nodesVersion,
                                   uint64_t podsVersion, const Count& count);

 private:
  struct Taken {
    uint64_t nodesVersion = 0, podsVersion = 0;
    std::vector<int64_t> freePerNode;
  };
  std::mutex mu_;
  std::map<std::string, Taken> last_;  // by minimum driver
};
// The free GPUs per compatible node, as gpuCapacityOf counts them, over the
// cache's own objects, with the fields counted kept per object version: a cached
// object is replaced, never changed, so a node or pod whose object is the one
// seen last is not read again. A count after one pod or node changed reads that
// object only (bench/promotion.py's sized run: at 1,000 nodes, whose status the
// nodes' heartbeats rewrite all the time, the count viewed every node and GPU pod
// again in most reconciles, the operator's largest cost in the profile).
class GpuTally {
 public:
  // Free GPUs on each node among `nodes` compatible with `minDriver`, in their
  // order: allocatable nvidia.com/gpu minus the requests of `pods` bound to it
  // that are not Succeeded or Failed (gpuCapacityOf's freePerNode).
  std::vector<int64_t> freePerNode(const std::vector<kube::ObjectPtr>& nodes,
                                   const std::vector<kube::ObjectPtr>& pods,
                                   const std::string& minDriver);

 private:
  struct NodeFacts {
    std::weak_ptr<const kube::Object> version;  // the object these were read from
    std::string name;
    int64_t allocatableGpus = 0;
    std::string minDriver;  // the driver `compatible` was judged against
    bool compatible = false;
  };
  struct PodFacts {
    std::weak_ptr<const kube::Object> version;
    std::string nodeName;
    int64_t gpus = 0;  // 0 once Succeeded or Failed
  };
  std::mutex mu_;
  // By the object's address; `version` tells a new object at a freed one's address.
  std::unordered_map<const kube::Object*, NodeFacts> nodes_;
  std::unordered_map<const kube::Object*, PodFacts> pods_;
};

}  // namespace lockstep::controllers
