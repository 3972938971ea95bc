// Who may read /metrics: the filter in front of the metrics endpoint, as
// controller-runtime's metrics filter (WithAuthenticationAndAuthorization)
// does it. A scraper sends `Authorization: Bearer <token>`; the token is
// authenticated by a TokenReview (authentication.k8s.io/v1), and the user it
// names must be allowed `get` on the non-resource URL of the request
// (a SubjectAccessReview with nonResourceAttributes), e.g. through a
// ClusterRole with `nonResourceURLs: [/metrics], verbs: [get]`.
//
//   no or malformed Authorization header, token not authenticated -> 401
//   authenticated but not allowed                                -> 403
//   a review could not be made (API server unreachable, ...)     -> 503
//
// Answers are cached by token for a short time (allowed: allowTtl, refused:
// denyTtl; failures never), so a scrape every few seconds costs the API
// server two reviews per token per allowTtl. The reviews are behind small
// interfaces; webhooks/metrics/kube_metrics_reviews.h backs them with the
// kube client, tests with fakes. Pure: no I/O, the clock is an input.
// Thread-safety: MetricsAuthFilter is safe for concurrent use.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "webhooks/admission/authorizer.h"

namespace lockstep::webhooks {

// What a TokenReview said about a token.
struct TokenReviewResult {
  bool authenticated = false;
  UserInfo user;
  std::string error;  // status.error: why the token was not authenticated
};

class TokenReviewer {
 public:
  virtual ~TokenReviewer() = default;
  // An error Status: the review could not be made (not: the token is bad).
  virtual StatusOr<TokenReviewResult> review(const std::string& token) const = 0;
};

// "May `user` do `verb` on the non-resource URL `path`?"
class NonResourceAuthorizer {
 public:
  virtual ~NonResourceAuthorizer() = default;
  virtual StatusOr<AccessDecision> authorize(const UserInfo& user, const std::string& path,
                                             const std::string& verb) const = 0;
};

// The token of an `Authorization: Bearer <token>` header value (scheme
// case-insensitive, as RFC 7235 says); nullopt when absent or malformed.
std::optional<std::string> bearerToken(std::string_view authorization);

// The TokenReview object for a token, and the result read back from a created one.
nlohmann::json tokenReviewFor(const std::string& token);
StatusOr<TokenReviewResult> tokenReviewResultFrom(const nlohmann::json& review);
// The SubjectAccessReview for a non-resource URL (spec.nonResourceAttributes).
nlohmann::json nonResourceAccessReviewFor(const UserInfo& user, const std::string& path,
                                          const std::string& verb);

struct MetricsAuthOptions {
  std::chrono::seconds allowTtl{60};
  std::chrono::seconds denyTtl{10};
  // At most this many cached answers; the cache is emptied when full.
  std::size_t maxCached = 1024;
};

struct MetricsAuthVerdict {
  int status = 200;      // 200: serve; else 401, 403 or 503
  std::string message;   // the response body when refused; a log line
  std::string username;  // who asked, when known
};

class MetricsAuthFilter {
 public:
  MetricsAuthFilter(const TokenReviewer& tokens, const NonResourceAuthorizer& authorizer,
                    MetricsAuthOptions options = {})
      : tokens_(tokens), authorizer_(authorizer), options_(options) {}

  // The verdict on a request for `path` (verb get) carrying `authorization`
  // (the header's value, "" when absent), at monotonic time `now`.
  MetricsAuthVerdict check(std::string_view authorization, const std::string& path,
                           std::chrono::steady_clock::time_point now);

 private:
  MetricsAuthVerdict decide(const std::string& token, const std::string& path) const;

  const TokenReviewer& tokens_;
  const NonResourceAuthorizer& authorizer_;
  MetricsAuthOptions options_;
  struct Cached {
    MetricsAuthVerdict verdict;
    std::chrono::steady_clock::time_point expires;
  };
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Cached> cache_;  // (token, path)
};

}  // namespace lockstep::webhooks
