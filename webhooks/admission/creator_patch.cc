#include "webhooks/admission/creator_patch.h"

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/keys.h"
#include "webhooks/admission/release_actions.h"

namespace lockstep::webhooks {

using nlohmann::json;

std::string jsonPointerToken(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

StatusOr<json> creatorPatch(const AdmissionRequest& request) {
  json patch = json::array();
  if (request.operation != Operation::kCreate || !request.subResource.empty()) return patch;
  if (!request.object.is_object()) {
    return invalidArgument("request.object: a CREATE must carry the ModelRelease as an object");
  }
  if (request.user.username.empty()) {
    return invalidArgument(
        "request.userInfo.username is empty: the creator of the release cannot be recorded in "
        "metadata.annotations[\"" +
        std::string(api::v1alpha1::kCreatedByAnnotation) + "\"]");
  }
  const std::string& user = request.user.username;
  const json annotations = {{api::v1alpha1::kCreatedByAnnotation, user}};
  auto metadata = request.object.find("metadata");
  if (metadata == request.object.end() || metadata->is_null()) {
    patch.push_back(
        {{"op", "add"}, {"path", "/metadata"}, {"value", {{"annotations", annotations}}}});
    return patch;
  }
  if (!metadata->is_object()) {
    return invalidArgument("request.object.metadata: not an object (" +
                           std::string(metadata->type_name()) + ")");
  }
  auto existing = metadata->find("annotations");
  if (existing == metadata->end() || existing->is_null()) {
    // "add" of a member that is there (null) replaces it (RFC 6902 section 4.1).
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", annotations}});
    return patch;
  }
  if (!existing->is_object()) {
    return invalidArgument("request.object.metadata.annotations: not an object (" +
                           std::string(existing->type_name()) + ")");
  }
  // Written by the client: the validating webhook refuses it unless it is `user`.
  if (existing->contains(api::v1alpha1::kCreatedByAnnotation)) return patch;
  patch.push_back(
      {{"op", "add"},
       {"path", "/metadata/annotations/" + jsonPointerToken(api::v1alpha1::kCreatedByAnnotation)},
       {"value", user}});
  return patch;
}

json approverGroupsPatch(const AdmissionRequest& request) {
  json patch = json::array();
  if (!request.subResource.empty() ||
      (request.operation != Operation::kCreate && request.operation != Operation::kUpdate))
    return patch;
  if (!request.object.is_object()) return patch;
  auto metadata = request.object.find("metadata");
  if (metadata == request.object.end() || !metadata->is_object()) return patch;
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return patch;
  const std::string path = "/metadata/annotations/";
  const std::string groups = api::v1alpha1::encodeApproverGroups(request.user.groups);
  const json* old = request.oldObject.is_null() ? nullptr : &request.oldObject;
  for (const ReleaseAction& a : changedReleaseActions(&request.object, old)) {
    if (a.kind != ReleaseActionKind::kApprove) continue;
    const std::string key = api::v1alpha1::approverGroupsKey(a.annotation);
    if (key.empty()) continue;
    auto it = annotations->find(key);
    if (it != annotations->end() && it->is_string() && it->get<std::string>() == groups) continue;
    patch.push_back({{"op", "add"}, {"path", path + jsonPointerToken(key)}, {"value", groups}});
  }
  // A groups annotation whose approval is gone (removed, e.g. with a change of spec).
  const std::string prefix = api::v1alpha1::kApproverGroupsAnnotationPrefix;
  for (const auto& [key, value] : annotations->items()) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string approval =
        api::v1alpha1::kApproveAnnotationPrefix + key.substr(prefix.size());
    if (annotations->contains(approval)) continue;
    patch.push_back({{"op", "remove"}, {"path", path + jsonPointerToken(key)}});
  }
  return patch;
}

}  // namespace lockstep::webhooks
