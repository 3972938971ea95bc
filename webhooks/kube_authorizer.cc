#include "webhooks/kube_authorizer.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;

const kube::Resource kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                           "SubjectAccessReview", false};

}  // namespace

json subjectAccessReviewFor(const AccessRequest& q) {
  json spec = {{"user", q.user.username},
               {"resourceAttributes",
                {{"namespace", q.ns},
                 {"verb", q.verb},
                 {"group", q.group},
                 {"resource", q.resource},
                 {"name", q.name}}}};
  if (!q.user.uid.empty()) spec["uid"] = q.user.uid;
  if (!q.user.groups.empty()) spec["groups"] = q.user.groups;
  if (!q.user.extra.empty()) spec["extra"] = q.user.extra;
  return {{"apiVersion", kSubjectAccessReviews.apiVersion()},
          {"kind", kSubjectAccessReviews.kind},
          {"spec", std::move(spec)}};
}

StatusOr<AccessDecision> accessDecisionFrom(const json& review) {
  if (!review.is_object() || !review.contains("status") || !review["status"].is_object()) {
    return internalError("SubjectAccessReview answered without a status");
  }
  const json& st = review["status"];
  AccessDecision d;
  d.allowed = st.value("allowed", false) && !st.value("denied", false);
  d.reason = st.value("reason", "");
  d.evaluationError = st.value("evaluationError", "");
  return d;
}

StatusOr<AccessDecision> SubjectAccessReviewAuthorizer::authorize(const AccessRequest& q) const {
  StatusOr<kube::Object> created =
      client_->create(kSubjectAccessReviews, subjectAccessReviewFor(q));
  if (!created.isOk()) return created.status();
  return accessDecisionFrom(*created);
}

}  // namespace lockstep::webhooks
