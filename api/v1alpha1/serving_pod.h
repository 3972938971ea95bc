// Which pods are a model's prod (docs/rollouts.md "Which pods are prod"): the
// one rule the ModelRelease controller counts Ready pods by and the pod
// webhook admits the serving label by. A pod is prod only when its owner
// chain leads to a Deployment the operator built for the model:
//   pod --controller--> ReplicaSet (that name and uid exist)
//       --controller--> Deployment <model>-stable or <model>-canary (that
//       name and uid exist, with Lockstep's labels)
//       --owner--> the Model <model> (that uid), or, until the migration
//       re-owns it, the anchor ConfigMap lockstep-model-<model> of an earlier
//       version (that uid).
// Labels can be copied and owner references written by anyone who creates a
// pod, so every link is checked against the object it names (its uid), never
// against the pod's own claims. A pod that forges the first link (an owner
// reference to the operator's ReplicaSet) is held off by the serving label:
// only a pod the ReplicaSet controller created may carry it (the webhook), and
// a pod of a ReplicaSet whose template carries it counts only with it.
// Thread-safety: pure functions over values.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "operator/kube/object.h"

namespace lockstep::api::v1alpha1 {

// An object of the pod's namespace by kind ("ReplicaSet", "Deployment",
// "Model", "ConfigMap") and name, as the caller's caches hold it; null: not
// known. A lookup may answer only some kinds.
using NamespacedLookup =
    std::function<kube::ObjectPtr(std::string_view kind, const std::string& name)>;

struct ServingOwner {
  std::string track;  // "stable" | "canary": the Deployment at the end of the chain
  std::string replicaSetName;
  kube::ObjectPtr replicaSet;  // the pod's ReplicaSet, when the chain holds
  // Empty when the chain holds, else why not: "its controller owner ReplicaSet
  // gpt2-stable-5d9 (uid …) does not exist".
  std::string why;
  bool ok() const { return why.empty(); }
};

// The chain of `pod` up to model `model`'s Model.
ServingOwner servingOwnerOf(const kube::Object& pod, const std::string& model,
                            const NamespacedLookup& lookup);

// The pod template of a ReplicaSet (or Deployment) carries the serving label.
bool templateServes(const kube::Object& replicaSetOrDeployment);

// Whether `pod` counts as one of model `model`'s serving pods on `track`:
// its chain holds and ends at that track's Deployment, its lockstep.dev/track
// label says the same, and it carries the serving label, or its ReplicaSet's
// template does not (a pod of a template an earlier version built).
bool countsAsServing(const kube::Object& pod, const std::string& model, const std::string& track,
                     const NamespacedLookup& lookup);

// What the serving rule reads of a ReplicaSet: metadata (name, namespace, uid,
// labels, owner references, generation) and the template's labels; spec.replicas
// and status.replicas. The informers of both sides apply it (a ReplicaSet holds
// a whole pod template).
void slimReplicaSet(kube::Object& replicaSet);

}  // namespace lockstep::api::v1alpha1
