// The prod stage of a ModelRelease as writes (pure, docs/rollouts.md): the
// Model created or its canary slot claimed first (then planned again from
// the cache), else the canary planned (canary_observe.h -> canary_plan.h),
// the canary's end recorded on the Model (first: a guarded status write), the
// model's Service and both Deployments placed (the track that grows first),
// and the canary plan folded into the release's status (fold.h). A manual
// rollback (rollback_plan.h) becomes the same kind of writes: the Model
// records it, then stable takes the release and the canary goes to zero.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "common/status.h"
#include "controllers/common/plan.h"
#include "controllers/modelrelease/prod/canary_plan.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/prod_observed.h"
#include "controllers/modelrelease/release_plan.h"

namespace lockstep::controllers {

struct ProdPlan {
  std::vector<PlannedApply> writes;  // in order, before the release's own writes
  // Stop after `writes` (and `events`): no Jobs, no status. With stopError OK,
  // look again after stopRequeueSeconds (the Model moved: plan from the cache).
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
  // A manual rollback is counted once the Model write at this index is done.
  std::optional<size_t> rollbackRecordedAt;
  // After the status write: an error a retry cannot fix (kInvalidArgument: terminal).
  Status afterStatus;
  // Healing: a serving name is missing from the caches; read it (something
  // without Lockstep's labels may stand there), then plan again.
  bool needsNames = false;
};

// The Model's record is a trust root (docs/rollouts.md "The record is
// Lockstep's alone"): before stable runs the release the Model names as prod,
// that release is checked. The message for status and the Event; nullopt
// when it matches (or nothing else is prod).
std::optional<std::string> promotedMismatch(const api::v1alpha1::ModelRelease& release,
                                            const api::v1alpha1::Model& model,
                                            const ProdObserved& prod);

// The Service port belongs to the model (docs/rollouts.md "The Service port
// belongs to the model"): a release whose serving port differs from the
// Model's spec.port, or, while another release runs prod, from the port of
// the model's Service (no Service: prod's release's port), may not start its
// canary. The message for status and the Event; nullopt when it may.
std::optional<std::string> servicePortConflict(const api::v1alpha1::ModelRelease& release,
                                               const api::v1alpha1::CanarySpec& spec,
                                               const api::v1alpha1::Model& model,
                                               const ProdObserved& prod);

// The release `release` (its object `object`) as the Model records it: uid,
// package, pinned runtime pair (status.runtime, else the pair the pin rule
// names) and content digest (api/v1alpha1/model.h).
RecordedRelease recordedOf(const api::v1alpha1::ModelRelease& release, const kube::Object& object,
                           const ProdObserved& prod);

// `plan` is planRelease's with plan.prod set; it gets the canary folded in (or
// the stage failed as InvalidSpec). A track that carries its release but
// whose template drifted (serving_objects.h deploymentDrift) is applied again
// from that release, with a Warning Event kReasonProdRestored in plan.events.
ProdPlan planProd(const ReleaseObserved& observed, const api::v1alpha1::ModelRelease& release,
                  const kube::ObjectPtr& releaseObject, const ProdObserved& prod,
                  ReleasePlan& plan);

// `plan` is planRelease's with plan.modelRollback set; a rollback that cannot
// run (an invalid prod stage) is dropped from it with an InvalidSpec condition.
// Prod keeps the Model's replicas and GPU strategy; a surge rollback with no
// spare GPU for one pod re-templates stable as drain (one pod traded at a
// time; a Normal Event kReasonRollbackTradesPods says so).
ProdPlan planRollbackWrites(const ReleaseObserved& observed,
                            const api::v1alpha1::ModelRelease& release,
                            const kube::ObjectPtr& releaseObject, const ProdObserved& prod,
                            ReleasePlan& plan);

// Prod heals (docs/rollouts.md "Prod heals"): while no canary holds the slot,
// the release the Model records as prod (by uid), Promoted, keeps the
// model's stable Deployment and Service as Lockstep builds them from it, and
// the canary Deployment at 0 replicas. A Deployment deleted, scaled, or whose
// template no longer contains a field Lockstep sets (serving_objects.h
// deploymentDrift: a container's image, a template label or annotation, the
// package it mounts, a LOCKSTEP_* env var, args, a probe, ...), a canary
// Deployment scaled up, or a Service deleted or re-pointed (selector, port),
// is re-applied (scaled) with a Warning Event kReasonProdRestored naming what
// drifted; Degraded follows the Ready pods meanwhile (serving_health.h). A
// stable Deployment without drift but without its template hash gets it by a
// metadata-only patch (no Event, no restart). nullopt: nothing to heal, or
// this release is not prod's (a canary in flight owns the tracks: planProd
// puts an edited track back; a foreign object at a name is NameConflict's).
// Fields Lockstep does not set (e.g. an added env var) are not compared and
// stay.
// A record an earlier operator wrote without status.prod.stages gets them
// here, from this release object, when they hash to its content digest (a
// guarded Model status write first; docs/rollouts.md "Upgrading").
std::optional<ProdPlan> planProdHealing(const api::v1alpha1::ModelRelease& release,
                                        const kube::ObjectPtr& releaseObject,
                                        const ProdObserved& prod);

// Prod heals with its release object gone (a GitOps prune, kubectl delete):
// the Model's record (model_record.h recordedProdRelease) stands for it, and
// the stable Deployment and Service are built from it exactly as from the
// object, with the same drift rules and Events (the caller puts them on the
// Model; `prod` observed for the recorded release, whose object the caller
// found gone). nullopt: nothing to heal, a canary holds the slot, or nothing
// is recorded to rebuild from (the release's own message says so when a
// track needs it). Stages that do not hash to the recorded content digest
// are refused: no write, a Warning Event kReasonAnchorMismatch saying so.
std::optional<ProdPlan> planRecordedProdHealing(const ProdObserved& prod);

inline constexpr const char* kReasonProdRestored = "ProdRestored";
inline constexpr const char* kReasonRollbackTradesPods = "RollbackTradesPods";

}  // namespace lockstep::controllers
