// HealthServer: /healthz (liveness) and /readyz (readiness) over plain HTTP on
// Boost.Beast, one I/O thread. A probe is 200 "ok" when every registered check
// passes, else 500 listing the failing checks; /healthz/<name> and
// /readyz/<name> probe one check. ?verbose lists every check.
// Thread-safety: add checks before start(); start()/stop() from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace lockstep::runtime {

using Check = std::function<Status()>;

class HealthServer {
 public:
  HealthServer();
  ~HealthServer();
  void addHealthCheck(const std::string& name, Check check);
  void addReadyCheck(const std::string& name, Check check);
  // Binds "host:port" (port 0 picks one) and serves on a background thread.
  Status start(const std::string& address);
  void stop();
  int port() const { return port_; }
  // Accept errors so far (each is retried after a back-off, common/accept_backoff.h).
  std::uint64_t acceptFailures() const { return acceptFailures_.load(); }

  // The response a path would get (status code, body): the server's logic without a socket.
  std::pair<int, std::string> handle(const std::string& target) const;

  struct Impl;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Check> health_;
  std::map<std::string, Check> ready_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::atomic<std::uint64_t> acceptFailures_{0};
};

}  // namespace lockstep::runtime
