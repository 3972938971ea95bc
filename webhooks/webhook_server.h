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
  // Any other route (the metrics server serves GET /metrics this way).
  void route(std::string path, std::string method, RequestHandler handler) {
    routes_.push_back({std::move(path), std::move(method), std::move(handler)});
  }
  // What the server is called in its logs ("admission webhooks" unless set).
  void setName(std::string name) { name_ = std::move(name); }

  Status start() override;
  void stop() noexcept override;
  // The bound port once serving, else 0.
  uint16_t port() const;
  // Waits (up to `timeout`) until serving; the bound port, or 0 when not serving by then.
  uint16_t waitForPort(std::chrono::milliseconds timeout) const;

 private:
  struct Forward final : CertificateSink {
    mutable std::mutex mu;
    Server* server = nullptr;
    std::optional<TlsCertificate> latest;
    mutable std::condition_variable serving;  // notified when `server` is set
    Status setCertificate(const TlsCertificate& c) override;
  };

  ServerOptions options_;
  kube::Clock& clock_;
  Forward forward_;
  std::optional<CertificateUpkeep> upkeep_;
  std::string portFile_;
  std::vector<AdmissionWebhook*> webhooks_;
  struct Route {
    std::string path;
    std::string method;
    RequestHandler handler;
  };
  std::vector<Route> routes_;
  std::string name_ = "admission webhooks";
  std::unique_ptr<Server> server_;
  std::mutex stopMu_;
  std::condition_variable stopCv_;
  bool stopping_ = false;
};

}  // namespace lockstep::webhooks
