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
// The TLS context (the CA bundle or the system roots, parsed) is built once per
// distinct bundle in the process and shared by every transport: parsing the
// system roots took about a third of the operator's CPU when it read 10,000
// releases' packages (docs/benchmarks.md), once per request before. Like Go's
// system pool, a change of the system roots is seen after a restart.
// Thread-safety: safe for concurrent use (requests share only the configured,
// read-only TLS context; OpenSSL allows that).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "operator/registry/http.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

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

  // The TLS context this transport's requests use (transports with the same CA
  // bundle share one): for tests.
  const void* tlsContext() const { return ctx_.get(); }

 private:
  BeastTransport(std::string host, std::string port, BeastTransportOptions options,
                 std::shared_ptr<boost::asio::ssl::context> ctx)
      : host_(std::move(host)),
        port_(std::move(port)),
        options_(std::move(options)),
        ctx_(std::move(ctx)) {}
  std::string host_;
  std::string port_;
  BeastTransportOptions options_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;
};

}  // namespace lockstep::registry
