#include "controllers/modelrelease/prod/gpu_capacity.h"

#include <algorithm>
#include <map>

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

namespace {

int64_t quantity(const json& q) {
  if (q.is_number_integer()) return std::max<int64_t>(0, q.get<int64_t>());
  if (!q.is_string()) return 0;
  const auto& t = q.get_ref<const std::string&>();
  if (t.empty() || t.size() > 12) return 0;
  int64_t n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return 0;  // GPUs are whole devices: "2", never "500m"
    n = n * 10 + (c - '0');
  }
  return n;
}

// o[key] when `o` is an object that has it, else null: a reference into `o`,
// never a copy (`cond ? o[key] : json()` copies the member whole: it was most of
// gpuCapacityOf's time, one pod spec copied per pod per reconcile).
const json& member(const json& o, const char* key) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  auto i = o.find(key);
  return i == o.end() ? kNull : *i;
}

int64_t containerGpus(const json& c) {
  const json& res = member(c, "resources");
  for (const char* kind : {"requests", "limits"}) {
    const json& q = member(member(res, kind), kGpuResource);
    if (!q.is_null()) return quantity(q);
  }
  return 0;
}

// o[a][b] when both are there, else null (no JSON pointer parsed per call: this
// runs for every node and pod in every reconcile of a release in prod).
const json& field(const json& o, const char* a, const char* b) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  auto i = o.find(a);
  if (i == o.end() || !i->is_object()) return kNull;
  auto j = i->find(b);
  return j == i->end() ? kNull : *j;
}

std::string stringField(const json& o, const char* a, const char* b) {
  const json& v = field(o, a, b);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t allocatableGpus(const json& node) {
  const json& alloc = field(node, "status", "allocatable");
  return alloc.is_object() && alloc.contains(kGpuResource) ? quantity(alloc[kGpuResource]) : 0;
}

}  // namespace

int64_t podGpuRequest(const json& spec) {
  int64_t sum = 0, init = 0;
  if (const json& cs = member(spec, "containers"); cs.is_array()) {
    for (const json& c : cs) sum += containerGpus(c);
  }
  if (const json& cs = member(spec, "initContainers"); cs.is_array()) {
    for (const json& c : cs) init = std::max(init, containerGpus(c));
  }
  return std::max(sum, init);
}

bool gpuNodeCompatible(const json& node, const std::string& minDriver) {
  const json& unschedulable = field(node, "spec", "unschedulable");
  if (unschedulable.is_boolean() && unschedulable.get<bool>()) return false;
  if (allocatableGpus(node) <= 0) return false;
  if (minDriver.empty()) return true;
  // Only the driver labels (a node carries dozens of others).
  std::map<std::string, std::string> labels;
  const json& nodeLabels = field(node, "metadata", "labels");
  for (const char* key : {"nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                          "nvidia.com/cuda.driver.rev"}) {
    if (const json& v = member(nodeLabels, key); v.is_string()) labels[key] = v.get<std::string>();
  }
  auto driver = closure::driverFromGfdLabels(labels);
  return driver && closure::driverSatisfies(*driver, minDriver);
}

GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<const json*>& nodes,
                          const std::vector<const json*>& pods, const std::string& minDriver) {
  // GPUs requested on each node, in one pass over the pods.
  std::map<std::string, int64_t, std::less<>> used;
  for (const json* p : pods) {
    const std::string phase = stringField(*p, "status", "phase");
    if (phase == "Succeeded" || phase == "Failed") continue;
    const int64_t gpus = podGpuRequest(member(*p, "spec"));
    if (gpus > 0) used[stringField(*p, "spec", "nodeName")] += gpus;
  }
  GpuCapacity cap;
  cap.gpusPerPod = gpusPerPod;
  for (const json* node : nodes) {
    if (!gpuNodeCompatible(*node, minDriver)) continue;
    auto u = used.find(stringField(*node, "metadata", "name"));
    cap.freePerNode.push_back(allocatableGpus(*node) - (u == used.end() ? 0 : u->second));
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
}  // namespace lockstep::controllers
