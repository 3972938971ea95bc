// Signing statements and pushing them to the registry as referrers of a
// package (docs/evidence.md), for every controller that publishes evidence
// (the evidence controller, the hub's ModelRollout controller): finds the
// SigningConfig that signs for a package, reads its key and registry
// credentials from Secrets in the operator's namespace, signs each statement
// into a Sigstore bundle and pushes it as an OCI 1.1 referrer (the tag schema
// where the registry lacks the referrers API). A statement already among the
// referrers (annotation dev.lockstep.statement-digest) is not pushed again.
// Thread-safety: every method may be called from several workers at once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/signing_config.h"
#include "controllers/evidence/evidence_plan.h"
#include "evidence/signer.h"
#include "operator/kube/client.h"
#include "operator/kube/indexer.h"
#include "operator/registry/credentials.h"
#include "operator/registry/distribution.h"

namespace lockstep::controllers {

// Annotations of a referrer manifest Lockstep pushes (beside cosign's own).
inline constexpr const char* kStatementDigestAnnotation = "dev.lockstep.statement-digest";
inline constexpr const char* kStatementNameAnnotation = "dev.lockstep.statement";

// Opens a registry client for a host (the production one: https, TLS 1.2+).
// `caPem`: the SigningConfig's registryCABundle ("" = the opener's default).
using RegistryOpener = std::function<StatusOr<std::unique_ptr<registry::RegistryClient>>(
    const std::string& host, const std::optional<registry::Credentials>& credentials,
    const std::string& caPem)>;

// Over registry::connectRegistry with the caller's CA, else `defaultCaPem` (the operator's
// --registry-ca-file), else the system roots.
RegistryOpener connectingOpener(std::string defaultCaPem);

class RegistryPublisher {
 public:
  // The key and credentials of one SigningConfig.
  struct Setup {
    std::shared_ptr<const evidence::Signer> signer;
    std::optional<registry::Credentials> credentials;
    std::string caPem;  // the SigningConfig's registryCABundle ("" = the opener's default)
  };

  // `signingConfigs`: the informer cache of SigningConfigs; Secrets are read
  // from `operatorNamespace` through `client`.
  RegistryPublisher(std::shared_ptr<kube::Client> client, const kube::Indexer& signingConfigs,
                    std::string operatorNamespace, RegistryOpener opener);

  // The config that signs for `packageName`, or nullopt; an error for a config
  // that matches but cannot be decoded.
  StatusOr<std::optional<api::v1alpha1::SigningConfigSpec>> configFor(
      const std::string& packageName) const;
  // The config's key (parsed once per Secret version) and credentials for `host`.
  StatusOr<Setup> setup(const api::v1alpha1::SigningConfigSpec& config, const std::string& host);
  // The registry credentials of `config` for `host` (nullopt: anonymous).
  StatusOr<std::optional<registry::Credentials>> credentials(
      const api::v1alpha1::SigningConfigSpec& config, const std::string& host);
  // Signs each of `due` and pushes it as a referrer of `package` (unless
  // already there): one outcome per statement, with its error.
  std::vector<EvidenceOutcome> publish(const std::vector<PlannedStatement>& due,
                                       const std::string& package, const Setup& setup,
                                       const std::string& now);
  const RegistryOpener& opener() const { return opener_; }

 private:
  std::shared_ptr<kube::Client> client_;
  const kube::Indexer& signingConfigs_;
  std::string operatorNamespace_;
  RegistryOpener opener_;
  std::mutex mu_;
  // Parsed keys by "secret name/resourceVersion/key": a key is parsed once per version.
  std::map<std::string, std::shared_ptr<const evidence::Signer>> signers_;
};

}  // namespace lockstep::controllers
