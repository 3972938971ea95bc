// Whether prod serves a release (pure): the model's stable Deployment carries
// the release's template and N of its pods are Ready on the release's pair
// (its package and pinned closure hash). Used for the Ready of a release prod
// runs: a Promoted one (Ready follows the stable Deployment, Degraded when
// short of Ready pods) and a manual rollback's target (Ready only once stable
// has N Ready pods of it). While another release's canary holds the Model's
// slot, that canary's Ready pods count too: the canary moves prod's pods from
// stable to itself on purpose, keeping N Ready between them (the surge rule),
// so a Promoted release is short only when both tracks together are.
// docs/modelrelease.md "Conditions". Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The model's stable Deployment and pods, as the shell's caches hold them.
struct ServingObserved {
  std::string stableRelease;  // lockstep.dev/release of its template; "" when there is none
  int stableSpecReplicas = 0;
  int modelReplicas = 0;  // the Model's spec.replicas (prod's N for every release); 0: unset
  // The release whose canary holds the Model's slot (status.canary.release); "": none.
  std::string canaryRelease;
  // The model's serving pods (ownership.h servingPodsOf), the cached objects
  // themselves (never copied: a release in prod is reconciled on every pod event).
  std::vector<kube::ObjectPtr> pods;
};

struct ServingHealth {
  int want = 0;   // N: the Model's replicas, else the serving stage's
  int ready = 0;  // Ready, not terminating stable pods of the release on its pair
  // Ready, not terminating canary pods of the release holding the slot, when it
  // is another release (they count toward N: a canary shares prod).
  int canaryReady = 0;
  bool onRelease = false;  // the stable Deployment carries the release's template
  bool healthy() const { return onRelease && ready + canaryReady >= want; }
  // "1/3 stable pods Ready", or "the stable Deployment runs gpt2-v2" when not on the release;
  // while another release's canary shares prod, "3/3 pods Ready (stable, and the canary of
  // gpt2-v8)": the count capped at N, so a step that moves pods between the tracks
  // changes no word of it (and writes no status);
  // when short, "; stable pod <name>: runtime verification failed: <report>" for the first
  // stable pod whose onStart check failed (controllers/common/verify_containers.h).
  std::string message;
};

ServingHealth servingHealth(const api::v1alpha1::ModelRelease& release,
                            const ServingObserved& serving);

}  // namespace lockstep::controllers
