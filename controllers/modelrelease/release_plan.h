// ModelRelease reconcile planning (pure): from what the controller observed
// (the release, its RuntimeEnv, the Jobs it owns and their pods) to the
// status it must write, the Jobs to create or delete, Events and stage
// outcomes. It classifies the release (invalid spec, manual rollback
// (rollback_plan.h), superseded, terminal, stale runtime), then dispatches the
// first unfinished stage: a gate (gates/) or the prod stage, which it hands to
// prod/ (plan.prod). The contract is docs/modelrelease.md.
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

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/change_window_gate.h"
#include "controllers/modelrelease/gates/evidence_stage.h"
#include "controllers/modelrelease/gates/fleet_check.h"
#include "controllers/modelrelease/release_event.h"
#include "controllers/modelrelease/runtime_pod.h"
#include "controllers/modelrelease/serving_health.h"

namespace lockstep::controllers {

// What the shell (package_reader.h) learnt of the release's package before its
// first stage.
struct PackageObserved {
  std::string digest;                              // the manifest's (spec.package's)
  std::optional<api::v1alpha1::PackageInfo> info;  // read and accepted
  std::string refused;     // read: neither an image nor ModelPack, why (names the types)
  std::string unreadable;  // not read: why; the release goes on
  // Not read because the registry itself did not answer (no address, no connection,
  // no TLS, a timeout, 429 or 5xx), not because of this package or its credentials.
  bool registryDown = false;
};

struct ReleaseObserved {
  nlohmann::json release;
  std::optional<nlohmann::json> runtimeEnv;  // spec.runtimeEnvRef, from the cache
  std::vector<nlohmann::json> jobs;          // Jobs controlled by this release
  std::vector<nlohmann::json> pods;          // pods of those Jobs
  PackageMount mount = PackageMount::kImageVolume;
  // InitContainer mode: the command that fetches $LOCKSTEP_PACKAGE into /model.
  std::vector<std::string> fetchCommand;
  // The lockstep CLI image (--cli-image) of RuntimeEnv spec.verify.onStart's init containers.
  std::string cliImage;
  // The platform's approval rules (--allow-service-account-approvers).
  api::v1alpha1::ApprovalRules approvalRules;
  std::string now;      // RFC 3339, for status timestamps
  int64_t nowUnix = 0;  // the same instant, seconds since the epoch
  // The model's prod state from its Model's status (docs/rollouts.md,
  // "Ownership"): the release prod runs and the release holding the canary
  // slot. A Promoted release that prod no longer runs, or a release in canary
  // that lost the slot, is Superseded.
  std::string promotedRelease;
  std::string canaryRelease;
  std::string modelRevision;  // the Model's status.revision ("" when there is no Model)
  // The Model's record shows prod ran this release (v1::recordShowsProdRan): only then
  // is it a manual rollback's target. True when there is no Model (nothing to check).
  bool modelRecordsProdRan = true;
  // The Model history's last entry is a Rollback to this release: from where.
  std::string rollbackFrom;
  // The model's change windows, when they keep it closed now (change_window_gate.h).
  std::optional<ClosedWindow> window;
  // The Model's spec.rollbackDeadlineSeconds: a manual rollback whose target has
  // not got N Ready stable pods this long after it was requested has failed.
  int64_t rollbackDeadlineSeconds = api::v1alpha1::kDefaultRollbackDeadlineSeconds;
  // The model's stable Deployment and pods, observed for a release prod runs
  // or ran (Promoted, Superseded): its Ready follows them (serving_health.h).
  // nullopt: not observed (a Promoted release then keeps its conditions).
  std::optional<ServingObserved> serving;
  // The registry's answer for the evidence stage being planned (the plan's
  // evidenceCheck of an earlier pass); nullopt: none yet.
  std::optional<EvidenceCheckObserved> evidence;
  // The registry's answer for the serving stage of a fleet rollout (its wave
  // permit, gates/fleet_check.h); nullopt: read from status.evidenceChecks.
  std::optional<FleetCheckObserved> fleet;
  // A fleet abort concerns the release prod runs now, and this release is the
  // one its canary replaced: prod comes back to this release as on a manual
  // rollback, requested by the abort (its message); "" when none.
  std::string fleetRollbackBy;
  // A rollback asked on the Model (rollback.lockstep.dev/<revision> there, with
  // rollback-to.lockstep.dev/<revision> or the default target, v1::modelRollbackAsk)
  // whose target is this release: the requesting user at the Model's current
  // revision, and at the revision before it (the request a rollback to this
  // release spent, for a status write lost after the Model moved). "" when none,
  // or when the operator runs without --model-rollback-requests.
  std::string modelRollbackBy;
  std::string spentModelRollbackBy;
  // The package read by the shell; nullopt: not read in this pass (status.package
  // already describes it, or no reader).
  std::optional<PackageObserved> package;
};

// The release reached its prod (serving) stage: prod/prod_plan.h plans the
// canary on the model's serving objects and folds it into this plan (prod/fold.h).
struct ProdStageRequest {
  std::string stage;
  size_t index = 0;  // into spec.stages
};

// A stage that reached a final result in this plan (for metrics).
struct StageOutcome {
  std::string stage;
  std::string result;            // succeeded | failed | timed_out | aborted
  double durationSeconds = 0.0;  // startedAt → finishedAt; 0 when unknown
};

// A manual rollback of the model to this release: the shell re-points the
// model's stable track to it (canary to zero), records it on the Model, then
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
  // An evidence stage waits for the registry: the shell reads it (off this
  // worker) and passes the answer in ReleaseObserved::evidence.
  std::optional<EvidenceCheckRequest> evidenceCheck;
};

// Keys of api/v1alpha1/keys.h the planner reads (approvals, abort) and writes (labels).
using api::v1alpha1::kAbortAnnotation;
using api::v1alpha1::kApproveAnnotationPrefix;
using api::v1alpha1::kReleaseLabel;
using api::v1alpha1::kRollbackAnnotationPrefix;
// The duration grammar of every ModelRelease field.
using api::v1alpha1::parseStageDuration;

ReleasePlan planRelease(const ReleaseObserved& observed);

}  // namespace lockstep::controllers
