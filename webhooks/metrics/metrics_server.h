// MetricsServer: GET /metrics over HTTPS (TLS 1.2+), each request through the
// MetricsAuthFilter (TokenReview + SubjectAccessReview, metrics_auth.h).
// What lockstep-operator and lockstep-webhook-dev serve unless started with
// --metrics-secure=false (plain HTTP without authentication, for local use).
//
// It is a WebhookServer (the Beast server with its certificate upkeep) with one
// route, so it reuses the admission server's certificate machinery: with
// `certDir` it serves tls.crt/tls.key from there and reloads them when they
// change (cert-manager, a mounted Secret); without, it makes a self-signed CA
// and serving certificate in memory at start-up and renews them before they
// expire (SANs: localhost, 127.0.0.1, the Service's names and `ipAddresses`; scrapers
// then skip verification, as with controller-runtime's self-signed default).
// The handler blocks on the reviews (cached by token), on the server's own
// threads: a slow API server delays scrapes, never admission.
// Thread-safety: configure, then prepare() and start() from one thread; stop() from any.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "operator/kube/clock.h"
#include "operator/runtime/runnable.h"
#include "webhooks/certs/cert_file_watcher.h"
#include "webhooks/certs/in_memory_cert_store.h"
#include "webhooks/certs/self_managed.h"
#include "webhooks/metrics/metrics_auth.h"
#include "webhooks/webhook_server.h"

namespace lockstep::webhooks {

struct MetricsServerOptions {
  ServerOptions server;  // address, port (0 picks one), threads, limits
  std::string certDir;   // "" = self-signed in memory
  // SANs of the self-signed certificate besides localhost and 127.0.0.1: the
  // Service's DNS names (service, service.ns, service.ns.svc, ...) and IPs.
  std::string service;
  std::string ns;
  std::vector<std::string> ipAddresses;
  std::string portFile;  // written with the bound port once serving (tests)
};

// The /metrics handler: 200 with `scrape()` in Prometheus' text format, or the
// filter's refusal (401 with WWW-Authenticate semantics in the body, 403, 503).
RequestHandler metricsHandler(MetricsAuthFilter& filter, std::function<std::string()> scrape,
                              kube::Clock& clock);

class MetricsServer final : public runtime::Runnable {
 public:
  MetricsServer(MetricsServerOptions options, std::function<std::string()> scrape,
                MetricsAuthFilter& filter, kube::Clock& clock = kube::SystemClock::instance());
  ~MetricsServer() override;
  // Makes or loads the first certificate: call before start(); an error is a setup error.
  Status prepare();
  Status start() override;
  void stop() noexcept override;
  uint16_t port() const { return server_->port(); }
  uint16_t waitForPort(std::chrono::milliseconds timeout) const {
    return server_->waitForPort(timeout);
  }

 private:
  struct NoCaBundle final : CaBundlePatcher {
    StatusOr<bool> patchCaBundle(const std::string&) override { return false; }
  };

  MetricsServerOptions options_;
  kube::Clock& clock_;
  std::shared_ptr<WebhookServer> server_;
  InMemoryCertStore store_;
  NoCaBundle noCaBundle_;
  std::unique_ptr<SelfManagedCertificates> selfSigned_;
  std::unique_ptr<CertFileWatcher> watcher_;
};

}  // namespace lockstep::webhooks
