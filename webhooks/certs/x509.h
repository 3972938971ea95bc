// OpenSSL adapter for the webhook's certificates: generate a CA and a serving
// certificate (ECDSA P-256 or RSA 2048, SANs for the Service DNS names and IPs),
// and parse what a PEM certificate says (validity, SANs, CA flag, issuer).
// The clock is an input (`now`), so tests control validity windows.
// Thread-safety: pure functions over values; OpenSSL 3 is thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::webhooks {

using SystemTime = std::chrono::system_clock::time_point;

enum class KeyType { kEcdsaP256, kRsa2048 };

struct CertKeyPair {
  std::string certPem;
  std::string keyPem;  // PKCS#8, unencrypted: keep in memory or a Secret only
};

struct CaOptions {
  std::string commonName = "lockstep-webhook-ca";
  SystemTime now;
  std::chrono::seconds validity = std::chrono::hours(24 * 365 * 5);
  KeyType keyType = KeyType::kEcdsaP256;
};

struct ServingOptions {
  std::string commonName = "lockstep-webhook";
  std::vector<std::string> dnsNames;     // see serviceDnsNames()
  std::vector<std::string> ipAddresses;  // e.g. "127.0.0.1" for local runs
  SystemTime now;
  std::chrono::seconds validity = std::chrono::hours(24 * 90);
  KeyType keyType = KeyType::kEcdsaP256;
};

// Certificates are back-dated by this much to tolerate clock skew between
// this process and the API server.
inline constexpr std::chrono::minutes kBackdate{5};

// svc, svc.ns, svc.ns.svc, svc.ns.svc.cluster.local
std::vector<std::string> serviceDnsNames(std::string_view service, std::string_view ns);

StatusOr<CertKeyPair> generateCa(const CaOptions& options);
// Issues a serverAuth certificate signed by `ca`.
StatusOr<CertKeyPair> generateServingCert(const CertKeyPair& ca, const ServingOptions& options);

struct CertInfo {
  SystemTime notBefore;
  SystemTime notAfter;
  std::string commonName;
  std::vector<std::string> dnsNames;
  std::vector<std::string> ipAddresses;
  bool isCa = false;
};

// Reads the first certificate of a PEM text.
StatusOr<CertInfo> parseCertificate(std::string_view certPem);
// OK when the private key belongs to the (first) certificate.
Status checkKeyMatchesCert(std::string_view certPem, std::string_view keyPem);
// OK when `certPem` carries a valid signature by the CA certificate `caPem`.
Status checkIssuedBy(std::string_view certPem, std::string_view caPem);

}  // namespace lockstep::webhooks
