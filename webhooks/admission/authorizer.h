// Authorization questions the admission path asks the API server: "may this
// user perform this verb on this object?" (a SubjectAccessReview). The pure
// admission library only sees this interface; the operator backs it with a
// SubjectAccessReview call (webhooks/kube_authorizer.h), tests with a fake.
// Thread-safety: implementations are called concurrently from server threads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::webhooks {

// The requesting user as the API server authenticated it (request.userInfo).
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// One resource access question (authorization.k8s.io/v1 ResourceAttributes).
struct AccessRequest {
  UserInfo user;
  std::string verb;      // "approve"
  std::string group;     // "lockstep.dev"
  std::string resource;  // "modelreleases"
  std::string ns;
  std::string name;
};

// The authorizer's answer. `reason` is what the authorizer said (often empty
// for RBAC denials); `evaluationError` is set when some rules could not be
// evaluated (the answer is still a valid "no").
struct AccessDecision {
  bool allowed = false;
  std::string reason;
  std::string evaluationError;
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  // An error Status means the question could not be answered (API server
  // unreachable, deadline passed, forbidden to ask): callers fail closed.
  virtual StatusOr<AccessDecision> authorize(const AccessRequest& request) const = 0;
};

// Answers every question with a fixed decision. For the dev server and fuzzing.
class FixedAuthorizer final : public Authorizer {
 public:
  explicit FixedAuthorizer(bool allowed) : allowed_(allowed) {}
  StatusOr<AccessDecision> authorize(const AccessRequest&) const override {
    return AccessDecision{allowed_, allowed_ ? "allowed by configuration" : "", ""};
  }

 private:
  bool allowed_;
};

}  // namespace lockstep::webhooks
