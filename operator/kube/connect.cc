#include "operator/kube/connect.h"

#include <sys/stat.h>

#include <cstdlib>

namespace lockstep::kube {

StatusOr<KubeConfig> resolveConfig(const ConnectOptions& options) {
  if (!options.kubeconfigPath.empty())
    return loadKubeConfig(options.kubeconfigPath, options.context);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first(env);
    // Only the first file of a KUBECONFIG list is read; merging is not supported.
    if (auto colon = first.find(':'); colon != std::string::npos) first = first.substr(0, colon);
    return loadKubeConfig(first, options.context);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host && *host) {
    return loadInClusterConfig();
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    std::string path = std::string(home) + "/.kube/config";
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return loadKubeConfig(path, options.context);
  }
  return invalidArgument(
      "no Kubernetes configuration: pass a kubeconfig, set KUBECONFIG, or run in a cluster");
}

StatusOr<std::shared_ptr<Client>> connect(const KubeConfig& config, const RestOptions& rest,
                                          const ClientOptions& client) {
  auto transport = RestTransport::create(config, rest);
  if (!transport.isOk()) return transport.status();
  return std::make_shared<Client>(*transport, client);
}

StatusOr<std::shared_ptr<Client>> connect(const ConnectOptions& options) {
  auto config = resolveConfig(options);
  if (!config.isOk()) return config.status();
  return connect(*config, options.rest, options.client);
}

}  // namespace lockstep::kube
