#include "webhooks/informer_lookups.h"

#include <string>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/serving_pod.h"
#include "operator/kube/resource.h"

namespace lockstep::webhooks {

RuntimeEnvView runtimeEnvView(const kube::Object& object) {
  // Only what admission reads, straight from the cached object (this runs for every pod).
  namespace decode = api::v1alpha1::decode;
  const nlohmann::json& meta = decode::object(object, "metadata");
  const nlohmann::json& status = decode::object(object, "status");
  RuntimeEnvView v;
  v.name = decode::string(meta, "name");
  v.ns = decode::string(meta, "namespace");
  v.closureHash = decode::string(status, "closureHash");
  v.image = decode::string(decode::object(object, "spec"), "image");
  v.ready = api::v1alpha1::readyForGeneration(decode::array(status, "conditions"),
                                              decode::integer(status, "observedGeneration", -1),
                                              decode::integer(meta, "generation", 0)) &&
            !v.closureHash.empty();
  v.currentRevision = decode::integer(status, "currentRevision", 0);
  const nlohmann::json& revisions = decode::array(status, "revisions");
  v.revisions.reserve(revisions.size());
  for (const nlohmann::json& r : revisions) {
    RevisionView rv;
    rv.number = decode::integer(r, "number", 0);
    if (rv.number <= 0) continue;
    rv.image = decode::string(r, "image");
    rv.closureHash = decode::string(r, "closureHash");
    for (const nlohmann::json& p : decode::array(r, "pinnedBy")) {
      if (p.is_string()) rv.pinnedBy.push_back(p.get<std::string>());
    }
    v.revisions.push_back(std::move(rv));
  }
  return v;
}

std::optional<RuntimeEnvView> InformerRuntimeEnvs::find(std::string_view ns,
                                                        std::string_view name) const {
  auto obj = cache_.get(std::string(ns), std::string(name));
  if (!obj) return std::nullopt;
  return runtimeEnvView(*obj);
}

namespace {

bool lockstepLabelled(const kube::Object& o, std::string_view model) {
  auto m = kube::label(o, api::v1alpha1::kModelLabel);
  auto by = kube::label(o, "app.kubernetes.io/managed-by");
  return m && *m == model && by && *by == "lockstep";
}

}  // namespace

std::optional<ModelProdView> InformerModelProds::prodOf(std::string_view ns,
                                                        std::string_view model) const {
  namespace v1 = api::v1alpha1;
  const std::string n(ns), m(model);
  auto modelObject = models_.get(n, m);
  if (!modelObject) return std::nullopt;
  const v1::Model record = v1::decodeModel(*modelObject);
  ModelProdView v;
  v.release = record.promoted();
  if (v.release.empty()) return std::nullopt;
  v.revision = record.status.revision;
  if (record.spec.port) v.port = *record.spec.port;
  if (auto svc = services_.get(n, m); v.port == 0 && svc && lockstepLabelled(*svc, model)) {
    const nlohmann::json& ports = v1::decode::array(v1::decode::object(*svc, "spec"), "ports");
    if (!ports.empty()) v.port = v1::decode::integer(ports.front(), "port", 0);
  }
  if (v.port == 0) {
    if (auto mr = releases_.get(n, v.release)) {
      const v1::ModelRelease r = v1::decodeModelRelease(*mr);
      if (const v1::Stage* stage = r.prodStage(); stage != nullptr && stage->serving)
        v.port = stage->serving->port;
    }
  }
  return v;
}

bool InformerAnalysisProviders::exists(std::string_view name) const {
  return cache_.get(std::string(name)) != nullptr;
}

std::optional<nlohmann::json> InformerAnalysisProviders::providerSpec(std::string_view name) const {
  auto obj = cache_.get(std::string(name));
  if (!obj) return std::nullopt;
  return api::v1alpha1::decode::object(*obj, "spec");
}

std::optional<nlohmann::json> InformerAnalysisProviders::templateSpec(std::string_view name) const {
  if (templates_ == nullptr) return std::nullopt;
  auto obj = templates_->get(std::string(name));
  if (!obj) return std::nullopt;
  return api::v1alpha1::decode::object(*obj, "spec");
}

namespace {

std::map<std::string, std::string> labelsOfObject(const kube::Object& o) {
  std::map<std::string, std::string> out;
  namespace decode = api::v1alpha1::decode;
  for (const auto& [k, v] : decode::object(decode::object(o, "metadata"), "labels").items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

}  // namespace

StatusOr<std::map<std::string, std::string>> InformerNamespaceLabels::labelsOf(
    std::string_view ns) const {
  if (auto obj = cache_.get(std::string(ns))) return labelsOfObject(*obj);
  if (!reader_)
    return unavailable("namespace " + std::string(ns) + " is not in the informer cache");
  StatusOr<kube::Object> read = reader_->get(kube::resources::kNamespaces, "", std::string(ns));
  if (!read.isOk()) return read.status();
  return labelsOfObject(*read);
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

StatusOr<kube::ObjectPtr> InformerServingObjects::find(std::string_view ns, std::string_view kind,
                                                       const std::string& name) const {
  const kube::Indexer* cache = nullptr;
  const kube::Resource* resource = nullptr;
  if (kind == "ReplicaSet") {
    cache = &replicaSets_;
    resource = &api::v1alpha1::kReplicaSets;
  } else if (kind == "Deployment") {
    cache = &deployments_;
    resource = &api::v1alpha1::kDeployments;
  } else if (kind == "Model") {
    cache = &models_;
    resource = &api::v1alpha1::kModels;
  } else {
    return kube::ObjectPtr();
  }
  if (kube::ObjectPtr cached = cache->get(std::string(ns), name)) return cached;
  // A ReplicaSet is new enough to miss, and so is a Deployment the operator has
  // just made (the first stable of a model at the handover, one healed after a
  // deletion): its ReplicaSet's first pod can come before the Deployment's watch
  // event. Only the Model stood long before (and the operator never gets one).
  if (!reader_ || kind == "Model") return kube::ObjectPtr();
  StatusOr<kube::Object> read = reader_->get(*resource, std::string(ns), name);
  if (read.isOk()) {
    kube::Object o = std::move(*read);
    if (kind == "ReplicaSet") api::v1alpha1::slimReplicaSet(o);
    return kube::ObjectPtr(std::make_shared<const kube::Object>(std::move(o)));
  }
  if (read.status().code() == Code::kNotFound) return kube::ObjectPtr();
  return read.status().withContext(std::string(kind) + " " + std::string(ns) + "/" + name +
                                   " is not in the informer cache; reading it from the API server");
}

}  // namespace lockstep::webhooks
