#include "controllers/modelrelease/serving_health.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/common/verify_containers.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using nlohmann::json;

constexpr const char* kPackageAnnotation = "lockstep.dev/package";

bool ready(const json& pod) {
  for (const json& c : decode::array(decode::object(pod, "status"), "conditions")) {
    if (decode::string(c, "type") == "Ready") return decode::string(c, "status") == "True";
  }
  return false;
}

}  // namespace

ServingHealth servingHealth(const v1::ModelRelease& r, const ServingObserved& s) {
  ServingHealth h;
  const v1::Stage* stage = r.prodStage();
  h.want = s.modelReplicas > 0                  ? s.modelReplicas
           : stage != nullptr && stage->serving ? static_cast<int>(stage->serving->replicas)
                                                : 1;
  h.onRelease = s.stableRelease == r.meta.name;
  // The pair stable runs for this release: its package and the pinned closure
  // hash (status.runtime; the package's own before anything was pinned).
  const std::string hash = r.status.runtime ? r.status.runtime->closureHash : r.spec.closureHash;
  std::string verificationFailure;  // the first stable pod of the release failing its onStart check
  for (const json& p : s.pods) {
    const json& meta = decode::object(p, "metadata");
    const json& labels = decode::object(meta, "labels");
    const json& annotations = decode::object(meta, "annotations");
    if (decode::string(labels, v1::kTrackLabel) != "stable" ||
        decode::string(labels, v1::kReleaseLabel) != r.meta.name ||
        !decode::string(meta, "deletionTimestamp").empty())
      continue;
    if (verificationFailure.empty()) {
      if (auto why = containerFailure(p, /*verificationOnly=*/true))
        verificationFailure =
            "stable pod " + decode::string(meta, "name") + ": runtime verification failed: " + *why;
    }
    if (!ready(p)) continue;
    const std::string podHash =
        decode::string(annotations, std::string(v1::kClosureHashAnnotation));
    const std::string podPackage = decode::string(annotations, kPackageAnnotation);
    if ((!podHash.empty() && podHash != hash) ||
        (!podPackage.empty() && podPackage != r.spec.package))
      continue;
    ++h.ready;
  }
  if (!h.onRelease) {
    h.message = s.stableRelease.empty()
                    ? "the stable Deployment does not exist or has no release template"
                    : "the stable Deployment runs " + s.stableRelease + ", not " + r.meta.name;
    if (h.ready > 0) h.message += " (" + std::to_string(h.ready) + " pod(s) of it still Ready)";
    return h;
  }
  h.message = std::to_string(h.ready) + "/" + std::to_string(h.want) + " stable pods Ready";
  if (!h.healthy() && !verificationFailure.empty()) h.message += "; " + verificationFailure;
  return h;
}

}  // namespace lockstep::controllers
