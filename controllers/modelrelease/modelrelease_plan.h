// One reconcile of a ModelRelease as a plan (pure): what the shell observed
// (ModelReleaseObserved) -> planRelease (release_plan.h) -> for the prod
// stage or a manual rollback, the serving writes (prod/prod_plan.h) -> one
// ExecutionPlan that controllers/common/execute.h carries out: the serving
// Model's record and the serving objects, the gate Jobs, Events, and the release's status
// last, guarded by the resourceVersion it was planned from. When the plan
// needs one more observation (a measurement) it says so in `measure`, and the
// shell plans once more with it.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>

#include "api/v1alpha1/model_release.h"
#include "common/status.h"
#include "controllers/common/plan.h"
#include "controllers/modelrelease/prod/prod_observed.h"
#include "controllers/modelrelease/prod/prod_plan.h"
#include "controllers/modelrelease/release_plan.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// How long a release deleted mid-canary waits for its rollback (reason
// ReleaseDeleted) before its finalizer goes anyway (--release-deletion-deadline).
inline constexpr int64_t kDefaultReleaseDeletionDeadlineSeconds = int64_t{15} * 60;

struct ModelReleaseObserved {
  kube::ObjectPtr release;  // the informer cache's own object
  ReleaseObserved gates;    // what planRelease reads (and the clock: gates.nowUnix)
  ProdObserved prod;        // what the prod stage and a manual rollback read
  // From metadata.deletionTimestamp: past it, a deleted release's finalizer
  // goes whether or not its canary is rolled back (a Warning Event says so).
  int64_t deletionDeadlineSeconds = kDefaultReleaseDeletionDeadlineSeconds;
};

struct ModelReleasePlan {
  ReleasePlan release;           // planRelease's decisions (status, Jobs, Events, outcomes)
  std::optional<ProdPlan> prod;  // the prod stage's or a manual rollback's writes
  ExecutionPlan execution;
  // The plan stops after the serving writes (no Jobs, no status): look again
  // after stopRequeueSeconds, or retry `stopError` (through resultFor).
  bool stop = false;
  int64_t stopRequeueSeconds = 0;
  Status stopError;
  // After the status write, an error a retry cannot fix: terminal.
  Status afterStatus;
  // Ask: one measurement of this analysis, then plan again (once).
  std::optional<PrometheusAnalysis> measure;
  int measureStep = 0;   // ProdPlan::measureStep
  int measureIndex = 0;  // ProdPlan::measureIndex
  // A manual rollback is counted once execution.apply[rollbackRecordedAt] is written.
  std::optional<size_t> rollbackRecordedAt;
  // Prod's healing found a serving name missing from the caches: read the
  // names (ModelReleaseReconciler::readProdNames), then plan again.
  bool readProdNames = false;
};

ModelReleasePlan planModelRelease(const ModelReleaseObserved& observed);

inline constexpr const char* kReasonJobRefused = "JobRefused";
// What a release deleted mid-canary does: its canary rolls back to the
// known-good (reason ReleaseDeleted, through the prod stage) and the finalizer
// goes; past the deletion deadline the finalizer goes anyway, the canary slot
// freed, with a Warning Event of this reason (nothing waits forever).
inline constexpr const char* kReasonReleaseDeletionDeadline = "ReleaseDeletionDeadline";

}  // namespace lockstep::controllers
