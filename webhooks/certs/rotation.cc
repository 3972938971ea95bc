#include "webhooks/certs/rotation.h"

#include <algorithm>

namespace lockstep::webhooks {

SystemTime renewAt(SystemTime notBefore, SystemTime notAfter, double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  auto lifetime = notAfter - notBefore;
  if (lifetime.count() <= 0) return notBefore;
  auto offset = std::chrono::duration_cast<SystemTime::duration>(lifetime * fraction);
  return notBefore + offset;
}

bool shouldRotate(SystemTime now, SystemTime notBefore, SystemTime notAfter, double fraction) {
  if (now < notBefore) return true;
  return now >= renewAt(notBefore, notAfter, fraction);
}

namespace {

bool covers(const std::vector<std::string>& have, const std::vector<std::string>& want) {
  return std::all_of(want.begin(), want.end(), [&](const std::string& w) {
    return std::find(have.begin(), have.end(), w) != have.end();
  });
}

}  // namespace

CertPlan planCertificates(SystemTime now, const std::optional<StoredCertFacts>& stored,
                          const CertRequirements& req) {
  if (!stored) return {CertAction::kIssueAll, "no stored certificates", {}};
  if (!stored->ca || !stored->ca->isCa)
    return {CertAction::kIssueAll, "stored CA missing or not a CA", {}};
  if (!stored->caKeyMatches) return {CertAction::kIssueAll, "stored CA key does not match", {}};
  const CertInfo& ca = *stored->ca;
  if (shouldRotate(now, ca.notBefore, ca.notAfter, req.renewFraction)) {
    return {CertAction::kIssueAll, "CA reached its renewal time", {}};
  }
  if (!stored->serving) return {CertAction::kIssueServing, "serving certificate missing", {}};
  const CertInfo& s = *stored->serving;
  if (!stored->servingKeyMatches)
    return {CertAction::kIssueServing, "serving key does not match", {}};
  if (!stored->servingIssuedByCa)
    return {CertAction::kIssueServing, "serving certificate not issued by the CA", {}};
  if (!covers(s.dnsNames, req.dnsNames) || !covers(s.ipAddresses, req.ipAddresses)) {
    return {CertAction::kIssueServing, "serving certificate lacks required names", {}};
  }
  if (shouldRotate(now, s.notBefore, s.notAfter, req.renewFraction)) {
    return {CertAction::kIssueServing, "serving certificate reached its renewal time", {}};
  }
  SystemTime next = std::min(renewAt(ca.notBefore, ca.notAfter, req.renewFraction),
                             renewAt(s.notBefore, s.notAfter, req.renewFraction));
  return {CertAction::kKeep, "certificates valid", next};
}

}  // namespace lockstep::webhooks
