// When to renew webhook certificates: pure decisions over parsed certificate
// facts and the current time (an input, never read here).
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "webhooks/certs/x509.h"

namespace lockstep::webhooks {

// Renew after two thirds of the lifetime (cert-manager's default).
inline constexpr double kDefaultRenewFraction = 2.0 / 3.0;

// notBefore + fraction × (notAfter − notBefore); fraction is clamped to [0, 1].
SystemTime renewAt(SystemTime notBefore, SystemTime notAfter, double fraction);

// True once `now` reaches renewAt(), and also when the certificate is not yet
// valid (now < notBefore: a clock jump or a bad certificate).
bool shouldRotate(SystemTime now, SystemTime notBefore, SystemTime notAfter, double fraction);

// What is stored (e.g. in the Secret), already parsed by the caller.
struct StoredCertFacts {
  std::optional<CertInfo> ca;  // absent: missing or unparsable
  bool caKeyMatches = false;
  std::optional<CertInfo> serving;  // absent: missing or unparsable
  bool servingKeyMatches = false;
  bool servingIssuedByCa = false;
};

struct CertRequirements {
  std::vector<std::string> dnsNames;
  std::vector<std::string> ipAddresses;
  double renewFraction = kDefaultRenewFraction;
};

enum class CertAction {
  kKeep,          // stored certificates are good
  kIssueServing,  // keep the CA, issue a new serving certificate
  kIssueAll,      // new CA and serving certificate
};

struct CertPlan {
  CertAction action = CertAction::kKeep;
  std::string reason;     // for logs: "serving certificate reaches 2/3 of its lifetime"
  SystemTime renewCheck;  // kKeep: when to look again (earliest renewAt)
};

// nullopt `stored`: nothing stored yet.
CertPlan planCertificates(SystemTime now, const std::optional<StoredCertFacts>& stored,
                          const CertRequirements& required);

}  // namespace lockstep::webhooks
