// connect(): the one call main() needs to get a Client, resolving the config
// the way controller-runtime does: an explicit kubeconfig path, else
// $KUBECONFIG, else in-cluster, else ~/.kube/config.
// Thread-safety: reentrant.
#pragma once

#include <memory>
#include <string>

#include "operator/kube/client.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/rest_transport.h"

namespace lockstep::kube {

struct ConnectOptions {
  std::string kubeconfigPath;  // "" = resolve as above
  std::string context;         // "" = current-context
  RestOptions rest;
  ClientOptions client;
};

// The config connect() would use, without opening anything.
StatusOr<KubeConfig> resolveConfig(const ConnectOptions& options);
StatusOr<std::shared_ptr<Client>> connect(const ConnectOptions& options = {});
// A client for an already loaded config.
StatusOr<std::shared_ptr<Client>> connect(const KubeConfig& config, const RestOptions& rest = {},
                                          const ClientOptions& client = {});

}  // namespace lockstep::kube
