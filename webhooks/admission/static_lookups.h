// In-memory RuntimeEnvLookup, NamespaceModeLookup and Authorizer backed by
// maps, loadable from a JSON document. Used by the dev server (and as test
// doubles); the operator backs the interfaces with its informer cache and
// SubjectAccessReviews instead.
// Document format:
//   {"runtimeEnvs": [{"namespace": "ml", "name": "torch", "ready": true,
//                     "closureHash": "sha256:…", "image": "repo@sha256:…",
//                     "currentRevision": 2,                      // optional
//                     "revisions": [{"number": 1, "image": "repo@sha256:…",
//                                    "closureHash": "sha256:…", "pinnedBy": ["v1"]}]}],
//    "namespaces": {"ml": "enforce", "team-b": "warn"},
//    "authorization": {"default": "allow",            // or "deny"; default allow
//                      "rules": [{"user": "bob", "verb": "approve", "allowed": false}]}}
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"
#include "webhooks/admission/authorizer.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

class StaticRuntimeEnvs final : public RuntimeEnvLookup {
 public:
  std::optional<RuntimeEnvView> find(std::string_view ns, std::string_view name) const override;
  void put(RuntimeEnvView env);
  void erase(std::string_view ns, std::string_view name);

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, RuntimeEnvView, std::less<>> envs_;
};

class StaticNamespaceModes final : public NamespaceModeLookup {
 public:
  StatusOr<NamespaceMode> modeOf(std::string_view ns) const override;
  void set(std::string ns, NamespaceMode mode);

 private:
  mutable std::mutex mu_;
  std::map<std::string, NamespaceMode, std::less<>> modes_;
};

// Decides by (user, verb); anything without a rule gets the default.
class StaticAuthorizer final : public Authorizer {
 public:
  StatusOr<AccessDecision> authorize(const AccessRequest& request) const override;
  void setDefault(bool allowed);
  void set(std::string user, std::string verb, bool allowed);

 private:
  mutable std::mutex mu_;
  bool default_ = true;
  std::map<std::pair<std::string, std::string>, bool> rules_;
};

struct StaticLookups {
  std::unique_ptr<StaticRuntimeEnvs> envs = std::make_unique<StaticRuntimeEnvs>();
  std::unique_ptr<StaticNamespaceModes> namespaces = std::make_unique<StaticNamespaceModes>();
  std::unique_ptr<StaticAuthorizer> authorizer = std::make_unique<StaticAuthorizer>();
};

// Parses the document above; kInvalidArgument naming the bad field.
StatusOr<StaticLookups> loadStaticLookups(std::string_view jsonText);

}  // namespace lockstep::webhooks
