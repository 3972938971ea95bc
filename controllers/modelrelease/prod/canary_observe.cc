#include "controllers/modelrelease/prod/canary_observe.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/runtime_env.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/gates/fleet_check.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "operator/kube/views.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using api::v1alpha1::kReleaseLabel;
using kube::DeploymentView;
using kube::PodView;
using nlohmann::json;

// Ready pods of `release` on `track` among `pods` (countReadyPods), each
// decoded once (kube::PodView): observeCanary runs in every reconcile of a
// release in prod, and copying the model's pods was a third of its time.
int countReady(const std::vector<PodView>& pods, const std::string& track,
               const std::string& release) {
  std::map<std::string_view, size_t> terminatingOn;
  for (const PodView& p : pods) {
    if (p.terminating() && !p.nodeName.empty()) ++terminatingOn[p.nodeName];
  }
  // Each terminating pod hides one Ready pod of its node, the youngest (its
  // replacement), never the node's other pods.
  std::map<std::string_view, std::vector<const PodView*>> readyBeside;
  if (!terminatingOn.empty()) {
    for (const PodView& p : pods) {
      if (!p.terminating() && p.ready && terminatingOn.count(p.nodeName) != 0)
        readyBeside[p.nodeName].push_back(&p);
    }
  }
  std::set<const PodView*> hidden;
  for (auto& [node, ready] : readyBeside) {
    auto key = [](const PodView* p) {
      return std::make_pair(p->meta.creationTimestamp, p->meta.name);
    };
    std::sort(ready.begin(), ready.end(),
              [&](const PodView* a, const PodView* b) { return key(a) > key(b); });
    const size_t n = std::min(terminatingOn[node], ready.size());
    hidden.insert(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(n));
  }
  int n = 0;
  for (const PodView& p : pods) {
    if (p.meta.labels.get(kTrackLabel) != track || p.meta.labels.get(kReleaseLabel) != release)
      continue;
    if (p.terminating() || !p.ready || hidden.count(&p) != 0) continue;
    ++n;
  }
  return n;
}

std::string templateReleaseOf(const DeploymentView& d) {
  return std::string(d.templateLabels.get(kReleaseLabel));
}

}  // namespace

int countReadyPods(const std::vector<json>& pods, const std::string& track,
                   const std::string& release) {
  std::vector<PodView> views;
  views.reserve(pods.size());
  for (const json& p : pods) views.push_back(kube::viewPod(p));
  return countReady(views, track, release);
}

std::string templateRelease(const kube::Object* deployment) {
  if (deployment == nullptr) return "";
  return templateReleaseOf(kube::viewDeployment(*deployment));
}

int specReplicas(const kube::Object* deployment) {
  if (deployment == nullptr) return 0;
  return static_cast<int>(kube::viewDeployment(*deployment).replicas());
}

namespace {

// The message of a ReplicaFailure (FailedCreate: e.g. refused by admission) the
// Deployment controller copied from the canary's ReplicaSet.
std::vector<std::string> replicaFailures(const std::optional<DeploymentView>& deployment) {
  std::vector<std::string> out;
  // Not yet about the template the spec holds now.
  if (!deployment || deployment->observedGeneration < deployment->meta.generation) return out;
  for (const kube::ConditionView& c : deployment->conditions) {
    if (c.type == "ReplicaFailure" && c.isTrue())
      out.push_back(std::string(c.reason) + ": " + std::string(c.message));
  }
  return out;
}

// Pending with PodScheduled=False; with `forLackOf`, only when the scheduler
// said some node lacks a resource ("0/5 nodes are available: 2 Insufficient
// nvidia.com/gpu, ..."), i.e. when freeing a pod's resources could help
// (not when every node is cordoned or tainted).
bool unschedulable(const PodView& p, bool forLackOf) {
  if (p.terminating() || p.phase != "Pending" || !p.unschedulable) return false;
  return !forLackOf || p.scheduleFailureMessage.find("Insufficient ") != std::string_view::npos;
}

// The known-good's stable pods could not be re-created: they run on its pinned
// pair (prod_plan.cc servingReleaseOf), so only when that pair is no longer a
// recorded revision pinned by it (docs/contracts.md, "Admission by revision";
// a RuntimeEnv without revisions admits its current hash only).
bool rollbackTargetStale(const v1::RuntimeEnv& env, const v1::ModelRelease& kg) {
  const std::string& hash = env.status.closureHash;
  if (env.status.revisions.empty()) return !hash.empty() && hash != kg.spec.closureHash;
  auto pair = v1::runtimeOf(kg.status.runtime, env.status.revisions, env.status.currentRevision,
                            kg.spec.closureHash, kg.spec.runtimeImage);
  if (!pair) return true;
  const int64_t n = v1::recordedRevision(env.status.revisions, *pair);
  if (n == env.status.currentRevision) return false;
  for (const v1::RuntimeRevision& rev : env.status.revisions) {
    if (rev.number == n &&
        std::find(rev.pinnedBy.begin(), rev.pinnedBy.end(), kg.meta.name) != rev.pinnedBy.end())
      return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> admissionRefusalsOf(const kube::Object* deployment) {
  if (deployment == nullptr) return {};
  return replicaFailures(kube::viewDeployment(*deployment));
}

CanaryObserved observeCanary(const v1::ModelRelease& release, const v1::CanarySpec& spec,
                             const ProdObserved& prod, const std::string& now, int64_t nowUnix,
                             const std::set<std::string>& editedTracks) {
  const std::string& name = release.meta.name;
  // The serving objects, each decoded once (the views point into the cached objects).
  std::optional<DeploymentView> canaryDep, stableDep;
  if (prod.canaryDeployment) canaryDep = kube::viewDeployment(*prod.canaryDeployment);
  if (prod.stableDeployment) stableDep = kube::viewDeployment(*prod.stableDeployment);
  auto replicasOf = [](const std::optional<DeploymentView>& d) {
    return d ? static_cast<int>(d->replicas()) : 0;
  };
  std::vector<PodView> pods;
  pods.reserve(prod.pods.size());
  for (const auto& p : prod.pods) pods.push_back(kube::viewPod(*p));

  CanaryObserved co;
  co.spec = spec;
  co.release = name;
  co.model = release.spec.model;
  co.package = release.spec.package;
  co.closureHash = release.spec.closureHash;
  co.previous = release.status.canary;
  co.progress = prod.progress;
  co.stableRelease = stableDep ? templateReleaseOf(*stableDep) : "";
  // A canary Deployment still carrying the displaced release: its pods are
  // that release's, and this release's canary starts from zero pods.
  const std::string canaryTemplate = canaryDep ? templateReleaseOf(*canaryDep) : "";
  const bool displaced = !canaryTemplate.empty() && canaryTemplate != name;
  co.canary.specReplicas = displaced ? 0 : replicasOf(canaryDep);
  co.canary.readyReplicas = countReady(pods, kTrackCanary, name);
  if (displaced) {
    co.displacedRelease = canaryTemplate;
    co.displaced = {replicasOf(canaryDep), countReady(pods, kTrackCanary, canaryTemplate)};
  }
  co.stable.specReplicas = replicasOf(stableDep);
  co.stable.readyReplicas =
      co.stableRelease.empty() ? 0 : countReady(pods, kTrackStable, co.stableRelease);
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodView& p = pods[i];
    const json& object = *prod.pods[i];
    if (p.terminating()) ++co.podsTerminating;
    const std::string_view track = p.meta.labels.get(kTrackLabel);
    const std::string_view of = p.meta.labels.get(kReleaseLabel);
    if (track == kTrackStable && !co.stableRelease.empty() && of == co.stableRelease &&
        unschedulable(p, /*forLackOf=*/true))
      ++co.stablePendingUnschedulable;
    if (track == kTrackStable && !co.stableVerificationFailure && !co.stableRelease.empty() &&
        of == co.stableRelease) {
      if (auto why = containerFailure(object, true))
        co.stableVerificationFailure = "stable pod " + std::string(p.meta.name) + " (release " +
                                       std::string(of) + "): runtime verification failed: " + *why;
    }
    // This release's pods: on the canary track, and on the stable track once
    // its promotion handed the stable Deployment over (a Promoted release's
    // plan never reads these).
    if (of != name || (track != kTrackCanary && track != kTrackStable)) continue;
    co.canaryRestarts += static_cast<int>(p.restarts());
    if (track == kTrackCanary && unschedulable(p, /*forLackOf=*/false))
      ++co.canaryPendingUnschedulable;
    if (!co.verificationFailure) co.verificationFailure = containerFailure(object, true);
  }
  if (canaryTemplate == name && editedTracks.count(kTrackCanary) == 0)
    co.admissionRefusals = replicaFailures(canaryDep);
  if (co.stableRelease == name && editedTracks.count(kTrackStable) == 0) {
    for (std::string& f : replicaFailures(stableDep)) co.admissionRefusals.push_back(std::move(f));
  }
  const v1::Model model = prod.model ? v1::decodeModel(*prod.model) : v1::Model{};
  const std::string promoted = model.promoted();
  if (!promoted.empty() && promoted != name) {
    co.knownGood =
        KnownGood{promoted, model.status.prod->package, model.status.prod->runtime.closureHash};
    if (auto kg = prod.releases.find(promoted); kg != prod.releases.end() && kg->second) {
      const v1::ModelRelease known = v1::decodeModelRelease(*kg->second);
      const std::string& env = known.spec.runtimeEnvName;
      if (auto rte = prod.runtimeEnvs.find(env); rte != prod.runtimeEnvs.end() && rte->second) {
        co.knownGoodStale = rollbackTargetStale(v1::decodeRuntimeEnv(*rte->second), known);
      }
    }
  }
  const int step =
      co.previous.get() != nullptr ? static_cast<int>(co.previous.get()->step.value_or(0)) : 0;
  co.promoteStepBy = release.annotation(v1::kPromoteAnnotationPrefix + std::to_string(step));
  co.promoteFullBy = release.annotation(v1::kPromoteFullAnnotation);
  co.abortBy = release.annotation(v1::kAbortAnnotation);
  co.fleetAbort = concernedFleetAbort(release);
  co.releaseDeleted = prod.releaseDeleted;
  co.gpu = prod.gpu;
  co.measurement = prod.measurement;
  co.now = now;
  co.nowUnix = nowUnix;
  return co;
}

}  // namespace lockstep::controllers
