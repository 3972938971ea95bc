// PackageReader: the shell that reads what a release's package is before its
// first stage (docs/supply-chain.md "ModelPack packages"): the manifest by
// digest and, for a ModelPack model, its config blob, classified and parsed by
// api/v1alpha1/model_package.h. The answer goes to the planner
// (ReleaseObserved::package), which records a description in status.package
// and fails a release whose package is neither an image nor ModelPack.
//
// The admission webhook cannot do this within its budget (a registry round
// trip with the release's credentials, which it cannot read), so the refusal is
// the controller's, at the release's first reconcile, before any Job.
// A package the operator cannot read (registry down, no credentials, a
// registry.example reference in a test) is not refused: the kubelet pulls it
// with the pods' own credentials; status.package.message says why it was not
// read, and it is read again after kRetrySeconds.
//
// It runs on the reconcile worker, once per release before its first stage
// (a manifest GET and, for ModelPack, one blob GET, each bounded by 10 s).
// Answers are cached by namespace, repository and digest (content is
// immutable): a description or a refusal for good, a failure to read for
// kRetrySeconds. A registry that does not answer at all is not asked again for
// kRegistryDownSeconds, for any package: the releases of 10,000 models on one
// registry that never answers would otherwise hold the workers 10 s each.
// Thread-safety: PackageDescriber is safe for concurrent use.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_package.h"
#include "controllers/modelrelease/release_plan.h"
#include "operator/kube/client.h"
#include "operator/registry/credentials.h"
#include "operator/registry/reference.h"

namespace lockstep::controllers {

// Reads one package from its registry (the OCI registry in production).
class PackageReader {
 public:
  virtual ~PackageReader() = default;
  virtual PackageObserved read(const registry::PackageRef& package,
                               const std::optional<registry::Credentials>& creds) = 0;
};

// Over registry::connectRegistry: https, TLS 1.2+, certificates verified
// against `caPem` (--registry-ca-file) or the system roots; 10 s per request.
std::shared_ptr<PackageReader> makeRegistryPackageReader(std::string caPem);

class PackageDescriber {
 public:
  static constexpr int64_t kRetrySeconds = 300;
  static constexpr int64_t kRegistryDownSeconds = 30;

  PackageDescriber(std::shared_ptr<kube::Client> client, std::shared_ptr<PackageReader> reader);

  // The package of `release` when it is to be read now: not terminal, and
  // status.package does not describe spec.package's digest yet. nullopt:
  // nothing to read (or an unpinned reference, which the spec check refuses).
  std::optional<PackageObserved> describe(const nlohmann::json& release, int64_t nowUnix);

 private:
  struct Cached {
    PackageObserved answer;
    int64_t retryAt = 0;  // 0: for good
  };
  std::shared_ptr<kube::Client> client_;
  std::shared_ptr<PackageReader> reader_;
  std::mutex mu_;
  std::map<std::string, Cached> cache_;  // by "namespace/registry/repository@digest"
  struct Down {
    int64_t until = 0;
    std::string why;  // the failure that put it down
  };
  std::map<std::string, Down> down_;  // by registry host
};

}  // namespace lockstep::controllers
