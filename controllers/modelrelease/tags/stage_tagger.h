// StageTagger: the shell of registry stage tags (stage_tag_plan.h holds the
// decisions). For a release with spec.registryTags, after each reconcile it
// reads the Secret named by secretRef (a kubernetes.io/dockerconfigjson),
// points the due `<repo>:<stage>` tags at their digests through a
// RegistryTagger, records the outcome in status.registryTags and the
// RegistryTagged condition (server-side apply under its own field manager,
// kStageTagsFieldManager, so the release planner's writes never drop them),
// and records an Event per tag written or failed. It never fails the
// reconcile: errors are recorded and retried with back-off.
// Thread-safety: safe for concurrent use on different releases.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/client.h"
#include "operator/kube/event_recorder.h"
#include "operator/registry/credentials.h"
#include "operator/registry/distribution.h"
#include "operator/registry/reference.h"

namespace lockstep::controllers {

inline constexpr const char* kStageTagsFieldManager = "lockstep-registry-tags";

// Points one tag at a package's digest (the OCI registry in production).
class RegistryTagger {
 public:
  virtual ~RegistryTagger() = default;
  virtual StatusOr<registry::TagOutcome> tag(const registry::PackageRef& package,
                                             const std::string& tag,
                                             const std::optional<registry::Credentials>& creds) = 0;
};

// Over registry::connectRegistry: https, TLS 1.2+, certificates verified
// against `caPem` (a private registry's CA bundle) or the system roots.
std::shared_ptr<RegistryTagger> makeRegistryTagger(std::string caPem);

// The credentials for `host` in the kubernetes.io/dockerconfigjson Secret `secret`
// of `ns` (a release's spec.registryTags.secretRef); nullopt for no Secret or no
// entry for the host. Errors name the Secret, never its content.
StatusOr<std::optional<registry::Credentials>> releaseRegistryCredentials(kube::Client& client,
                                                                          const std::string& ns,
                                                                          const std::string& secret,
                                                                          const std::string& host);

class StageTagger {
 public:
  StageTagger(std::shared_ptr<kube::Client> client, kube::EventSink& events,
              std::shared_ptr<RegistryTagger> registry);

  // `plannedStatus`: the release's status as just planned and written. The
  // promoted release/package come from the model's Model. Returns the
  // seconds until a retry is due (0: nothing pending).
  int64_t run(const nlohmann::json& release, const nlohmann::json& plannedStatus,
              const std::string& promotedRelease, const std::string& promotedPackage,
              const std::string& now, int64_t nowUnix);

 private:
  StatusOr<std::optional<registry::Credentials>> credentials(const std::string& ns,
                                                             const std::string& secret,
                                                             const std::string& host);

  std::shared_ptr<kube::Client> client_;
  kube::EventSink& events_;
  std::shared_ptr<RegistryTagger> registry_;
  // status.registryTags as last written, by release UID: a pass planned from a
  // cache that has not seen that write yet plans from it instead (only this
  // class writes the field), so it neither re-records nor forgets a move.
  std::mutex mu_;
  std::map<std::string, nlohmann::json> written_;
};

}  // namespace lockstep::controllers
