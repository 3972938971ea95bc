#include "controllers/modelrelease/modelrelease_plan.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/resources.h"
#include "controllers/modelrelease/prod/anchor_plan.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/ownership.h"
#include "controllers/modelrelease/release_status.h"
#include "controllers/modelrelease/timestamps.h"

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
// still has replicas, and the anchor and Deployments are neither gone nor
// being deleted (a namespace or `lockstep model delete` takes them all).
bool prodCleanupNeeded(const v1::ModelRelease& r, const ProdObserved& p) {
  if (!p.anchor || deleting(p.anchor) || deleting(p.stableDeployment) ||
      deleting(p.canaryDeployment))
    return false;
  if (findNameConflict(r.spec.model, p, "")) return false;  // prod was never ours to move
  const bool holdsSlot = v1::decodeModelAnchor(*p.anchor).canary == r.meta.name;
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
    if (v1::decodeModelAnchor(*o.prod.anchor).canary == r.meta.name) {
      out.execution.apply.push_back(claimCanary(*o.prod.anchor, ""));
    }
    out.execution.apply.push_back(removeFinalizer(r, *o.release));
    return out;
  }
  ModelReleasePlan out;
  out.execution.apply.push_back(removeFinalizer(r, *o.release));
  return out;
}

}  // namespace

ModelReleasePlan planModelRelease(const ModelReleaseObserved& o) {
  const v1::ModelRelease r = v1::decodeModelRelease(*o.release);
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
    const bool holdsSlot = o.prod.anchor && !deleting(o.prod.anchor) &&
                           !findNameConflict(r.spec.model, o.prod, "") &&
                           v1::decodeModelAnchor(*o.prod.anchor).canary == r.meta.name;
    // Failed after claiming the canary slot: free it for the model's next
    // release first (the finalizer goes on the next reconcile).
    x.apply.push_back(holdsSlot ? claimCanary(*o.prod.anchor, "") : removeFinalizer(r, *o.release));
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
