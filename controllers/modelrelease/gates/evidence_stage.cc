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
