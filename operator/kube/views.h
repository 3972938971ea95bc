// Typed views of the core kinds the prod path reads: Pod, Node, Deployment.
// Not models of the types (only the fields Lockstep reads, nothing to write
// back): each is decoded once from the object as the API server sends it, into
// fields with one meaning each, so readers stop re-reading string keys (and
// re-deciding what a missing or odd field means) in every loop. Past bugs came
// from such re-reading: a terminating pod read apart from its Ready condition,
// quantities compared as text.
//
// Views hold std::string_view and pointers INTO the object: a view is valid
// only while the object lives (a cached kube::ObjectPtr is immutable and
// shared: hold it while the view is used). Viewing a temporary is refused at
// compile time. Building a view allocates nothing for an object without owner
// references, container statuses, conditions or taints (the shell views every
// cached node and GPU pod in each reconcile of a release in prod).
//
// Malformed input never throws. Every field has a default, given below per
// field: ABSENT is what a missing field reads as (the API server omits empty
// fields: not a problem), MISTYPED what a field of the wrong JSON type or an
// unparsable value reads as; each mistyped field also adds one line to
// `problems`, naming the object and the field path, e.g.
//   Pod ns/p: status.containerStatuses[1].restartCount: "3" is not an integer (read as 0)
// Readers decide whether to report problems; the prod path so far reads the
// defaults (as it did before the views).
//
// GPU quantities (kGpuResource in requests, limits, allocatable, capacity):
// a JSON integer >= 0, or a string of decimal digits ("2"; at most 12) — an
// extended resource is a whole number of devices. Anything else ("500m",
// "1k", "1.5", "-1", 2.0, true) reads as 0 with a problem: it is counted as no
// GPU, never guessed ("1k" is a valid Kubernetes quantity of 1000, but no node
// has a thousand GPUs and no serving pod asks for them: a typo is likelier).
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/object.h"

namespace lockstep::kube {

// The extended resource of a GPU, as the NVIDIA device plugin advertises it.
inline constexpr const char* kGpuResource = "nvidia.com/gpu";

// A labels or annotations map, read in place. A value that is not a string
// reads as absent (the API server admits only strings; not checked at decode).
class StringMapView {
 public:
  StringMapView() = default;
  explicit StringMapView(const nlohmann::json* map) : map_(map) {}
  // The value at `key`; nullopt when absent.
  std::optional<std::string_view> find(std::string_view key) const;
  // The value at `key`; "" when absent.
  std::string_view get(std::string_view key) const { return find(key).value_or(""); }
  bool contains(std::string_view key) const { return find(key).has_value(); }
  bool empty() const;
  // A copy of the string members.
  std::map<std::string, std::string> copy() const;

 private:
  const nlohmann::json* map_ = nullptr;  // an object, or null: empty
};

// metadata.ownerReferences[]: ABSENT none; an entry that is not an object is
// skipped (MISTYPED); its string fields ABSENT/MISTYPED "", controller false.
struct OwnerRefView {
  std::string_view apiVersion, kind, name, uid;
  bool controller = false;
};

// A status condition (Pod, Node, Deployment): type, status ("True" | "False" |
// "Unknown"), reason, message; each ABSENT/MISTYPED "". An entry that is not an
// object is skipped (MISTYPED).
struct ConditionView {
  std::string_view type, status, reason, message;
  bool isTrue() const { return status == "True"; }
};

// The metadata every view carries. name, namespace, uid, creationTimestamp,
// deletionTimestamp: ABSENT/MISTYPED "". generation: ABSENT/MISTYPED 0.
// labels, annotations: ABSENT/MISTYPED empty.
struct MetaView {
  std::string_view name, ns, uid, creationTimestamp, deletionTimestamp;
  int64_t generation = 0;
  StringMapView labels, annotations;
  std::vector<OwnerRefView> ownerReferences;
  // The owner reference with controller: true, if any.
  const OwnerRefView* controller() const;
  // "ns/name", or "name" for a cluster-scoped object.
  std::string key() const;
};

// status.containerStatuses[]: name ABSENT/MISTYPED ""; restartCount
// ABSENT 0, MISTYPED (not an integer, or negative) 0; ready ABSENT/MISTYPED false.
struct ContainerStatusView {
  std::string_view name;
  int64_t restartCount = 0;
  bool ready = false;
};

struct PodView {
  MetaView meta;
  std::string_view nodeName;  // spec.nodeName; ABSENT/MISTYPED "": not bound
  std::string_view phase;     // status.phase; ABSENT/MISTYPED ""
  // The Ready condition is "True" (the first Ready condition decides);
  // ABSENT (no status, no such condition) false.
  bool ready = false;
  // metadata.deletionTimestamp is set: the pod is on its way out, whatever
  // its phase and conditions still say.
  bool terminating() const { return !meta.deletionTimestamp.empty(); }
  // A PodScheduled condition says "False" (the first such): the scheduler's
  // reason ("Unschedulable") and message ("0/5 nodes are available: 2
  // Insufficient nvidia.com/gpu, ..."). ABSENT false, "", "".
  bool unschedulable = false;
  std::string_view scheduleFailureReason, scheduleFailureMessage;
  std::vector<ContainerStatusView> containers;  // status.containerStatuses; ABSENT none
  // The restarts of all containers (containers' restartCount summed).
  int64_t restarts() const;
  // kGpuResource the pod asks for, as the scheduler counts it (gpuRequestOf
  // of spec); ABSENT 0; malformed quantities 0 (see the header).
  int64_t gpuRequest = 0;
  std::vector<ConditionView> conditions;  // status.conditions; ABSENT none
  std::vector<std::string> problems;      // MISTYPED fields, one line each
};

// spec.taints[]: key, value, effect ("NoSchedule" | "PreferNoSchedule" |
// "NoExecute"); each ABSENT/MISTYPED "". An entry that is not an object is
// skipped (MISTYPED).
struct TaintView {
  std::string_view key, value, effect;
};

struct NodeView {
  MetaView meta;
  // status.allocatable / status.capacity [kGpuResource]; ABSENT 0, MISTYPED 0.
  int64_t allocatableGpus = 0;
  int64_t capacityGpus = 0;
  bool unschedulable = false;     // spec.unschedulable (cordoned); ABSENT/MISTYPED false
  std::vector<TaintView> taints;  // spec.taints; ABSENT none
  // The Ready condition is "True"; ABSENT false.
  bool ready = false;
  std::vector<ConditionView> conditions;  // status.conditions; ABSENT none
  std::vector<std::string> problems;
};

struct DeploymentView {
  MetaView meta;
  // spec.replicas as written; ABSENT/MISTYPED (not an integer, or negative)
  // nullopt. The API server defaults it to 1: replicas() reads it so.
  std::optional<int64_t> specReplicas;
  int64_t replicas() const { return specReplicas.value_or(1); }
  // spec.template.metadata.labels / annotations; ABSENT/MISTYPED empty.
  StringMapView templateLabels, templateAnnotations;
  // status.observedGeneration, replicas, readyReplicas, updatedReplicas,
  // availableReplicas; ABSENT 0 (no status yet), MISTYPED 0.
  int64_t observedGeneration = 0;
  int64_t statusReplicas = 0, readyReplicas = 0, updatedReplicas = 0, availableReplicas = 0;
  std::vector<ConditionView> conditions;  // status.conditions; ABSENT none
  std::vector<std::string> problems;
};

// What a GPU count reads of a pod and of a node, and nothing else: the same
// fields, read the same way (ABSENT and MISTYPED alike) as viewPod and viewNode
// read them, without the rest of those views (metadata, conditions, container
// statuses) or their problem lines. The shell counts every cached GPU pod and
// node in a reconcile of a release in prod (controllers/modelrelease/prod/gpu_capacity.h).
struct PodGpuView {
  std::string_view nodeName;  // spec.nodeName, as PodView::nodeName
  std::string_view phase;     // status.phase, as PodView::phase
  int64_t gpuRequest = 0;     // as PodView::gpuRequest
};
struct NodeGpuView {
  std::string_view name;        // metadata.name, as NodeView::meta.name
  int64_t allocatableGpus = 0;  // as NodeView::allocatableGpus
  bool unschedulable = false;   // as NodeView::unschedulable
  StringMapView labels;         // metadata.labels, as NodeView::meta.labels
};

PodView viewPod(const Object& pod);
NodeView viewNode(const Object& node);
PodGpuView viewPodGpu(const Object& pod);
NodeGpuView viewNodeGpu(const Object& node);
DeploymentView viewDeployment(const Object& deployment);
// A view holds pointers into the object: never of a temporary.
PodView viewPod(Object&&) = delete;
NodeView viewNode(Object&&) = delete;
DeploymentView viewDeployment(Object&&) = delete;
PodGpuView viewPodGpu(Object&&) = delete;
NodeGpuView viewNodeGpu(Object&&) = delete;

// kGpuResource a pod spec asks for, as the scheduler counts it: the larger of
// the sum over its containers and its largest init container; a container's
// request, else its limit. Malformed quantities count as 0; with `problems`,
// each adds a line ("spec.containers[0].resources.requests[\"nvidia.com/gpu\"]:
// \"1k\" is not a whole number of devices (read as 0)"), `where` prefixed.
int64_t gpuRequestOf(const nlohmann::json& podSpec, std::vector<std::string>* problems = nullptr,
                     std::string_view where = "spec");

// A whole-device quantity (the header's rule); nullopt when malformed.
std::optional<int64_t> wholeQuantity(const nlohmann::json& q);

}  // namespace lockstep::kube
