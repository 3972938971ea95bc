#include "controllers/modelrelease/gates/evidence_stage_plan.h"

#include "api/v1alpha1/conditions.h"

namespace lockstep::controllers {

using nlohmann::json;
namespace v1 = api::v1alpha1;

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

bool planEvidenceStage(const ReleaseObserved& o, const v1::ModelRelease& r, const v1::Stage& s,
                       const std::string& closureHash, const std::string& runtimeImage,
                       json& status, json& st, ReleaseSummary& sum, ReleasePlan& plan) {
  const std::string name = "stage " + quote(s.name);
  auto request = evidenceCheckRequest(r, s, closureHash, runtimeImage);
  if (!request.isOk()) {
    st["phase"] = v1::kStageFailed;
    st["message"] = request.status().message();
    sum.phase = v1::kPhaseFailed;
    sum.readyReason = sum.stalledReason = v1::kReasonInvalidSpec;
    sum.readyMessage = sum.stalledMessage = name + ": " + request.status().message();
    return false;
  }
  const std::string previous = st.value("phase", v1::kStagePending);
  if (previous != v1::kStageRunning) {
    st["phase"] = v1::kStageRunning;
    st["startedAt"] = o.now;
  }
  sum.reconciling = true;
  const std::string key = request->key();
  st["evidenceRequest"] = evidenceRequestJson(*request, runtimeImage);
  const std::optional<EvidenceCheckObserved> answer =
      o.evidence ? o.evidence : evidenceAnswerOf(status, s.name);
  if (!answer || answer->key != key) {
    plan.evidenceCheck = *request;
    st["message"] = "reading the evidence of stage" +
                    std::string(s.evidence->stages.size() == 1 ? " " : "s ") +
                    joined(s.evidence->stages) + " from the registry";
    sum.readyReason = v1::kReasonCheckingEvidence;
    sum.readyMessage = name + ": " + st["message"].get<std::string>();
    return false;
  }
  const evidence::StageEvidenceResult& result = answer->result;
  if (!result.passed) {
    plan.evidenceCheck = *request;
    const std::string before = st.value("message", "");
    st["message"] = result.message;
    st["reason"] = result.reason;
    sum.readyReason = result.reason;
    sum.readyMessage = name + " holds: " + result.message;
    plan.requeueAfterSeconds = answer->retryAfterSeconds;
    if (before != result.message)
      plan.events.push_back({"Warning", result.reason, sum.readyMessage});
    return false;
  }
  st["phase"] = v1::kStageSucceeded;
  st["finishedAt"] = o.now;
  st["message"] = result.message;
  st.erase("reason");
  const json statements = result.toJson().at("statements");
  st["evidence"] = {{"package", r.spec.package},
                    {"closureHash", closureHash},
                    {"image", runtimeImage},
                    {"trustPolicy", s.evidence->trustPolicy},
                    {"statements", statements}};
  plan.events.push_back({"Normal", v1::kReasonEvidenceVerified, name + ": " + result.message});
  plan.outcomes.push_back({s.name, "succeeded", stageDurationSeconds(st, o.nowUnix)});
  if (!closureHash.empty()) status["validatedClosureHash"] = closureHash;
  return true;
}

}  // namespace lockstep::controllers
