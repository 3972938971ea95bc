// Separation of duties and approvals bound to content, as the ModelRelease
// webhook enforces them (the rules are api/v1alpha1/approval.h and
// docs/modelrelease.md "Approvals"):
//  - lockstep.dev/created-by records the creator: the mutating webhook sets it
//    on CREATE (creator_patch.h); a value the client wrote must be the
//    requesting user's name; no UPDATE may add, change or remove it. A CREATE
//    with a Manual stage must record its creator; an UPDATE of a release that
//    records none (created before the mutating webhook) is warned.
//  - Each stage's approval policy decodes (Automatic, Manual, or the object form).
//  - An approval the write adds (approve.lockstep.dev/<stage>[.<k>]) is
//    refused when its user created the release and the stage does not allow
//    self-approval, or when the same user already approved that stage.
//  - An approval the write adds carries its approver's groups
//    (approver-groups.lockstep.dev/<stage>[.<k>], written by the mutating
//    webhook from request.userInfo.groups): any other value is refused, as is
//    a groups annotation written without its approval or removed while its
//    approval stands. A stage with fromGroups refuses an approver in none of
//    them, naming the groups.
//  - A CREATE by a ServiceAccount (CI or GitOps on someone's behalf) with a
//    Manual stage of one approver and no fromGroups is warned: the person
//    behind it is not known, and nothing keeps them from approving alone.
//  - An approval is bound to the content it approved: a write that changes
//    spec may neither add an approval nor keep existing ones (they approved
//    the old generation; remove them in the same write).
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "webhooks/admission/model_release_validator.h"

namespace lockstep::webhooks {

// Appends problems to `invalid` (the write is wrong: 422) or `forbidden` (the
// user may not do this: 403), and advice to `warnings`.
void checkApprovalRules(const ModelReleaseReview& review, std::vector<std::string>& invalid,
                        std::vector<std::string>& forbidden, std::vector<std::string>& warnings);

}  // namespace lockstep::webhooks
