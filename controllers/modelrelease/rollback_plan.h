// A manual rollback of a model to a release prod ran before (pure,
// docs/rollouts.md "Manual rollback"): a release whose canary once completed,
// annotated rollback.lockstep.dev/<the model's prod revision> by `lockstep
// model rollback`, takes the stable track back without re-running any gate, on
// exactly the runtime pair it pinned (a RuntimeMovedOn Warning when the
// RuntimeEnv has moved on), unless that revision was pruned or another release
// is in canary (then the request is refused in status.rollback, with an Event). A release the
// Model names as prod again (a rollback whose status write was lost) is Promoted again. The
// writes are prod/rollback_writes.h. Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/release_status.h"

namespace lockstep::controllers {

// True when the release is (again) prod's by a manual rollback: `sum` and
// `status` say so and, for a new request, plan.modelRollback asks the shell
// to move the stable track. False: the rollback does not apply (or was refused).
bool planManualRollback(const ReleaseObserved& observed, const api::v1alpha1::ModelRelease& release,
                        const std::string& prevPhase, nlohmann::json& status, ReleaseSummary& sum,
                        ReleasePlan& plan);

// A manual rollback's target is Ready (reason ManualRollback) only once the
// stable Deployment carries it with N Ready pods on its pair
// (serving_health.h; N is the Model's replicas); until then Ready=False,
// Reconciling=True, a requeue. Past the Model's spec.rollbackDeadlineSeconds
// from the request (status.rollback.at): Ready=False and Stalled=True with
// reason RollbackDeadlineExceeded and one Warning Event; Ready once N pods are.
// `rollback` is its status.rollback record (from, requestedBy, at).
void manualRollbackReadiness(const ReleaseObserved& observed,
                             const api::v1alpha1::ModelRelease& release,
                             const nlohmann::json& rollback, ReleaseSummary& sum,
                             ReleasePlan& plan);

}  // namespace lockstep::controllers
