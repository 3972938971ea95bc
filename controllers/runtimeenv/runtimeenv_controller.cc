#include "controllers/runtimeenv/runtimeenv_controller.h"

#include <set>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/common/execute.h"
#include "operator/kube/conditions.h"
#include "operator/kube/object.h"
#include "operator/runtime/builder.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

std::vector<Request> requestsFor(const std::vector<kube::ObjectPtr>& objects) {
  std::vector<Request> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back({kube::namespaceOf(*o), kube::name(*o)});
  return out;
}

// The RuntimeEnvs a release's change can re-pin: its own, and those of every
// release of the same model (a new promotion moves the model's rollback targets).
std::vector<Request> runtimeEnvsOfModel(const kube::Object& mr, const kube::Indexer& releases) {
  const std::string ns = kube::namespaceOf(mr);
  const v1::ReleasePinFacts self = v1::releasePinFacts(mr);
  std::set<std::string> names;
  if (!self.runtimeEnv.empty()) names.insert(self.runtimeEnv);
  // By the model index (a namespace of 10,000 releases relisted would otherwise
  // cost 10,000 × 10,000 decodes).
  if (!self.model.empty()) {
    for (const auto& other : releases.byIndex(v1::kReleaseByModelIndex, ns + "/" + self.model)) {
      v1::ReleasePinFacts f = v1::releasePinFacts(*other);
      if (f.model == self.model && !f.runtimeEnv.empty()) names.insert(f.runtimeEnv);
    }
  }
  std::vector<Request> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back({ns, n});
  return out;
}

}  // namespace

runtime::UpdateFilter releasePinChanged() {
  return [](const kube::Object& a, const kube::Object& b) {
    const v1::ReleasePinFacts x = v1::releasePinFacts(a);
    const v1::ReleasePinFacts y = v1::releasePinFacts(b);
    return x.phase != y.phase || x.model != y.model || x.runtimeEnv != y.runtimeEnv ||
           x.closureHash != y.closureHash || x.promotedOnce != y.promotedOnce ||
           x.lastProdAt != y.lastProdAt || x.deleting != y.deleting ||
           x.pin.has_value() != y.pin.has_value() ||
           (x.pin && (x.pin->revision != y.pin->revision || x.pin->image != y.pin->image ||
                      x.pin->closureHash != y.pin->closureHash));
  };
}

runtime::UpdateFilter modelPinsChanged() {
  return [](const kube::Object& a, const kube::Object& b) {
    return v1::modelPins(v1::decodeModel(a)) != v1::modelPins(v1::decodeModel(b));
  };
}

RuntimeEnvReconciler::RuntimeEnvReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                                           kube::EventSink& events, kube::Clock& clock,
                                           std::shared_ptr<VerificationMetrics> metrics,
                                           std::string cliImage)
    : client_(std::move(client)),
      caches_(caches),
      events_(events),
      clock_(clock),
      metrics_(std::move(metrics)),
      cliImage_(std::move(cliImage)) {}

std::optional<RuntimeEnvObserved> RuntimeEnvReconciler::observe(const Request& request) const {
  auto rte = caches_.runtimeEnvs.get(request.ns, request.name);
  if (!rte) return std::nullopt;
  // Being deleted: reconciled until the in-use finalizer is gone (or at once, without it).
  if (kube::isBeingDeleted(*rte) && !kube::hasFinalizer(*rte, v1::kRuntimeEnvInUseFinalizer))
    return std::nullopt;
  RuntimeEnvObserved observed;
  observed.runtimeEnv = rte;
  const v1::RuntimeEnv decoded = v1::decodeRuntimeEnv(*rte);
  if (std::string cmKey = decoded.configMapKey(); !cmKey.empty()) {
    observed.configMap = caches_.configMaps.get(cmKey);
  }
  observed.lock = closures_.resolution(*rte, observed.configMap.get(), [&] {
    return resolveLock(decoded, observed.configMap.get());
  });
  observed.nodes = caches_.nodes.list();
  observed.nodeDrivers = std::make_shared<const NodeDriverCounts>(nodeDriverCounts(caches_.nodes));
  // Pins and each model's rollback targets come from the namespace's releases.
  // (ModelReleases compute their own Stale condition from the cached RuntimeEnv,
  // controllers/modelrelease: this controller writes only RuntimeEnvs.)
  observed.releases = caches_.releases.byIndex(kube::kNamespaceIndex, request.ns);
  observed.releaseFacts = pinFacts_.releases(request.ns, observed.releases);
  if (caches_.models != nullptr)
    observed.models = caches_.models->byIndex(kube::kNamespaceIndex, request.ns);
  observed.modelPins = pinFacts_.modelPins(request.ns, observed.models);
  // Scheduled verification: this RuntimeEnv's Jobs (by owner), their pods, its closure ConfigMap.
  const std::string uid = kube::uid(*rte);
  if (caches_.verifyJobs != nullptr) {
    observed.verifyJobs = caches_.verifyJobs->byIndex(kube::kOwnerUidIndex, uid);
  }
  if (caches_.verifyPods != nullptr) {
    for (const auto& job : observed.verifyJobs) {
      for (const auto& pod : caches_.verifyPods->byIndex(kube::kOwnerUidIndex, kube::uid(*job)))
        observed.verifyPods.push_back(pod);
    }
  }
  for (const auto& cm : caches_.configMaps.byIndex(kube::kNamespaceIndex, request.ns)) {
    auto owner = kube::controllerOf(*cm);
    if (kube::label(*cm, v1::kVerifyRuntimeEnvLabel) && owner && owner->uid == uid)
      observed.closureConfigMaps.push_back(cm);
  }
  observed.cliImage = cliImage_;
  if (advisories_) observed.advisories = advisories_->snapshot();
  if (mirror_) observed.mirrorLatest = mirror_->latest(request.ns, request.name);
  return observed;
}

Result RuntimeEnvReconciler::reconcile(const Request& request) {
  // Observe: caches only.
  std::optional<RuntimeEnvObserved> observed = observe(request);
  if (!observed) {
    closures_.forget(request.ns, request.name);
    if (caches_.runtimeEnvs.byIndex(kube::kNamespaceIndex, request.ns).empty())
      pinFacts_.forget(request.ns);
    if (mirror_) mirror_->forget(request.ns, request.name);
    if (metrics_ && !caches_.runtimeEnvs.get(request.ns, request.name))
      metrics_->mirrorMissing(request.ns, request.name, -1);
    return Result::done();
  }
  // Plan: pure.
  const auto wall = clock_.wallNow();
  const std::string now = kube::formatTime(wall, false);
  observed->nowUnix =
      std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  RuntimeEnvPlan plan = planRuntimeEnv(*observed, now);
  // Execute: dependants first, the RuntimeEnv's own status last.
  ExecutionOutcome outcome =
      execute(executionPlan(plan, *observed), *client_, events_, "runtimeenv");
  if (outcome.statusWritten) {
    auto ready = kube::findCondition(plan.status["conditions"], v1::kConditionReady);
    spdlog::info("runtimeenv {}: {} {} ({})", request.key(), plan.status.value("closureHash", ""),
                 ready ? ready->value("reason", "") : "", ready ? ready->value("message", "") : "");
  }
  if (outcome.statusWritten && metrics_ && !plan.verification.finishedResult.empty()) {
    metrics_->runFinished(plan.verification.finishedResult);
  }
  if (metrics_ && observed->advisories) {
    metrics_->advisories(request.ns, request.name,
                         plan.status.value("/advisories/bySeverity"_json_pointer, json::object()));
    metrics_->pinnedAdvisories(request.ns, request.name, plan.pinnedAdvisories);
  }
  // The endpoint's lookups, off this worker: the source wakes the RuntimeEnv when they end.
  if (advisories_ && !plan.advisoryLookups.empty())
    advisories_->lookUp(request.ns, request.name, std::move(plan.advisoryLookups));
  // The mirror check, off this worker: the checker wakes the RuntimeEnv when it ends.
  if (plan.mirror.check && mirror_) {
    MirrorCheckRequest check = *plan.mirror.check;
    check.ns = request.ns;
    mirror_->start(std::move(check));
  }
  if (metrics_ && plan.mirror.missingGauge)
    metrics_->mirrorMissing(request.ns, request.name, *plan.mirror.missingGauge);
  // Level-based resync: re-derive the status periodically even when nothing was heard;
  // sooner when a verification run is due or going.
  if (outcome.result.error.isOk() && !outcome.result.requeue &&
      outcome.result.requeueAfter == kube::Clock::Duration::zero()) {
    kube::Clock::Duration after = kRuntimeEnvResync;
    if (int64_t s = plan.verification.requeueAfterSeconds; s > 0)
      after = std::min<kube::Clock::Duration>(after, std::chrono::seconds(s));
    if (int64_t s = plan.mirror.requeueAfterSeconds; s > 0)
      after = std::min<kube::Clock::Duration>(after, std::chrono::seconds(s));
    if (int64_t s = plan.advisoryRequeueSeconds; s > 0)
      after = std::min<kube::Clock::Duration>(after, std::chrono::seconds(s));
    return Result::after(after);
  }
  return outcome.result;
}

runtime::UpdateFilter runtimeEnvChanged() {
  return [](const kube::Object& a, const kube::Object& b) {
    return kube::generation(a) != kube::generation(b) ||
           kube::isBeingDeleted(a) != kube::isBeingDeleted(b) ||
           kube::finalizers(a) != kube::finalizers(b) ||
           a.value("status", json::object()) != b.value("status", json::object());
  };
}

void setupRuntimeEnvController(runtime::Manager& manager, int workers,
                               const RuntimeEnvOptions& options) {
  kube::Informer& rtes = manager.informer(v1::kRuntimeEnvs);
  kube::Informer& cms = manager.informer(v1::kConfigMaps);
  kube::Informer& nodes = manager.informer(v1::kNodes);
  kube::Informer& releases = manager.informer(v1::kModelReleases);
  kube::Informer& models = manager.informer(v1::kModels);
  rtes.addIndex(v1::kRuntimeEnvByConfigMapIndex, v1::indexByConfigMap);
  nodes.addIndex(kNodeDriverIndex, nodeDriverIndexFunc());        // compatibleNodes
  releases.addIndex(v1::kReleaseByModelIndex, v1::indexByModel);  // runtimeEnvsOfModel
  kube::InformerOptions verifyJobOpts;
  verifyJobOpts.resource = v1::kJobs;
  verifyJobOpts.labelSelector = v1::kVerifyRuntimeEnvLabel;
  kube::InformerOptions verifyPodOpts;
  verifyPodOpts.resource = v1::kPods;
  verifyPodOpts.labelSelector = v1::kVerifyRuntimeEnvLabel;
  kube::Informer& verifyJobs = manager.informer(verifyJobOpts);
  kube::Informer& verifyPods = manager.informer(verifyPodOpts);
  verifyJobs.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
  verifyPods.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());

  RuntimeEnvReconciler::Caches caches{rtes.cache(), cms.cache(), nodes.cache(), releases.cache()};
  caches.verifyJobs = &verifyJobs.cache();
  caches.verifyPods = &verifyPods.cache();
  caches.models = &models.cache();
  auto reconciler = std::make_shared<RuntimeEnvReconciler>(
      manager.sharedClient(), caches, manager.events(), manager.clock(),
      makePrometheusVerificationMetrics(*manager.metrics().registry()), options.cliImage);
  reconciler->setAdvisorySource(options.advisories);
  auto checker = std::make_shared<MirrorChecker>(
      makeMirrorRegistry(manager.sharedClient(), options.registryCaPem), manager.clock(),
      options.mirrorConcurrency);
  std::shared_ptr<VerificationMetrics> metrics = reconciler->metrics();
  checker->setFinished([metrics](const MirrorCheckResult& r) {
    if (!metrics) return;
    metrics->mirrorChecked(r.outcome != MirrorCheckResult::Outcome::kChecked ? "unreachable"
                           : r.missing.empty() && r.manifestPresent          ? "complete"
                                                                             : "missing");
  });
  reconciler->setMirrorChecker(checker);
  const kube::Indexer* jobCache = &verifyJobs.cache();

  const kube::Indexer* rteCache = &rtes.cache();
  const kube::Indexer* releaseCache = &releases.cache();
  runtime::Controller& controller =
      runtime::ControllerBuilder(manager, "runtimeenv")
          .workers(workers)
          // The RuntimeEnv itself: spec changes, and status changes — admission trusts the
          // status, so one written by anyone else is re-derived and restored.
          .forKind(v1::kRuntimeEnvs, runtimeEnvChanged())
          // Its verification Jobs, by controller owner reference, and their pods
          // (the failed container's termination message), through their Job.
          .owns(verifyJobOpts)
          .watches(verifyPodOpts,
                   [jobCache](const kube::Object& pod) {
                     std::vector<Request> out;
                     for (const auto& ref :
                          pod.value("/metadata/ownerReferences"_json_pointer, json::array())) {
                       if (ref.value("kind", "") != "Job") continue;
                       auto job = jobCache->get(kube::namespaceOf(pod), ref.value("name", ""));
                       if (!job) continue;
                       for (const auto& owner :
                            job->value("/metadata/ownerReferences"_json_pointer, json::array())) {
                         if (owner.value("kind", "") == v1::kRuntimeEnvs.kind)
                           out.push_back({kube::namespaceOf(pod), owner.value("name", "")});
                       }
                     }
                     return out;
                   })
          // A ConfigMap change re-resolves every RuntimeEnv reading its lock from it.
          .watches(v1::kConfigMaps,
                   [rteCache](const kube::Object& cm) {
                     return requestsFor(
                         rteCache->byIndex(v1::kRuntimeEnvByConfigMapIndex, kube::objectKey(cm)));
                   })
          // A release's phase, pin or prod history decides which revisions it pins;
          // the model's other releases rank the rollback targets, so their RuntimeEnvs too.
          .watches(
              v1::kModelReleases,
              [releaseCache](const kube::Object& mr) {
                return runtimeEnvsOfModel(mr, *releaseCache);
              },
              releasePinChanged())
          // A Model's record of prod pins the pairs it names: their RuntimeEnvs.
          .watches(
              v1::kModels,
              [](const kube::Object& model) {
                std::set<std::string> names;
                for (const v1::ModelPin& p : v1::modelPins(v1::decodeModel(model)))
                  names.insert(p.runtimeEnv);
                std::vector<Request> out;
                out.reserve(names.size());
                for (const std::string& n : names) out.push_back({kube::namespaceOf(model), n});
                return out;
              },
              modelPinsChanged())
          // Node driver labels decide compatibleNodes: any node change re-counts for all.
          .watches(
              v1::kNodes, [rteCache](const kube::Object&) { return requestsFor(rteCache->list()); },
              [](const kube::Object& a, const kube::Object& b) {
                return a.value("/metadata/labels"_json_pointer, json::object()) !=
                           b.value("/metadata/labels"_json_pointer, json::object()) ||
                       a.value("/spec/unschedulable"_json_pointer, false) !=
                           b.value("/spec/unschedulable"_json_pointer, false);
              })
          .complete(reconciler);
  // A finished mirror check wakes its RuntimeEnv (the controller outlives the checker:
  // the reconciler that owns it is owned by the controller).
  checker->setWake([&controller](const std::string& ns, const std::string& name) {
    controller.enqueue({ns, name});
  });
  // So does an endpoint's finished lookup.
  if (options.advisories) {
    options.advisories->setWake([&controller](const std::string& ns, const std::string& name) {
      controller.enqueue({ns, name});
    });
  }
}

}  // namespace lockstep::controllers
