// The prod stage folded into a release's plan (pure): the canary planner's
// decision (prod/canary_plan.h) becomes the release's status (`status.canary`, the
// stage's phase, the release's phase and conditions), Events and a requeue.
// Phases: Canary while the canary runs, Promoted (Ready=True) when prod runs
// the release, RolledBack (terminal, Stalled=True with the rollback's reason).
// The contract is docs/rollouts.md. Thread-safety: pure functions.
#pragma once

#include <string>

#include "controllers/modelrelease/prod/canary_plan.h"
#include "controllers/modelrelease/release_plan.h"

namespace lockstep::controllers {

// Folds `canary` into `plan` (which planRelease returned with `plan.prod` set).
// `previousStatus` is the release's status as observed (for statusChanged).
void foldCanaryPlan(ReleasePlan& plan, const CanaryPlan& canary,
                    const nlohmann::json& previousStatus, int64_t generation,
                    const std::string& now);

// A prod stage that cannot run (an invalid serving/canary spec, a template
// that does not build): the release fails with InvalidSpec and `message`.
void failProdStage(ReleasePlan& plan, const std::string& message,
                   const nlohmann::json& previousStatus, int64_t generation,
                   const std::string& now);

// The prod stage cannot go on until someone acts (a NameConflict): the
// release keeps its phase and status.canary, Ready=False and Stalled=True
// with `reason` and `message`, a Warning Event when the condition is new, and
// a look again after `requeueSeconds` (the object in the way may carry no
// label Lockstep watches).
void stallProdStage(ReleasePlan& plan, const std::string& reason, const std::string& message,
                    const nlohmann::json& previousStatus, int64_t generation,
                    const std::string& now, int64_t requeueSeconds);

// The release's status after the API server refused a prod write (not a
// transient error): `previousStatus` with Ready=False and Stalled=True,
// reason ServingApplyFailed and `message` (the object and the server's
// message). The operator retries with backoff meanwhile.
nlohmann::json servingWriteFailedStatus(const nlohmann::json& previousStatus,
                                        const std::string& message, int64_t generation,
                                        const std::string& now);

}  // namespace lockstep::controllers
