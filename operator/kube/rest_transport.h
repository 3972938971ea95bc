// RestTransport: the Transport on cpprestsdk, and the only code that includes
// its headers. TLS 1.2+ with the kubeconfig's CA and client certificate from
// PEM in memory; the bearer token comes from a TokenSource per request.
//
// Two HTTP clients: one for ordinary calls (requestTimeout) and one for watch
// streams, whose timeout is cpprestsdk's idle timeout per I/O step and so
// must exceed the longest watch timeoutSeconds the reflector asks for
// (2 x minWatchTimeout = 600 s by default; watchIdleTimeout defaults to 660 s).
// Callers block on their own thread; continuations never block.
// Every connection has TCP keep-alive (RestOptions). cpprestsdk hands over the
// socket before connecting a new connection; when the server is an IP literal
// (in-cluster, kubeconfigs of local clusters) the socket is opened here with
// keep-alive and cpprestsdk connects it; with a host name, a connection gets
// keep-alive from its second request on (cpprestsdk pools connections).
// Thread-safety: safe for concurrent use; streams as documented in transport.h.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "operator/kube/clock.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/transport.h"

namespace lockstep::kube {

struct RestOptions {
  std::chrono::seconds requestTimeout{30};
  std::chrono::seconds watchIdleTimeout{660};
  // cpprestsdk's shared thread pool; sized once per process (the first transport wins).
  size_t threads = 4;
  std::string userAgent = "lockstep-operator/0.1";
  // TCP keep-alive on every connection to the API server (as client-go's dialer): an
  // idle connection is probed after keepAliveIdle, every keepAliveInterval, and given up
  // after keepAliveProbes unanswered probes, so a half-open watch fails in about
  // idle + interval x probes (60 s) instead of hanging. Zero idle: off.
  std::chrono::seconds keepAliveIdle{30};
  std::chrono::seconds keepAliveInterval{10};
  int keepAliveProbes = 3;
};

// Sets SO_KEEPALIVE and the probe timing of `options` on a socket; false on failure.
bool enableTcpKeepAlive(int fd, const RestOptions& options);

class RestTransport final : public Transport {
 public:
  // Fails with InvalidArgument when the CA, certificate or key cannot be loaded.
  static StatusOr<std::shared_ptr<RestTransport>> create(const KubeConfig& config,
                                                         const RestOptions& options = {},
                                                         Clock& clock = SystemClock::instance());
  ~RestTransport() override;

  StatusOr<Response> send(const Request& request) override;
  StatusOr<std::unique_ptr<LineStream>> openStream(const Request& request) override;

  struct Impl;

 private:
  explicit RestTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::kube
