#include "controllers/modelrelease/gates/fleet_check.h"

#include "api/v1alpha1/canary_status.h"
#include "controllers/modelrelease/gates/evidence_stage.h"
#include "evidence/statement.h"

namespace lockstep::controllers {

using nlohmann::json;
namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;

std::string FleetCheckRequest::key() const {
  json j{{"kind", "fleet"}, {"stage", stage}, {"package", package}, {"policy", trustPolicy}};
  return evidence::sha256Digest(j.dump());
}

json fleetAnswerJson(const std::string& stage, const FleetCheckObserved& answer) {
  json fleet = answer.result.toJson();
  fleet["cluster"] = answer.cluster;
  if (!answer.unavailable.empty()) {
    fleet["reason"] = kReasonRegistryUnavailable;
    fleet["message"] = answer.unavailable;
  }
  const bool passed = answer.unavailable.empty() && answer.result.mayStart();
  json out{{"stage", stage},
           {"key", answer.key},
           {"passed", passed},
           {"message", fleet["message"]},
           {"checkedAt", answer.checkedAt},
           {"retryAfterSeconds", answer.retryAfterSeconds},
           {"fleet", fleet}};
  if (fleet.contains("reason")) out["reason"] = fleet["reason"];
  return out;
}

std::optional<FleetCheckObserved> fleetAnswerOf(const json& status, const std::string& stage) {
  for (const json& e : decode::array(status, "evidenceChecks")) {
    if (!e.is_object() || e.value("stage", "") != stage) continue;
    const json* fleet = decode::member(e, "fleet");
    const json* key = decode::member(e, "key");
    if (fleet == nullptr || key == nullptr || !key->is_string()) return std::nullopt;
    auto result = evidence::FleetPermitResult::fromJson(*fleet);
    if (!result.isOk()) return std::nullopt;
    FleetCheckObserved a;
    a.key = key->get<std::string>();
    a.cluster = decode::string(*fleet, "cluster");
    a.result = *result;
    if (a.result.reason == kReasonRegistryUnavailable) a.unavailable = a.result.message;
    a.checkedAt = e.value("checkedAt", "");
    a.retryAfterSeconds = e.value("retryAfterSeconds", int64_t{30});
    return a;
  }
  return std::nullopt;
}

std::optional<FleetCheckRequest> fleetCheckRequest(const v1::ModelRelease& release) {
  const v1::Stage* prod = release.prodStage();
  if (prod == nullptr || !prod->fleet) return std::nullopt;
  return FleetCheckRequest{prod->name, release.spec.package, prod->fleet->trustPolicy};
}

std::optional<FleetCheckRequest> pendingFleetRequest(const json& release) {
  if (decode::member(decode::object(release, "metadata"), "deletionTimestamp") != nullptr)
    return std::nullopt;
  const v1::ModelRelease r = v1::decodeModelRelease(release);
  std::optional<FleetCheckRequest> request = fleetCheckRequest(r);
  if (!request) return std::nullopt;
  const json& status = decode::object(release, "status");
  // Only once the planner asked (it reached the serving stage).
  bool asked = false;
  for (const json& st : decode::array(status, "stages")) {
    if (decode::string(st, "name") == request->stage)
      asked = decode::string(decode::object(st, "fleetRequest"), "key") == request->key();
  }
  if (!asked) return std::nullopt;
  const std::string phase = decode::string(status, "phase");
  const std::optional<FleetCheckObserved> answer = fleetAnswerOf(status, request->stage);
  const bool current = answer && answer->key == request->key() && answer->unavailable.empty();
  // An abort is final (the registry is append-only); a settled answer cannot change.
  if (current && (answer->result.aborted || answer->result.settled)) return std::nullopt;
  if (phase == v1::kPhasePromoted) return request;
  if (phase.empty() || phase == v1::kPhasePending || phase == v1::kPhaseEvaluating ||
      phase == v1::kPhaseTesting || phase == v1::kPhaseCanary)
    return request;
  return std::nullopt;
}

std::optional<std::string> concernedFleetAbort(const v1::ModelRelease& r) {
  std::optional<FleetCheckRequest> request = fleetCheckRequest(r);
  if (!request) return std::nullopt;
  const std::optional<FleetCheckObserved> answer =
      fleetAnswerOf(json{{"evidenceChecks", r.status.evidenceChecks}}, request->stage);
  if (!answer || answer->key != request->key() || !answer->unavailable.empty() ||
      !answer->result.aborted || !answer->result.concerned)
    return std::nullopt;
  return answer->result.message;
}

std::string fleetRollbackBy(const v1::ModelRelease& prod, const std::string& candidate) {
  if (candidate.empty() || prod.meta.name == candidate) return "";
  if (prod.status.canary.orEmpty().knownGoodRelease() != candidate) return "";
  std::optional<FleetCheckRequest> request = fleetCheckRequest(prod);
  if (!request || !concernedFleetAbort(prod)) return "";
  const std::optional<FleetCheckObserved> answer =
      fleetAnswerOf(json{{"evidenceChecks", prod.status.evidenceChecks}}, request->stage);
  const std::string rollout = answer && answer->result.abort ? answer->result.abort->rollout : "";
  return "fleet abort of rollout " + (rollout.empty() ? std::string("(unnamed)") : rollout);
}

}  // namespace lockstep::controllers
