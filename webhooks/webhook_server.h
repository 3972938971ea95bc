// WebhookServer: the admission HTTPS server as a Runnable, with its
// certificate upkeep — what both lockstep-operator (added to the Manager, on
// every replica, once the caches synced) and lockstep-webhook-dev (run until
// a signal) serve. start() builds the Beast server with the latest
// certificate, mounts the webhooks, serves, writes the port file, then runs
// the upkeep rounds (renew or reload) until stop().
// Thread-safety: configure (mount, setUpkeep) before start(); stop() and the
// certificate sink from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/clock.h"
#include "operator/runtime/runnable.h"
#include "webhooks/admission/handler.h"
#include "webhooks/certs/cert_upkeep.h"
#include "webhooks/server/server.h"

namespace lockstep::webhooks {

class WebhookServer final : public runtime::Runnable {
 public:
  WebhookServer(ServerOptions options, kube::Clock& clock = kube::SystemClock::instance());
  ~WebhookServer() override;

  // Where certificate sources deliver: kept until the server exists, then forwarded.
  CertificateSink& certificates() { return forward_; }
  // The first certificate must have been delivered before start().
  bool hasCertificate() const;
  void setUpkeep(CertificateUpkeep upkeep) { upkeep_.emplace(std::move(upkeep)); }
  // Written (atomically, by rename) with the bound port once serving; for tests.
  void setPortFile(std::string path) { portFile_ = std::move(path); }
  void mount(AdmissionWebhook& webhook) { webhooks_.push_back(&webhook); }

  Status start() override;
  void stop() noexcept override;
  // The bound port once serving, else 0.
  uint16_t port() const;

 private:
  struct Forward final : CertificateSink {
    mutable std::mutex mu;
    Server* server = nullptr;
    std::optional<TlsCertificate> latest;
    Status setCertificate(const TlsCertificate& c) override;
  };

  ServerOptions options_;
  kube::Clock& clock_;
  Forward forward_;
  std::optional<CertificateUpkeep> upkeep_;
  std::string portFile_;
  std::vector<AdmissionWebhook*> webhooks_;
  std::unique_ptr<Server> server_;
  std::mutex stopMu_;
  std::condition_variable stopCv_;
  bool stopping_ = false;
};

}  // namespace lockstep::webhooks
