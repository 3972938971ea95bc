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

std::string describeBundleProblems(const CertBundle& b) {
  std::string out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : "; ") + what; };
  auto cert = [&](const char* key, const std::string& pem) {
    if (pem.empty()) {
      add(std::string(key) + " is missing");
      return false;
    }
    if (auto c = parseCertificate(pem); !c.isOk()) {
      add(std::string(key) + ": " + c.status().message());
      return false;
    }
    return true;
  };
  const bool caOk = cert("ca.crt", b.caCertPem);
  if (caOk) {
    if (b.caKeyPem.empty()) {
      add("ca.key is missing");
    } else if (Status s = checkKeyMatchesCert(b.caCertPem, b.caKeyPem); !s.isOk()) {
      add("ca.key: " + s.message());
    }
  }
  if (cert("tls.crt", b.certPem)) {
    if (b.keyPem.empty()) {
      add("tls.key is missing");
    } else if (Status s = checkKeyMatchesCert(b.certPem, b.keyPem); !s.isOk()) {
      add("tls.key: " + s.message());
    }
  }
  return out;
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

    // Publish trust first, then serve. Every round: the patcher reads the
    // configuration and writes only when its caBundle differs (repair after a
    // replace), so this costs one read when nothing changed.
    std::string caBundle = bundle.caCertPem;
    bool previousTrusted = false;
    if (!bundle.previousCaCertPem.empty()) {
      if (auto prev = parseCertificate(bundle.previousCaCertPem);
          prev.isOk() && prev->notAfter > now) {
        caBundle += bundle.previousCaCertPem;
        previousTrusted = true;
      }
    }
    StatusOr<bool> wrote = patcher_.patchCaBundle(caBundle);
    if (!wrote.isOk()) return wrote.status().withContext("patching caBundle");
    Result result;
    result.action = plan.action;
    result.reason = plan.reason;
    result.nextCheck = plan.renewCheck;
    result.caBundleRepaired = *wrote && caBundle == lastPatchedBundle_;
    lastPatchedBundle_ = caBundle;
    if (plan.action != CertAction::kKeep && loaded->has_value()) {
      result.storedProblems = describeBundleProblems(**loaded);
    }

    TlsCertificate serving{bundle.certPem, bundle.keyPem};
    if (applied_ && *applied_ == serving) {
      pendingCaPem_.clear();
    } else {
      // A certificate of another CA while ours is still valid and trusted:
      // serve it only once the API server had time to see the new caBundle.
      const bool otherCa = applied_.has_value() && appliedCaPem_ != bundle.caCertPem;
      const bool oursTrusted = previousTrusted && appliedCaPem_ == bundle.previousCaCertPem;
      if (otherCa && oursTrusted && appliedNotAfter_ > now) {
        if (pendingCaPem_ != bundle.caCertPem) {
          pendingCaPem_ = bundle.caCertPem;
          pendingCaSeenAt_ = now;
        }
        const SystemTime due = pendingCaSeenAt_ + options_.caPropagationDelay;
        if (now < due) {
          result.swapDeferredUntil = due;
          result.nextCheck = due;
          return result;
        }
      }
      StatusOr<CertInfo> servingInfo = parseCertificate(serving.certChainPem);
      if (!servingInfo.isOk()) return servingInfo.status().withContext("serving certificate");
      LOCKSTEP_RETURN_IF_ERROR(
          sink_.setCertificate(serving).withContext("installing serving certificate"));
      applied_ = serving;
      appliedCaPem_ = bundle.caCertPem;
      appliedNotAfter_ = servingInfo->notAfter;
      pendingCaPem_.clear();
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
