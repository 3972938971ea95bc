// ModelRelease reconcile planning (pure): from what the controller observed
// (the release, its RuntimeEnv, the Jobs it owns and their pods) to the
// status it must write, the Jobs to create or delete, Events and stage
// outcomes. The contract is docs/modelrelease.md.
//
// All state lives in the release's status and in owned objects with
// deterministic names (`<release>-<stage>-<attempt>`), so a restarted operator
// re-plans from the same inputs and neither repeats, skips nor duplicates a
// stage. No I/O and no clock: `now` is an input. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/keys.h"
#include "controllers/modelrelease/runtime_pod.h"

namespace lockstep::controllers {

struct ReleaseObserved {
  nlohmann::json release;
  std::optional<nlohmann::json> runtimeEnv;  // spec.runtimeEnvRef, from the cache
  std::vector<nlohmann::json> jobs;          // Jobs controlled by this release
  std::vector<nlohmann::json> pods;          // pods of those Jobs
  PackageMount mount = PackageMount::kImageVolume;
  // InitContainer mode: the command that fetches $LOCKSTEP_PACKAGE into /model.
  std::vector<std::string> fetchCommand;
  std::string now;      // RFC 3339, for status timestamps
  int64_t nowUnix = 0;  // the same instant, seconds since the epoch
  // The model's prod state from its anchor ConfigMap (docs/rollouts.md,
  // "Ownership"): the release prod runs and the release holding the canary
  // slot. A Promoted release that prod no longer runs, or a release in canary
  // that lost the slot, is Superseded.
  std::string promotedRelease;
  std::string canaryRelease;
  std::string modelRevision;  // the anchor's `revision` ("0" when it has none yet)
  // The anchor history's last entry is a Rollback to this release: from where.
  std::string rollbackFrom;
};

// The release reached its prod (serving) stage: the shell observes the
// model's serving objects and plans the canary (canary_plan.h), then folds
// that plan into this one (prod_plan.h).
struct ProdStageRequest {
  std::string stage;
  nlohmann::json stageSpec;  // spec.stages[i]
};

struct ReleaseEvent {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
};

// A stage that reached a final result in this plan (for metrics).
struct StageOutcome {
  std::string stage;
  std::string result;            // succeeded | failed | timed_out | aborted
  double durationSeconds = 0.0;  // startedAt → finishedAt; 0 when unknown
};

// A manual rollback of the model to this release: the shell re-points the
// model's stable track to it (canary to zero), records it on the anchor, then
// writes the status (docs/rollouts.md "Manual rollback").
struct ModelRollbackRequest {
  std::string from;      // the release prod ran
  std::string by;        // the user who asked (the annotation's value)
  std::string revision;  // the model's prod revision the request was made against
};

struct ReleasePlan {
  nlohmann::json status;  // the complete desired status
  bool statusChanged = false;
  std::vector<nlohmann::json> jobsToCreate;  // create; AlreadyExists means done
  std::vector<std::string> jobsToDelete;     // names; NotFound means done
  std::vector<ReleaseEvent> events;
  std::vector<StageOutcome> outcomes;
  // Look again after this many seconds even if nothing changes (0 = no).
  int64_t requeueAfterSeconds = 0;
  std::optional<ProdStageRequest> prod;
  std::optional<ModelRollbackRequest> modelRollback;
};

// Phases (status.phase) and stage phases (status.stages[].phase).
inline constexpr const char* kPhasePending = "Pending";
inline constexpr const char* kPhaseEvaluating = "Evaluating";
inline constexpr const char* kPhaseTesting = "Testing";
inline constexpr const char* kPhaseValidated = "Validated";
inline constexpr const char* kPhaseFailed = "Failed";
inline constexpr const char* kPhaseCanary = "Canary";
inline constexpr const char* kPhasePromoted = "Promoted";
inline constexpr const char* kPhaseRolledBack = "RolledBack";
inline constexpr const char* kPhaseSuperseded = "Superseded";
inline constexpr const char* kStageWaitingForApproval = "WaitingForApproval";
inline constexpr const char* kStageRunning = "Running";
inline constexpr const char* kStageSucceeded = "Succeeded";
inline constexpr const char* kStageFailed = "Failed";

// Condition reasons of a release (stable API for users' alerts).
inline constexpr const char* kReasonValidated = "Validated";
inline constexpr const char* kReasonGateRunning = "GateRunning";
inline constexpr const char* kReasonWaitingForApproval = "WaitingForApproval";
inline constexpr const char* kReasonGateFailed = "GateFailed";
inline constexpr const char* kReasonGateTimedOut = "GateTimedOut";
inline constexpr const char* kReasonAborted = "Aborted";
inline constexpr const char* kReasonInvalidSpec = "InvalidSpec";
inline constexpr const char* kReasonRuntimeEnvNotFound = "RuntimeEnvNotFound";
inline constexpr const char* kReasonRuntimeEnvNotReady = "RuntimeEnvNotReady";
inline constexpr const char* kReasonRuntimeStale = "RuntimeStale";
inline constexpr const char* kReasonSuperseded = "Superseded";
inline constexpr const char* kReasonWaitingForMetrics = "WaitingForMetrics";
inline constexpr const char* kReasonManualRollback = "ManualRollback";
inline constexpr const char* kReasonRollbackRefused = "RollbackRefused";

// Keys of api/v1alpha1/keys.h the planner reads (approvals, abort) and writes (labels).
using api::v1alpha1::kAbortAnnotation;
using api::v1alpha1::kApproveAnnotationPrefix;
using api::v1alpha1::kReleaseLabel;
using api::v1alpha1::kRollbackAnnotationPrefix;

// The largest termination message a gate may report (the kubelet keeps 4 KiB).
inline constexpr size_t kMaxTerminationMessage = 4096;

ReleasePlan planRelease(const ReleaseObserved& observed);

// `<release>-<stage>-<attempt>`, at most 63 characters (a label value): longer
// names keep a prefix and end in 8 hex digits of a hash of the full name.
std::string gateJobName(const std::string& release, const std::string& stage, int attempt);

// Parses a Go-style duration of whole units ("30m", "1h30m", "45s") to seconds.
std::optional<int64_t> parseStageDuration(const std::string& text);

// Seconds since the epoch of an RFC 3339 UTC timestamp ("2026-11-30T09:00:00Z").
std::optional<int64_t> parseRfc3339(const std::string& text);

}  // namespace lockstep::controllers
