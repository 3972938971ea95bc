// The Model's own conditions (pure): whether prod serves what the Model
// records, from the objects prod is made of. The Model controller
// (model_controller.h) writes them; the ModelRelease controller writes the
// record itself (status.prod, canary, history) and keeps the conditions as
// they are. docs/rollouts.md "The Model's conditions".
//
//   Ready        True (Serving) when the record names a release, the Service
//                and the stable Deployment exist, stable's template runs the
//                recorded release on its pair (package, pinned closure hash),
//                and N pods on that pair are Ready (not terminating): the
//                Model's spec.replicas, else the recorded release's serving
//                replicas. While a canary holds the slot, N is the stable
//                Deployment's share (its spec.replicas). Otherwise False:
//                NoProd, ServiceMissing, StableMissing, StableNotOnProd,
//                StableNotReady.
//   Progressing  True while a release holds the canary slot (CanaryInFlight)
//                or the stable Deployment rolls (StableRollingOut: the
//                Deployment controller has not observed its generation, or
//                fewer pods than wanted run its template); else False (Stable).
//   Degraded     True when prod is recorded, not Ready, and nothing in flight
//                explains it (reason: Ready's); else False (AsRecorded, or
//                NoProd before the first promotion).
//
// While Progressing is True, the messages carry no live pod count (each
// Ready pod of a roll-out would be a write of the Model); the counts return
// once nothing is in flight ("2/2 pods of v1 Ready on its pair (…)").
//
// Which pods count: the model's serving pods (ownership.h servingPodsOf: the
// owner chain leads to the Model), Ready and not terminating, whose
// lockstep.dev/closure-hash and lockstep.dev/package annotations are the
// record's; on the stable track, and on the canary track too while no canary
// holds the slot (a promotion hands over from the canary's pods).
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "operator/kube/object.h"
#include "operator/kube/views.h"

namespace lockstep::controllers {

inline constexpr const char* kModelReasonServing = "Serving";
inline constexpr const char* kModelReasonNoProd = "NoProd";
inline constexpr const char* kModelReasonServiceMissing = "ServiceMissing";
inline constexpr const char* kModelReasonStableMissing = "StableMissing";
inline constexpr const char* kModelReasonStableNotOnProd = "StableNotOnProd";
inline constexpr const char* kModelReasonStableNotReady = "StableNotReady";
inline constexpr const char* kModelReasonCanaryInFlight = "CanaryInFlight";
inline constexpr const char* kModelReasonStableRollingOut = "StableRollingOut";
inline constexpr const char* kModelReasonStable = "Stable";
inline constexpr const char* kModelReasonAsRecorded = "AsRecorded";

// What the Model controller reads from its caches (shared with the
// ModelRelease controller's).
struct ModelObserved {
  kube::ObjectPtr model;  // the Model; never null
  kube::ObjectPtr service;
  kube::ObjectPtr stableDeployment;
  kube::ObjectPtr canaryDeployment;
  // The model's serving pods (servingPodsOf): a pod that merely carries the
  // model's labels is not among them.
  std::vector<kube::ObjectPtr> pods;
  int releases = 0;  // ModelReleases naming the model (spec.model)
};

struct ModelConditions {
  nlohmann::json conditions;  // the whole status.conditions array
  int64_t observedGeneration = 0;
  bool ready = false;
  int readyPods = 0;  // Ready pods on prod's pair
  int want = 0;       // N (0: no prod)
  // The conditions or observedGeneration differ from the Model's status
  // (lastTransitionTime kept when a status does not change): a write is due.
  bool changed = false;
};

// Whether the stable Deployment `d` rolls out (Progressing StableRollingOut):
// the Deployment controller has not observed its generation, or fewer pods
// than wanted run its template; not when Progressing says
// ProgressDeadlineExceeded (stuck: Degraded may say so).
bool stableRollingOut(const kube::DeploymentView& d);

// `now`: RFC 3339, the lastTransitionTime of a condition whose status changes.
ModelConditions planModelConditions(const ModelObserved& observed, const std::string& now);

// A rollback asked on Model `m` at its current revision (v1::modelRollbackAsk)
// that no release will act on: its named target, or the default
// (v1::previousProdRelease), is not a release of the model (`releaseOfModel`:
// the release by name, nullopt when there is none of this model), is what prod
// runs already, or is an object that never ran in prod
// (v1::takesRollbackRequests). Why, for one RollbackRefused Warning on the
// Model (the release that a request does reach reports in its own
// status.rollback); nullopt when none is asked or a release will answer it.
std::optional<std::string> unresolvableRollback(
    const api::v1alpha1::Model& m,
    const std::function<std::optional<api::v1alpha1::ModelRelease>(const std::string&)>&
        releaseOfModel);

}  // namespace lockstep::controllers
