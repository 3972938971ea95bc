#include "controllers/modelrelease/modelrelease_plan.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

ModelReleasePlan planModelRelease(const ModelReleaseObserved& o) {
  ModelReleasePlan out;
  const v1::ModelRelease r = v1::decodeModelRelease(*o.release);
  out.release = planRelease(o.gates);
  ReleasePlan& plan = out.release;
  if (plan.prod) {
    out.prod = planProd(o.gates, r, o.release, o.prod, plan);
  } else if (plan.modelRollback) {
    out.prod = planRollbackWrites(o.gates, r, o.release, o.prod, plan);
  }
  ExecutionPlan& x = out.execution;
  if (out.prod) {
    x.apply = out.prod->writes;
    out.measure = out.prod->measure;
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
