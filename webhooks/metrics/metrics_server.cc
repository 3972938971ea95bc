#include "webhooks/metrics/metrics_server.h"

#include <spdlog/spdlog.h>

#include "webhooks/certs/cert_upkeep.h"

namespace lockstep::webhooks {

RequestHandler metricsHandler(MetricsAuthFilter& filter, std::function<std::string()> scrape,
                              kube::Clock& clock) {
  return [&filter, scrape = std::move(scrape), &clock](const HttpRequest& req) -> HttpResponse {
    MetricsAuthVerdict v = filter.check(req.authorization, req.path, clock.now());
    if (v.status != 200) {
      spdlog::debug("metrics: {} refused {}: {}", req.path, v.status, v.message);
      return {v.status, "text/plain; charset=utf-8", v.message};
    }
    return {200, "text/plain; version=0.0.4; charset=utf-8", scrape()};
  };
}

MetricsServer::MetricsServer(MetricsServerOptions options, std::function<std::string()> scrape,
                             MetricsAuthFilter& filter, kube::Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      server_(std::make_shared<WebhookServer>(options_.server, clock)) {
  server_->setName("metrics (HTTPS, TokenReview + SubjectAccessReview)");
  server_->setPortFile(options_.portFile);
  server_->route("/metrics", "GET", metricsHandler(filter, std::move(scrape), clock_));
}

MetricsServer::~MetricsServer() { stop(); }

Status MetricsServer::prepare() {
  if (!options_.certDir.empty()) {
    const std::string& dir = options_.certDir;
    watcher_ = std::make_unique<CertFileWatcher>(dir + "/tls.crt", dir + "/tls.key",
                                                 server_->certificates());
    auto r = watcher_->poll(clock_.now());
    if (!r.isOk()) return r.status().withContext("metrics certificate from " + dir);
    server_->setUpkeep(CertificateUpkeep(*watcher_, dir));
    return Status::ok();
  }
  SelfManagedOptions so;
  so.service = options_.service.empty() ? "localhost" : options_.service;
  so.ns = options_.ns.empty() ? "default" : options_.ns;
  so.extraDnsNames = {"localhost"};
  so.ipAddresses = options_.ipAddresses;
  so.ipAddresses.emplace_back("127.0.0.1");
  so.caPropagationDelay = std::chrono::seconds(0);  // nobody else trusts this CA
  selfSigned_ =
      std::make_unique<SelfManagedCertificates>(so, store_, noCaBundle_, server_->certificates());
  auto r = selfSigned_->reconcile(clock_.wallNow());
  if (!r.isOk()) return r.status().withContext("self-signed metrics certificate");
  server_->setUpkeep(CertificateUpkeep(*selfSigned_));
  return Status::ok();
}

Status MetricsServer::start() {
  if (!server_->hasCertificate()) LOCKSTEP_RETURN_IF_ERROR(prepare());
  return server_->start();
}

void MetricsServer::stop() noexcept { server_->stop(); }

}  // namespace lockstep::webhooks
