// CertificateUpkeep: one round of keeping the serving certificate current,
// shared by every binary that serves admission. Self-managed mode renews the
// certificates when SelfManagedCertificates says so (and picks up a bundle
// another replica rotated); mounted mode reloads changed files.
// tick() returns how long to wait before the next round. The clocks are
// inputs. Thread-safety: one caller at a time (the upkeep loop).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

#include "webhooks/certs/cert_file_watcher.h"
#include "webhooks/certs/self_managed.h"

namespace lockstep::webhooks {

class CertificateUpkeep {
 public:
  // Rounds are at most this far apart in self-managed mode (the default of
  // --cert-check-interval): each round reads the Secret and the webhook
  // configuration, so a bundle rotated by another replica is served here, and
  // a configuration replaced with an empty caBundle is repaired, this soon.
  static constexpr std::chrono::seconds kDefaultCheckInterval{10};
  static constexpr std::chrono::seconds kFileWait{10};
  static constexpr std::chrono::seconds kRetryWait{10};

  explicit CertificateUpkeep(SelfManagedCertificates& selfManaged,
                             std::chrono::seconds checkInterval = kDefaultCheckInterval)
      : selfManaged_(&selfManaged),
        checkInterval_(std::max(checkInterval, std::chrono::seconds(1))) {}
  CertificateUpkeep(CertFileWatcher& watcher, std::string source)
      : watcher_(&watcher), source_(std::move(source)) {}

  // Logs what a self-managed round changed (renewal, caBundle repair, deferred swap).
  static void logResult(const SelfManagedCertificates::Result& result);

  // One round: renew or reload as needed, logging what changed or failed.
  std::chrono::seconds tick(std::chrono::system_clock::time_point wallNow,
                            std::chrono::steady_clock::time_point monotonicNow);

 private:
  SelfManagedCertificates* selfManaged_ = nullptr;
  std::chrono::seconds checkInterval_ = kDefaultCheckInterval;
  CertFileWatcher* watcher_ = nullptr;
  std::string source_;
};

}  // namespace lockstep::webhooks
