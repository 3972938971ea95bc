#include "controllers/modelrelease/release_plan.h"

#include <map>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_mirror.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/modelrelease/gates/evidence_stage_plan.h"
#include "controllers/modelrelease/gates/fleet_permit_plan.h"
#include "controllers/modelrelease/gates/gate_job.h"
#include "controllers/modelrelease/gates/gate_plan.h"
#include "controllers/modelrelease/gates/gate_verdict.h"
#include "controllers/modelrelease/gates/stage_approval.h"
#include "controllers/modelrelease/rollback_plan.h"
#include "controllers/modelrelease/runtime_env_state.h"
#include "controllers/modelrelease/serving_health.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): phases and reasons
using kube::Condition;
using kube::conditionTrue;
using kube::findCondition;
using kube::setCondition;
using nlohmann::json;

const json* findByName(const std::vector<json>& objects, const std::string& name) {
  for (const json& o : objects) {
    if (decode::string(decode::object(o, "metadata"), "name") == name) return &o;
  }
  return nullptr;
}

// A Promoted release the Model names (docs/modelrelease.md "A Promoted
// release keeps being observed"): Ready follows the stable Deployment (N Ready
// pods of it on its pair); Degraded=True (ProdShortOfReadyPods) when it is
// short, False (StablePodsReady) when not, with an Event on each change. A
// manual rollback's target still warming up is reported by
// manualRollbackReadiness (no Degraded before prod first served it).
void observeProd(const ReleaseObserved& o, const v1::ModelRelease& r, const json& prevStatus,
                 json& conditions, ReleaseSummary& sum, ReleasePlan& plan) {
  const ServingHealth h = servingHealth(r, *o.serving);
  const bool degradedBefore = conditionTrue(conditions, kConditionDegraded);
  // A manual rollback to it still warming up: not Ready, and no Degraded yet
  // (its request cleared the one from the release's earlier time in prod).
  if ((sum.readyReason == kReasonManualRollback ||
       sum.readyReason == kReasonRollbackDeadlineExceeded) &&
      !sum.ready) {
    manualRollbackReadiness(o, r, decode::object(prevStatus, "rollback"), sum, plan);
    if (!sum.ready) return;
  }
  const std::string model = quote(r.spec.model);
  if (h.healthy()) {
    if (!sum.ready) {
      sum.ready = true;
      if (sum.readyReason != kReasonManualRollback) {
        sum.readyReason = kReasonPromoted;
        sum.readyMessage = "prod runs this release (" + h.message + ")";
      }
    }
  } else {
    sum.ready = false;
    sum.readyReason = kReasonProdShortOfReadyPods;
    sum.readyMessage = "prod of model " + model + " is short of Ready pods: " + h.message;
    // Pod events of the stable Deployment wake it (its pods carry this
    // release's label); this is the backstop.
    plan.requeueAfterSeconds = 30;
  }
  setCondition(conditions,
               h.healthy()
                   ? Condition{kConditionDegraded, "False", kReasonStablePodsReady, h.message}
                   : Condition{kConditionDegraded, "True", kReasonProdShortOfReadyPods, h.message},
               r.meta.generation, o.now);
  if (!h.healthy() && !degradedBefore) {
    plan.events.push_back({"Warning", kReasonProdShortOfReadyPods,
                           "prod of model " + model + " is short of Ready pods: " + h.message});
  } else if (h.healthy() && degradedBefore) {
    plan.events.push_back(
        {"Normal", kReasonStablePodsReady, "prod of model " + model + " recovered: " + h.message});
  }
}

}  // namespace

ReleasePlan planRelease(const ReleaseObserved& o) {
  ReleasePlan plan;
  const json& prevStatus = decode::object(o.release, "status");
  json status = prevStatus.is_object() ? prevStatus : json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();

  const v1::ModelRelease r = v1::decodeModelRelease(o.release);
  const Status specError = v1::checkStages(r.spec);
  status["observedGeneration"] = r.meta.generation;
  json& stages = status["stages"];
  if (!stages.is_array()) stages = json::array();

  ReleaseSummary sum;
  std::string prevPhase = decode::string(prevStatus, "phase");
  sum.phase = prevPhase.empty() ? kPhasePending : prevPhase;

  // Events for stage transitions are derived from the phases before and after.
  std::map<std::string, std::string> phasesBefore;
  for (const json& s : stages) phasesBefore[s.value("name", "")] = s.value("phase", "Pending");

  auto setConditions = [&] {
    status["phase"] = sum.phase;
    setReleaseConditions(conditions, sum, r.meta.generation, o.now);
  };
  auto finish = [&] {
    setConditions();
    // Stage transition events, in stage order.
    for (const json& s : stages) {
      std::string name = s.value("name", "");
      std::string before = phasesBefore.count(name) ? phasesBefore[name] : "Pending";
      std::string after = s.value("phase", "Pending");
      if (before == after) continue;
      std::string msg = s.value("message", "");
      if (after == kStageRunning) {
        plan.events.push_back({"Normal", "StageStarted",
                               "stage " + quote(name) + ": started Job " + s.value("jobName", "")});
      } else if (after == kStageWaitingForApproval) {
        plan.events.push_back({"Normal", "WaitingForApproval",
                               "stage " + quote(name) + " is waiting for manual approval"});
      } else if (after == kStageSucceeded) {
        plan.events.push_back({"Normal", "StageSucceeded", "stage " + quote(name) + ": " + msg});
      } else if (after == kStageFailed) {
        plan.events.push_back({"Warning", "StageFailed", "stage " + quote(name) + ": " + msg});
      }
    }
    if (sum.phase != prevPhase && sum.phase == kPhaseValidated) {
      plan.events.push_back({"Normal", "Validated", "every gate passed for " + r.spec.package});
    }
    plan.statusChanged = status != prevStatus;
    plan.status = std::move(status);
    return plan;
  };

  if (!specError.isOk()) {
    sum.phase = kPhaseFailed;
    sum.readyReason = sum.stalledReason = kReasonInvalidSpec;
    sum.readyMessage = sum.stalledMessage = specError.message();
    return finish();
  }
  for (const v1::Stage& s : r.spec.stages) stageStatus(stages, s.name);

  // Stale runtime: computed from the cached RuntimeEnv and the release's pin
  // (runtime_env_state.h), for every release (a Promoted one too: prod keeps
  // running its pinned revision, but nothing new is validated on it).
  RuntimeEnvState env = runtimeEnvState(o.runtimeEnv);
  const ReleaseRuntime rt = releaseRuntime(env, r);
  const bool stale = rt.stale;
  if (!env.found) {
    setCondition(
        conditions,
        {kConditionStale, "Unknown", kReasonRuntimeEnvNotFound,
         "RuntimeEnv " + quote(r.meta.ns + "/" + r.spec.runtimeEnvName) + " does not exist"},
        r.meta.generation, o.now);
  } else if (env.ready) {
    setCondition(conditions,
                 stale ? Condition{kConditionStale, "True", rt.staleReason, rt.message}
                       : Condition{kConditionStale, "False", kReasonClosureHashMatches, rt.message},
                 r.meta.generation, o.now);
  }
  const bool wasStale = conditionTrue(decode::array(prevStatus, "conditions"), kConditionStale);
  if (stale && !wasStale && (!isTerminalPhase(prevPhase) || prevPhase == kPhasePromoted)) {
    plan.events.push_back(
        {"Warning", kReasonRuntimeStale,
         rt.message + (prevPhase == kPhasePromoted
                           ? "; prod keeps running this release on its pinned revision"
                           : "; no further stage starts")});
  }
  // "...; stage "x" does not start" (Ready and Stalled while stale).
  auto staleStage = [&](const std::string& stage) {
    return rt.message + "; stage " + quote(stage) + " does not start";
  };
  // The first stage to start pins the current revision (status.runtime,
  // never changed afterwards); a spec.runtimeImage that is not its image fails.
  auto pinOrFail = [&]() -> bool {
    if (!rt.mismatch.empty()) {
      sum.phase = kPhaseFailed;
      sum.readyReason = sum.stalledReason = kReasonRuntimeImageMismatch;
      sum.readyMessage = sum.stalledMessage = rt.mismatch;
      plan.events.push_back({"Warning", kReasonRuntimeImageMismatch, rt.mismatch});
      return false;
    }
    if (rt.newPin && rt.pin && !status.contains("runtime")) {
      status["runtime"] = encodeRuntimePin(*rt.pin);
      plan.events.push_back(
          {"Normal", "RuntimePinned",
           "pinned RuntimeEnv " + quote(r.spec.runtimeEnvName) + " " + describePin(*rt.pin)});
    }
    return true;
  };

  // Manual rollback (`lockstep model rollback`): rollback_plan.h.
  if (planManualRollback(o, r, prevPhase, status, sum, plan)) return finish();

  // Superseded: prod runs another release now (a Promoted one), or another
  // release took the canary slot from this one (docs/rollouts.md).
  {
    bool promotedAway = prevPhase == kPhasePromoted && !o.promotedRelease.empty() &&
                        o.promotedRelease != r.meta.name;
    bool slotLost = prevPhase == kPhaseCanary && !o.canaryRelease.empty() &&
                    o.canaryRelease != r.meta.name && o.promotedRelease != r.meta.name;
    if (promotedAway || slotLost) {
      sum.phase = kPhaseSuperseded;
      sum.readyReason = kReasonSuperseded;
      sum.readyMessage = promotedAway ? "prod now runs release " + quote(o.promotedRelease)
                                      : "release " + quote(o.canaryRelease) +
                                            " took the canary of model " + quote(r.spec.model);
      for (json& st : stages) {
        if (st.value("phase", "") == kStageRunning) {
          st["phase"] = kStageFailed;
          st["message"] = sum.readyMessage;
        }
      }
      // Its canary ends now. An unreadable status.canary is kept as written
      // (never rewritten from a guess); the message says why it has no end.
      if (const CanaryStatus* canary = r.status.canary.get(); canary != nullptr) {
        CanaryStatus ended = *canary;
        ended.finishedAt = o.now;
        status["canary"] = encodeCanaryStatus(ended);
      } else if (!r.status.canary.error.empty()) {
        sum.readyMessage += "; status.canary cannot be read (" + r.status.canary.error +
                            "): its end is not recorded";
      }
      // Prod is another release's now: its Degraded no longer describes it.
      for (auto it = conditions.begin(); it != conditions.end();) {
        it = decode::string(*it, "type") == kConditionDegraded ? conditions.erase(it) : it + 1;
      }
      plan.events.push_back({"Normal", kReasonSuperseded, sum.readyMessage});
      return finish();
    }
  }

  // Terminal releases never move again (a GitOps re-apply restarts nothing).
  if (isTerminalPhase(prevPhase)) {
    if (auto ready = findCondition(conditions, "Ready")) {
      sum.ready = ready->value("status", "") == "True";
      sum.readyReason = ready->value("reason", "");
      sum.readyMessage = ready->value("message", "");
    }
    if (auto stalled = findCondition(conditions, "Stalled");
        stalled && stalled->value("status", "") == "True") {
      sum.stalledReason = stalled->value("reason", "");
      sum.stalledMessage = stalled->value("message", "");
    }
    // The release prod runs keeps being observed: its Ready follows the
    // stable Deployment, Degraded says when prod is short of Ready pods.
    if (prevPhase == kPhasePromoted && o.promotedRelease == r.meta.name && o.serving)
      observeProd(o, r, prevStatus, conditions, sum, plan);
    // An aborted release's Job is gone for good, even if a delete was lost in a crash.
    if (prevPhase == kPhaseFailed) {
      for (const json& j : o.jobs) {
        if (!jobConditionTrue(j, "Complete") && !jobConditionTrue(j, "Failed"))
          plan.jobsToDelete.push_back(decode::string(decode::object(j, "metadata"), "name"));
      }
    }
    return finish();
  }

  // The package as the shell read it (package_reader.h): described in
  // status.package; one that is neither an image nor ModelPack fails the
  // release before its first stage starts (a release already past it, e.g. one
  // an older operator started, keeps going: nothing it ran is undone).
  if (o.package) {
    const PackageObserved& pkg = *o.package;
    bool started = false;
    for (const json& st : stages) {
      const std::string phase = st.value("phase", kStagePending);
      started = started || phase != kStagePending;
    }
    if (pkg.info) {
      status["package"] = encodePackageInfo(*pkg.info);
    } else if (!pkg.refused.empty() && !started) {
      sum.phase = kPhaseFailed;
      sum.readyReason = sum.stalledReason = kReasonPackageRefused;
      sum.readyMessage = sum.stalledMessage =
          "package " + r.spec.package +
          " is neither an image nor a ModelPack model: " + pkg.refused;
      plan.events.push_back({"Warning", kReasonPackageRefused, sum.readyMessage});
      return finish();
    } else {
      status["package"] = json{{"digest", pkg.digest},
                               {"message", pkg.refused.empty() ? "not read: " + pkg.unreadable
                                                               : "refused: " + pkg.refused}};
    }
  }

  std::string abortedBy = r.annotation(kAbortAnnotation);
  // An abort ends the release in stage `st` (Failed, reason Aborted, a Warning).
  auto endAborted = [&](json& st, const std::string& stage) {
    st["phase"] = kStageFailed;
    st["message"] = "aborted by " + abortedBy;
    sum.phase = kPhaseFailed;
    sum.readyReason = sum.stalledReason = kReasonAborted;
    sum.readyMessage = sum.stalledMessage =
        "aborted by " + abortedBy + " during stage " + quote(stage);
    plan.events.push_back({"Warning", kReasonAborted, sum.readyMessage});
  };
  // A stale or unready runtime starts no stage: it waits, saying why.
  // spec.policy.maxSeverity (runtime_env_state.h): advisories hold what has not started.
  const std::string advisoryBlock = advisoryHold(env, rt, r);
  const bool runtimeHeld = stale || !env.ready || !advisoryBlock.empty();
  auto holdForRuntime = [&](const std::string& stage, bool pending) {
    if (pending) sum.phase = kPhasePending;
    if (stale) {
      sum.readyReason = sum.stalledReason = kReasonRuntimeStale;
      sum.readyMessage = sum.stalledMessage = staleStage(stage);
    } else if (env.ready && !advisoryBlock.empty()) {
      sum.readyReason = kReasonAdvisoriesAboveMaxSeverity;
      sum.readyMessage = "stage " + quote(stage) + " does not start: " + advisoryBlock;
    } else {
      sum.readyReason = env.found ? kReasonRuntimeEnvNotReady : kReasonRuntimeEnvNotFound;
      sum.readyMessage =
          "RuntimeEnv " + quote(r.meta.ns + "/" + r.spec.runtimeEnvName) +
          (env.found ? " is not Ready (" + env.notReadyMessage + ")" : " does not exist");
    }
  };
  int gateIndex = 0;
  for (const v1::Stage& s : r.spec.stages) {
    json& st = stageStatus(stages, s.name);
    std::string phase = st.value("phase", "Pending");
    if (phase == kStageSucceeded) {
      if (s.gate || s.evidence) ++gateIndex;
      continue;
    }
    status["currentStage"] = s.name;
    if (s.serving) {
      // A canary already running goes on on its pinned revision (its pods stay
      // admitted, docs/rollouts.md "When the runtime moves on during a
      // canary"); one not started waits like a gate.
      // An unreadable status.canary counts as started: the canary planner
      // stalls on it (CanaryStatusUnreadable) rather than start another.
      const bool started = r.status.canary.written;
      // An abort ends a release whose canary has not started in whatever it
      // waits for (the runtime, its verification, an approval): no canary pod
      // is ever made. A started canary rolls back (prod/canary_plan.h).
      if (!started && !abortedBy.empty()) {
        endAborted(st, s.name);
        break;
      }
      if (!started && !stale && env.ready && !advisoryBlock.empty()) {
        sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
        sum.readyReason = kReasonAdvisoriesAboveMaxSeverity;
        sum.readyMessage = "stage " + quote(s.name) + " does not start: " + advisoryBlock;
        break;
      }
      if (!started && (stale || !env.ready)) {
        sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
        sum.readyReason = stale       ? kReasonRuntimeStale
                          : env.found ? kReasonRuntimeEnvNotReady
                                      : kReasonRuntimeEnvNotFound;
        sum.readyMessage = stale ? staleStage(s.name)
                                 : "RuntimeEnv " + quote(r.meta.ns + "/" + r.spec.runtimeEnvName) +
                                       (env.found ? " is not Ready (" + env.notReadyMessage + ")"
                                                  : " does not exist");
        if (stale) {
          sum.stalledReason = kReasonRuntimeStale;
          sum.stalledMessage = sum.readyMessage;
        }
        break;
      }
      // The runtime's spec.verify.requiredForPromotion (api/v1alpha1/runtime_verify.h).
      if (auto why = started || !o.runtimeEnv
                         ? std::nullopt
                         : v1::verificationBlocksPromotion(*o.runtimeEnv, o.now)) {
        sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
        sum.readyReason = v1::kReasonRuntimeNotVerified;
        sum.readyMessage = "stage " + quote(s.name) + " does not start: " + *why;
        break;
      }
      // The runtime's spec.mirror.requiredForPromotion (api/v1alpha1/runtime_mirror.h).
      if (auto why =
              started || !o.runtimeEnv ? std::nullopt : v1::mirrorBlocksPromotion(*o.runtimeEnv)) {
        sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
        sum.readyReason = v1::kReasonRuntimeNotMirrored;
        sum.readyMessage = "stage " + quote(s.name) + " does not start: " + *why;
        break;
      }
      // spec.verify.onStart: the serving pods need the CLI image (runtime_pod.h).
      if (!started && o.runtimeEnv) {
        if (auto verify =
                onStartVerification(*o.runtimeEnv, "", rt.pin ? rt.pin->revision : 0, o.cliImage);
            !verify.isOk()) {
          sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
          sum.readyReason = sum.stalledReason = kReasonRuntimeVerificationUnavailable;
          sum.readyMessage = sum.stalledMessage =
              "stage " + quote(s.name) + " does not start: " + verify.status().message();
          break;
        }
      }
      // approval: Manual on the serving stage holds the canary before it starts.
      if (!started && s.approval == v1::Approval::kManual) {
        auto d = stageApproval(s, o.release, o.approvalRules);
        if (!d.approved) {
          sum.phase = gateIndex == 0 ? kPhaseEvaluating : kPhaseTesting;
          st["phase"] = kStageWaitingForApproval;
          sum.readyReason = kReasonWaitingForApproval;
          sum.readyMessage =
              "stage " + quote(s.name) + " is " + d.message + " (the canary starts once approved)";
          break;
        }
        if (phase == kStageWaitingForApproval || phase == "Pending") {
          recordApprovers(st, d, r.meta.generation);
          plan.events.push_back(
              {"Normal", "StageApproved",
               "stage " + quote(s.name) + " approved by " + st["approvedBy"].get<std::string>()});
        }
      }
      // A closed change window starts no canary (docs/change-windows.md).
      if (!started && o.window) {
        sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
        sum.readyReason = kReasonWaitingForWindow;
        sum.readyMessage =
            "stage " + quote(s.name) +
            " (the canary) waits for the model's change window: " + o.window->message;
        plan.requeueAfterSeconds = o.window->requeueSeconds(o.nowUnix);
        break;
      }
      if (!started && !pinOrFail()) {
        st["phase"] = kStageFailed;
        st["message"] = rt.mismatch;
        break;
      }
      // A fleet rollout's serving stage starts on its wave permit (gates/fleet_check.h).
      if (!started && s.fleet &&
          !planFleetPermit(o, r, s, gateIndex == 0 ? kPhasePending : kPhaseTesting, status, st, sum,
                           plan))
        break;
      sum.phase = kPhaseCanary;
      sum.reconciling = true;
      if (st.value("phase", "Pending") != kStageRunning) {
        st["phase"] = kStageRunning;
        st["startedAt"] = o.now;
      }
      plan.prod = ProdStageRequest{s.name, static_cast<size_t>(&s - r.spec.stages.data())};
      break;
    }
    sum.phase = gateIndex == 0 ? kPhaseEvaluating : kPhaseTesting;
    if (s.evidence) {
      if (!abortedBy.empty()) {
        if (st.contains("startedAt")) st["finishedAt"] = o.now;
        endAborted(st, s.name);
        break;
      }
      if (runtimeHeld) {
        holdForRuntime(s.name, gateIndex == 0);
        break;
      }
      if (!pinOrFail()) {
        st["phase"] = kStageFailed;
        st["message"] = rt.mismatch;
        break;
      }
      const std::string image = rt.pin ? rt.pin->image : env.image;
      const std::string hash = rt.pin ? rt.pin->closureHash : env.closureHash;
      if (planEvidenceStage(o, r, s, hash, image, status, st, sum, plan)) {
        ++gateIndex;
        continue;
      }
      break;
    }
    int attempt = st.value("attempt", 1);
    std::string jobName = gateJobName(r.meta.name, s.name, attempt);
    const json* job = findByName(o.jobs, jobName);

    if (!abortedBy.empty()) {
      if (st.contains("startedAt")) st["finishedAt"] = o.now;
      if (job != nullptr || phase == kStageRunning) {
        plan.jobsToDelete.push_back(jobName);
        plan.outcomes.push_back({s.name, "aborted", stageDurationSeconds(st, o.nowUnix)});
      }
      endAborted(st, s.name);
      break;
    }

    if (job != nullptr) {
      // A Job is credited only for the generation it was built for (the spec
      // may have changed between the Job's creation and the status write that
      // froze it), and a Manual gate's only once the stage is approved (this
      // controller never starts one before): otherwise it goes, uncredited,
      // with a Warning. A Job without the annotation predates it and counts.
      const std::optional<int64_t> built = jobGeneration(*job);
      const bool otherGeneration = built && *built != r.meta.generation;
      std::optional<v1::ApprovalDecision> approval;
      if (s.approval == v1::Approval::kManual)
        approval = stageApproval(s, o.release, o.approvalRules);
      const bool unapproved = approval && !approval->approved;
      if (otherGeneration || unapproved) {
        plan.jobsToDelete.push_back(jobName);
        const std::string why = otherGeneration
                                    ? "was built for generation " + std::to_string(*built) +
                                          " of the release, which is at generation " +
                                          std::to_string(r.meta.generation) + " now"
                                    : "exists, but stage " + quote(s.name) + " is not approved";
        plan.events.push_back({"Warning", kReasonGateJobNotCredited,
                               "Job " + jobName + " " + why + ": not credited, deleted" +
                                   (otherGeneration ? "; the stage runs again" : "")});
        st.erase("startedAt");
        if (otherGeneration) {
          st["attempt"] = attempt + 1;
          st["phase"] = kStagePending;
          sum.readyReason = kReasonGateRunning;
          sum.readyMessage = "stage " + quote(s.name) + ": Job " + jobName + " " + why +
                             "; running the stage again";
          sum.reconciling = true;
          plan.requeueAfterSeconds = 1;
        } else {
          st["phase"] = kStageWaitingForApproval;
          sum.readyReason = kReasonWaitingForApproval;
          sum.readyMessage = "stage " + quote(s.name) + " is " + approval->message + " (Job " +
                             jobName + " " + why + ": deleted, not credited)";
        }
        break;
      }
      GateJobContext gc{o, r, s, jobName, attempt, status, st, sum, plan};
      if (planGateJob(gc, *job) == GateJobStep::kPassed) {
        ++gateIndex;
        continue;
      }
      break;
    }

    // No Job (yet). A stale or unready runtime, or one with advisories above the
    // release's maxSeverity, starts nothing.
    if (runtimeHeld) {
      if (phase == kStageRunning) {
        // Created before the runtime moved; the Job will appear in the cache.
        sum.reconciling = true;
        sum.readyReason = kReasonGateRunning;
        sum.readyMessage = "stage " + quote(s.name) + ": waiting for Job " + jobName;
        break;
      }
      holdForRuntime(s.name, gateIndex == 0 && phase != kStageWaitingForApproval);
      break;
    }
    if ((s.approval == v1::Approval::kManual)) {
      auto d = stageApproval(s, o.release, o.approvalRules);
      if (!d.approved) {
        st["phase"] = kStageWaitingForApproval;
        sum.readyReason = kReasonWaitingForApproval;
        sum.readyMessage = "stage " + quote(s.name) + " is " + d.message;
        break;
      }
      recordApprovers(st, d, r.meta.generation);
      if (phase == kStageWaitingForApproval || phase == "Pending") {
        plan.events.push_back(
            {"Normal", "StageApproved",
             "stage " + quote(s.name) + " approved by " + st["approvedBy"].get<std::string>()});
      }
    }
    // A closed change window starts no gate Job; one already running completes.
    if (o.window) {
      sum.readyReason = kReasonWaitingForWindow;
      sum.readyMessage =
          "stage " + quote(s.name) + " waits for the model's change window: " + o.window->message;
      plan.requeueAfterSeconds = o.window->requeueSeconds(o.nowUnix);
      break;
    }
    if (!pinOrFail()) {
      st["phase"] = kStageFailed;
      st["message"] = rt.mismatch;
      break;
    }
    // The Job runs on the pinned pair; a RuntimeEnv from before revisions
    // (nothing to pin) on its current image and hash.
    const std::string image = rt.pin ? rt.pin->image : env.image;
    const std::string hash = rt.pin ? rt.pin->closureHash : env.closureHash;
    // spec.verify.onStart: the checks run first, against the pinned revision's closure.
    auto verify = o.runtimeEnv ? onStartVerification(*o.runtimeEnv, image,
                                                     rt.pin ? rt.pin->revision : 0, o.cliImage)
                               : StatusOr<std::optional<VerifyContainers>>(std::nullopt);
    if (!verify.isOk()) {
      // The stage does not start; a fix (the flag, the RuntimeEnv) starts it.
      sum.readyReason = sum.stalledReason = kReasonRuntimeVerificationUnavailable;
      sum.readyMessage = sum.stalledMessage =
          "stage " + quote(s.name) + " does not start: " + verify.status().message();
      break;
    }
    auto built =
        buildGateJob(r, s,
                     {jobName, attempt, image, hash, rt.pin ? rt.pin->revision : 0, o.mount,
                      o.fetchCommand, std::move(*verify), stageSpecDigestOf(o.release, s.name)});
    if (!built.isOk()) {
      st["phase"] = kStageFailed;
      st["message"] = built.status().message();
      sum.phase = kPhaseFailed;
      sum.readyReason = sum.stalledReason = kReasonInvalidSpec;
      sum.readyMessage = sum.stalledMessage = built.status().message();
      break;
    }
    plan.jobsToCreate.push_back(std::move(*built));
    st["phase"] = kStageRunning;
    st["jobName"] = jobName;
    st["attempt"] = attempt;
    st["packageMount"] = packageMountName(o.mount);
    if (!st.contains("startedAt") || phase != kStageRunning) st["startedAt"] = o.now;
    status["packageMount"] = packageMountName(o.mount);
    sum.reconciling = true;
    sum.readyReason = kReasonGateRunning;
    sum.readyMessage = "stage " + quote(s.name) + ": starting Job " + jobName;
    break;
  }
  {
    bool every = true;
    for (const v1::Stage& s : r.spec.stages)
      every = every && stageStatus(stages, s.name).value("phase", "") == kStageSucceeded;
    if (every) {
      sum.phase = kPhaseValidated;
      sum.ready = true;
      sum.reconciling = false;
      sum.readyReason = kReasonValidated;
      sum.readyMessage = "every gate passed on closure " + r.spec.closureHash;
      sum.stalledReason.clear();
      status.erase("currentStage");
    }
  }
  return finish();
}

}  // namespace lockstep::controllers
