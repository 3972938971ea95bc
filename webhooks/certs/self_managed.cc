#include "webhooks/certs/self_managed.h"

#include <algorithm>

namespace lockstep::webhooks {

StoredCertFacts inspectBundle(const CertBundle& b) {
  StoredCertFacts f;
  if (auto ca = parseCertificate(b.caCertPem); ca.isOk()) {
    f.ca = *ca;
    f.caKeyMatches = checkKeyMatchesCert(b.caCertPem, b.caKeyPem).isOk();
  }
  if (auto s = parseCertificate(b.certPem); s.isOk()) {
    f.serving = *s;
    f.servingKeyMatches = checkKeyMatchesCert(b.certPem, b.keyPem).isOk();
    f.servingIssuedByCa = checkIssuedBy(b.certPem, b.caCertPem).isOk();
  }
  return f;
}

CertRequirements SelfManagedCertificates::requirements() const {
  CertRequirements r;
  r.dnsNames = serviceDnsNames(options_.service, options_.ns);
  r.dnsNames.insert(r.dnsNames.end(), options_.extraDnsNames.begin(), options_.extraDnsNames.end());
  r.ipAddresses = options_.ipAddresses;
  r.renewFraction = options_.renewFraction;
  return r;
}

StatusOr<SelfManagedCertificates::Result> SelfManagedCertificates::reconcile(SystemTime now) {
  const CertRequirements req = requirements();
  for (int attempt = 0;; ++attempt) {
    StatusOr<std::optional<CertBundle>> loaded = store_.load();
    if (!loaded.isOk()) return loaded.status().withContext("loading webhook certificates");
    std::optional<StoredCertFacts> facts;
    if (loaded->has_value()) facts = inspectBundle(**loaded);
    CertPlan plan = planCertificates(now, facts, req);

    CertBundle bundle = loaded->value_or(CertBundle{});
    bool caChanged = false;
    if (plan.action == CertAction::kIssueAll) {
      CaOptions caOpts;
      caOpts.now = now;
      caOpts.validity = options_.caValidity;
      caOpts.keyType = options_.keyType;
      StatusOr<CertKeyPair> ca = generateCa(caOpts);
      if (!ca.isOk()) return ca.status();
      // The old CA stays trusted while certificates it issued may be served.
      bundle.previousCaCertPem =
          (facts && facts->ca && facts->ca->isCa && facts->ca->notAfter > now) ? bundle.caCertPem
                                                                               : std::string();
      bundle.caCertPem = ca->certPem;
      bundle.caKeyPem = ca->keyPem;
      caChanged = true;
    }
    if (plan.action != CertAction::kKeep) {
      StatusOr<CertInfo> caInfo = parseCertificate(bundle.caCertPem);
      if (!caInfo.isOk()) return caInfo.status().withContext("CA");
      ServingOptions so;
      so.dnsNames = req.dnsNames;
      so.ipAddresses = req.ipAddresses;
      so.now = now;
      so.keyType = options_.keyType;
      // Never outlive the issuing CA.
      auto caLeft = std::chrono::duration_cast<std::chrono::seconds>(caInfo->notAfter - now);
      so.validity = std::min(options_.servingValidity, caLeft);
      StatusOr<CertKeyPair> serving = generateServingCert({bundle.caCertPem, bundle.caKeyPem}, so);
      if (!serving.isOk()) return serving.status();
      bundle.certPem = serving->certPem;
      bundle.keyPem = serving->keyPem;
      Status saved = store_.save(bundle);
      if (saved.code() == Code::kConflict && attempt == 0)
        continue;  // someone else renewed: use theirs
      if (!saved.isOk()) return saved.withContext("saving webhook certificates");
    }

    // Publish trust first, then serve.
    std::string caBundle = bundle.caCertPem;
    if (!bundle.previousCaCertPem.empty()) {
      if (auto prev = parseCertificate(bundle.previousCaCertPem);
          prev.isOk() && prev->notAfter > now) {
        caBundle += bundle.previousCaCertPem;
      }
    }
    if (caBundle != lastPatchedBundle_) {
      LOCKSTEP_RETURN_IF_ERROR(patcher_.patchCaBundle(caBundle).withContext("patching caBundle"));
      lastPatchedBundle_ = caBundle;
    }
    Result result{plan.action, plan.reason, plan.renewCheck};
    TlsCertificate serving{bundle.certPem, bundle.keyPem};
    bool oldStillGood =
        applied_.has_value() && facts && facts->serving && facts->serving->notAfter > now;
    if (caChanged && oldStillGood) {
      // Let the API server see the new caBundle before presenting the new chain.
      result.nextCheck = now + options_.caPropagationDelay;
      return result;
    }
    if (!applied_ || !(*applied_ == serving)) {
      LOCKSTEP_RETURN_IF_ERROR(
          sink_.setCertificate(serving).withContext("installing serving certificate"));
      applied_ = serving;
    }
    if (plan.action != CertAction::kKeep) {
      StoredCertFacts now2 = inspectBundle(bundle);
      result.nextCheck = std::min(
          renewAt(now2.ca->notBefore, now2.ca->notAfter, options_.renewFraction),
          renewAt(now2.serving->notBefore, now2.serving->notAfter, options_.renewFraction));
    }
    return result;
  }
}

}  // namespace lockstep::webhooks
