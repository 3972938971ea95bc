// Whether a Manual stage (a gate, or the serving stage before its canary) is
// approved, and the record of who approved it: the controller's side of
// api/v1alpha1/approval.h (docs/modelrelease.md "Approval policy and
// separation of duties"). Distinct users, never the release's recorded
// creator unless the stage allows it, recorded with the generation (the
// content) they were acted on for. Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/model_release.h"

namespace lockstep::controllers {

// The decision for `stage` from the approval annotations of `release` (the object as observed),
// under the platform's `rules` (ServiceAccounts count only where allowed).
api::v1alpha1::ApprovalDecision stageApproval(const api::v1alpha1::Stage& stage,
                                              const nlohmann::json& release,
                                              const api::v1alpha1::ApprovalRules& rules);

// Writes approvedBy ("alice, bob"), approvers, approvals (each approver with the groups
// recorded when they approved) and approvedGeneration into a status.stages entry.
void recordApprovers(nlohmann::json& stageStatus, const api::v1alpha1::ApprovalDecision& d,
                     int64_t generation);

}  // namespace lockstep::controllers
