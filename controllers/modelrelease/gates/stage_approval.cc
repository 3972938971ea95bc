#include "controllers/modelrelease/gates/stage_approval.h"

#include <string>

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

v1::ApprovalDecision stageApproval(const v1::Stage& stage, const nlohmann::json& release,
                                   const v1::ApprovalRules& rules) {
  return v1::decideApproval(stage.approvalPolicy, v1::stageApprovals(release, stage.name),
                            v1::releaseCreator(release), rules);
}

void recordApprovers(nlohmann::json& st, const v1::ApprovalDecision& d, int64_t generation) {
  std::string by;
  for (const std::string& u : d.approvers) by += (by.empty() ? "" : ", ") + u;
  st["approvedBy"] = by;
  st["approvers"] = d.approvers;
  nlohmann::json approvals = nlohmann::json::array();
  for (const v1::CountedApprover& a : d.counted) {
    nlohmann::json entry = {{"user", a.user}};
    if (a.groupsRecorded) entry["groups"] = a.groups;
    approvals.push_back(std::move(entry));
  }
  st["approvals"] = std::move(approvals);
  st["approvedGeneration"] = generation;
}

}  // namespace lockstep::controllers
