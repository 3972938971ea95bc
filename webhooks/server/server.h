// The webhook HTTPS server interface: a route table of exact paths to
// synchronous handlers, TLS with an in-memory certificate that can be swapped
// at any time, and built-in /healthz and /readyz.
// Thread-safety: route() before start() only; everything else from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "webhooks/certs/tls_certificate.h"

namespace lockstep::webhooks {

struct HttpRequest {
  std::string method;         // "POST"
  std::string path;           // target without the query string
  std::string contentType;    // Content-Type header, may be empty
  std::string authorization;  // Authorization header, may be empty (the metrics filter)
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
};

// Runs on a server thread; must be quick and must not block on I/O.
using RequestHandler = std::function<HttpResponse(const HttpRequest&)>;

struct ServerOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 9443;  // 0 picks a free port; see Server::port()
  int threads = 2;
  // Larger bodies get 413 (Kubernetes objects are at most ~1.5 MiB in etcd).
  std::size_t maxBodyBytes = std::size_t{3} * 1024 * 1024;
  std::size_t maxHeaderBytes = std::size_t{16} * 1024;
  // Budget from the first byte of a request (or the TLS handshake) to the last
  // byte of its response; keep it well under the webhook's timeoutSeconds.
  std::chrono::milliseconds requestTimeout{2000};
  // How long a keep-alive connection may wait for the first byte of its next request.
  std::chrono::milliseconds idleTimeout{60000};
  // Budget for the TLS handshake of a new connection, and again from the first
  // byte of a request to the end of its header (Go's ReadHeaderTimeout): a
  // client that trickles its header is cut here, not at idleTimeout.
  std::chrono::milliseconds headerTimeout{2000};
  // Connections served at once; more wait in the listen backlog until one
  // closes (as Go's netutil.LimitListener). At least 1.
  int maxConnections = 512;
  // On stop(): how long requests in flight may take to finish (idle
  // connections close at once) before the rest are dropped.
  std::chrono::milliseconds drainTimeout{5000};
};

class Server : public CertificateSink {
 public:
  ~Server() override = default;
  // Exact-path route for one method. Other methods on the path answer 405,
  // unknown paths 404. /healthz and /readyz are built in.
  virtual void route(std::string path, std::string method, RequestHandler handler) = 0;
  // Binds, listens and starts the thread pool. kUnavailable if the address is taken.
  virtual Status start() = 0;
  // The bound port (after start()).
  virtual uint16_t port() const = 0;
  // Swaps the serving certificate: new TLS handshakes use it, connections
  // already established finish undisturbed. kInvalidArgument when the PEM is
  // unusable or the key does not match; the old certificate then stays.
  Status setCertificate(const TlsCertificate& cert) override = 0;
  // /readyz answers 200 only when ready (default true once started).
  virtual void setReady(bool ready) = 0;
  // Stops accepting, closes idle connections, lets requests in flight finish
  // (their responses say Connection: close) for up to drainTimeout, then drops
  // what is left and joins the threads. Idempotent.
  virtual void stop() = 0;
  // Connections open now, and accept errors so far (each retried after a
  // back-off, common/accept_backoff.h): for metrics, logs and tests.
  virtual std::size_t openConnections() const = 0;
  virtual std::uint64_t acceptFailures() const = 0;
};

}  // namespace lockstep::webhooks
