// A RegistryClient over BeastTransport: https only, TLS 1.2+, the server's
// certificate verified against `caPem` (a private registry's CA bundle) or,
// when empty, the system roots. Thread-safety: see distribution.h.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "operator/registry/distribution.h"

namespace lockstep::registry {

struct ConnectOptions {
  std::string caPem;  // PEM bundle; empty: the system roots
  std::chrono::seconds timeout{30};
  size_t maxResponseBytes = size_t{8} << 20;  // the largest answer read (a blob, for the mirror)
};

// InvalidArgument when caPem holds no usable certificate.
StatusOr<std::unique_ptr<RegistryClient>> connectRegistry(const std::string& host,
                                                          std::optional<Credentials> credentials,
                                                          const ConnectOptions& options);

}  // namespace lockstep::registry
