#include "webhooks/webhook_server.h"

#include <cstdio>
#include <fstream>

#include <spdlog/spdlog.h>

#include "webhooks/server/beast_server.h"
#include "webhooks/webhook_routes.h"

namespace lockstep::webhooks {

Status WebhookServer::Forward::setCertificate(const TlsCertificate& c) {
  std::lock_guard<std::mutex> lock(mu);
  latest = c;
  return server != nullptr ? server->setCertificate(c) : Status::ok();
}

WebhookServer::WebhookServer(ServerOptions options, kube::Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

WebhookServer::~WebhookServer() { stop(); }

bool WebhookServer::hasCertificate() const {
  std::lock_guard<std::mutex> lock(forward_.mu);
  return forward_.latest.has_value();
}

uint16_t WebhookServer::port() const {
  std::lock_guard<std::mutex> lock(forward_.mu);
  return forward_.server != nullptr ? forward_.server->port() : 0;
}

uint16_t WebhookServer::waitForPort(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(forward_.mu);
  forward_.serving.wait_for(lock, timeout, [this] { return forward_.server != nullptr; });
  return forward_.server != nullptr ? forward_.server->port() : 0;
}

Status WebhookServer::start() {
  TlsCertificate initial;
  {
    std::lock_guard<std::mutex> lock(forward_.mu);
    if (!forward_.latest) return Status(Code::kInternal, "webhook server: no certificate yet");
    initial = *forward_.latest;
  }
  auto made = makeBeastServer(options_, initial);
  if (!made.isOk()) return made.status().withContext(name_);
  server_ = std::move(made).value();
  for (AdmissionWebhook* w : webhooks_) mountWebhook(*server_, *w);
  for (const Route& r : routes_) server_->route(r.path, r.method, r.handler);
  if (Status s = server_->start(); !s.isOk()) return s;  // names the server and address
  {
    std::lock_guard<std::mutex> lock(forward_.mu);
    forward_.server = server_.get();
    forward_.serving.notify_all();
    // A certificate renewed while the server was being built.
    if (forward_.latest && !(*forward_.latest == initial)) {
      (void)server_->setCertificate(*forward_.latest);
    }
  }
  spdlog::info("{} serving on {}:{}", name_, options_.address, server_->port());
  if (!portFile_.empty()) {
    std::ofstream(portFile_ + ".tmp") << server_->port() << "\n";
    std::rename((portFile_ + ".tmp").c_str(), portFile_.c_str());
  }

  // Certificate upkeep: renew (self-managed) or reload changed files (mounted).
  {
    std::unique_lock<std::mutex> lock(stopMu_);
    kube::Clock::Duration wait = std::chrono::seconds(10);
    while (!stopping_) {
      const auto deadline = clock_.now() + wait;
      while (!stopping_ && clock_.now() < deadline) clock_.waitUntil(lock, stopCv_, deadline);
      if (stopping_) break;
      if (upkeep_) {
        lock.unlock();
        wait = upkeep_->tick(clock_.wallNow(), clock_.now());
        lock.lock();
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(forward_.mu);
    forward_.server = nullptr;
  }
  server_->stop();
  return Status::ok();
}

void WebhookServer::stop() noexcept {
  std::lock_guard<std::mutex> lock(stopMu_);
  stopping_ = true;
  stopCv_.notify_all();
}

}  // namespace lockstep::webhooks
