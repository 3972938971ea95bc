// The Sigstore bundles attached to a subject as OCI 1.1 referrers (the evidence
// of docs/evidence.md), read through a RegistryClient: the referrers list (or
// its tag-schema fallback), then for each bundle referrer its manifest and its
// one layer, verified by digest. A referrer that cannot be read is kept with
// the reason, never dropped silently. Shared by `lockstep evidence` and the
// operator's evidence stages. Thread-safety: free functions; the client is the
// caller's.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/registry/distribution.h"
#include "operator/registry/referrers.h"

namespace lockstep::registry {

// A bundle is at most this large (a statement with its signature).
inline constexpr size_t kMaxBundleBytes = size_t{16} << 20;
// Annotations of the referrer manifests (cosign's and Lockstep's).
inline constexpr const char* kBundlePredicateAnnotation = "dev.sigstore.bundle.predicateType";
inline constexpr const char* kBundleStatementAnnotation = "dev.lockstep.statement";

struct BundleReferrer {
  Descriptor descriptor;
  std::string bundle;  // the layer's bytes ("" when not read)
  std::string error;   // why it could not be read
};

struct BundleReferrers {
  std::vector<BundleReferrer> referrers;
  bool viaTag = false;  // listed through the "sha256-<hex>" fallback tag
};

// Bundles already read, by their referrer manifest's digest: a referrer is
// content-addressed (its manifest is read by that digest and its layer by the
// digest the manifest names, both verified), so its bundle never changes and a
// reader that polls the same package (the evidence controller, the hub) reads
// only the list again. Bounded: past kMaxEntries it starts over.
// Thread-safety: every method may be called from several threads.
class BundleCache {
 public:
  static constexpr size_t kMaxEntries = 4096;
  std::optional<std::string> get(const std::string& manifestDigest) const;
  void put(const std::string& manifestDigest, const std::string& bundle);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> bundles_;
};

// The value of a descriptor's annotation, "" when absent.
std::string annotationOf(const Descriptor& d, const char* key);

// Every bundle referrer of `subjectDigest` in `repository`. An error only when
// the list itself cannot be read.
// With `cache`, a bundle read before is taken from it, and one read now is put there.
StatusOr<BundleReferrers> readBundleReferrers(RegistryClient& client, const std::string& repository,
                                              const std::string& subjectDigest,
                                              BundleCache* cache = nullptr);

}  // namespace lockstep::registry
