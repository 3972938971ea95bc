#include "controllers/modelrelease/prod/canary_observe.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/runtime_env.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/gates/fleet_check.h"
#include "controllers/modelrelease/prod/serving_objects.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using api::v1alpha1::kReleaseLabel;
using nlohmann::json;

bool podReady(const json& pod) {
  const json& conditions = v1::decode::array(decode::object(pod, "status"), "conditions");
  for (const json& c : conditions) {
    if (decode::string(c, "type") == "Ready") return decode::string(c, "status") == "True";
  }
  return false;
}

bool terminating(const json& pod) {
  return !decode::string(decode::object(pod, "metadata"), "deletionTimestamp").empty();
}

}  // namespace

namespace {

// Ready pods of `release` on `track` among `pods` (countReadyPods), over the
// cached objects themselves: observeCanary runs in every reconcile of a release
// in prod, and copying the model's pods was a third of its time.
int countReady(const std::vector<const json*>& pods, const std::string& track,
               const std::string& release) {
  auto nodeOf = [](const json& p) { return decode::string(decode::object(p, "spec"), "nodeName"); };
  std::map<std::string, size_t> terminatingOn;
  for (const json* p : pods) {
    if (terminating(*p) && !nodeOf(*p).empty()) ++terminatingOn[nodeOf(*p)];
  }
  // Each terminating pod hides one Ready pod of its node, the youngest (its
  // replacement), never the node's other pods.
  std::map<std::string, std::vector<const json*>> readyBeside;
  if (!terminatingOn.empty()) {
    for (const json* p : pods) {
      if (!terminating(*p) && podReady(*p) && terminatingOn.count(nodeOf(*p)) != 0)
        readyBeside[nodeOf(*p)].push_back(p);
    }
  }
  std::set<const json*> hidden;
  for (auto& [node, ready] : readyBeside) {
    auto key = [](const json* p) {
      const json& meta = decode::object(*p, "metadata");
      return std::make_pair(decode::string(meta, "creationTimestamp"),
                            decode::string(meta, "name"));
    };
    std::sort(ready.begin(), ready.end(),
              [&](const json* a, const json* b) { return key(a) > key(b); });
    const size_t n = std::min(terminatingOn[node], ready.size());
    hidden.insert(ready.begin(), ready.begin() + static_cast<std::ptrdiff_t>(n));
  }
  int n = 0;
  for (const json* p : pods) {
    const json& labels = decode::object(decode::object(*p, "metadata"), "labels");
    if (decode::string(labels, kTrackLabel) != track ||
        decode::string(labels, kReleaseLabel) != release)
      continue;
    if (terminating(*p) || !podReady(*p) || hidden.count(p) != 0) continue;
    ++n;
  }
  return n;
}

}  // namespace

int countReadyPods(const std::vector<json>& pods, const std::string& track,
                   const std::string& release) {
  std::vector<const json*> ptrs;
  ptrs.reserve(pods.size());
  for (const json& p : pods) ptrs.push_back(&p);
  return countReady(ptrs, track, release);
}

std::string templateRelease(const kube::Object* deployment) {
  if (deployment == nullptr) return "";
  return deployment->value("/spec/template/metadata/labels/lockstep.dev~1release"_json_pointer,
                           std::string());
}

int specReplicas(const kube::Object* deployment) {
  if (deployment == nullptr) return 0;
  return deployment->value("/spec/replicas"_json_pointer, 1);
}

namespace {

// The message of a ReplicaFailure (FailedCreate: e.g. refused by admission) the
// Deployment controller copied from the canary's ReplicaSet.
std::vector<std::string> replicaFailures(const kube::Object* deployment) {
  std::vector<std::string> out;
  if (deployment == nullptr) return out;
  for (const json& c : deployment->value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "ReplicaFailure" && c.value("status", "") == "True")
      out.push_back(c.value("reason", "") + ": " + c.value("message", ""));
  }
  return out;
}

// Pending with PodScheduled=False; with `forLackOf`, only when the scheduler
// said some node lacks a resource ("0/5 nodes are available: 2 Insufficient
// nvidia.com/gpu, ..."), i.e. when freeing a pod's resources could help
// (not when every node is cordoned or tainted).
bool unschedulable(const json& p, bool forLackOf) {
  const json& status = decode::object(p, "status");
  if (terminating(p) || decode::string(status, "phase") != "Pending") return false;
  for (const json& c : decode::array(status, "conditions")) {
    if (decode::string(c, "type") == "PodScheduled" && decode::string(c, "status") == "False")
      return !forLackOf || decode::string(c, "message").find("Insufficient ") != std::string::npos;
  }
  return false;
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

CanaryObserved observeCanary(const v1::ModelRelease& release, const v1::CanarySpec& spec,
                             const ProdObserved& prod, const std::string& now, int64_t nowUnix) {
  const std::string& name = release.meta.name;
  const kube::Object* canaryDep = prod.canaryDeployment.get();
  const kube::Object* stableDep = prod.stableDeployment.get();
  std::vector<const json*> pods;  // the cached objects, not copies
  pods.reserve(prod.pods.size());
  for (const auto& p : prod.pods) pods.push_back(p.get());

  CanaryObserved co;
  co.spec = spec;
  co.release = name;
  co.model = release.spec.model;
  co.package = release.spec.package;
  co.closureHash = release.spec.closureHash;
  co.previous = release.status.canary;
  co.stableRelease = templateRelease(stableDep);
  // A canary Deployment still carrying the displaced release: its pods are
  // that release's, and this release's canary starts from zero pods.
  const std::string canaryTemplate = templateRelease(canaryDep);
  const bool displaced = !canaryTemplate.empty() && canaryTemplate != name;
  co.canary.specReplicas = displaced ? 0 : specReplicas(canaryDep);
  co.canary.readyReplicas = countReady(pods, kTrackCanary, name);
  if (displaced) {
    co.displacedRelease = canaryTemplate;
    co.displaced = {specReplicas(canaryDep), countReady(pods, kTrackCanary, canaryTemplate)};
  }
  co.stable.specReplicas = specReplicas(stableDep);
  co.stable.readyReplicas =
      co.stableRelease.empty() ? 0 : countReady(pods, kTrackStable, co.stableRelease);
  for (const json* pod : pods) {
    const json& p = *pod;
    if (terminating(p)) ++co.podsTerminating;
    const json& labels = decode::object(decode::object(p, "metadata"), "labels");
    const std::string track = decode::string(labels, kTrackLabel);
    const std::string of = decode::string(labels, kReleaseLabel);
    if (track == kTrackStable && !co.stableRelease.empty() && of == co.stableRelease &&
        unschedulable(p, /*forLackOf=*/true))
      ++co.stablePendingUnschedulable;
    if (track == kTrackStable && !co.stableVerificationFailure && !co.stableRelease.empty() &&
        of == co.stableRelease) {
      if (auto why = containerFailure(p, true))
        co.stableVerificationFailure =
            "stable pod " + decode::string(decode::object(p, "metadata"), "name") + " (release " +
            of + "): runtime verification failed: " + *why;
    }
    // This release's pods: on the canary track, and on the stable track once
    // its promotion handed the stable Deployment over (a Promoted release's
    // plan never reads these).
    if (of != name || (track != kTrackCanary && track != kTrackStable)) continue;
    for (const json& cs : decode::array(decode::object(p, "status"), "containerStatuses"))
      co.canaryRestarts += static_cast<int>(decode::integer(cs, "restartCount", 0));
    if (track == kTrackCanary && unschedulable(p, /*forLackOf=*/false))
      ++co.canaryPendingUnschedulable;
    if (!co.verificationFailure) co.verificationFailure = containerFailure(p, true);
  }
  if (templateRelease(canaryDep) == name) co.admissionRefusals = replicaFailures(canaryDep);
  if (co.stableRelease == name) {
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
