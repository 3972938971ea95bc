// Whether the objects standing at a model's prod names are Lockstep's (pure,
// docs/rollouts.md "Objects and ownership"). The prod stage writes three
// names: the Service `<model>` and the Deployments `<model>-stable` and
// `<model>-canary`, all owned by the Model `<model>`. It never adopts,
// overwrites or deletes an object of one of those names that is not already
// its own:
//   - the Model is Lockstep's kind; once the release's canary started, it
//     must be the very Model it started with (its uid, status.canary.modelUid):
//     a re-created Model lost the model's history;
//   - the Service and the Deployments are Lockstep's when they carry both labels
//     and an owner reference to the Model with its uid (labels alone can be
//     copied), or, until the Model is built from it (model_record.h,
//     "Migration"), to the anchor ConfigMap of an earlier version with its uid.
// Anything else is a NameConflict: the release stops (Stalled) and prod is
// not touched until the object is gone.
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controllers/modelrelease/prod/prod_observed.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByLockstep = "lockstep";

struct NameConflict {
  std::string kind;  // Service, Deployment, Model
  std::string name;
  std::string why;  // "has no label lockstep.dev/model=gpt2"
  // The whole sentence for status and the Event: the object, why it is not
  // Lockstep's and what to do.
  std::string message(const std::string& ns, const std::string& model) const;
};

// The labels Lockstep puts on every object it makes for `model`; "" when `o`
// carries them, else what is missing.
std::string missingLockstepLabels(const kube::Object& o, const std::string& model);

// The first object among the model's prod names (Model, Service, stable,
// canary) that is not Lockstep's; nullopt when every one is absent or ours.
// `startedModelUid`: status.canary.modelUid of the release ("" before its
// canary started under a Model).
std::optional<NameConflict> findNameConflict(const std::string& model, const ProdObserved& prod,
                                             const std::string& startedModelUid);

// The pods of `pods` that are the model's serving pods (api/v1alpha1/serving_pod.h
// countsAsServing, on the track their label names), looked up in `prod`'s
// ReplicaSets, Deployments, Model and anchor: a hand-made pod with prod's
// labels is neither counted Ready nor looked at.
std::vector<kube::ObjectPtr> servingPodsOf(const std::string& model, const ProdObserved& prod,
                                           const std::vector<kube::ObjectPtr>& pods);

// Whether the model's Service may select on the serving label without taking
// traffic from a pod an earlier version built: each of the model's two
// Deployments that wants pods has the label in its template, and so has every
// ReplicaSet of theirs that has or wants pods.
bool servingLabelSelectable(const std::string& model, const ProdObserved& prod);

// Whether `o` is owned by the anchor ConfigMap `prod.legacyAnchor` and not yet
// by the Model (it is re-owned during the migration).
bool ownedByLegacyAnchor(const kube::Object& o, const ProdObserved& prod);

}  // namespace lockstep::controllers
