#include "webhooks/informer_lookups.h"

#include <string>

#include "api/v1alpha1/runtime_env.h"

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

NamespaceMode InformerNamespaceModes::modeOf(std::string_view ns) const {
  // Namespaces are cluster-scoped: their cache key is the bare name.
  auto obj = cache_.get(std::string(ns));
  if (!obj) return NamespaceMode::kUnset;
  return parseNamespaceMode(kube::label(*obj, std::string(kEnforceLabel)));
}

}  // namespace lockstep::webhooks
