// cert-manager mode: the serving certificate is mounted from a Secret
// (tls.crt / tls.key). poll() re-reads the files when their mtime or size
// changed and hands a new, matching pair to the sink when the content hash
// changed. Kubernetes updates Secret volumes by an atomic symlink swap; a
// writer that replaces the two files one by one can leave a mismatched pair
// for a moment, which is reported and retried at the next poll.
// The clock is injected: poll(now) does the work only when `interval` has
// elapsed since the last check. Thread-safety: one caller at a time.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/status.h"
#include "webhooks/certs/tls_certificate.h"

namespace lockstep::webhooks {

class CertFileWatcher {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  CertFileWatcher(std::string certPath, std::string keyPath, CertificateSink& sink,
                  std::chrono::milliseconds interval = std::chrono::seconds(10))
      : certPath_(std::move(certPath)),
        keyPath_(std::move(keyPath)),
        sink_(sink),
        interval_(interval) {}

  // True when a new certificate was installed; false when not due or unchanged.
  // Errors: files missing/unreadable, PEM invalid, key not matching (the
  // server keeps its current certificate).
  StatusOr<bool> poll(TimePoint now);

  // Reads and installs now, regardless of the interval (use at startup).
  StatusOr<bool> reload();

 private:
  std::string certPath_;
  std::string keyPath_;
  CertificateSink& sink_;
  std::chrono::milliseconds interval_;
  std::optional<TimePoint> lastCheck_;
  std::string lastFingerprint_;  // mtimes and sizes of both files
  std::string lastHash_;         // SHA-256 of the installed content
};

}  // namespace lockstep::webhooks
