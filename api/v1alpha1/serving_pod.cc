#include "api/v1alpha1/serving_pod.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_anchor.h"
#include "operator/kube/fields.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

std::string ref(const std::string& kind, const std::string& name, const std::string& uid) {
  return kind + " " + name + " (uid " + (uid.empty() ? std::string("none") : uid) + ")";
}

// "" when `o` exists and is `uid`; else why not.
std::string sameObject(const kube::ObjectPtr& o, const std::string& kind, const std::string& name,
                       const std::string& uid) {
  if (!o) return ref(kind, name, uid) + " does not exist";
  const std::string have = kube::uid(*o);
  if (have != uid)
    return ref(kind, name, uid) + " is not the " + kind + " of that name (uid " + have + ")";
  return "";
}

// "" when the Deployment is owned by the model's Model (or its legacy anchor), by uid.
std::string ownedByModel(const kube::Object& deployment, const std::string& model,
                         const NamespacedLookup& lookup) {
  const kube::ObjectPtr m = lookup("Model", model);
  const kube::ObjectPtr anchor = lookup("ConfigMap", modelAnchorName(model));
  for (const kube::OwnerReference& r : kube::ownerReferences(deployment)) {
    if (r.kind == "Model" && r.name == model && m && kube::uid(*m) == r.uid) return "";
    if (r.kind == "ConfigMap" && r.name == modelAnchorName(model) && anchor &&
        kube::uid(*anchor) == r.uid && kube::label(*anchor, kModelLabel) == model)
      return "";
  }
  return "Deployment " + kube::name(deployment) + " is not owned by the Model " + model +
         (m ? " (uid " + kube::uid(*m) + ")" : std::string(" (which does not exist)"));
}

}  // namespace

ServingOwner servingOwnerOf(const kube::Object& pod, const std::string& model,
                            const NamespacedLookup& lookup) {
  ServingOwner out;
  const std::optional<kube::OwnerReference> rsRef = kube::controllerOf(pod);
  if (!rsRef || rsRef->kind != "ReplicaSet" || rsRef->apiVersion != "apps/v1") {
    out.why = "it has no controller owner reference to a ReplicaSet";
    return out;
  }
  out.replicaSetName = rsRef->name;
  const kube::ObjectPtr rs = lookup("ReplicaSet", rsRef->name);
  if (std::string why = sameObject(rs, "ReplicaSet", rsRef->name, rsRef->uid); !why.empty()) {
    out.why = "its controller owner " + why;
    return out;
  }
  const std::optional<kube::OwnerReference> depRef = kube::controllerOf(*rs);
  std::string track;
  if (depRef && depRef->kind == "Deployment" && depRef->apiVersion == "apps/v1") {
    if (depRef->name == model + "-stable") track = "stable";
    if (depRef->name == model + "-canary") track = "canary";
  }
  if (track.empty()) {
    out.why = "its ReplicaSet " + rsRef->name + " is not owned by the Deployment " + model +
              "-stable or " + model + "-canary that Lockstep builds for model " + model;
    return out;
  }
  const kube::ObjectPtr dep = lookup("Deployment", depRef->name);
  if (std::string why = sameObject(dep, "Deployment", depRef->name, depRef->uid); !why.empty()) {
    out.why = "the owner of its ReplicaSet " + rsRef->name + ", " + why;
    return out;
  }
  if (kube::label(*dep, kModelLabel) != model ||
      kube::label(*dep, "app.kubernetes.io/managed-by") != "lockstep") {
    out.why = "Deployment " + depRef->name + " does not carry Lockstep's labels for model " + model;
    return out;
  }
  if (std::string why = ownedByModel(*dep, model, lookup); !why.empty()) {
    out.why = why;
    return out;
  }
  out.track = track;
  out.replicaSet = rs;
  return out;
}

bool templateServes(const kube::Object& o) {
  const json::json_pointer at("/spec/template/metadata/labels/lockstep.dev~1serving");
  return o.contains(at) && o.at(at) == kServingLabelValue;
}

bool countsAsServing(const kube::Object& pod, const std::string& model, const std::string& track,
                     const NamespacedLookup& lookup) {
  if (kube::label(pod, kTrackLabel) != track) return false;
  const ServingOwner owner = servingOwnerOf(pod, model, lookup);
  if (!owner.ok() || owner.track != track) return false;
  return kube::label(pod, kServingLabel) == kServingLabelValue ||
         !templateServes(*owner.replicaSet);
}

void slimReplicaSet(kube::Object& rs) {
  static const char* const kMeta[] = {"name",       "namespace",        "uid",
                                      "labels",     "ownerReferences",  "resourceVersion",
                                      "generation", "deletionTimestamp"};
  json meta = rs.contains("metadata") ? kube::takeFields(rs["metadata"], kMeta) : json::object();
  json slim = {{"apiVersion", rs.value("apiVersion", "apps/v1")},
               {"kind", rs.value("kind", "ReplicaSet")},
               {"metadata", std::move(meta)}};
  const json::json_pointer labels("/spec/template/metadata/labels");
  if (rs.contains(labels)) slim["spec"]["template"]["metadata"]["labels"] = rs.at(labels);
  const json::json_pointer replicas("/spec/replicas");
  if (rs.contains(replicas)) slim["spec"]["replicas"] = rs.at(replicas);
  const json::json_pointer statusReplicas("/status/replicas");
  if (rs.contains(statusReplicas)) slim["status"]["replicas"] = rs.at(statusReplicas);
  rs = std::move(slim);
}

}  // namespace lockstep::api::v1alpha1
