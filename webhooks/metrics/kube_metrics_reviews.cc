#include "webhooks/metrics/kube_metrics_reviews.h"

#include "webhooks/kube_authorizer.h"

namespace lockstep::webhooks {
namespace {

const kube::Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", "TokenReview",
                                   false};
const kube::Resource kSubjectAccessReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                           "SubjectAccessReview", false};

}  // namespace

StatusOr<TokenReviewResult> KubeTokenReviewer::review(const std::string& token) const {
  StatusOr<kube::Object> created = client_->create(kTokenReviews, tokenReviewFor(token));
  if (!created.isOk()) return created.status();
  return tokenReviewResultFrom(*created);
}

StatusOr<AccessDecision> KubeNonResourceAuthorizer::authorize(const UserInfo& user,
                                                              const std::string& path,
                                                              const std::string& verb) const {
  StatusOr<kube::Object> created =
      client_->create(kSubjectAccessReviews, nonResourceAccessReviewFor(user, path, verb));
  if (!created.isOk()) return created.status();
  return accessDecisionFrom(*created);
}

}  // namespace lockstep::webhooks
