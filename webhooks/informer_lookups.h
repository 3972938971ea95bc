// Admission lookups backed by the operator's informer caches: the webhook's
// decisions read memory, never the API server.
// Thread-safety: safe to call concurrently (the Indexer is internally locked).
#pragma once

#include <optional>
#include <string_view>

#include "operator/kube/indexer.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

// RuntimeEnvs from an informer's cache. A RuntimeEnv whose status was computed
// for an older generation (status.observedGeneration != metadata.generation)
// is reported not ready: its closure hash may not describe the current spec.
class InformerRuntimeEnvs final : public RuntimeEnvLookup {
 public:
  explicit InformerRuntimeEnvs(const kube::Indexer& cache) : cache_(cache) {}
  std::optional<RuntimeEnvView> find(std::string_view ns, std::string_view name) const override;

 private:
  const kube::Indexer& cache_;
};

// Namespace modes from the lockstep.dev/enforce label in a Namespace informer.
class InformerNamespaceModes final : public NamespaceModeLookup {
 public:
  explicit InformerNamespaceModes(const kube::Indexer& cache) : cache_(cache) {}
  NamespaceMode modeOf(std::string_view ns) const override;

 private:
  const kube::Indexer& cache_;
};

// The view of one RuntimeEnv object (pure; exposed for tests).
RuntimeEnvView runtimeEnvView(const kube::Object& rte);

}  // namespace lockstep::webhooks
