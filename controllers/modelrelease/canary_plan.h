// Prod-stage planning (pure): the canary rollout of one ModelRelease onto the
// model's serving objects. From the decoded canary spec, what the controller
// observed (replica and Ready counts per track, GPU capacity, admission
// refusals, a fresh Prometheus measurement, manual actions) and the release's
// previous `status.canary`, to the replica counts to apply, the new
// `status.canary`, and a decision (advance, wait, promote, roll back).
// The contract is docs/rollouts.md; the replica math follows Argo Rollouts'
// basic canary (utils/replicaset/canary.go), the analysis bookkeeping its
// AnalysisRun (analysis/analysis.go).
//
// All state lives in `status.canary` (current step, step start, weight-reached
// time, analysis counters, last known-good), so a restarted operator re-plans
// from the same inputs and neither repeats nor skips a step. No I/O and no
// clock: `nowUnix` is an input. Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/modelrelease/release_plan.h"

namespace lockstep::controllers {

// ---- spec ------------------------------------------------------------------------------------

// How a step finds GPUs for its canary pods (docs/rollouts.md "GPU capacity").
//   kSurge: one extra pod at a time on spare GPUs (maxSurge 1, maxUnavailable 0);
//   kDrain: scale stable down by one first (maxSurge 0, maxUnavailable 1).
enum class CapacityMode { kSurge, kDrain };
const char* capacityModeName(CapacityMode m);

struct PrometheusAnalysis {
  std::string address, query;
  std::optional<double> min, max;
  int64_t intervalSeconds = 30;
  int count = 0;  // 0: derived (see effectiveCount)
  int failureLimit = 0;
  int consecutiveErrorLimit = 4;  // Argo Rollouts' DefaultConsecutiveErrorLimit
};

struct CanaryStep {
  int weight = 0;  // percent of replicas on the canary
  enum class Pause { kNone, kDuration, kIndefinite } pause = Pause::kNone;
  int64_t pauseSeconds = 0;                    // kDuration
  std::optional<PrometheusAnalysis> analysis;  // the step's, or the canary default
  int64_t progressDeadlineSeconds = 600;
};

struct CanarySpec {
  int replicas = 1;
  int port = 8080;
  nlohmann::json podTemplate;  // serving.template
  CapacityMode capacity = CapacityMode::kSurge;
  std::vector<CanaryStep> steps;
};

// Decodes a prod stage (`spec.stages[i]` with `serving` and `canary`). Returns
// an error message naming the field when the stage cannot be run.
std::optional<std::string> decodeCanarySpec(const nlohmann::json& stage, CanarySpec& out);

// Measurements a step takes when it has analysis but no `count`: one per
// interval over a duration pause, else one.
int effectiveCount(const CanaryStep& step);

// ---- replica math ----------------------------------------------------------------------------

struct ReplicaCounts {
  int canary = 0;
  int stable = 0;
  bool operator==(const ReplicaCounts& o) const { return canary == o.canary && stable == o.stable; }
};

// The target canary/stable counts for `weight` percent of `total`: Argo
// Rollouts' approximateWeightedCanaryStableReplicaCounts with maxSurge 1
// (surge: the sum may be total+1) or 0 (drain: the sum is total). A weight of
// 1..99 with two or more pods gets at least one pod on each track.
ReplicaCounts targetReplicaCounts(int total, int weight, CapacityMode mode);

// What one track has now: Deployment spec.replicas and Ready pods of the
// track's intended release (see countReadyPods).
struct TrackObserved {
  int specReplicas = 0;
  int readyReplicas = 0;
};

// The next spec counts on the way from `current` to `target`, never above
// total+maxSurge pods and never below total-maxUnavailable Ready pods (Argo's
// CalculateReplicaCountsForBasicCanary with no older ReplicaSets).
ReplicaCounts nextReplicaCounts(int total, ReplicaCounts target, TrackObserved canary,
                                TrackObserved stable, CapacityMode mode);

// Ready pods of `release` on `track` among `pods` (JSON core/v1 Pods of the
// model). A pod is not counted while it is terminating, nor while another pod
// of the model that is terminating still runs on its node (it still holds the
// GPU the new pod will need once it is warm).
int countReadyPods(const std::vector<nlohmann::json>& pods, const std::string& track,
                   const std::string& release);

// ---- analysis --------------------------------------------------------------------------------

// One Prometheus measurement as the shell took it: a value, or an error (query
// error, HTTP failure, an empty vector, a NaN).
struct Measurement {
  int64_t atUnix = 0;
  std::optional<double> value;
  std::string error;
};

enum class AnalysisPhase { kRunning, kPassed, kFailed };

struct AnalysisVerdict {
  AnalysisPhase phase = AnalysisPhase::kRunning;
  std::string reason;                 // kReasonAnalysisFailed | kReasonAnalysisError when failed
  std::string message;                // e.g. "failed (2) > failureLimit (1)"
  int64_t nextMeasurementAtUnix = 0;  // when running
};

// Counters of `status.canary.analysis` (Argo's MetricResult).
struct AnalysisCounters {
  int count = 0;  // successful + failed (errors do not count, as in Argo)
  int successful = 0;
  int failed = 0;
  int errors = 0;
  int consecutiveErrors = 0;
  int64_t lastAtUnix = 0;
  bool lastWasError = false;
};

// Adds a measurement: outside [min, max] is a failure, an error is an error.
void recordMeasurement(AnalysisCounters& c, const PrometheusAnalysis& a, const Measurement& m);

// Assesses the counters; `startUnix` is when the first measurement is due.
AnalysisVerdict assessAnalysis(const AnalysisCounters& c, const PrometheusAnalysis& a, int count,
                               int64_t startUnix);

// Argo Rollouts' DefaultErrorRetryInterval: the next try after an error.
inline constexpr int64_t kErrorRetrySeconds = 10;

// ---- GPU capacity ----------------------------------------------------------------------------

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

inline constexpr const char* kGpuResource = "nvidia.com/gpu";

// The nvidia.com/gpu a pod spec asks for, as the scheduler counts it: the
// larger of the sum over its containers and its largest init container; a
// container's request, else its limit. Malformed quantities count as 0.
int64_t podGpuRequest(const nlohmann::json& podSpec);

// Whether `node` can run the RuntimeEnv's pods: schedulable, and its GPU
// feature discovery driver labels (nvidia.com/cuda.driver.*) satisfy
// `minDriver` ("" = any node that reports GPUs).
bool gpuNodeCompatible(const nlohmann::json& node, const std::string& minDriver);

// Free GPUs on each compatible node among `nodes`: allocatable nvidia.com/gpu
// minus the GPU requests of `pods` bound to it (spec.nodeName) that are not
// Succeeded or Failed. `pods` may include pods of other nodes.
GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<nlohmann::json>& nodes,
                          const std::vector<nlohmann::json>& pods, const std::string& minDriver);

// ---- the decision ----------------------------------------------------------------------------

struct KnownGood {
  std::string release, package, closureHash;
};

struct CanaryObserved {
  CanarySpec spec;
  std::string release, model, package, closureHash;
  nlohmann::json previous;    // status.canary as last written (or null)
  TrackObserved canary;       // Ready pods of this release on the canary track
  TrackObserved stable;       // Ready pods of the release the stable track should run
  std::string stableRelease;  // lockstep.dev/release of the stable Deployment's template
  // The canary Deployment still carrying another release's template (the one
  // this release displaced from the canary slot): that release and its pods.
  // This release's own canary then has no pods yet (`canary` is {0, 0}).
  std::string displacedRelease;
  TrackObserved displaced;
  int canaryRestarts = 0;              // container restarts of this release's canary pods
  int canaryPendingUnschedulable = 0;  // canary pods Pending with PodScheduled=False
  // Stable pods of the stable track's release Pending for lack of a resource
  // (the scheduler's "Insufficient …"): a drain rollback trades canary pods for them.
  int stablePendingUnschedulable = 0;
  int podsTerminating = 0;                     // the model's pods with a deletionTimestamp
  std::vector<std::string> admissionRefusals;  // FailedCreate messages of the canary RS
  std::optional<GpuCapacity> gpu;              // nullopt: the template requests no GPU
  std::optional<Measurement> measurement;      // taken because the last plan asked
  std::optional<KnownGood> knownGood;          // the model's last promoted pair
  bool knownGoodStale = false;                 // its RuntimeEnv hash has moved on
  std::string promoteStepBy;  // annotation promote.lockstep.dev/<step> for the current step
  std::string promoteFullBy;  // annotation lockstep.dev/promote-full
  std::string abortBy;        // annotation lockstep.dev/abort
  std::string now;            // RFC 3339
  int64_t nowUnix = 0;
};

enum class CanaryAction {
  kProgress,     // scaling toward the step's weight, or waiting for pause/analysis
  kWait,         // blocked (no GPU capacity yet); see reason
  kPromoting,    // the stable track takes the new release; canary drains
  kPromoted,     // terminal: stable runs this release, canary at zero
  kRollingBack,  // canary draining, stable restored to the last known-good
  kRolledBack,   // terminal
};
const char* canaryActionName(CanaryAction a);

struct CanaryPlan {
  CanaryAction action = CanaryAction::kProgress;
  ReplicaCounts replicas;     // spec.replicas to apply to <model>-canary / <model>-stable
  std::string stableRelease;  // the release whose template <model>-stable must carry
  // Non-empty: <model>-canary keeps this (displaced) release's template and is
  // only scaled to `replicas.canary`; empty: it carries this release's.
  std::string canaryRelease;
  nlohmann::json status;    // the new status.canary
  bool measureNow = false;  // take one measurement and plan again with it
  int64_t requeueAfterSeconds = 0;
  std::string reason, message;  // for the release's conditions
  std::string rollbackReason;   // set once, on the transition (metric + Event)
  std::string supersede;        // the release to mark Superseded on promotion
  std::vector<ReleaseEvent> events;
};

// Reasons (stable API: users alert on them; also the metric's `reason` label).
inline constexpr const char* kReasonCanaryProgressing = "CanaryProgressing";
inline constexpr const char* kReasonCanaryPaused = "CanaryPaused";
inline constexpr const char* kReasonAnalysisRunning = "AnalysisRunning";
inline constexpr const char* kReasonWaitingForGPUCapacity = "WaitingForGPUCapacity";
inline constexpr const char* kReasonPromoting = "Promoting";
inline constexpr const char* kReasonPromoted = "Promoted";
inline constexpr const char* kReasonRollingBack = "RollingBack";
inline constexpr const char* kReasonAnalysisFailed = "AnalysisFailed";
inline constexpr const char* kReasonAnalysisError = "AnalysisError";
inline constexpr const char* kReasonAdmissionRefused = "AdmissionRefused";
inline constexpr const char* kReasonCanaryRestarting = "CanaryRestarting";
inline constexpr const char* kReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded";
inline constexpr const char* kReasonInsufficientGPUCapacity = "InsufficientGPUCapacity";
inline constexpr const char* kReasonRollbackTargetStale = "RollbackTargetStale";
// kReasonAborted ("Aborted") comes from release_plan.h.

// Annotations (written by `lockstep release promote`, RBAC-checked by the webhook).
using api::v1alpha1::kPromoteAnnotationPrefix;  // + step index
using api::v1alpha1::kPromoteFullAnnotation;

CanaryPlan planCanary(const CanaryObserved& observed);

// ---- desired objects -------------------------------------------------------------------------

// What a serving pod runs: the release and its validated runtime.
struct ServingRelease {
  std::string release, package, closureHash, runtimeEnv, runtimeImage;
  nlohmann::json podTemplate;  // serving.template of that release
};

struct ServingObjectsInput {
  std::string model, ns;
  int port = 8080;
  CapacityMode capacity = CapacityMode::kSurge;
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
  // The per-model anchor ConfigMap `lockstep-model-<model>` that owns the
  // serving objects (docs/rollouts.md "Ownership"); empty uid: no owner yet.
  std::string anchorUid;
};

inline constexpr const char* kTrackStable = "stable";
inline constexpr const char* kTrackCanary = "canary";
using api::v1alpha1::kModelLabel;
using api::v1alpha1::kTrackLabel;

std::string modelAnchorName(const std::string& model);  // lockstep-model-<model>
std::string servingDeploymentName(const std::string& model, const std::string& track);

// Service `<model>` selecting both tracks (weight = replica ratio).
nlohmann::json buildModelService(const ServingObjectsInput& in);

// Deployment `<model>-<track>`; error when the template cannot run.
struct BuiltDeployment {
  nlohmann::json deployment;
  std::string error;
};
BuiltDeployment buildServingDeployment(const ServingObjectsInput& in, const std::string& track,
                                       const ServingRelease& r, int replicas);

}  // namespace lockstep::controllers
