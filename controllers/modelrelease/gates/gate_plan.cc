#include "controllers/modelrelease/gates/gate_plan.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/gates/gate_job.h"
#include "controllers/modelrelease/gates/gate_verdict.h"
#include "controllers/modelrelease/gates/stage_approval.h"
#include "controllers/modelrelease/timestamps.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): phases and reasons
using nlohmann::json;

}  // namespace

GateJobStep planGateJob(GateJobContext& c, const json& jobObject) {
  const ReleaseObserved& o = c.observed;
  const v1::ModelRelease& r = c.release;
  const v1::Stage& s = c.stage;
  const std::string& jobName = c.jobName;
  const int attempt = c.attempt;
  json& status = c.status;
  json& st = c.stageStatus;
  ReleaseSummary& sum = c.summary;
  ReleasePlan& plan = c.plan;
  const json* job = &jobObject;
  st["phase"] = kStageRunning;
  st["jobName"] = jobName;
  st["attempt"] = attempt;
  if (!st.contains("startedAt")) st["startedAt"] = o.now;
  // Re-derived from the Job and the release, never only remembered: the cached
  // status may predate our last write (a stale cache after create), and the
  // status is applied whole.
  st["packageMount"] = jobMount(*job);
  status["packageMount"] = st["packageMount"];
  if ((s.approval == v1::Approval::kManual)) {
    auto d = stageApproval(s, o.release, o.approvalRules);
    if (d.approved && !st.contains("approvedGeneration")) recordApprovers(st, d, r.meta.generation);
  }
  std::string jobUid = decode::string(decode::object(*job, "metadata"), "uid");
  if (jobConditionTrue(*job, "Complete")) {
    std::string container = mainContainerOf(*job);
    const json* terminated = nullptr;
    for (const json* p : podsOfJob(o.pods, jobName)) {
      if (decode::string(decode::object(*p, "status"), "phase") != "Succeeded") continue;
      terminated = terminatedState(*p, container);
      if (terminated) break;
    }
    if (terminated == nullptr) {
      // Complete, but the pod is not in the cache yet (or was deleted).
      auto completed =
          parseRfc3339(decode::string(decode::object(*job, "status"), "completionTime"));
      if (completed && o.nowUnix - *completed > 120) {
        st["phase"] = kStageFailed;
        st["message"] = "Job " + jobName + " completed but no succeeded pod with container " +
                        quote(container) + " is left to read its metrics from";
      } else {
        sum.reconciling = true;
        sum.readyReason = kReasonWaitingForMetrics;
        sum.readyMessage = "Job " + jobName + " completed; reading its pod's metrics";
        plan.requeueAfterSeconds = 2;
        return GateJobStep::kStop;
      }
    } else {
      GateVerdict v = checkMetrics(s.gate ? s.gate->metrics : std::vector<v1::MetricThreshold>{},
                                   container, decode::string(*terminated, "message"));
      st["phase"] = v.passed ? kStageSucceeded : kStageFailed;
      st["message"] = v.message;
      st["metrics"] = v.metrics;
    }
    std::string completion = decode::string(decode::object(*job, "status"), "completionTime");
    st["finishedAt"] = completion.empty() ? o.now : completion;
    const json& podTemplate = decode::object(decode::object(*job, "spec"), "template");
    const json& podContainers = decode::array(decode::object(podTemplate, "spec"), "containers");
    json evidence = {
        {"package", r.spec.package},
        {"closureHash",
         decode::string(decode::object(decode::object(podTemplate, "metadata"), "annotations"),
                        "lockstep.dev/closure-hash")},
        {"image",
         podContainers.empty() ? std::string() : decode::string(podContainers[0], "image")},
        {"jobUID", jobUid}};
    // What the statements of this stage need once the Job may be gone
    // (controllers/evidence): the policy committed before it ran, its command.
    const std::string specDigest =
        decode::string(decode::object(decode::object(*job, "metadata"), "annotations"),
                       kGateJobSpecDigestAnnotation);
    if (!specDigest.empty()) evidence["specDigest"] = specDigest;
    if (!podContainers.empty()) {
      json command = json::array();
      for (const char* key : {"command", "args"})
        for (const json& a : decode::array(podContainers[0], key))
          if (a.is_string()) command.push_back(a);
      evidence["command"] = command;
    }
    st["evidence"] = evidence;
    bool passed = st["phase"] == kStageSucceeded;
    plan.outcomes.push_back(
        {s.name, passed ? "succeeded" : "failed", stageDurationSeconds(st, o.nowUnix)});
    if (passed) {
      if (!evidence["closureHash"].get<std::string>().empty())
        status["validatedClosureHash"] = evidence["closureHash"];
      return GateJobStep::kPassed;
    }
    sum.phase = kPhaseFailed;
    sum.readyReason = sum.stalledReason = kReasonGateFailed;
    sum.readyMessage = sum.stalledMessage =
        "stage " + quote(s.name) + " failed: " + st.value("message", "");
    return GateJobStep::kStop;
  }
  if (jobConditionTrue(*job, "Failed")) {
    auto failed = jobCondition(*job, "Failed");
    std::string reason = failed->value("reason", "");
    bool timedOut = reason == "DeadlineExceeded";
    std::string detail;
    std::string container = mainContainerOf(*job);
    for (const json* p : podsOfJob(o.pods, jobName)) {
      if (const json* t = terminatedState(*p, container)) {
        detail =
            "container " + quote(container) + " exited " + std::to_string(t->value("exitCode", -1));
        std::string msg = decode::string(*t, "message");
        if (!msg.empty()) detail += ": " + (msg.size() > 200 ? msg.substr(0, 200) + "…" : msg);
      }
    }
    // spec.verify.onStart: a failed check is the reason, its report the message.
    std::optional<std::string> verification;
    for (const json* p : podsOfJob(o.pods, jobName)) {
      if (!verification) verification = containerFailure(*p, /*verificationOnly=*/true);
    }
    if (verification) {
      const std::string message =
          "runtime verification failed (Job " + jobName + "): " + *verification;
      st["phase"] = kStageFailed;
      st["message"] = message;
      std::string when = failed->value("lastTransitionTime", "");
      st["finishedAt"] = when.empty() ? o.now : when;
      st["evidence"] = {{"package", r.spec.package}, {"jobUID", jobUid}};
      plan.outcomes.push_back({s.name, "failed", stageDurationSeconds(st, o.nowUnix)});
      sum.phase = kPhaseFailed;
      sum.readyReason = sum.stalledReason = kReasonRuntimeVerificationFailed;
      sum.readyMessage = sum.stalledMessage = "stage " + quote(s.name) + " " + message;
      return GateJobStep::kStop;
    }
    std::string message = timedOut ? "timed out after " +
                                         std::to_string(s.gate ? s.gate->timeoutSeconds()
                                                               : v1::kDefaultGateTimeoutSeconds) +
                                         "s (Job " + jobName + ": DeadlineExceeded)"
                                   : "Job " + jobName + " failed (" + reason + ": " +
                                         failed->value("message", "") + ")";
    if (!detail.empty()) message += "; " + detail;
    st["phase"] = kStageFailed;
    st["message"] = message;
    std::string when = failed->value("lastTransitionTime", "");
    st["finishedAt"] = when.empty() ? o.now : when;
    st["evidence"] = {{"package", r.spec.package}, {"jobUID", jobUid}};
    plan.outcomes.push_back(
        {s.name, timedOut ? "timed_out" : "failed", stageDurationSeconds(st, o.nowUnix)});
    sum.phase = kPhaseFailed;
    sum.readyReason = sum.stalledReason = timedOut ? kReasonGateTimedOut : kReasonGateFailed;
    sum.readyMessage = sum.stalledMessage = "stage " + quote(s.name) + " " + message;
    return GateJobStep::kStop;
  }
  // Still running (SuccessCriteriaMet / FailureTarget are not final).
  sum.reconciling = true;
  sum.readyReason = kReasonGateRunning;
  sum.readyMessage = "stage " + quote(s.name) + ": Job " + jobName + " is running";
  return GateJobStep::kStop;
}

}  // namespace lockstep::controllers
