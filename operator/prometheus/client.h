// Prometheus instant queries for the canary analysis: `GET
// <address>/api/v1/query?query=...&time=...&timeout=...`, answered as one
// value or a classified error (query_result.h).
//
// HTTP goes through the project's one cpprestsdk adapter (kube::RestTransport:
// TLS 1.2+, certificates verified against `caFile` or the system roots, host
// name checked); this file only builds requests and reads answers, so unit
// tests drive it with a FakeTransport. Failures to reach Prometheus come back
// as QueryResult errors (kUnreachable, kTimeout), never as exceptions.
//
// Auth: an optional bearer token read from `bearerTokenFile` (or asked of
// `bearerToken`) on every query (so a rotated token is picked up), sent only
// over https. The token is a
// secret: it is put in a header and appears in no message.
// Thread-safety: a Client is safe for concurrent use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "operator/kube/request.h"
#include "operator/kube/transport.h"
#include "operator/prometheus/query_result.h"

namespace lockstep::prometheus {

struct ClientConfig {
  // "http://prometheus.monitoring:9090" or "https://host:9091/prefix"; no
  // credentials, query or fragment.
  std::string address;
  std::string bearerTokenFile;  // optional; https only
  // Optional, instead of the file: the token at the time of each query (an
  // AnalysisProvider's Secret, re-read by its controller); "" sends none. https only.
  std::function<std::string()> bearerToken;
  std::string caFile;  // optional PEM bundle; https only; empty: the system roots
  std::string caPem;   // optional PEM bundle in memory (instead of caFile); https only
  // Per query: sent to Prometheus as `timeout` (it stops evaluating then), and
  // the HTTP request is abandoned kTransportGrace later. Argo Rollouts' default.
  std::chrono::seconds timeout{30};
};

inline constexpr std::chrono::seconds kTransportGrace{2};

// `address` split for the transport: scheme://authority, and a path prefix
// without a trailing slash ("" or "/prefix").
struct Endpoint {
  std::string origin;
  std::string pathPrefix;
  bool https = false;
};

// InvalidArgument naming the address and what is wrong with it.
StatusOr<Endpoint> parseAddress(const std::string& address);

// Checks the whole config without reading files: address, timeout, and that a
// token or CA file is only given for https.
Status validateConfig(const ClientConfig& config);

// The request for one instant query; `atUnix` empty: Prometheus' current time.
kube::Request queryRequest(const Endpoint& endpoint, const std::string& promql,
                           std::optional<int64_t> atUnix, std::chrono::seconds timeout);

class Client {
 public:
  // Over the project's cpprestsdk adapter. InvalidArgument for a bad config or
  // an unreadable or invalid CA file (naming it).
  static StatusOr<std::unique_ptr<Client>> connect(const ClientConfig& config);
  // Over any transport (tests). Validates the config like connect().
  static StatusOr<std::unique_ptr<Client>> create(const ClientConfig& config,
                                                  std::shared_ptr<kube::Transport> transport);

  // One instant query at `atUnix` (seconds; empty: now). Never throws.
  QueryResult query(const std::string& promql, std::optional<int64_t> atUnix = std::nullopt) const;

  const std::string& address() const { return config_.address; }

 private:
  Client(ClientConfig config, Endpoint endpoint, std::shared_ptr<kube::Transport> transport);

  ClientConfig config_;
  Endpoint endpoint_;
  std::shared_ptr<kube::Transport> transport_;
};

}  // namespace lockstep::prometheus
