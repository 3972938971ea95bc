#include "controllers/modelrelease/gates/fleet_permit_plan.h"

#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/gates/evidence_stage.h"
#include "controllers/modelrelease/gates/fleet_check.h"

namespace lockstep::controllers {

using nlohmann::json;
namespace v1 = api::v1alpha1;

bool planFleetPermit(const ReleaseObserved& o, const v1::ModelRelease& r, const v1::Stage& s,
                     const std::string& waitingPhase, json& status, json& st, ReleaseSummary& sum,
                     ReleasePlan& plan) {
  const std::string name = "stage " + quote(s.name);
  const std::optional<FleetCheckRequest> request = fleetCheckRequest(r);
  if (!request) return true;
  const std::string key = request->key();
  st["fleetRequest"] = {{"key", key}, {"trustPolicy", request->trustPolicy}};
  const std::optional<FleetCheckObserved> answer =
      o.fleet ? o.fleet : fleetAnswerOf(status, s.name);
  sum.phase = waitingPhase;
  if (!answer || answer->key != key) {
    st["message"] = "reading the fleet's wave permits from the registry";
    sum.readyReason = evidence::kReasonWaitingForPermit;
    sum.readyMessage = name + " (the canary) waits: " + st["message"].get<std::string>();
    return false;
  }
  const evidence::FleetPermitResult& result = answer->result;
  if (!answer->unavailable.empty()) {
    st["message"] = answer->unavailable;
    sum.readyReason = kReasonRegistryUnavailable;
    sum.readyMessage = name +
                       " (the canary) waits for its wave permit: the registry cannot be "
                       "read (" +
                       answer->unavailable + "); nothing starts without a permit";
    plan.requeueAfterSeconds = answer->retryAfterSeconds;
    return false;
  }
  if (result.aborted) {
    // Nothing of this package started here: the release ends, no pod made.
    st["phase"] = v1::kStageFailed;
    st["message"] = result.message;
    st["finishedAt"] = o.now;
    sum.phase = v1::kPhaseFailed;
    sum.readyReason = sum.stalledReason = evidence::kReasonFleetAborted;
    sum.readyMessage = sum.stalledMessage = name + " never started: " + result.message;
    plan.events.push_back({"Warning", evidence::kReasonFleetAborted, sum.readyMessage});
    return false;
  }
  if (!result.permitted) {
    const std::string before = st.value("message", "");
    st["message"] = result.message;
    sum.readyReason = result.reason.empty() ? evidence::kReasonWaitingForPermit : result.reason;
    sum.readyMessage = name + " (the canary) waits for its wave permit: " + result.message;
    plan.requeueAfterSeconds = answer->retryAfterSeconds;
    if (before != result.message && result.reason != evidence::kReasonWaitingForPermit)
      plan.events.push_back({"Warning", sum.readyReason, sum.readyMessage});
    return false;
  }
  if (!st.contains("permit")) {
    json permit = result.toJson().at("permit");
    st["permit"] = permit;
    plan.events.push_back({"Normal", "WavePermitted", name + ": " + result.message});
  }
  return true;
}

}  // namespace lockstep::controllers
