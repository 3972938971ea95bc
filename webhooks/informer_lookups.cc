#include "webhooks/informer_lookups.h"

#include <string>

#include "api/v1alpha1/runtime_env.h"
#include "operator/kube/resource.h"

namespace lockstep::webhooks {

RuntimeEnvView runtimeEnvView(const kube::Object& object) {
  const api::v1alpha1::RuntimeEnv rte = api::v1alpha1::decodeRuntimeEnv(object);
  return RuntimeEnvView{rte.meta.name, rte.meta.ns, rte.status.closureHash, rte.spec.image,
                        rte.ready()};
}

std::optional<RuntimeEnvView> InformerRuntimeEnvs::find(std::string_view ns,
                                                        std::string_view name) const {
  auto obj = cache_.get(std::string(ns), std::string(name));
  if (!obj) return std::nullopt;
  return runtimeEnvView(*obj);
}

StatusOr<NamespaceMode> InformerNamespaceModes::modeOf(std::string_view ns) const {
  // Namespaces are cluster-scoped: their cache key is the bare name.
  if (auto obj = cache_.get(std::string(ns))) {
    return parseNamespaceMode(kube::label(*obj, std::string(kEnforceLabel)));
  }
  if (!reader_) {
    return unavailable("namespace " + std::string(ns) +
                       " is not in the informer cache (and no API reader is configured)");
  }
  StatusOr<kube::Object> read = reader_->get(kube::resources::kNamespaces, "", std::string(ns));
  if (read.isOk()) return parseNamespaceMode(kube::label(*read, std::string(kEnforceLabel)));
  if (read.status().code() == Code::kNotFound) return NamespaceMode::kUnset;
  return read.status().withContext("namespace " + std::string(ns) +
                                   " is not in the informer cache; reading it from the API server");
}

}  // namespace lockstep::webhooks
