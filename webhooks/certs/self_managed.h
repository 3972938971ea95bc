// Self-managed webhook certificates: a CA and a serving certificate kept in a
// store (a Secret in the cluster), the CA published as the caBundle of the
// operator's webhook configurations, renewed before expiry and swapped into
// the server in memory.
//
// CA rotation keeps the previous CA in the bundle (and in the caBundle) until it
// expires, and patches the caBundle *before* the server presents a certificate
// from the new CA; when the certificate being served is still valid and its CA
// is still trusted, the swap to a certificate of another CA is deferred by
// `caPropagationDelay` so the API server sees the new caBundle first. That
// holds for the replica that rotated and for every replica that finds the
// rotated bundle in the store.
//
// Every round re-asserts the caBundle through the patcher (which reads the
// configuration and writes only when it differs): a configuration replaced
// with an empty caBundle (reinstall, `kubectl replace`, Argo CD Replace=true)
// is repaired at the next round, not at the next restart.
// Thread-safety: reconcile() from one loop at a time; the interfaces' contracts
// below.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "webhooks/certs/rotation.h"
#include "webhooks/certs/tls_certificate.h"
#include "webhooks/certs/x509.h"

namespace lockstep::webhooks {

// What the store holds. Secret keys: ca.crt, ca.key, tls.crt, tls.key, ca-previous.crt.
struct CertBundle {
  std::string caCertPem;
  std::string caKeyPem;
  std::string certPem;
  std::string keyPem;
  std::string previousCaCertPem;  // kept in the caBundle until it expires
};

// Durable storage of the bundle (the lead backs it with a Secret through
// operator/kube). Implementations: thread-safe; no caching of stale reads.
class CertStore {
 public:
  virtual ~CertStore() = default;
  // nullopt when nothing is stored yet (Secret NotFound).
  virtual StatusOr<std::optional<CertBundle>> load() = 0;
  // Create or replace. Code::kConflict when another writer changed the stored
  // bundle since this store's last load() (optimistic concurrency on the
  // Secret's resourceVersion); the caller then reloads and uses theirs.
  virtual Status save(const CertBundle& bundle) = 0;
};

// Makes the operator's own webhook configuration carry the PEM CA bundle
// (every webhook's clientConfig.caBundle). Idempotent and cheap when nothing
// changed: reads first, writes only what differs. Returns true when it wrote.
class CaBundlePatcher {
 public:
  virtual ~CaBundlePatcher() = default;
  virtual StatusOr<bool> patchCaBundle(const std::string& caBundlePem) = 0;
};

struct SelfManagedOptions {
  std::string service = "lockstep-webhook";
  std::string ns = "lockstep-system";
  std::vector<std::string> extraDnsNames;
  std::vector<std::string> ipAddresses;  // "127.0.0.1" for local runs
  std::chrono::seconds caValidity = std::chrono::hours(24 * 365 * 5);
  std::chrono::seconds servingValidity = std::chrono::hours(24 * 90);
  double renewFraction = kDefaultRenewFraction;
  KeyType keyType = KeyType::kEcdsaP256;
  std::chrono::seconds caPropagationDelay{30};
};

class SelfManagedCertificates {
 public:
  SelfManagedCertificates(SelfManagedOptions options, CertStore& store, CaBundlePatcher& patcher,
                          CertificateSink& sink)
      : options_(std::move(options)), store_(store), patcher_(patcher), sink_(sink) {}

  struct Result {
    CertAction action = CertAction::kKeep;
    std::string reason;
    SystemTime nextCheck;  // call reconcile() again at or before this time
    // The configuration's caBundle differed from the bundle and was rewritten
    // although this process had written it before (replaced or edited since).
    bool caBundleRepaired = false;
    // A certificate of a new CA is in the store; its serving waits until this
    // time so the API server sees the new caBundle first.
    std::optional<SystemTime> swapDeferredUntil;
    // Re-issued because the stored bundle was malformed: what was wrong, by key.
    std::string storedProblems;
  };

  // Loads, plans, issues if needed, saves, patches the caBundle, swaps the
  // serving certificate. Errors leave the server on its current certificate.
  StatusOr<Result> reconcile(SystemTime now);

  // The DNS names and IPs the serving certificate must carry.
  CertRequirements requirements() const;

 private:
  SelfManagedOptions options_;
  CertStore& store_;
  CaBundlePatcher& patcher_;
  CertificateSink& sink_;
  std::string lastPatchedBundle_;
  std::optional<TlsCertificate> applied_;
  std::string appliedCaPem_;    // the CA that issued applied_
  SystemTime appliedNotAfter_;  // applied_'s expiry
  std::string pendingCaPem_;    // a new CA seen in the store, not served yet
  SystemTime pendingCaSeenAt_;  // when this process first saw it
};

// Parses a bundle into the facts planCertificates() needs.
StoredCertFacts inspectBundle(const CertBundle& bundle);

// What is malformed in a stored bundle, by Secret key ("ca.crt: ...; tls.key is
// missing"), for the log line of the renewal that replaces it; "" when the
// certificates parse and the keys match.
std::string describeBundleProblems(const CertBundle& bundle);

}  // namespace lockstep::webhooks
