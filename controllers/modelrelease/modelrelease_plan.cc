#include "controllers/modelrelease/modelrelease_plan.h"

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/resources.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/ownership.h"
#include "controllers/modelrelease/release_status.h"
#include "controllers/modelrelease/timestamps.h"
#include "operator/kube/conditions.h"
#include "operator/kube/event_sink.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

namespace {

using nlohmann::json;

// The merge patch that sets the release's finalizers to `finalizers`, guarded
// by the resourceVersion it was planned from (a JSON merge patch replaces the list).
PlannedApply finalizersPatch(const v1::ModelRelease& r, const kube::Object& release,
                             const std::vector<std::string>& finalizers, std::string what) {
  json patch = {
      {"metadata",
       {{"finalizers", finalizers}, {"resourceVersion", kube::resourceVersion(release)}}}};
  PlannedApply p = plannedMergePatch(v1::kModelReleases, r.meta.ns, r.meta.name, std::move(patch),
                                     std::move(what));
  p.ignoreNotFound = true;
  return p;
}

PlannedApply removeFinalizer(const v1::ModelRelease& r, const kube::Object& release) {
  std::vector<std::string> kept = kube::finalizers(release);
  std::erase(kept, std::string(v1::kReleaseCleanupFinalizer));
  return finalizersPatch(r, release, kept,
                         "removing the finalizer " + std::string(v1::kReleaseCleanupFinalizer) +
                             " of ModelRelease " + r.meta.name);
}

bool deleting(const kube::ObjectPtr& o) { return o && kube::isBeingDeleted(*o); }

// Whether the deleted release still has something in prod to undo, and prod
// is there to undo it in: it holds the canary slot or its canary Deployment
// still has replicas, and the Model and Deployments are neither gone nor
// being deleted (a namespace or `lockstep model delete` takes them all).
bool prodCleanupNeeded(const v1::ModelRelease& r, const ProdObserved& p) {
  if (!p.model || deleting(p.model) || deleting(p.stableDeployment) || deleting(p.canaryDeployment))
    return false;
  if (findNameConflict(r.spec.model, p, "")) return false;  // prod was never ours to move
  const bool holdsSlot = v1::decodeModel(*p.model).canaryHolder() == r.meta.name;
  const bool ownCanary = templateRelease(p.canaryDeployment.get()) == r.meta.name &&
                         specReplicas(p.canaryDeployment.get()) > 0;
  return holdsSlot || ownCanary;
}

// The Warning Event of a deletion past its deadline, when it is past it.
std::optional<PlannedEvent> pastDeletionDeadline(const ModelReleaseObserved& o,
                                                 const v1::ModelRelease& r) {
  const std::string at =
      v1::decode::string(v1::decode::object(*o.release, "metadata"), "deletionTimestamp");
  const std::optional<int64_t> since = parseRfc3339(at);
  if (!since || o.gates.nowUnix - *since < o.deletionDeadlineSeconds) return std::nullopt;
  return PlannedEvent{
      o.release, "Warning", kReasonReleaseDeletionDeadline,
      "the rollback of release " + r.meta.name + "'s canary to the known-good did not finish " +
          "within " + std::to_string(o.deletionDeadlineSeconds) + "s of its deletion (" + at +
          "): the finalizer " + v1::kReleaseCleanupFinalizer +
          " is removed and the canary slot freed; Deployment " + r.spec.model +
          "-canary may still run its pods: roll the model back (lockstep model rollback) or "
          "scale it to 0"};
}

// A release being deleted (it carries the finalizer; the shell observes no
// other deleted release): its canary is rolled back first, as on an abort
// (prod/canary_plan.h, reason ReleaseDeleted), then the finalizer goes; past
// the deletion deadline it goes anyway, with a Warning Event. A release with
// nothing in prod (never reached it, Promoted, RolledBack, Superseded) goes at
// once: deleting a Promoted release never takes prod down.
std::optional<ModelReleasePlan> planDeletion(const ModelReleaseObserved& o,
                                             const v1::ModelRelease& r) {
  if (!kube::isBeingDeleted(*o.release)) return std::nullopt;
  if (!kube::hasFinalizer(*o.release, v1::kReleaseCleanupFinalizer)) return ModelReleasePlan{};
  if (!r.spec.model.empty() && prodCleanupNeeded(r, o.prod)) {
    std::optional<PlannedEvent> late = pastDeletionDeadline(o, r);
    ReleasePlan probe = planRelease(o.gates);
    // The canary rolls back through the prod stage.
    if (probe.prod && !late) return std::nullopt;
    // Holding the slot without a canary to run (e.g. it failed after
    // claiming it), or a rollback past the deadline: free the slot, then go.
    ModelReleasePlan out;
    if (late) out.execution.events.push_back(std::move(*late));
    if (v1::decodeModel(*o.prod.model).canaryHolder() == r.meta.name) {
      out.execution.apply.push_back(claimCanary(*o.prod.model, std::nullopt, o.gates.now));
    }
    out.execution.apply.push_back(removeFinalizer(r, *o.release));
    return out;
  }
  ModelReleasePlan out;
  out.execution.apply.push_back(removeFinalizer(r, *o.release));
  return out;
}

ModelReleasePlan stopAfter(std::vector<PlannedApply> writes) {
  ModelReleasePlan out;
  out.execution.apply = std::move(writes);
  out.stop = true;
  out.stopRequeueSeconds = 1;
  return out;
}

// Migration from the anchor ConfigMap of an earlier version (model_record.h):
// the Model created, its status built from the anchor, the serving objects
// re-owned (a merge patch of their ownerReferences: no pod restarts), then the
// anchor deleted. Each step is one guarded write, planned again from the
// cache; any release of the model may take it. nullopt: nothing to migrate.
std::optional<ModelReleasePlan> planMigration(const ModelReleaseObserved& o,
                                              const v1::ModelRelease& r) {
  const ProdObserved& p = o.prod;
  if (r.spec.model.empty() || !p.legacyAnchor || deleting(p.legacyAnchor) ||
      !missingLockstepLabels(*p.legacyAnchor, r.spec.model).empty())
    return std::nullopt;
  if (!p.model) return stopAfter({createModel(r.meta.ns, r.spec.model)});
  if (deleting(p.model)) return std::nullopt;
  const v1::ModelAnchor anchor = v1::decodeModelAnchor(*p.legacyAnchor);
  std::optional<RecordedRelease> prod;
  if (auto named = p.releases.find(anchor.promoted); named != p.releases.end() && named->second)
    prod = recordedOf(v1::decodeModelRelease(*named->second), *named->second, p);
  if (anchor.promoted == r.meta.name) prod = recordedOf(r, *o.release, p);
  if (auto adopt = adoptAnchor(*p.model, *p.legacyAnchor, o.gates.now, prod))
    return stopAfter({std::move(*adopt)});
  std::vector<PlannedApply> reown;
  const v1::ObjectMeta model = v1::decodeMeta(*p.model);
  const std::pair<const kube::ObjectPtr*, const kube::Resource*> serving[] = {
      {&p.service, &v1::kServices},
      {&p.stableDeployment, &v1::kDeployments},
      {&p.canaryDeployment, &v1::kDeployments}};
  for (const auto& [obj, resource] : serving) {
    if (!*obj || !ownedByLegacyAnchor(**obj, p)) continue;
    nlohmann::json patch = {{"metadata",
                             {{"ownerReferences", nlohmann::json::array({v1::modelOwnerReference(
                                                      model.name, model.uid)})}}}};
    PlannedApply a = plannedMergePatch(
        *resource, r.meta.ns, kube::name(**obj), std::move(patch),
        "re-owning " + resource->kind + " " + kube::name(**obj) + " by Model " + model.name);
    a.uid = v1::decodeMeta(**obj).uid;
    reown.push_back(std::move(a));
  }
  if (!reown.empty()) return stopAfter(std::move(reown));
  // Everything is the Model's: the anchor goes (its history is the Model's now).
  ModelReleasePlan out = stopAfter({});
  out.execution.prune.push_back({v1::kConfigMaps, r.meta.ns, kube::name(*p.legacyAnchor),
                                 v1::decodeMeta(*p.legacyAnchor).uid});
  return out;
}

// A release is known by its content (docs/rollouts.md "Content identity"): a
// fresh release object (nothing started, no pin) re-created under the name
// prod's content was recorded under, with that very content, is prod. The
// Model's record takes its uid first (guarded), then its status says
// Promoted on the recorded pair: no gate, canary or pod. nullopt: not such a release.
std::optional<ModelReleasePlan> planRecognition(const ModelReleaseObserved& o,
                                                const v1::ModelRelease& r) {
  const ProdObserved& p = o.prod;
  if (r.spec.model.empty() || !p.model || deleting(p.model) || kube::isBeingDeleted(*o.release))
    return std::nullopt;
  const std::string prevPhase =
      v1::decode::string(v1::decode::object(*o.release, "status"), "phase");
  if ((!prevPhase.empty() && prevPhase != v1::kPhasePending) || r.status.runtime)
    return std::nullopt;
  const v1::Model model = v1::decodeModel(*p.model);
  if (prodIdentity(model, *o.release) != ProdIdentity::kRecreated) return std::nullopt;
  const v1::Stage* prodStage = r.prodStage();
  if (prodStage == nullptr) return std::nullopt;
  const v1::ProdContent& rec = *model.status.prod;
  const std::string message = "recognised as the content prod runs (Model " + r.meta.ns + "/" +
                              r.spec.model + ", content " + rec.contentDigest +
                              "): a release object re-created with prod's package, runtime pair "
                              "and stages is prod; no gate, canary or pod ran";
  json status = v1::decode::object(*o.release, "status");
  status["observedGeneration"] = r.meta.generation;
  status["phase"] = v1::kPhasePromoted;
  status["currentStage"] = prodStage->name;
  status["runtime"] =
      v1::encodeRuntimePin({rec.runtime.revision, rec.runtime.image, rec.runtime.closureHash});
  status["validatedClosureHash"] = rec.runtime.closureHash;
  status["promotedPackage"] = r.spec.package;
  json stages = json::array();
  for (const v1::Stage& s : r.spec.stages) {
    stages.push_back({{"name", s.name},
                      {"phase", v1::kStageSucceeded},
                      {"message", message},
                      {"startedAt", o.gates.now},
                      {"finishedAt", o.gates.now}});
  }
  status["stages"] = std::move(stages);
  v1::CanaryStatus canary;
  canary.phase = v1::kPhasePromoted;
  canary.finishedAt = o.gates.now;
  canary.message = message;
  canary.modelUid = model.meta.uid;
  status["canary"] = v1::encodeCanaryStatus(canary);
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  kube::setCondition(conditions,
                     {v1::kConditionReady, v1::kStatusTrue, v1::kReasonRecognizedAsProd, message},
                     r.meta.generation, o.gates.now);
  kube::setCondition(
      conditions, {v1::kConditionStalled, v1::kStatusFalse, v1::kReasonRecognizedAsProd, message},
      r.meta.generation, o.gates.now);
  kube::setCondition(
      conditions,
      {v1::kConditionReconciling, v1::kStatusFalse, v1::kReasonRecognizedAsProd, message},
      r.meta.generation, o.gates.now);
  ModelReleasePlan out;
  out.execution.apply.push_back(
      recordRecognized(*p.model, r.meta.uid, o.gates.now,
                       v1::decode::array(v1::decode::object(*o.release, "spec"), "stages")));
  out.execution.events.push_back(
      {o.release, kube::kEventTypeNormal, v1::kReasonRecognizedAsProd, message});
  PlannedApply write;
  write.resource = v1::kModelReleases;
  write.object = statusApply(v1::kModelReleases, r.meta.ns, r.meta.name, status);
  write.resourceVersion = r.resourceVersion;
  write.what = "status of ModelRelease " + r.meta.name;
  out.execution.status = std::move(write);
  return out;
}

// What the prod stage reads, with the release the Model's record names
// dropped when the object standing at that name is another content: prod's
// known-good is the recorded content, never whatever now holds its name.
ProdObserved recordedReleasesOnly(const ProdObserved& p) {
  ProdObserved out = p;
  if (!p.model) return out;
  const v1::Model model = v1::decodeModel(*p.model);
  auto named = out.releases.find(model.promoted());
  if (named != out.releases.end() && named->second &&
      prodIdentity(model, *named->second) == ProdIdentity::kOtherContent)
    named->second = nullptr;
  return out;
}

}  // namespace

ModelReleasePlan planModelRelease(const ModelReleaseObserved& observed) {
  ModelReleaseObserved o = observed;
  o.prod = recordedReleasesOnly(observed.prod);
  const v1::ModelRelease r = v1::decodeModelRelease(*o.release);
  if (auto migrate = planMigration(o, r)) return std::move(*migrate);
  if (auto recognized = planRecognition(o, r)) return std::move(*recognized);
  if (auto gone = planDeletion(o, r)) return std::move(*gone);
  ModelReleasePlan out;
  out.release = planRelease(o.gates);
  ReleasePlan& plan = out.release;
  const bool finalized = kube::hasFinalizer(*o.release, v1::kReleaseCleanupFinalizer);
  const bool deleted = kube::isBeingDeleted(*o.release);
  if (plan.prod && !finalized && !deleted) {
    // The finalizer before anything in prod is written: a deletion from now
    // on rolls the canary back before the object goes.
    std::vector<std::string> all = kube::finalizers(*o.release);
    all.emplace_back(v1::kReleaseCleanupFinalizer);
    out.execution.apply.push_back(finalizersPatch(r, *o.release, all,
                                                  "adding the finalizer " +
                                                      std::string(v1::kReleaseCleanupFinalizer) +
                                                      " to ModelRelease " + r.meta.name));
    out.stop = true;
    out.stopRequeueSeconds = 1;
    return out;
  }
  if (plan.prod) {
    out.prod = planProd(o.gates, r, o.release, o.prod, plan);
  } else if (plan.modelRollback) {
    out.prod = planRollbackWrites(o.gates, r, o.release, o.prod, plan);
  }
  ExecutionPlan& x = out.execution;
  // A finished release that kept the finalizer (its status already says so)
  // lets go of it: nothing of it is left in prod to undo.
  const std::string prevPhase =
      v1::decode::string(v1::decode::object(*o.release, "status"), "phase");
  const bool finishedBefore =
      !prevPhase.empty() && isTerminalPhase(prevPhase) && !plan.prod && !plan.modelRollback;
  if (finalized && !deleted && finishedBefore && !plan.statusChanged) {
    const bool holdsSlot = o.prod.model && !deleting(o.prod.model) &&
                           !findNameConflict(r.spec.model, o.prod, "") &&
                           v1::decodeModel(*o.prod.model).canaryHolder() == r.meta.name;
    // Failed after claiming the canary slot: free it for the model's next
    // release first (the finalizer goes on the next reconcile).
    x.apply.push_back(holdsSlot ? claimCanary(*o.prod.model, std::nullopt, o.gates.now)
                                : removeFinalizer(r, *o.release));
  }
  if (deleted && plan.requeueAfterSeconds == 0) plan.requeueAfterSeconds = 2;
  if (out.prod) {
    x.apply = out.prod->writes;
    out.measure = out.prod->measure;
    out.measureStep = out.prod->measureStep;
    out.measureIndex = out.prod->measureIndex;
    out.rollbackRecordedAt = out.prod->rollbackRecordedAt;
    out.afterStatus = out.prod->afterStatus;
    if (out.prod->stop) {
      out.stop = true;
      out.stopRequeueSeconds = out.prod->stopRequeueSeconds;
      out.stopError = out.prod->stopError;
      for (const ReleaseEvent& e : out.prod->events)
        x.events.push_back({o.release, e.type, e.reason, e.message});
      return out;
    }
  }
  // Jobs: deterministic names make a retry harmless (AlreadyExists, NotFound: done).
  for (const nlohmann::json& job : plan.jobsToCreate) {
    PlannedApply create = plannedCreate(v1::kJobs, job, "creating Job " + v1::decodeMeta(job).name);
    // A refused Job (quota, an invalid template): say so on the release and retry later.
    create.failureEventOn = o.release;
    create.failureEventReason = kReasonJobRefused;
    create.failureEventWhenTransient = false;
    x.apply.push_back(std::move(create));
  }
  for (const std::string& name : plan.jobsToDelete)
    x.prune.push_back({v1::kJobs, r.meta.ns, name, ""});
  for (const ReleaseEvent& e : plan.events)
    x.events.push_back({o.release, e.type, e.reason, e.message});
  // Prod heals: the release the Model runs as prod keeps its serving objects.
  if (!out.prod && !deleted) {
    if (auto heal = planProdHealing(r, o.release, o.prod)) {
      out.readProdNames = heal->needsNames;
      for (PlannedApply& w : heal->writes) x.apply.push_back(std::move(w));
      for (const ReleaseEvent& e : heal->events)
        x.events.push_back({o.release, e.type, e.reason, e.message});
    }
  }
  if (plan.statusChanged) {
    // Planned from the cache: the write carries the resourceVersion it was
    // planned from, so a plan made on a stale copy (our previous write not yet
    // in the cache) is refused with a Conflict and re-planned, never applied
    // over the newer status.
    PlannedApply status;
    status.resource = v1::kModelReleases;
    status.object = statusApply(v1::kModelReleases, r.meta.ns, r.meta.name, plan.status);
    status.resourceVersion = r.resourceVersion;
    status.what = "status of ModelRelease " + r.meta.name;
    x.status = std::move(status);
  }
  return out;
}

}  // namespace lockstep::controllers
