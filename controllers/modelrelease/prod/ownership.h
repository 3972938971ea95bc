// Whether the objects standing at a model's prod names are Lockstep's (pure,
// docs/rollouts.md "Objects and ownership"). The prod stage writes four
// names: the anchor ConfigMap `lockstep-model-<model>`, the Service `<model>`
// and the Deployments `<model>-stable` and `<model>-canary`. It never adopts,
// overwrites or deletes an object of one of those names that is not already
// its own:
//   - the anchor is Lockstep's when it carries the labels lockstep.dev/model=<model>
//     and app.kubernetes.io/managed-by=lockstep, and, once the release's canary
//     started, it is the very ConfigMap the canary started with (its uid,
//     status.canary.anchorUid): a re-created anchor lost the model's history;
//   - the Service and the Deployments are Lockstep's when they carry both labels
//     and an owner reference to the model's anchor ConfigMap with its uid.
// Anything else is a NameConflict: the release stops (Stalled) and prod is
// not touched until the object is gone.
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>

#include "controllers/modelrelease/prod/prod_observed.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByLockstep = "lockstep";

struct NameConflict {
  std::string kind;  // Service, Deployment, ConfigMap
  std::string name;
  std::string why;  // "has no label lockstep.dev/model=gpt2"
  // The whole sentence for status and the Event: the object, why it is not
  // Lockstep's and what to do.
  std::string message(const std::string& ns, const std::string& model) const;
};

// The labels Lockstep puts on every object it makes for `model`; "" when `o`
// carries them, else what is missing.
std::string missingLockstepLabels(const kube::Object& o, const std::string& model);

// The first object among the model's prod names (anchor, Service, stable,
// canary) that is not Lockstep's; nullopt when every one is absent or ours.
// `startedAnchorUid`: status.canary.anchorUid of the release ("" before its
// canary started).
std::optional<NameConflict> findNameConflict(const std::string& model, const ProdObserved& prod,
                                             const std::string& startedAnchorUid);

}  // namespace lockstep::controllers
