// The canary decision of a ModelRelease's prod stage (pure): from the
// checked canary spec (api/v1alpha1/model_release.h canarySpecOf), what the
// shell observed (replica and Ready counts per track, GPU capacity, admission
// refusals, a fresh Prometheus measurement, manual actions; canary_observe.h)
// and the release's previous `status.canary`, to the replica counts to apply,
// the new `status.canary`, and a decision (advance, wait, promote, roll back).
// The contract is docs/rollouts.md; the replica math is replica_math.h, the
// analysis bookkeeping analysis.h.
//
// All state lives in `status.canary` (current step, step start, weight-reached
// time, analysis counters, last known-good; typed in api/v1alpha1/
// canary_status.h), so a restarted operator re-plans from the same inputs and
// neither repeats nor skips a step. The one exception is the progress clock
// between a stage's start and its end (CanaryProgress): kept in the shell's
// memory, since a status write per Ready-count change was most of the
// canary's writes; losing it only makes a deadline later. The planner works
// on the typed status and encodes it once, into CanaryPlan::status. A previous status the decoder
// refuses is never acted on: the plan is kWait, reason CanaryStatusUnreadable,
// with both Deployments as they are and the status as written. No I/O and no
// clock: `nowUnix` is an input. Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/change_window_gate.h"
#include "controllers/modelrelease/prod/analysis.h"
#include "controllers/modelrelease/prod/canary_progress.h"
#include "controllers/modelrelease/prod/gpu_capacity.h"
#include "controllers/modelrelease/prod/replica_math.h"
#include "controllers/modelrelease/release_event.h"

namespace lockstep::controllers {

using api::v1alpha1::CanarySpec;
using api::v1alpha1::CanaryStep;
using api::v1alpha1::CapacityMode;
using api::v1alpha1::PrometheusAnalysis;

struct KnownGood {
  std::string release, package, closureHash;
};

struct CanaryObserved {
  CanarySpec spec;
  std::string release, model, package, closureHash;
  // status.canary as last written, decoded (assign the JSON: absent, decoded or refused).
  api::v1alpha1::CanaryStatusRead previous;
  TrackObserved canary;       // Ready pods of this release on the canary track
  TrackObserved stable;       // Ready pods of the release the stable track should run
  std::string stableRelease;  // lockstep.dev/release of the stable Deployment's template
  // The canary Deployment still carrying another release's template (the one
  // this release displaced from the canary slot): that release and its pods.
  // This release's own canary then has no pods yet (`canary` is {0, 0}).
  std::string displacedRelease;
  TrackObserved displaced;
  // Container restarts of this release's pods (canary track, and stable track
  // during the promotion's handover).
  int canaryRestarts = 0;
  int canaryPendingUnschedulable = 0;  // canary pods Pending with PodScheduled=False
  // Stable pods of the stable track's release Pending for lack of a resource
  // (the scheduler's "Insufficient …"): a drain rollback trades canary pods for them.
  int stablePendingUnschedulable = 0;
  int podsTerminating = 0;  // the model's pods with a deletionTimestamp
  // FailedCreate messages of this release's ReplicaSets (the canary's; the
  // stable's once it carries this release).
  std::vector<std::string> admissionRefusals;
  // A failed verification init container (spec.verify.onStart) of one of this
  // release's pods (canary track; stable track once handed over):
  // "verify-host exited 1: <report>" (controllers/common/verify_containers.h).
  std::optional<std::string> verificationFailure;
  // The same for a pod of the stable track's release: "stable pod <name> (release
  // <r>): runtime verification failed: verify-host exited 1: <report>".
  std::optional<std::string> stableVerificationFailure;
  std::optional<GpuCapacity> gpu;          // nullopt: the template requests no GPU
  std::optional<Measurement> measurement;  // taken because the last plan asked
  std::optional<KnownGood> knownGood;      // the model's last promoted pair
  bool knownGoodStale = false;             // its RuntimeEnv hash has moved on
  std::string promoteStepBy;  // annotation promote.lockstep.dev/<step> for the current step
  std::string promoteFullBy;  // annotation lockstep.dev/promote-full
  std::string abortBy;        // annotation lockstep.dev/abort
  // A fleet abort for the wave that permitted this cluster (gates/fleet_check.h):
  // its message; the canary rolls back as on an abort, reason FleetAborted.
  std::optional<std::string> fleetAbort;
  // The release is being deleted (its finalizer holds it): rolled back like an abort.
  bool releaseDeleted = false;
  // The uid of the Model this canary runs under: when set, the new status
  // records it (status.canary.modelUid, replacing an earlier version's anchorUid).
  std::optional<std::string> modelUid;
  std::string now;  // RFC 3339
  int64_t nowUnix = 0;
  // The model's change windows keep it closed (change_window_gate.h): no next
  // step and no promotion start; `pause` holds the weight with the step's
  // clocks stopped (status.canary.windowPausedAt); `abort` rolls back.
  std::optional<ClosedWindow> window;
  // The progress clock the last plan of this release kept (CanaryProgress);
  // nullopt: none in memory.
  std::optional<CanaryProgress> progress;
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
  nlohmann::json status;  // the new status.canary (encodeCanaryStatus)
  // The one more observation this plan asks for: take one measurement of the
  // current step's analysis and plan again with it (once).
  bool measureNow = false;
  int64_t requeueAfterSeconds = 0;
  std::string reason, message;  // for the release's conditions
  std::string rollbackReason;   // set once, on the transition (metric + Event)
  std::string supersede;        // the release to mark Superseded on promotion
  std::vector<ReleaseEvent> events;
  // The progress clock to keep in memory for the next plan (nullopt: no clock
  // runs: a finished canary, a displaced one still draining).
  std::optional<CanaryProgress> progress;
};

CanaryPlan planCanary(const CanaryObserved& observed);

}  // namespace lockstep::controllers
