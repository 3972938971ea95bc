// RegistryWorld: a real OCI registry (Debian's docker-registry) with TLS and
// Basic auth, started by tests/cluster/registry.sh in a private directory for
// one test binary and stopped when the object goes (or, should the binary
// crash, by the script's watcher of this process).
// Thread-safety: use from one test thread.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "operator/registry/distribution.h"

namespace lockstep::testing {

class RegistryWorld {
 public:
  // nullptr, with the script's output in `error`, when it does not start.
  // `kind`: "distribution" (Debian's docker-registry 2.8, no referrers API) or
  // "referrers" (go-containerregistry's, tests/cluster/build-evidence-tools.sh).
  static std::unique_ptr<RegistryWorld> start(std::string& error,
                                              const std::string& kind = "distribution");
  ~RegistryWorld();
  RegistryWorld(const RegistryWorld&) = delete;
  RegistryWorld& operator=(const RegistryWorld&) = delete;

  // A registry that is down (registry.sh stop), then back on the same port and data.
  Status stop();
  Status startAgain();

  // A client with the registry's credentials, trusting its CA (https, TLS 1.2+).
  StatusOr<std::unique_ptr<registry::RegistryClient>> client() const;

  const std::string& host() const { return host_; }  // 127.0.0.1:PORT
  const std::string& caFile() const { return caFile_; }
  std::string caPem() const;
  const std::string& username() const { return username_; }
  const std::string& password() const { return password_; }

 private:
  RegistryWorld() = default;
  std::string dir_, host_, caFile_, username_, password_;
};

// Pushes a small image by the OCI API through `client`: a config blob, one
// layer blob (both made from `salt`, so distinct salts give distinct images)
// and the manifest of `mediaType` (OCI or Docker v2), put by its digest.
// Returns the manifest digest.
StatusOr<std::string> pushTestImage(registry::RegistryClient& client, const std::string& repository,
                                    const std::string& salt,
                                    const std::string& mediaType = registry::kOciManifest);

}  // namespace lockstep::testing
