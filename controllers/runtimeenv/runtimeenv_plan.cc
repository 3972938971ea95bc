#include "controllers/runtimeenv/runtimeenv_plan.h"

#include <algorithm>

#include "api/image_ref.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_mirror.h"
#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/runtime_verify.h"
#include "closure/closure.h"
#include "closure/cuda.h"
#include "operator/kube/event_sink.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): the kinds' vocabulary
using kube::findCondition;
using kube::setCondition;

std::string numbers(const std::vector<RuntimeRevision>& revisions) {
  std::string out;
  for (const RuntimeRevision& r : revisions) {
    out += (out.empty() ? "" : ", ") + std::to_string(r.number);
  }
  return out;
}

// Writes status.revisions, currentRevision and pinnedRevisions; an Event for
// every new, restored or pruned revision.
void recordRevisions(const RevisionsPlan& plan, json& status,
                     std::vector<RuntimeEnvEvent>& events) {
  json list = json::array();
  for (const RuntimeRevision& r : plan.revisions) list.push_back(encodeRevision(r));
  status["revisions"] = std::move(list);
  if (plan.currentRevision > 0) {
    status["currentRevision"] = plan.currentRevision;
  } else {
    status.erase("currentRevision");
  }
  status["pinnedRevisions"] = plan.pinnedCount();
  auto describe = [&plan](int64_t number) {
    for (const RuntimeRevision& r : plan.revisions) {
      if (r.number == number) {
        return "revision " + std::to_string(number) + ": image " + r.image + ", closure " +
               r.closureHash;
      }
    }
    return "revision " + std::to_string(number);
  };
  if (plan.created > 0) {
    events.push_back({kube::kEventTypeNormal, kReasonRevisionCreated, describe(plan.created)});
  }
  if (plan.restored > 0) {
    events.push_back({kube::kEventTypeNormal, kReasonRevisionRestored,
                      describe(plan.restored) + " is current again"});
  }
  for (const RevisionsPlan::TruncatedPins& t : plan.truncatedPins) {
    if (!t.newly) continue;
    const bool current = t.revision == plan.currentRevision;
    events.push_back(
        {kube::kEventTypeWarning, api::v1alpha1::kReasonPinsTruncated,
         "revision " + std::to_string(t.revision) + " is pinned by " + std::to_string(t.pins) +
             " releases; status.revisions lists the first " +
             std::to_string(api::v1alpha1::kMaxPinnedByListed) + " and counts all (pinnedByCount)" +
             (current ? "; as the current revision it admits the pods of every release"
                      : "; the pods of the releases not listed are refused on it: split the "
                        "models over RuntimeEnvs or namespaces (docs/limits.md)")});
  }
  if (!plan.pruned.empty()) {
    events.push_back({kube::kEventTypeNormal, kReasonRevisionPruned,
                      "pruned unpinned revision(s) " + numbers(plan.pruned) +
                          " beyond spec.revisionHistoryLimit"});
  }
}

// Scheduled verification (runtimeenv_verification.h) of the current revision:
// status.verification, the Verified condition, its Jobs and closure ConfigMap.
void planVerificationInto(RuntimeEnvPlan& plan, const RuntimeEnvObserved& o, const RuntimeEnv& rte,
                          const LockResolution& r, const std::optional<ResolvedPair>& resolved,
                          const RevisionsPlan& revisions, json& status, const std::string& now) {
  VerificationInput in;
  in.runtimeEnv = o.runtimeEnv;
  in.spec = decodeVerifySpec(*o.runtimeEnv);
  if (kube::isBeingDeleted(*o.runtimeEnv)) in.spec.reset();
  if (resolved && r.ok) {
    in.revision = revisions.currentRevision;
    in.image = resolved->image;
    in.closureHash = resolved->closureHash;
    in.cuda = resolved->cuda;
    in.minDriver = resolved->minDriver;
    in.lockText = r.lockText;
    in.format = std::string(closure::formatName(r.closure.format));
    in.platform = r.closure.platform;
    in.environment = rte.spec.lock.environment;
  }
  in.nodes = o.nodes;
  in.jobs = o.verifyJobs;
  in.pods = o.verifyPods;
  in.closureConfigMaps = o.closureConfigMaps;
  for (const auto& rev : revisions.revisions) {
    if (rev.pinned()) in.pinnedRevisions.push_back(rev.number);
  }
  in.revisions = revisions.revisions;
  in.cliImage = o.cliImage;
  in.now = now;
  in.nowUnix = o.nowUnix;
  plan.verification = planVerification(in);
  const VerificationPlan& v = plan.verification;
  if (v.closureRevisions && v.closureRevisions->empty()) status.erase("closureRevisions");
  if (v.closureRevisions && !v.closureRevisions->empty())
    status["closureRevisions"] = *v.closureRevisions;
  if (v.status.is_null()) {
    status.erase("verification");
  } else {
    status["verification"] = v.status;
  }
  json& conditions = status["conditions"];
  if (v.verified) {
    kube::setCondition(conditions, *v.verified, rte.meta.generation, now);
  } else {
    conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                    [](const json& c) {
                                      return decode::string(c, "type") == kConditionVerified;
                                    }),
                     conditions.end());
  }
  for (const VerificationEvent& e : v.events) plan.events.push_back({e.type, e.reason, e.message});
}

// spec.mirror (runtimeenv_mirror.h): status.mirror, the Mirrored condition, the check.
void planMirrorInto(RuntimeEnvPlan& plan, const RuntimeEnvObserved& o, const RuntimeEnv& rte,
                    const LockResolution& r, int64_t currentRevision, json& status,
                    const std::string& now) {
  MirrorInput in;
  auto spec = decodeMirrorSpec(*o.runtimeEnv);
  if (spec.isOk()) {
    in.spec = *spec;
  } else {
    in.specError = spec.status().message();
  }
  in.beingDeleted = kube::isBeingDeleted(*o.runtimeEnv);
  in.name = rte.meta.name;
  in.revision = currentRevision;
  if (r.ok) {
    in.closure = &r.closure;
    in.closureHash = r.closure.closureHash;
  }
  in.previousStatus = status.contains("mirror") ? status["mirror"] : json();
  json& conditions = status["conditions"];
  if (auto c = findCondition(conditions, kConditionMirrored)) in.previousCondition = *c;
  in.latest = o.mirrorLatest;
  in.nowUnix = o.nowUnix;
  plan.mirror = planMirrorCheck(in);
  const MirrorPlan& m = plan.mirror;
  if (m.keep) return;
  if (m.status.is_null()) {
    status.erase("mirror");
  } else {
    status["mirror"] = m.status;
  }
  if (m.mirrored) {
    setCondition(conditions, *m.mirrored, rte.meta.generation, now);
  } else {
    conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                    [](const json& c) {
                                      return decode::string(c, "type") == kConditionMirrored;
                                    }),
                     conditions.end());
  }
  for (const MirrorEvent& e : m.events) plan.events.push_back({e.type, e.reason, e.message});
}

// Advisories (runtimeenv_advisories.h) of the current revision's closure and of every
// pinned revision's stored one. A lock that does not resolve keeps the last match of
// the current revision; no source removes them.
void planAdvisoriesInto(RuntimeEnvPlan& plan, const RuntimeEnvObserved& o, const LockResolution& r,
                        const RevisionsPlan& revisions, const json& oldStatus, json& status) {
  if (o.advisories == nullptr) {
    status.erase("advisories");
    return;
  }
  AdvisoryInput in;
  in.source = o.advisories.get();
  in.previous = decode::object(oldStatus, "advisories");
  in.nowUnix = o.nowUnix;
  in.currentRevision = revisions.currentRevision;
  // A revision's packages: its own, else those of a revision with the same closure.
  auto packagesOf =
      [&](const RuntimeRevision& rev) -> std::optional<std::vector<closure::Package>> {
    if (r.ok && r.closure.closureHash == rev.closureHash) return r.closure.packages;
    for (const RuntimeRevision& other : revisions.revisions) {
      if (other.closureHash != rev.closureHash || other.packages.empty()) continue;
      auto decoded = decodeAdvisoryPackages(other.packages);
      if (decoded.isOk()) return std::move(*decoded);
    }
    return std::nullopt;
  };
  for (const RuntimeRevision& rev : revisions.revisions) {
    const bool current = rev.number == revisions.currentRevision;
    if (current && r.ok) {
      in.current = RevisionToMatch{rev.number, r.closure.closureHash, true, rev.pinned(),
                                   r.closure.packages};
    } else if (rev.pinned()) {
      in.pinned.push_back({rev.number, rev.closureHash, current, true, packagesOf(rev)});
    }
  }
  AdvisoryPlan a = planAdvisories(in);
  if (a.status.is_null()) {
    status.erase("advisories");
  } else {
    status["advisories"] = std::move(a.status);
  }
  for (AdvisoryPlan::Event& e : a.events)
    plan.events.push_back({std::move(e.type), std::move(e.reason), std::move(e.message)});
  plan.advisoryLookups = std::move(a.lookups);
  plan.pinnedAdvisories = std::move(a.pinnedBySeverity);
  plan.advisoryRequeueSeconds = a.requeueAfterSeconds;
}

}  // namespace

bool isDigestPinned(const std::string& image) {
  auto ref = api::parseImageRef(image);
  return ref.isOk() && ref->pinned();
}

std::optional<std::string> schedulableNodeDriver(const kube::Object& node) {
  if (decode::boolean(decode::object(node, "spec"), "unschedulable", false)) return std::nullopt;
  std::map<std::string, std::string> gfd;
  for (const char* key : {closure::kGfdDriverMajorLabel, closure::kGfdDriverMinorLabel,
                          closure::kGfdDriverRevLabel}) {
    if (auto v = kube::label(node, key)) gfd.emplace(key, std::move(*v));
  }
  return closure::driverFromGfdLabels(gfd);
}

NodeDriverCounts countNodeDrivers(const std::vector<kube::ObjectPtr>& nodes) {
  NodeDriverCounts counts;
  for (const auto& node : nodes) {
    if (auto driver = schedulableNodeDriver(*node)) ++counts.byDriver[*driver];
  }
  return counts;
}

int64_t compatibleNodes(const NodeDriverCounts& counts, const std::string& minDriver) {
  int64_t compatible = 0;
  for (const auto& [driver, n] : counts.byDriver) {
    if (closure::driverSatisfies(driver, minDriver)) compatible += n;
  }
  return compatible;
}

RuntimeEnvPlan planRuntimeEnv(const RuntimeEnvObserved& o, const std::string& now) {
  RuntimeEnvPlan plan;
  const RuntimeEnv rte = decodeRuntimeEnv(*o.runtimeEnv);
  const int64_t generation = rte.meta.generation;
  const json& oldStatus = decode::object(*o.runtimeEnv, "status");
  json status = oldStatus;
  status["observedGeneration"] = generation;
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();

  std::optional<LockResolution> resolvedHere;
  if (!o.lock) resolvedHere = resolveLock(rte, o.configMap.get());
  const LockResolution& r = o.lock ? *o.lock : *resolvedHere;
  std::optional<ResolvedPair> resolved;
  const std::string& oldHash = rte.status.closureHash;
  const auto oldReady = findCondition(rte.status.conditions, kConditionReady);
  const std::string oldReason = oldReady ? decode::string(*oldReady, "reason") : "";

  if (!r.ok) {
    // Keep the last resolved closure for reference; Ready=False stops admission using it.
    setCondition(conditions, {kConditionReady, kStatusFalse, r.reason, r.message}, generation, now);
    setCondition(conditions, {kConditionStalled, kStatusTrue, r.reason, r.message}, generation,
                 now);
    if (oldReason != r.reason) {
      plan.events.push_back({kube::kEventTypeWarning, r.reason, r.message});
    }
  } else {
    const closure::Closure& c = r.closure;
    std::string cuda = rte.spec.accelerator.cuda.value_or(c.cuda);
    std::string minDriver = rte.spec.accelerator.minDriver;
    if (minDriver.empty() && !cuda.empty()) {
      minDriver = closure::minDriverForCuda(cuda).value_or("");
    }
    status["closureHash"] = c.closureHash;
    status["shortHash"] = c.closureHash.substr(7, 12);
    status["format"] = std::string(closure::formatName(c.format));
    status["platform"] = c.platform;
    status["packageCount"] = c.packageCount();
    status["weak"] = c.weak;
    status["image"] = rte.spec.image;
    status.erase("cuda");
    status.erase("minDriver");
    status.erase("compatibleNodes");
    std::string readyMessage = "closure " + c.closureHash + ": " +
                               std::to_string(c.packageCount()) + " packages (" +
                               std::string(closure::formatName(c.format)) +
                               (c.platform.empty() ? "" : ", " + c.platform) + ")";
    if (c.weak) readyMessage += "; weak: " + std::to_string(c.unhashed.size()) + " unhashed";
    setCondition(conditions, {kConditionReady, kStatusTrue, kReasonResolved, readyMessage},
                 generation, now);
    setCondition(conditions, {kConditionStalled, kStatusFalse, kReasonResolved, ""}, generation,
                 now);

    if (!cuda.empty()) {
      status["cuda"] = cuda;
      if (!minDriver.empty()) status["minDriver"] = minDriver;
      const int64_t compatible =
          compatibleNodes(o.nodeDrivers ? *o.nodeDrivers : countNodeDrivers(o.nodes), minDriver);
      status["compatibleNodes"] = compatible;
      if (compatible == 0) {
        std::string m = "no schedulable node reports an NVIDIA driver >= " +
                        (minDriver.empty() ? std::string("any") : minDriver) + " (CUDA " + cuda +
                        "); GPU feature discovery labels nvidia.com/cuda.driver.* are read";
        setCondition(conditions, {kConditionDegraded, kStatusTrue, kReasonNoCompatibleNodes, m},
                     generation, now);
      } else {
        setCondition(conditions,
                     {kConditionDegraded, kStatusFalse, kReasonCompatibleNodesFound,
                      std::to_string(compatible) + " GPU node(s) satisfy driver >= " + minDriver},
                     generation, now);
      }
    } else {
      setCondition(conditions, {kConditionDegraded, kStatusFalse, kReasonNoAcceleratorRequired, ""},
                   generation, now);
    }

    if (c.closureHash != oldHash) {
      plan.events.push_back({kube::kEventTypeNormal, kReasonResolved, readyMessage});
    }
    resolved = ResolvedPair{rte.spec.image, c.closureHash,
                            r.lockDigest,   cuda,
                            minDriver,      encodeAdvisoryPackages(c.packages).value_or("")};
  }

  RevisionsInput in;
  in.runtimeEnv = rte.meta.name;
  in.recorded = rte.status.revisions;
  in.currentRevision = rte.status.currentRevision;
  in.resolved = resolved;  // a copy: the verification plan reads it too
  in.historyLimit = rte.spec.revisionHistoryLimit;
  in.now = now;
  if (o.releaseFacts) {
    in.releases = *o.releaseFacts;
  } else {
    in.releases.reserve(o.releases.size());
    for (const auto& mr : o.releases) in.releases.push_back(releasePinFacts(*mr));
  }
  if (o.modelPins) {
    in.models = *o.modelPins;
  } else {
    for (const auto& m : o.models) {
      for (ModelPin& p : modelPins(decodeModel(*m))) in.models.push_back(std::move(p));
    }
  }
  RevisionsPlan revisions = planRevisions(in);
  recordRevisions(revisions, status, plan.events);

  planAdvisoriesInto(plan, o, r, revisions, oldStatus, status);

  planVerificationInto(plan, o, rte, r, resolved, revisions, status, now);
  planMirrorInto(plan, o, rte, r, revisions.currentRevision, status, now);

  const bool pinned = revisions.anyPinned();
  const bool hasFinalizer = kube::hasFinalizer(*o.runtimeEnv, kRuntimeEnvInUseFinalizer);
  if (kube::isBeingDeleted(*o.runtimeEnv)) {
    if (!pinned || !hasFinalizer) {
      // Nothing holds it (or nothing can: a finalizer cannot be added once deletion began).
      if (hasFinalizer) plan.inUseFinalizer = false;
      plan.statusChanged = false;
      plan.status = std::move(status);
      return plan;
    }
    const std::string m =
        "deletion waits until no release or Model's prod pins a revision of this RuntimeEnv; "
        "pinned by " +
        revisions.describePins();
    const auto old = findCondition(rte.status.conditions, kConditionTerminating);
    if (!old || decode::string(*old, "message") != m) {
      plan.events.push_back({kube::kEventTypeNormal, kReasonInUse, m});
    }
    setCondition(conditions, {kConditionTerminating, kStatusTrue, kReasonInUse, m}, generation,
                 now);
  } else {
    if (pinned != hasFinalizer) plan.inUseFinalizer = pinned;
    // Deletion was cancelled? A RuntimeEnv cannot be undeleted, but a status
    // copied from a deleted one must not say it.
    conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                    [](const json& c) {
                                      return decode::string(c, "type") == kConditionTerminating;
                                    }),
                     conditions.end());
  }
  plan.statusChanged = status != oldStatus;
  plan.status = std::move(status);
  return plan;
}

ExecutionPlan executionPlan(const RuntimeEnvPlan& plan, const RuntimeEnvObserved& o) {
  ExecutionPlan out;
  const std::string ns = kube::namespaceOf(*o.runtimeEnv);
  if (plan.inUseFinalizer) {
    // Server-side apply of metadata.finalizers alone: the operator's field
    // manager owns only its own entry, so applying without it removes just that.
    PlannedApply a;
    a.resource = kRuntimeEnvs;
    a.object = kube::newObject(kRuntimeEnvs, ns, kube::name(*o.runtimeEnv));
    a.object["metadata"]["uid"] = kube::uid(*o.runtimeEnv);
    // Removing: the applied object leaves the entry out (an empty list would claim the list).
    if (*plan.inUseFinalizer) {
      a.object["metadata"]["finalizers"] = json::array({kRuntimeEnvInUseFinalizer});
    }
    a.fieldManager = kOperatorFieldManager;
    a.ignoreNotFound = true;
    a.what = std::string(*plan.inUseFinalizer ? "adding" : "removing") + " finalizer " +
             kRuntimeEnvInUseFinalizer + " of RuntimeEnv " + ns + "/" + kube::name(*o.runtimeEnv);
    out.apply.push_back(std::move(a));
  }
  // Verification: the closure ConfigMap before the Jobs that mount it.
  const VerificationPlan& v = plan.verification;
  if (v.closureConfigMap) {
    PlannedApply cm =
        plannedApply(kConfigMaps, *v.closureConfigMap,
                     "applying closure ConfigMap " + ns + "/" + kube::name(*v.closureConfigMap));
    cm.fieldManager = kOperatorFieldManager;
    out.apply.push_back(std::move(cm));
  }
  for (const json& pinned : v.pinnedClosureConfigMaps) {
    PlannedApply cm = plannedApply(
        kConfigMaps, pinned,
        "applying closure ConfigMap " + ns + "/" + kube::name(pinned) + " of a pinned revision");
    cm.fieldManager = kOperatorFieldManager;
    out.apply.push_back(std::move(cm));
  }
  for (const json& job : v.jobsToCreate) {
    PlannedApply create =
        plannedCreate(kJobs, job, "creating verification Job " + ns + "/" + kube::name(job));
    create.failureEventOn = o.runtimeEnv;
    create.failureEventReason = "VerificationJobRefused";
    create.failureEventWhenTransient = false;
    out.apply.push_back(std::move(create));
  }
  for (const std::string& name : v.jobsToDelete) out.prune.push_back({kJobs, ns, name, ""});
  for (const std::string& name : v.closureConfigMapsToDelete)
    out.prune.push_back({kConfigMaps, ns, name, ""});
  for (const auto& e : plan.events)
    out.events.push_back({o.runtimeEnv, e.type, e.reason, e.message});
  if (plan.statusChanged) {
    PlannedApply a;
    a.resource = kRuntimeEnvs;
    a.object = statusApply(kRuntimeEnvs, ns, kube::name(*o.runtimeEnv), plan.status);
    out.status = std::move(a);
  }
  return out;
}

}  // namespace lockstep::controllers
