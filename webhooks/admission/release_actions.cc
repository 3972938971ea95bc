#include "webhooks/admission/release_actions.h"

#include "api/v1alpha1/approval.h"
#include "webhooks/admission/json_access.h"

namespace lockstep::webhooks {

namespace ja = json_access;
using nlohmann::json;

std::string approveAnnotation(std::string_view stage) {
  return std::string(kApproveAnnotationPrefix) + std::string(stage);
}

std::optional<ReleaseAction> parseReleaseAction(std::string_view key, const json& value) {
  ReleaseAction a;
  if (key == kAbortAnnotation) {
    a.kind = ReleaseActionKind::kAbort;
  } else if (key == kPromoteFullAnnotation) {
    a.kind = ReleaseActionKind::kPromote;
  } else if (key.substr(0, kPromoteAnnotationPrefix.size()) == kPromoteAnnotationPrefix) {
    a.kind = ReleaseActionKind::kPromote;
    a.stage = std::string(key.substr(kPromoteAnnotationPrefix.size()));
  } else if (key.substr(0, kRollbackAnnotationPrefix.size()) == kRollbackAnnotationPrefix) {
    a.kind = ReleaseActionKind::kRollback;
    a.stage = std::string(key.substr(kRollbackAnnotationPrefix.size()));
  } else if (key.substr(0, kApproveAnnotationPrefix.size()) == kApproveAnnotationPrefix) {
    a.kind = ReleaseActionKind::kApprove;
    a.stage = std::string(key.substr(kApproveAnnotationPrefix.size()));
    // approve.lockstep.dev/<stage>.<k>: the k-th approver (api/v1alpha1/approval.h).
    if (auto k = api::v1alpha1::parseApprovalKey(a.stage)) a.stage = k->stage;
  } else {
    return std::nullopt;
  }
  a.annotation = std::string(key);
  a.value = ja::strOr(&value);
  return a;
}

std::vector<ReleaseAction> changedReleaseActions(const json* release, const json* oldRelease) {
  std::vector<ReleaseAction> out;
  const json* now = ja::at(release, {"metadata", "annotations"});
  if (now == nullptr || !now->is_object()) return out;
  const json* before = ja::at(oldRelease, {"metadata", "annotations"});
  for (const auto& [key, value] : now->items()) {  // nlohmann objects iterate sorted by key
    std::optional<ReleaseAction> action = parseReleaseAction(key, value);
    if (!action) continue;
    const json* old = ja::child(before, key);
    if (old != nullptr && *old == value) continue;  // unchanged: decided when it was written
    out.push_back(std::move(*action));
  }
  return out;
}

}  // namespace lockstep::webhooks
