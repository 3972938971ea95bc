// The canary's observation (pure): what planCanary (canary_plan.h) reads,
// derived from the release and the model's serving objects — spec and Ready
// counts per track, container restarts and unschedulable pods of the canary,
// pending stable pods, terminating pods, admission refusals the Deployment
// controller copied from the canary's ReplicaSet, the model's last
// known-good pair (and whether its runtime moved on), manual actions.
// Thread-safety: pure functions.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/prod/canary_plan.h"
#include "controllers/modelrelease/prod/prod_observed.h"

namespace lockstep::controllers {

// Ready pods of `release` on `track` among `pods` (JSON core/v1 Pods of the
// model). A pod is not counted while it is terminating; and each of the
// model's terminating pods hides one Ready pod of its node, the youngest (by
// creationTimestamp, then name): the replacement of a pod that still holds the
// node's GPU. The node's other Ready pods count.
int countReadyPods(const std::vector<nlohmann::json>& pods, const std::string& track,
                   const std::string& release);

// The release label of a Deployment's pod template; "" when none (or no Deployment).
std::string templateRelease(const kube::Object* deployment);
// A Deployment's spec.replicas (1 when unset); 0 when there is no Deployment.
int specReplicas(const kube::Object* deployment);

// A refusal (a ReplicaFailure the Deployment controller copied from a track's
// ReplicaSet) is the release's verdict only while that track's live template
// is the release's: `editedTracks` names the tracks whose template drifted
// from what the release builds (a hand edit the plan puts back this same
// reconcile; prod_plan.cc), and a Deployment whose status predates its spec
// (status.observedGeneration < generation: the put-back template not yet
// rolled) says nothing yet. Both are left out of admissionRefusals.
// The refusals of `deployment` as observeCanary reads them (before its
// editedTracks): each ReplicaFailure=True's "reason: message", none while its
// status predates its spec; none when there is no Deployment.
std::vector<std::string> admissionRefusalsOf(const kube::Object* deployment);

CanaryObserved observeCanary(const api::v1alpha1::ModelRelease& release,
                             const api::v1alpha1::CanarySpec& spec, const ProdObserved& prod,
                             const std::string& now, int64_t nowUnix,
                             const std::set<std::string>& editedTracks = {});

}  // namespace lockstep::controllers
