// BeastTransport: the registry client's HTTPS adapter on Boost.Beast, and the
// only registry code that includes it. One connection per request (a tagging
// pass makes a handful), TLS 1.2+, the server's certificate verified against
// `caPem` or the system roots and checked for the host name (or IP address).
// Every step (resolve, connect, handshake, write, read) has `timeout`.
//
// Why not the Kubernetes client's cpprestsdk adapter: its Response carries no
// headers, and the auth flow needs WWW-Authenticate, the upload Location and
// Docker-Content-Digest; Beast (already the webhook server's library) gives
// the exact bytes and every header without widening a header that most of
// the operator includes.
// Thread-safety: safe for concurrent use (no shared state between requests).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "operator/registry/http.h"

namespace lockstep::registry {

struct BeastTransportOptions {
  std::string caPem;  // PEM bundle; empty: the system roots
  std::chrono::seconds timeout{30};
  size_t maxResponseBytes = 8 << 20;  // manifests are small; a larger answer is an error
};

class BeastTransport final : public HttpTransport {
 public:
  // `origin`: "https://host[:port]". InvalidArgument for another scheme or a
  // CA bundle that does not load.
  static StatusOr<std::shared_ptr<BeastTransport>> create(const std::string& origin,
                                                          const BeastTransportOptions& options);

  StatusOr<HttpResponse> send(const HttpRequest& request) override;

 private:
  BeastTransport(std::string host, std::string port, BeastTransportOptions options)
      : host_(std::move(host)), port_(std::move(port)), options_(std::move(options)) {}
  std::string host_;
  std::string port_;
  BeastTransportOptions options_;
};

}  // namespace lockstep::registry
