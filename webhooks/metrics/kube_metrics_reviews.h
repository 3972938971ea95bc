// The reviews behind the metrics filter (metrics_auth.h), made through the
// kube client: POST tokenreviews (authentication.k8s.io/v1) and POST
// subjectaccessreviews with nonResourceAttributes (authorization.k8s.io/v1).
// The process's ServiceAccount needs `create` on both (rbac/permissions.cc).
// Give them a client with a short request timeout: a scrape waits for them.
// Thread-safety: safe for concurrent use (kube::Client is).
#pragma once

#include <memory>

#include "operator/kube/client.h"
#include "webhooks/metrics/metrics_auth.h"

namespace lockstep::webhooks {

class KubeTokenReviewer final : public TokenReviewer {
 public:
  explicit KubeTokenReviewer(std::shared_ptr<kube::Client> client) : client_(std::move(client)) {}
  StatusOr<TokenReviewResult> review(const std::string& token) const override;

 private:
  std::shared_ptr<kube::Client> client_;
};

class KubeNonResourceAuthorizer final : public NonResourceAuthorizer {
 public:
  explicit KubeNonResourceAuthorizer(std::shared_ptr<kube::Client> client)
      : client_(std::move(client)) {}
  StatusOr<AccessDecision> authorize(const UserInfo& user, const std::string& path,
                                     const std::string& verb) const override;

 private:
  std::shared_ptr<kube::Client> client_;
};

}  // namespace lockstep::webhooks
