#include "webhooks/certs/cert_upkeep.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace lockstep::webhooks {

std::chrono::seconds CertificateUpkeep::tick(std::chrono::system_clock::time_point wallNow,
                                             std::chrono::steady_clock::time_point monotonicNow) {
  if (watcher_ != nullptr) {
    auto r = watcher_->poll(monotonicNow);
    if (!r.isOk()) {
      spdlog::warn("serving certificate reload from {}: {}", source_, r.status().toString());
    } else if (*r) {
      spdlog::info("serving certificate reloaded from {}", source_);
    }
    return kFileWait;
  }
  auto r = selfManaged_->reconcile(wallNow);
  if (!r.isOk()) {
    spdlog::warn("serving certificate renewal: {}", r.status().toString());
    return kRetryWait;
  }
  logResult(*r);
  auto untilNext = std::chrono::duration_cast<std::chrono::seconds>(r->nextCheck - wallNow);
  return std::clamp(untilNext, std::chrono::seconds(1), checkInterval_);
}

void CertificateUpkeep::logResult(const SelfManagedCertificates::Result& r) {
  if (!r.storedProblems.empty()) {
    spdlog::warn("stored webhook certificates are malformed ({}): re-issued ({})", r.storedProblems,
                 r.reason);
  } else if (r.action != CertAction::kKeep) {
    spdlog::info("serving certificate renewed: {}", r.reason);
  }
  if (r.caBundleRepaired) {
    spdlog::warn("webhook configuration caBundle was changed or emptied (replaced?): repaired");
  }
  if (r.swapDeferredUntil) {
    spdlog::info("serving certificate of a new CA: served once the caBundle has propagated");
  }
}

}  // namespace lockstep::webhooks
