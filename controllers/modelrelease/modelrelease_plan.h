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

struct ModelReleaseObserved {
  kube::ObjectPtr release;  // the informer cache's own object
  ReleaseObserved gates;    // what planRelease reads
  ProdObserved prod;        // what the prod stage and a manual rollback read
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
};

ModelReleasePlan planModelRelease(const ModelReleaseObserved& observed);

inline constexpr const char* kReasonJobRefused = "JobRefused";

}  // namespace lockstep::controllers
