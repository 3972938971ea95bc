#include "controllers/modelrelease/rollback_plan.h"

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/runtime_env.h"
#include "controllers/modelrelease/serving_health.h"
#include "controllers/modelrelease/timestamps.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): phases and reasons
using nlohmann::json;

}  // namespace

void manualRollbackReadiness(const ReleaseObserved& o, const v1::ModelRelease& r,
                             const json& rollback, ReleaseSummary& sum, ReleasePlan& plan) {
  const std::string what = "model " + quote(r.spec.model) + " rolled back from " +
                           quote(rollback.value("from", "")) + " by " +
                           rollback.value("requestedBy", "");
  const bool pastDeadlineBefore = sum.readyReason == kReasonRollbackDeadlineExceeded;
  sum.readyReason = kReasonManualRollback;
  if (sum.stalledReason == kReasonRollbackDeadlineExceeded) sum.stalledReason.clear();
  std::string waiting;
  if (!o.serving) {
    sum.ready = false;
    waiting = "the stable Deployment is not observed yet";
    sum.readyMessage = what + "; " + waiting;
  } else {
    const ServingHealth h = servingHealth(r, *o.serving);
    sum.ready = h.healthy();
    waiting = "waiting for " + std::to_string(h.want) + " Ready stable pods on its pair (" +
              h.message + ")";
    sum.readyMessage = h.healthy()
                           ? "prod runs this release again: " + what + " (" + h.message + ")"
                           : what + "; " + waiting;
  }
  sum.reconciling = !sum.ready;
  if (sum.ready) return;
  // The deadline (the Model's spec.rollbackDeadlineSeconds from the request):
  // past it the rollback has failed, said in Ready and Stalled and by one
  // Warning; it goes on (the stable Deployment keeps rolling) and is Ready
  // once N pods are.
  const std::optional<int64_t> at = parseRfc3339(rollback.value("at", ""));
  const int64_t left = at ? *at + o.rollbackDeadlineSeconds - o.nowUnix : 1;
  if (left <= 0) {
    const std::string message = what + " did not complete within " +
                                std::to_string(o.rollbackDeadlineSeconds) +
                                "s (the Model's spec.rollbackDeadlineSeconds): " + waiting;
    sum.readyReason = sum.stalledReason = kReasonRollbackDeadlineExceeded;
    sum.readyMessage = sum.stalledMessage = message;
    sum.reconciling = false;
    if (!pastDeadlineBefore)
      plan.events.push_back({"Warning", kReasonRollbackDeadlineExceeded, message});
  }
  // Pod events of the stable Deployment wake it too (its pods carry this
  // release); this is the backstop, and the deadline's own wake-up.
  const int64_t wake = left > 0 ? std::min<int64_t>(left, 5) : 30;
  if (plan.requeueAfterSeconds == 0 || plan.requeueAfterSeconds > wake)
    plan.requeueAfterSeconds = wake;
}

bool planManualRollback(const ReleaseObserved& o, const v1::ModelRelease& r,
                        const std::string& prevPhase, json& status, ReleaseSummary& sum,
                        ReleasePlan& plan) {
  const json& prevStatus = decode::object(o.release, "status");
  // Manual rollback (`lockstep model rollback`, docs/rollouts.md): a release
  // that was promoted once, annotated rollback.lockstep.dev/<the model's
  // current prod revision>, takes the stable track back without re-running any
  // gate, unless its pinned revision was pruned or another release is in canary. A release the
  // Model names as prod again (a rollback whose status write was lost) is
  // Promoted again.
  // An unreadable status.canary cannot tell whether prod ever ran the release:
  // a request for it is refused with the decoder's error.
  const bool promotedOnce = r.status.canary.orEmpty().phase == kPhasePromoted;
  const std::string& canaryError = r.status.canary.error;
  if ((promotedOnce || !canaryError.empty()) &&
      (prevPhase == kPhaseSuperseded || prevPhase == kPhasePromoted)) {
    const std::string from = o.promotedRelease;
    std::string by = from.empty() || from == r.meta.name || o.modelRevision.empty()
                         ? std::string()
                         : r.annotation(std::string(kRollbackAnnotationPrefix) + o.modelRevision);
    // Asked on the Model (`lockstep model rollback`, an Argo CD action): the
    // same request, written where a Model's editor with verb rollback writes it.
    if (by.empty() && !from.empty() && from != r.meta.name && !o.modelRevision.empty())
      by = o.modelRollbackBy;
    // A fleet abort for the wave of the release prod runs asks for this one
    // (the release its canary replaced) as a person would (gates/fleet_check.h).
    if (by.empty() && !from.empty() && from != r.meta.name && !o.modelRevision.empty())
      by = o.fleetRollbackBy;
    const bool restoredBefore =
        promotedOnce && prevPhase == kPhaseSuperseded && from == r.meta.name;
    if (!by.empty() || restoredBefore) {
      // The stable pods run the release's pinned pair (v1::rollbackRuntime):
      // refused only when that revision was pruned.
      std::optional<v1::RuntimeEnv> env;
      if (o.runtimeEnv) env = v1::decodeRuntimeEnv(*o.runtimeEnv);
      const v1::RollbackRuntime runtime = v1::rollbackRuntime(r, env ? &*env : nullptr);
      std::string refusal;
      if (!canaryError.empty()) {
        refusal = "status.canary cannot be read (" + canaryError +
                  "): whether prod ran this release is unknown; repair the status first";
      } else if (!by.empty() && !o.modelRecordsProdRan) {
        refusal =
            "the Model's record (status.prod, status.history) does not show that prod ran "
            "this release object (uid " +
            r.meta.uid +
            ") or its content; status.canary "
            "alone does not make a rollback target";
      } else if (!by.empty() && !o.canaryRelease.empty()) {
        refusal = "release " + quote(o.canaryRelease) + " is in canary on model " +
                  quote(r.spec.model) + "; abort it first";
      } else if (!by.empty() && !runtime.refusal.empty()) {
        refusal = runtime.refusal;
      } else if (!by.empty() && o.window && !o.window->rollbacksAllowed) {
        refusal = "the model's change window refuses manual rollbacks now (rollbacks: Deny): " +
                  o.window->message;
      }
      json rollback = decode::object(prevStatus, "rollback");
      if (!refusal.empty()) {
        json refused = {{"from", from},
                        {"requestedBy", by},
                        {"revision", o.modelRevision},
                        {"refused", refusal}};
        if (rollback != refused) {
          plan.events.push_back({"Warning", kReasonRollbackRefused,
                                 "rollback of model " + quote(r.spec.model) + " from " +
                                     quote(from) + " refused: " + refusal});
        }
        status["rollback"] = refused;
      } else {
        if (by.empty() && rollback.empty() && !o.rollbackFrom.empty()) {
          // The rollback ran (the Model moved to this release) but its status
          // write was lost: re-derive the record from the Model and the request.
          const std::string spent = previousRevision(o.modelRevision);
          std::string requester =
              spent.empty() ? std::string()
                            : r.annotation(std::string(kRollbackAnnotationPrefix) + spent);
          if (requester.empty() && !spent.empty()) requester = o.spentModelRollbackBy;
          if (!requester.empty()) {
            rollback = {{"from", o.rollbackFrom},
                        {"requestedBy", requester},
                        {"revision", spent},
                        {"at", o.now}};
            status["rollback"] = rollback;
          }
        }
        if (!by.empty()) {
          plan.modelRollback = ModelRollbackRequest{from, by, o.modelRevision};
          // Prod starts again under this release: its Degraded from an earlier
          // time in prod says nothing now (set again once stable serves it).
          json& conditions = status["conditions"];
          if (conditions.is_array()) {
            for (auto it = conditions.begin(); it != conditions.end();) {
              it =
                  decode::string(*it, "type") == kConditionDegraded ? conditions.erase(it) : it + 1;
            }
          }
          rollback = {
              {"from", from}, {"requestedBy", by}, {"revision", o.modelRevision}, {"at", o.now}};
          status["rollback"] = rollback;
          plan.events.push_back({"Normal", kReasonManualRollback,
                                 "model " + quote(r.spec.model) + " rolled back from release " +
                                     quote(from) + " to this release by " + by +
                                     " (no gate ran again)"});
          if (runtime.movedOn)
            plan.events.push_back({"Warning", kReasonRuntimeMovedOn, runtime.movedOnMessage});
        }
        sum.phase = kPhasePromoted;
        if (!rollback.contains("from")) rollback["from"] = from;
        if (!rollback.contains("requestedBy")) rollback["requestedBy"] = by;
        manualRollbackReadiness(o, r, rollback, sum, plan);
        return true;
      }
    }
  }
  return false;
}

}  // namespace lockstep::controllers
