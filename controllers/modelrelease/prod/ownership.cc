#include "controllers/modelrelease/prod/ownership.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_anchor.h"
#include "controllers/modelrelease/prod/serving_objects.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;

// "" when `o` is owned by the ConfigMap `anchorName` with `anchorUid`, else why not.
std::string notOwnedBy(const kube::Object& o, const std::string& anchorName,
                       const std::string& anchorUid) {
  std::string other;
  for (const kube::OwnerReference& ref : kube::ownerReferences(o)) {
    if (ref.kind != "ConfigMap" || ref.name != anchorName) continue;
    if (ref.uid == anchorUid) return "";
    other = ref.uid;
  }
  if (!other.empty()) {
    return "is owned by an earlier ConfigMap " + anchorName + " (uid " + other +
           "), not by the model's anchor" + (anchorUid.empty() ? "" : " (uid " + anchorUid + ")");
  }
  return "has no owner reference to the model's anchor ConfigMap " + anchorName;
}

std::optional<NameConflict> checkServing(const kube::ObjectPtr& o, const std::string& kind,
                                         const std::string& model, const kube::ObjectPtr& anchor) {
  if (!o) return std::nullopt;
  std::string why = missingLockstepLabels(*o, model);
  if (why.empty()) {
    why = notOwnedBy(*o, v1::modelAnchorName(model),
                     anchor ? v1::decodeMeta(*anchor).uid : std::string());
  }
  if (why.empty()) return std::nullopt;
  return NameConflict{kind, kube::name(*o), why};
}

}  // namespace

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

std::optional<NameConflict> findNameConflict(const std::string& model, const ProdObserved& p,
                                             const std::string& startedAnchorUid) {
  if (p.anchor) {
    std::string why = missingLockstepLabels(*p.anchor, model);
    const std::string uid = v1::decodeMeta(*p.anchor).uid;
    if (why.empty() && !startedAnchorUid.empty() && uid != startedAnchorUid) {
      why = "is not the anchor this release's canary started with (uid " + startedAnchorUid +
            ", now " + uid + "): it was deleted and re-created, and the model's prod history " +
            "with it";
    }
    if (!why.empty()) return NameConflict{"ConfigMap", kube::name(*p.anchor), why};
  }
  if (auto c = checkServing(p.service, "Service", model, p.anchor)) return c;
  if (auto c = checkServing(p.stableDeployment, "Deployment", model, p.anchor)) return c;
  if (auto c = checkServing(p.canaryDeployment, "Deployment", model, p.anchor)) return c;
  return std::nullopt;
}

}  // namespace lockstep::controllers
