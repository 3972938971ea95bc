// The Authorizer of the operator: one SubjectAccessReview
// (authorization.k8s.io/v1, POST subjectaccessreviews) per question, built
// from the request's userInfo, through the operator's kube client.
//
// This is the one API call on an admission path, and only for writes that
// approve or abort. Give it a client whose request timeout is short (the
// operator's --authorization-timeout, well under the webhook's timeoutSeconds):
// a timeout or any other failure is returned as an error, which the
// ModelRelease webhook turns into a denial naming the failure (fail closed).
// The operator's ServiceAccount needs `create` on
// subjectaccessreviews.authorization.k8s.io (the chart grants it).
// Thread-safety: safe for concurrent use (kube::Client is).
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "operator/kube/client.h"
#include "webhooks/admission/authorizer.h"

namespace lockstep::webhooks {

class SubjectAccessReviewAuthorizer final : public Authorizer {
 public:
  explicit SubjectAccessReviewAuthorizer(std::shared_ptr<kube::Client> client)
      : client_(std::move(client)) {}
  StatusOr<AccessDecision> authorize(const AccessRequest& request) const override;

 private:
  std::shared_ptr<kube::Client> client_;
};

// The SubjectAccessReview object for a question (pure; exposed for tests).
nlohmann::json subjectAccessReviewFor(const AccessRequest& request);
// Reads status.allowed / denied / reason / evaluationError of a created review.
StatusOr<AccessDecision> accessDecisionFrom(const nlohmann::json& review);

}  // namespace lockstep::webhooks
