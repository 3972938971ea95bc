#include "webhooks/informer_lookups.h"

#include <string>

namespace lockstep::webhooks {

RuntimeEnvView runtimeEnvView(const kube::Object& rte) {
  using nlohmann::json;
  RuntimeEnvView v;
  v.name = kube::name(rte);
  v.ns = kube::namespaceOf(rte);
  const json status = rte.value("status", json::object());
  v.closureHash = status.value("closureHash", "");
  v.image = rte.value("/spec/image"_json_pointer, std::string());
  const auto generation = rte.value("/metadata/generation"_json_pointer, int64_t{0});
  const auto observed = status.value("observedGeneration", int64_t{-1});
  bool ready = false;
  for (const auto& c : status.value("conditions", json::array())) {
    if (c.is_object() && c.value("type", "") == "Ready") ready = c.value("status", "") == "True";
  }
  v.ready = ready && observed == generation && !v.closureHash.empty();
  return v;
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
