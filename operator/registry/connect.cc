#include "operator/registry/connect.h"

#include "operator/registry/beast_transport.h"

namespace lockstep::registry {

StatusOr<std::unique_ptr<RegistryClient>> connectRegistry(const std::string& host,
                                                          std::optional<Credentials> credentials,
                                                          const ConnectOptions& options) {
  if (!options.caPem.empty() &&
      options.caPem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return invalidArgument("registry " + host + ": the CA bundle holds no PEM certificate");
  }
  BeastTransportOptions bt;
  bt.caPem = options.caPem;
  bt.timeout = options.timeout;
  bt.maxResponseBytes = options.maxResponseBytes;
  TransportFactory factory =
      [bt](const std::string& origin) -> StatusOr<std::shared_ptr<HttpTransport>> {
    auto t = BeastTransport::create(origin, bt);
    if (!t.isOk()) return t.status();
    return std::shared_ptr<HttpTransport>(*t);
  };
  // Fail now on bad TLS material rather than at the first request.
  auto probe = factory("https://" + host);
  if (!probe.isOk()) return probe.status();
  return std::make_unique<RegistryClient>(host, std::move(credentials), std::move(factory));
}

}  // namespace lockstep::registry
