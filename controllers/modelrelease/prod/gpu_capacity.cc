#include "controllers/modelrelease/prod/gpu_capacity.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "closure/cuda.h"

namespace lockstep::controllers {

using nlohmann::json;

GpuCheck gpuPreCheck(const GpuCapacity& capacity, int podsToAdd) {
  GpuCheck out;
  if (capacity.gpusPerPod <= 0 || podsToAdd <= 0) return out;
  int64_t fits = 0, free = 0;
  for (int64_t f : capacity.freePerNode) {
    if (f <= 0) continue;
    free += f;
    fits += f / capacity.gpusPerPod;  // a pod's GPUs must be on one node
  }
  if (fits >= podsToAdd) return out;
  out.go = false;
  out.message = std::to_string(podsToAdd) + " new pod(s) need " +
                std::to_string(capacity.gpusPerPod) + " nvidia.com/gpu each on one node; the " +
                std::to_string(capacity.freePerNode.size()) + " compatible node(s) have " +
                std::to_string(free) + " free GPU(s) in total, room for " + std::to_string(fits) +
                " pod(s)";
  return out;
}

int64_t podGpuRequest(const json& spec) { return kube::gpuRequestOf(spec); }

bool gpuNodeCompatible(const json& node, const std::string& minDriver) {
  return gpuNodeCompatible(kube::viewNodeGpu(node), minDriver);
}

bool gpuNodeCompatible(const kube::NodeGpuView& node, const std::string& minDriver) {
  if (node.unschedulable || node.allocatableGpus <= 0) return false;
  if (minDriver.empty()) return true;
  // Only the driver labels (a node carries dozens of others).
  std::map<std::string, std::string> labels;
  for (const char* key : {"nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                          "nvidia.com/cuda.driver.rev"}) {
    if (auto v = node.labels.find(key)) labels[key] = std::string(*v);
  }
  auto driver = closure::driverFromGfdLabels(labels);
  return driver && closure::driverSatisfies(*driver, minDriver);
}

namespace {

// The GPUs a pod holds on its node: its request until it is Succeeded or Failed.
int64_t gpusHeld(const kube::PodGpuView& pod) {
  return pod.phase == "Succeeded" || pod.phase == "Failed" ? 0 : pod.gpuRequest;
}

}  // namespace

GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<const json*>& nodes,
                          const std::vector<const json*>& pods, const std::string& minDriver) {
  // GPUs requested on each node, in one pass over the pods (each read once, in
  // place, only the three fields counted: kube::PodGpuView).
  std::map<std::string_view, int64_t, std::less<>> used;
  for (const json* p : pods) {
    const kube::PodGpuView pod = kube::viewPodGpu(*p);
    if (const int64_t held = gpusHeld(pod); held > 0) used[pod.nodeName] += held;
  }
  GpuCapacity cap;
  cap.gpusPerPod = gpusPerPod;
  for (const json* n : nodes) {
    const kube::NodeGpuView node = kube::viewNodeGpu(*n);
    if (!gpuNodeCompatible(node, minDriver)) continue;
    auto u = used.find(node.name);
    cap.freePerNode.push_back(node.allocatableGpus - (u == used.end() ? 0 : u->second));
  }
  return cap;
}

GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<json>& nodes,
                          const std::vector<json>& pods, const std::string& minDriver) {
  std::vector<const json*> n, p;
  n.reserve(nodes.size());
  p.reserve(pods.size());
  for (const json& x : nodes) n.push_back(&x);
  for (const json& x : pods) p.push_back(&x);
  return gpuCapacityOf(gpusPerPod, n, p, minDriver);
}

std::vector<int64_t> GpuCountMemo::freePerNode(const std::string& minDriver, uint64_t nodesVersion,
                                               uint64_t podsVersion, const Count& count) {
  {
    std::lock_guard lock(mu_);
    auto it = last_.find(minDriver);
    if (it != last_.end() && it->second.nodesVersion == nodesVersion &&
        it->second.podsVersion == podsVersion)
      return it->second.freePerNode;
  }
  // Counted outside the lock (the other worker may count the same at once).
  std::vector<int64_t> free = count();
  std::lock_guard lock(mu_);
  if (last_.size() >= 64 && last_.count(minDriver) == 0) last_.clear();  // drivers gone
  last_[minDriver] = {nodesVersion, podsVersion, free};
  return free;
}
std::vector<int64_t> GpuTally::freePerNode(const std::vector<kube::ObjectPtr>& nodes,
                                           const std::vector<kube::ObjectPtr>& pods,
                                           const std::string& minDriver) {
  std::lock_guard lock(mu_);
  // Objects gone from the caches: forgotten by starting over now and then.
  if (nodes_.size() > 2 * nodes.size() + 16) nodes_.clear();
  if (pods_.size() > 2 * pods.size() + 16) pods_.clear();
  std::unordered_map<std::string_view, int64_t> used;
  for (const kube::ObjectPtr& p : pods) {
    // A live object at this address is the one these facts were read from; a
    // freed one's facts have expired.
    PodFacts& f = pods_[p.get()];
    if (f.version.expired()) {
      const kube::PodGpuView pod = kube::viewPodGpu(*p);
      f = {p, std::string(pod.nodeName), gpusHeld(pod)};
    }
    if (f.gpus > 0) used[f.nodeName] += f.gpus;
  }
  std::vector<int64_t> free;
  for (const kube::ObjectPtr& n : nodes) {
    NodeFacts& f = nodes_[n.get()];
    if (f.version.expired() || f.minDriver != minDriver) {
      const kube::NodeGpuView node = kube::viewNodeGpu(*n);
      f = {n, std::string(node.name), node.allocatableGpus, minDriver,
           gpuNodeCompatible(node, minDriver)};
    }
    if (!f.compatible) continue;
    auto u = used.find(f.name);
    free.push_back(f.allocatableGpus - (u == used.end() ? 0 : u->second));
  }
  return free;
}

}  // namespace lockstep::controllers
