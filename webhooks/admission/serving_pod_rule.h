// The serving label's admission rule (docs/security.md "Only Lockstep's pods
// are prod"): the model's Service selects on lockstep.dev/serving, so a pod
// may carry it only when the ReplicaSet of a Deployment Lockstep built for
// the model created it. On CREATE a pod with the label (any value) must
//  - name its model (label lockstep.dev/model),
//  - be created by the ReplicaSet controller (request.userInfo.username is one
//    of `replicaSetControllers`: anyone else may write any owner reference), and
//  - have the owner chain of api/v1alpha1/serving_pod.h: its controller
//    ReplicaSet exists with that uid, is owned by the Deployment
//    <model>-stable or <model>-canary that exists with that uid and carries
//    Lockstep's labels, which the Model <model> (that uid) owns.
// On UPDATE the label may be removed, never added or changed (the ReplicaSet
// controller never relabels a pod). Not governed by the namespace's runtime
// mode: the rule guards prod's traffic and Ready counts, not the runtime
// pair, so it refuses in every mode, off included. A refusal names the label,
// the pod and each reason. A lookup that fails answers 500 (failurePolicy).
// Thread-safety: pure function (the lookup's own contract aside).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "webhooks/admission/authorizer.h"
#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

// The user names the ReplicaSet controller creates pods as: its own
// ServiceAccount (kube-controller-manager --use-service-account-credentials,
// the default of kubeadm and most distributions) or the controller manager's
// identity.
inline const std::vector<std::string> kReplicaSetControllerUsers = {
    "system:serviceaccount:kube-system:replicaset-controller", "system:kube-controller-manager"};

struct ServingPodReview {
  Operation operation = Operation::kCreate;
  std::string ns;
  const nlohmann::json* pod = nullptr;     // request.object
  const nlohmann::json* oldPod = nullptr;  // request.oldObject (UPDATE)
  UserInfo user;                           // request.userInfo
  std::vector<std::string> replicaSetControllers = kReplicaSetControllerUsers;
  // The chain's objects; null: every pod with the label is refused (nothing can be proven).
  const ServingObjectLookup* objects = nullptr;
};

// Whether the write concerns the serving label: a CREATE of a pod carrying
// it, an UPDATE that adds or changes it.
bool servingLabelReviewed(const ServingPodReview& review);

// Allowed and not checked when !servingLabelReviewed; else allowed, denied
// (403 Forbidden) or kError (a lookup failed).
Verdict validateServingPod(const ServingPodReview& review);

}  // namespace lockstep::webhooks
