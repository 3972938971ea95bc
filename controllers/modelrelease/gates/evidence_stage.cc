#include "controllers/modelrelease/gates/evidence_stage.h"

#include "api/image_ref.h"
#include "evidence/statement.h"

namespace lockstep::controllers {

using nlohmann::json;

std::string EvidenceCheckRequest::key() const {
  const evidence::EvidenceRequirement& w = requirement;
  json j{{"stage", stage},
         {"package", package},
         {"stages", w.stages},
         {"specDigests", w.specDigests},
         {"closureHash", w.closureHash},
         {"image", w.runtimeImageDigest},
         {"policy", w.policyName}};
  return evidence::sha256Digest(j.dump());
}

json evidenceAnswerJson(const std::string& stage, const EvidenceCheckObserved& answer) {
  json out = answer.result.toJson();
  out["stage"] = stage;
  out["key"] = answer.key;
  out["checkedAt"] = answer.checkedAt;
  out["retryAfterSeconds"] = answer.retryAfterSeconds;
  return out;
}

std::optional<EvidenceCheckObserved> evidenceAnswerOf(const json& status,
                                                      const std::string& stage) {
  if (!status.is_object() || !status.contains("evidenceChecks") ||
      !status["evidenceChecks"].is_array())
    return std::nullopt;
  for (const json& e : status["evidenceChecks"]) {
    if (!e.is_object() || e.value("stage", "") != stage) continue;
    if (!e.contains("key") || !e["key"].is_string() || !e.contains("passed") ||
        !e["passed"].is_boolean())
      return std::nullopt;
    EvidenceCheckObserved a;
    a.key = e["key"].get<std::string>();
    a.result.passed = e["passed"].get<bool>();
    a.result.reason = e.value("reason", "");
    a.result.message = e.value("message", "");
    a.checkedAt = e.value("checkedAt", "");
    a.retryAfterSeconds = e.value("retryAfterSeconds", int64_t{30});
    if (e.contains("statements") && e["statements"].is_array()) {
      for (const json& f : e["statements"]) {
        if (!f.is_object()) continue;
        a.result.statements.push_back({f.value("stage", ""), f.value("predicateType", ""),
                                       f.value("payloadDigest", ""), f.value("referrer", ""),
                                       f.value("signedBy", ""), f.value("specDigest", "")});
      }
    }
    return a;
  }
  return std::nullopt;
}

json evidenceRequestJson(const EvidenceCheckRequest& request, const std::string& runtimeImage) {
  return {{"key", request.key()},
          {"closureHash", request.requirement.closureHash},
          {"image", runtimeImage}};
}

StatusOr<EvidenceCheckRequest> evidenceCheckRequest(const api::v1alpha1::ModelRelease& release,
                                                    const api::v1alpha1::Stage& stage,
                                                    const std::string& closureHash,
                                                    const std::string& runtimeImage) {
  auto ref = api::parseImageRef(release.spec.package);
  if (!ref.isOk() || ref->digest.empty())
    return invalidArgument("spec.package " + release.spec.package + " is not pinned by digest");
  EvidenceCheckRequest out;
  out.stage = stage.name;
  out.package = release.spec.package;
  evidence::EvidenceRequirement& w = out.requirement;
  w.packageName = ref->domain + "/" + ref->path;
  w.packageDigest = ref->digest;
  if (stage.evidence) {
    w.stages = stage.evidence->stages;
    w.specDigests = stage.evidence->specDigests;
    w.policyName = stage.evidence->trustPolicy;
  }
  w.closureHash = closureHash;
  const size_t at = runtimeImage.rfind('@');
  w.runtimeImageDigest = at == std::string::npos ? "" : runtimeImage.substr(at + 1);
  return out;
}

}  // namespace lockstep::controllers
