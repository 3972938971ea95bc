#include "controllers/modelrelease/prod/ownership.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/serving_pod.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "operator/kube/views.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;

// "" when `o` is owned by `kind` `ownerName` with `ownerUid`; else why not
// ("" uid: no such owner exists).
std::string notOwnedBy(const kube::Object& o, const std::string& kind, const std::string& ownerName,
                       const std::string& ownerUid) {
  std::string other;
  for (const kube::OwnerReference& ref : kube::ownerReferences(o)) {
    if (ref.kind != kind || ref.name != ownerName) continue;
    if (!ownerUid.empty() && ref.uid == ownerUid) return "";
    other = ref.uid;
  }
  if (!other.empty()) {
    return "is owned by an earlier " + kind + " " + ownerName + " (uid " + other +
           "), not by the " + (kind == "Model" ? "model's Model" : "model's anchor") +
           (ownerUid.empty() ? "" : " (uid " + ownerUid + ")");
  }
  return "has no owner reference to the Model " + ownerName;
}

std::optional<NameConflict> checkServing(const kube::ObjectPtr& o, const std::string& kind,
                                         const std::string& model, const ProdObserved& p) {
  if (!o) return std::nullopt;
  std::string why = missingLockstepLabels(*o, model);
  if (why.empty()) {
    why = notOwnedBy(*o, "Model", model, p.model ? v1::decodeMeta(*p.model).uid : std::string());
    if (!why.empty() && ownedByLegacyAnchor(*o, p)) why.clear();
  }
  if (why.empty()) return std::nullopt;
  return NameConflict{kind, kube::name(*o), why};
}

v1::NamespacedLookup lookupIn(const ProdObserved& p, const std::string& model) {
  return [&p, model](std::string_view kind, const std::string& name) -> kube::ObjectPtr {
    if (kind == "ReplicaSet") {
      auto it = p.replicaSets.find(name);
      return it == p.replicaSets.end() ? nullptr : it->second;
    }
    if (kind == "Deployment") {
      if (name == servingDeploymentName(model, kTrackStable)) return p.stableDeployment;
      if (name == servingDeploymentName(model, kTrackCanary)) return p.canaryDeployment;
      return nullptr;
    }
    if (kind == "Model") return name == model ? p.model : nullptr;
    if (kind == "ConfigMap") return name == v1::modelAnchorName(model) ? p.legacyAnchor : nullptr;
    return nullptr;
  };
}

int64_t replicasAt(const kube::Object& o, const char* pointer) {
  const nlohmann::json::json_pointer at(pointer);
  return o.contains(at) && o.at(at).is_number_integer() ? o.at(at).get<int64_t>() : 0;
}

}  // namespace

std::vector<kube::ObjectPtr> servingPodsOf(const std::string& model, const ProdObserved& p,
                                           const std::vector<kube::ObjectPtr>& pods) {
  const v1::NamespacedLookup lookup = lookupIn(p, model);
  std::vector<kube::ObjectPtr> out;
  for (const kube::ObjectPtr& pod : pods) {
    const std::string track(kube::viewPod(*pod).meta.labels.get(v1::kTrackLabel));
    if (v1::countsAsServing(*pod, model, track, lookup)) out.push_back(pod);
  }
  return out;
}

bool servingLabelSelectable(const std::string& model, const ProdObserved& p) {
  for (const kube::ObjectPtr& d : {p.stableDeployment, p.canaryDeployment}) {
    // An unset spec.replicas counts as none here (the API server always sets it).
    if (d && kube::viewDeployment(*d).specReplicas.value_or(0) > 0 && !v1::templateServes(*d))
      return false;
  }
  for (const auto& [name, rs] : p.replicaSets) {
    const std::optional<kube::OwnerReference> owner = kube::controllerOf(*rs);
    if (!owner || owner->kind != "Deployment" ||
        (owner->name != servingDeploymentName(model, kTrackStable) &&
         owner->name != servingDeploymentName(model, kTrackCanary)))
      continue;
    const bool wantsPods =
        replicasAt(*rs, "/spec/replicas") > 0 || replicasAt(*rs, "/status/replicas") > 0;
    if (wantsPods && !v1::templateServes(*rs)) return false;
  }
  return true;
}

std::string NameConflict::message(const std::string& ns, const std::string& model) const {
  return kind + " " + ns + "/" + name + " " + why +
         ": it is not Lockstep's, so the prod stage of model " + model +
         " neither changes nor deletes it and nothing in prod moves. Rename or delete that " +
         kind +
         " (or give the model another name in a new ModelRelease); the release goes on "
         "once the name is free";
}

std::string missingLockstepLabels(const kube::Object& o, const std::string& model) {
  auto m = kube::label(o, v1::kModelLabel);
  if (!m) return "has no label " + std::string(v1::kModelLabel) + "=" + model;
  if (*m != model)
    return "has the label " + std::string(v1::kModelLabel) + "=" + *m + " (not " + model + ")";
  auto by = kube::label(o, kManagedByLabel);
  if (!by || *by != kManagedByLockstep)
    return "has no label " + std::string(kManagedByLabel) + "=" + kManagedByLockstep;
  return "";
}

bool ownedByLegacyAnchor(const kube::Object& o, const ProdObserved& p) {
  if (!p.legacyAnchor) return false;
  const std::string model = kube::label(*p.legacyAnchor, v1::kModelLabel).value_or("");
  if (model.empty() || !missingLockstepLabels(*p.legacyAnchor, model).empty()) return false;
  return notOwnedBy(o, "ConfigMap", v1::modelAnchorName(model), v1::decodeMeta(*p.legacyAnchor).uid)
      .empty();
}

std::optional<NameConflict> findNameConflict(const std::string& model, const ProdObserved& p,
                                             const std::string& startedModelUid) {
  if (p.model) {
    const std::string uid = v1::decodeMeta(*p.model).uid;
    if (!startedModelUid.empty() && uid != startedModelUid) {
      return NameConflict{"Model", kube::name(*p.model),
                          "is not the Model this release's canary started with (uid " +
                              startedModelUid + ", now " + uid +
                              "): it was deleted and re-created, and the model's prod history "
                              "with it"};
    }
  }
  if (auto c = checkServing(p.service, "Service", model, p)) return c;
  if (auto c = checkServing(p.stableDeployment, "Deployment", model, p)) return c;
  if (auto c = checkServing(p.canaryDeployment, "Deployment", model, p)) return c;
  return std::nullopt;
}

}  // namespace lockstep::controllers
