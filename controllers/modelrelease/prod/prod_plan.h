// The prod stage of a ModelRelease as writes (pure, docs/rollouts.md): the
// anchor created or its canary slot claimed first (then planned again from
// the cache), else the canary planned (canary_observe.h -> canary_plan.h),
// the model's Service and both Deployments placed (the track that grows
// first), the canary's end recorded on the anchor, and the canary plan folded
// into the release's status (fold.h). A manual rollback (rollback_plan.h)
// becomes the same kind of writes: stable takes the release, canary to zero,
// the anchor records it.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/model_release.h"
#include "common/status.h"
#include "controllers/common/plan.h"
#include "controllers/modelrelease/prod/canary_plan.h"
#include "controllers/modelrelease/prod/prod_observed.h"
#include "controllers/modelrelease/release_plan.h"

namespace lockstep::controllers {

struct ProdPlan {
  std::vector<PlannedApply> writes;  // in order, before the release's own writes
  // Stop after `writes` (and `events`): no Jobs, no status. With stopError OK,
  // look again after stopRequeueSeconds (the anchor moved: plan from the cache).
  bool stop = false;
  int64_t stopRequeueSeconds = 0;
  Status stopError;  // retried through resultFor (e.g. a release the stable track needs is gone)
  std::vector<ReleaseEvent> events;  // recorded when the plan stops
  // The one more observation this plan asks for: a measurement of this
  // analysis, then one plan again (ProdObserved::measurement).
  std::optional<PrometheusAnalysis> measure;
  // Which measurement it is (the answer's key with the release uid): the
  // canary step and the measurements already counted (count + errors).
  int measureStep = 0;
  int measureIndex = 0;
  std::optional<CanaryPlan> canary;  // the canary's decision (metrics)
  // A manual rollback is counted once the anchor write at this index is done.
  std::optional<size_t> rollbackRecordedAt;
  // After the status write: an error a retry cannot fix (kInvalidArgument: terminal).
  Status afterStatus;
};

// The anchor is a trust root (docs/rollouts.md "The anchor is Lockstep's
// alone"): before stable runs the release the anchor names as promoted, that
// release is checked. The message for status and the Event; nullopt when it
// matches (or nothing else is promoted).
std::optional<std::string> promotedMismatch(const api::v1alpha1::ModelRelease& release,
                                            const api::v1alpha1::ModelAnchor& anchor,
                                            const ProdObserved& prod);

// The Service port belongs to the model (docs/rollouts.md "The Service port
// belongs to the model"): while another release runs prod (the anchor's
// `promoted`), a release whose serving port differs from the port of the
// model's Service (no Service: the promoted release's port) may not start its
// canary. The message for status and the Event; nullopt when it may.
std::optional<std::string> servicePortConflict(const api::v1alpha1::ModelRelease& release,
                                               const api::v1alpha1::CanarySpec& spec,
                                               const api::v1alpha1::ModelAnchor& anchor,
                                               const ProdObserved& prod);

// `plan` is planRelease's with plan.prod set; it gets the canary folded in (or
// the stage failed as InvalidSpec).
ProdPlan planProd(const ReleaseObserved& observed, const api::v1alpha1::ModelRelease& release,
                  const kube::ObjectPtr& releaseObject, const ProdObserved& prod,
                  ReleasePlan& plan);

// `plan` is planRelease's with plan.modelRollback set; a rollback that cannot
// run (an invalid prod stage) is dropped from it with an InvalidSpec condition.
ProdPlan planRollbackWrites(const ReleaseObserved& observed,
                            const api::v1alpha1::ModelRelease& release,
                            const kube::ObjectPtr& releaseObject, const ProdObserved& prod,
                            ReleasePlan& plan);

}  // namespace lockstep::controllers
