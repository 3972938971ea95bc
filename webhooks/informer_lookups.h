// Admission lookups backed by the operator's informer caches: the webhook's
// decisions read memory, never the API server.
// Thread-safety: safe to call concurrently (the Indexer is internally locked).
// The one exception to "no API call": a namespace missing from the cache.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "operator/kube/client.h"
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
// A namespace missing from the cache (created a moment ago, e.g. by a GitOps
// sync together with its workloads) is never taken as unlabelled: it is read
// from the API server through `reader` (give it a short request deadline), and
// a namespace the API server does not know either is unlabelled. Without a
// reader, or when the read fails, modeOf() returns the error (the webhook
// answers 500 and failurePolicy decides: fail closed).
class InformerNamespaceModes final : public NamespaceModeLookup {
 public:
  explicit InformerNamespaceModes(const kube::Indexer& cache,
                                  std::shared_ptr<kube::Client> reader = nullptr)
      : cache_(cache), reader_(std::move(reader)) {}
  StatusOr<NamespaceMode> modeOf(std::string_view ns) const override;

 private:
  const kube::Indexer& cache_;
  std::shared_ptr<kube::Client> reader_;
};

// Models' prods from the operator's caches: the Model `<model>` names the
// release prod runs (status.prod); the port is the Model's spec.port, else the
// one of the model's Service (Lockstep's labels), else that release's serving port.
class InformerModelProds final : public ModelProdLookup {
 public:
  InformerModelProds(const kube::Indexer& models, const kube::Indexer& services,
                     const kube::Indexer& releases)
      : models_(models), services_(services), releases_(releases) {}
  std::optional<ModelProdView> prodOf(std::string_view ns, std::string_view model) const override;

 private:
  const kube::Indexer& models_;
  const kube::Indexer& services_;
  const kube::Indexer& releases_;
};

// AnalysisProviders (and AnalysisTemplates, when given) from informers'
// caches (cluster-scoped: key = name).
class InformerAnalysisProviders final : public AnalysisProviderLookup {
 public:
  explicit InformerAnalysisProviders(const kube::Indexer& cache,
                                     const kube::Indexer* templates = nullptr)
      : cache_(cache), templates_(templates) {}
  bool exists(std::string_view name) const override;
  std::optional<nlohmann::json> providerSpec(std::string_view name) const override;
  std::optional<nlohmann::json> templateSpec(std::string_view name) const override;

 private:
  const kube::Indexer& cache_;
  const kube::Indexer* templates_;
};

// Namespaces' labels from a Namespace informer; a namespace missing from the
// cache is read through `reader` (as InformerNamespaceModes does).
class InformerNamespaceLabels final : public NamespaceLabelLookup {
 public:
  explicit InformerNamespaceLabels(const kube::Indexer& cache,
                                   std::shared_ptr<kube::Client> reader = nullptr)
      : cache_(cache), reader_(std::move(reader)) {}
  StatusOr<std::map<std::string, std::string>> labelsOf(std::string_view ns) const override;

 private:
  const kube::Indexer& cache_;
  std::shared_ptr<kube::Client> reader_;
};

// The objects of serving pods' owner chains from the operator's caches:
// ReplicaSets and Deployments labelled lockstep.dev/model (ReplicaSets
// slimmed, api/v1alpha1/serving_pod.h) and Models. An object the cache has
// not seen yet (a ReplicaSet the Deployment controller created a moment
// before its first pod, or a Deployment the operator just made; not a Model)
// is read once through `reader` (a short deadline); NotFound there is "does not
// exist". Without a reader a miss is "does not exist".
class InformerServingObjects final : public ServingObjectLookup {
 public:
  InformerServingObjects(const kube::Indexer& replicaSets, const kube::Indexer& deployments,
                         const kube::Indexer& models,
                         std::shared_ptr<kube::Client> reader = nullptr)
      : replicaSets_(replicaSets),
        deployments_(deployments),
        models_(models),
        reader_(std::move(reader)) {}
  StatusOr<kube::ObjectPtr> find(std::string_view ns, std::string_view kind,
                                 const std::string& name) const override;

 private:
  const kube::Indexer& replicaSets_;
  const kube::Indexer& deployments_;
  const kube::Indexer& models_;
  std::shared_ptr<kube::Client> reader_;
};

// The view of one RuntimeEnv object (pure; exposed for tests).
RuntimeEnvView runtimeEnvView(const kube::Object& rte);

}  // namespace lockstep::webhooks
