#include "controllers/modelrelease/serving_health.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/runtime_pod.h"
#include "operator/kube/views.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;

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
  const bool sharedWithCanary = !s.canaryRelease.empty() && s.canaryRelease != r.meta.name;
  for (const kube::ObjectPtr& p : s.pods) {
    const kube::PodView pod = kube::viewPod(*p);
    if (sharedWithCanary && pod.ready && !pod.terminating() &&
        pod.meta.labels.get(v1::kTrackLabel) == "canary" &&
        pod.meta.labels.get(v1::kReleaseLabel) == s.canaryRelease) {
      ++h.canaryReady;
      continue;
    }
    if (pod.meta.labels.get(v1::kTrackLabel) != "stable" ||
        pod.meta.labels.get(v1::kReleaseLabel) != r.meta.name || pod.terminating())
      continue;
    if (verificationFailure.empty()) {
      if (auto why = containerFailure(*p, /*verificationOnly=*/true))
        verificationFailure =
            "stable pod " + std::string(pod.meta.name) + ": runtime verification failed: " + *why;
    }
    if (!pod.ready) continue;
    const std::string_view podHash = pod.meta.annotations.get(v1::kClosureHashAnnotation);
    const std::string_view podPackage = pod.meta.annotations.get(kPackageAnnotation);
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
  if (sharedWithCanary) {
    h.message = std::to_string(std::min(h.ready + h.canaryReady, h.want)) + "/" +
                std::to_string(h.want) + " pods Ready (stable, and the canary of " +
                s.canaryRelease + ")";
  } else {
    h.message = std::to_string(h.ready) + "/" + std::to_string(h.want) + " stable pods Ready";
  }
  if (!h.healthy() && !verificationFailure.empty()) h.message += "; " + verificationFailure;
  return h;
}

}  // namespace lockstep::controllers
