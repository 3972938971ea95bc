#include "controllers/modelrelease/modelrelease_controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <string_view>
#include <vector>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/serving_pod.h"
#include "controllers/common/cached_pods.h"
#include "controllers/common/cached_serving_objects.h"
#include "controllers/common/execute.h"
#include "controllers/modelrelease/gates/fleet_check.h"
#include "controllers/modelrelease/model_controller.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/fold.h"
#include "controllers/modelrelease/prod/gpu_capacity.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/ownership.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "controllers/modelrelease/release_status.h"
#include "controllers/modelrelease/runtime_env_state.h"
#include "controllers/modelrelease/watch_filters.h"
#include "operator/kube/api_error.h"
#include "operator/kube/object.h"
#include "operator/kube/views.h"
#include "operator/runtime/builder.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

std::vector<std::string> byModelLabel(const kube::Object& o) {
  auto m = kube::label(o, v1::kModelLabel);
  if (!m || m->empty()) return {};
  return {kube::namespaceOf(o) + "/" + *m};
}

std::vector<std::string> byNodeName(const kube::Object& pod) {
  const std::string_view node = kube::viewPod(pod).nodeName;  // not a string: "", not a throw
  if (node.empty()) return {};
  return {std::string(node)};
}

// Whether the release's status says Stalled for a NameConflict (prod/ownership.h).
bool stalledOnNameConflict(const kube::Object& release) {
  for (const json& c : v1::decode::array(v1::decode::object(release, "status"), "conditions")) {
    if (v1::decode::string(c, "type") == v1::kConditionStalled)
      return v1::decode::string(c, "status") == v1::kStatusTrue &&
             v1::decode::string(c, "reason") == v1::kReasonNameConflict;
  }
  return false;
}

// The objects of `resource` that carry the label `label` (server-side selector).
kube::InformerOptions labelled(const kube::Resource& resource, const char* label) {
  kube::InformerOptions o;
  o.resource = resource;
  o.labelSelector = label;
  return o;
}

}  // namespace

ModelReleaseReconciler::ModelReleaseReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                                               kube::EventSink& events, kube::Clock& clock,
                                               std::shared_ptr<ReleaseMetrics> metrics,
                                               ModelReleaseOptions options,
                                               std::shared_ptr<AnalysisQuerier> querier)
    : client_(std::move(client)),
      caches_(caches),
      events_(events),
      clock_(clock),
      metrics_(std::move(metrics)),
      options_(std::move(options)),
      querier_(std::move(querier)) {
  if (options_.packageReader)
    packages_ = std::make_unique<PackageDescriber>(client_, options_.packageReader);
}

void ModelReleaseReconciler::modelRollbackRequestsFor(const v1::Model& m, const v1::ModelRelease& r,
                                                      ReleaseObserved& o) const {
  const std::string& name = r.meta.name;
  const std::string current = m.promoted();
  // The default target: the newest release prod ran before, that is still a
  // release of this model (the CLI's rule, v1::previousProdRelease).
  auto exists = [&](const std::string& candidate) {
    auto obj = caches_.releases.get(r.meta.ns, candidate);
    if (!obj) return false;
    const v1::ModelRelease c = v1::decodeModelRelease(*obj);
    return c.spec.model == m.meta.name && v1::takesRollbackRequests(c);
  };
  if (auto ask = v1::modelRollbackAsk(m, m.prodRevision());
      ask && !current.empty() && current != name) {
    const std::string target = ask->to.empty() ? v1::previousProdRelease(m, exists) : ask->to;
    if (target == name) o.modelRollbackBy = ask->by;
  }
  // The request the last rollback (to this release) spent: prod's previous revision.
  if (m.status.revision > 1 && !o.rollbackFrom.empty()) {
    if (auto ask = v1::modelRollbackAsk(m, std::to_string(m.status.revision - 1));
        ask && (ask->to.empty() || ask->to == name))
      o.spentModelRollbackBy = ask->by;
  }
}

std::optional<ModelReleaseObserved> ModelReleaseReconciler::observe(const Request& request) const {
  auto release = caches_.releases.get(request.ns, request.name);
  // A deleted release is reconciled only while it carries the cleanup
  // finalizer (its canary rolls back first; modelrelease_plan.h).
  if (!release || (kube::isBeingDeleted(*release) &&
                   !kube::hasFinalizer(*release, v1::kReleaseCleanupFinalizer)))
    return std::nullopt;
  const v1::ModelRelease r = v1::decodeModelRelease(*release);
  ModelReleaseObserved out;
  out.release = release;
  out.deletionDeadlineSeconds = options_.releaseDeletionDeadlineSeconds;
  ReleaseObserved& o = out.gates;
  o.release = *release;
  if (auto rte = caches_.runtimeEnvs.get(request.ns, r.spec.runtimeEnvName)) o.runtimeEnv = *rte;
  for (const auto& job : caches_.jobs.byIndex(kube::kOwnerUidIndex, r.meta.uid)) {
    o.jobs.push_back(*job);
    for (const auto& pod : caches_.pods.byIndex(kube::kOwnerUidIndex, v1::decodeMeta(*job).uid))
      o.pods.push_back(*pod);
  }
  o.mount = options_.mount;
  o.fetchCommand = options_.fetchCommand;
  o.cliImage = options_.cliImage;
  o.approvalRules = options_.approvalRules;
  auto wall = clock_.wallNow();
  o.now = kube::formatTime(wall, false);
  o.nowUnix = std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  if (!r.spec.model.empty()) {
    auto modelObject = caches_.models.get(request.ns, r.spec.model);
    const v1::Model m = modelObject ? v1::decodeModel(*modelObject) : v1::Model{};
    o.promotedRelease = m.promoted();
    o.canaryRelease = m.canaryHolder();
    o.modelRevision = modelObject ? m.prodRevision() : std::string();
    if (modelObject) {
      const std::optional<v1::RuntimePin> pin = v1::decodeRuntimePin(*release);
      o.modelRecordsProdRan = v1::recordShowsProdRan(
          m, r.meta.name, r.meta.uid,
          pin ? v1::contentDigest(v1::releaseContent(*release, *pin)) : std::string());
    }
    // The last manual rollback to this release, as the Model recorded it (a
    // status write lost after the Model moved is re-derived from it).
    const std::vector<v1::ModelHistoryEntry>& history = m.status.history;
    if (!history.empty() && history.back().action == v1::kModelActionRollback &&
        history.back().release == request.name)
      o.rollbackFrom = history.back().from;
    // A fleet abort for the wave of the release prod runs takes prod back to
    // the release its canary replaced (gates/fleet_check.h).
    if (!o.promotedRelease.empty() && o.promotedRelease != request.name) {
      if (auto prod = caches_.releases.get(request.ns, o.promotedRelease))
        o.fleetRollbackBy = fleetRollbackBy(v1::decodeModelRelease(*prod), request.name);
    }
    // A rollback asked on the Model, when this release is its target.
    if (modelObject && options_.modelRollbackRequests) modelRollbackRequestsFor(m, r, o);
    if (modelObject) {
      o.rollbackDeadlineSeconds = m.spec.rollbackDeadlineSeconds;
      o.window = windows_.closedAt(*modelObject, o.nowUnix);
    }
    out.prod = observeProd(r, !o.modelRollbackBy.empty());
    out.prod.releaseDeleted = kube::isBeingDeleted(*release);
    // A release prod runs or ran: its Ready follows the stable Deployment
    // (serving_health.h; its stable pods carry its label, so their events
    // reach it through the pod watch below).
    const std::string phase = v1::decode::string(v1::decode::object(*release, "status"), "phase");
    if (phase == v1::kPhasePromoted || phase == v1::kPhaseSuperseded) {
      ServingObserved serving;
      serving.stableRelease = templateRelease(out.prod.stableDeployment.get());
      serving.stableSpecReplicas = specReplicas(out.prod.stableDeployment.get());
      if (m.spec.replicas) serving.modelReplicas = static_cast<int>(*m.spec.replicas);
      serving.canaryRelease = o.canaryRelease;
      serving.pods = out.prod.pods;
      o.serving = std::move(serving);
    }
  }
  return out;
}

void ModelReleaseReconciler::readProdNames(const v1::ModelRelease& r, ProdObserved& p) const {
  const std::string& ns = r.meta.ns;
  const std::string& model = r.spec.model;
  // The names the caches miss. With the caches of unlabelled objects (the
  // other half of each resource, metadata only) the answer is there: what they
  // hold stands at the name and is not Lockstep's; a name neither half holds is
  // free (a create of it that meets a newcomer is refused AlreadyExists and
  // planned again). Without them, read at once: each GET waits on the API server,
  // and a first release misses two or three of them (its stable Deployment does
  // not exist until the handover) in every plan that writes in prod. Results are
  // taken in this order, so the first error named is the same as one by one.
  struct Name {
    kube::ObjectPtr* at;
    const kube::Resource* resource;
    std::string name;
    const kube::Indexer* unlabelled;
  };
  std::vector<Name> missing;
  for (Name n : {Name{&p.service, &v1::kServices, model, caches_.unlabelledServices},
                 Name{&p.stableDeployment, &v1::kDeployments,
                      servingDeploymentName(model, kTrackStable), caches_.unlabelledDeployments},
                 Name{&p.canaryDeployment, &v1::kDeployments,
                      servingDeploymentName(model, kTrackCanary), caches_.unlabelledDeployments}}) {
    if (*n.at) continue;
    if (n.unlabelled != nullptr) {
      *n.at = n.unlabelled->get(ns, n.name);
      continue;
    }
    missing.push_back(std::move(n));
  }
  std::vector<std::future<StatusOr<kube::Object>>> others;
  for (size_t i = 1; i < missing.size(); ++i) {
    others.push_back(std::async(std::launch::async, [this, &ns, &n = missing[i]] {
      return client_->get(*n.resource, ns, n.name);
    }));
  }
  std::vector<StatusOr<kube::Object>> got;
  if (!missing.empty()) got.push_back(client_->get(*missing[0].resource, ns, missing[0].name));
  for (auto& f : others) got.push_back(f.get());
  for (size_t i = 0; i < missing.size(); ++i) {
    if (got[i].isOk()) {
      *missing[i].at = std::make_shared<const kube::Object>(std::move(*got[i]));
    } else if (got[i].status().code() != Code::kNotFound && p.lookupError.isOk()) {
      p.lookupError = got[i].status().withContext("reading " + missing[i].resource->kind + " " +
                                                  ns + "/" + missing[i].name);
    }
  }
  p.namesRead = true;
}

ProdObserved ModelReleaseReconciler::observeProd(const v1::ModelRelease& r,
                                                 bool rollbackAskedOnModel) const {
  ProdObserved p;
  const std::string& ns = r.meta.ns;
  const std::string& model = r.spec.model;
  p.mount = options_.mount;
  p.fetchCommand = options_.fetchCommand;
  p.cliImage = options_.cliImage;
  p.model = caches_.models.get(ns, model);
  p.legacyAnchor = caches_.anchors.get(ns, v1::modelAnchorName(model));
  p.service = caches_.services.get(ns, model);
  p.stableDeployment = caches_.deployments.get(ns, servingDeploymentName(model, kTrackStable));
  p.canaryDeployment = caches_.deployments.get(ns, servingDeploymentName(model, kTrackCanary));
  // Only pods whose owner chain leads to the model's Deployments are prod
  // (api/v1alpha1/serving_pod.h): the cached links, no API call per pod.
  for (const auto& rs : caches_.replicaSets.byIndex(v1::kReleaseByModelIndex, ns + "/" + model))
    p.replicaSets[kube::name(*rs)] = rs;
  p.pods =
      servingPodsOf(model, p, caches_.pods.byIndex(v1::kReleaseByModelIndex, ns + "/" + model));
  // The revision a claim of the canary slot writes goes past every rollback
  // request of the model's releases (a re-created Model starts past them).
  for (const auto& mr : caches_.releases.byIndex(v1::kReleaseByModelIndex, ns + "/" + model))
    p.highestRollbackRevision = std::max(p.highestRollbackRevision, highestRollbackRevision(*mr));
  // The releases the stable track may run: prod's (the Model's, or, before
  // the Model is built from it, the anchor's), and the canary's recorded known-good.
  std::set<std::string> names;
  const std::optional<v1::Model> recordOf =
      p.model ? std::optional<v1::Model>(v1::decodeModel(*p.model)) : std::nullopt;
  if (recordOf) names.insert(recordOf->promoted());
  if (p.legacyAnchor) names.insert(v1::decodeModelAnchor(*p.legacyAnchor).promoted);
  names.insert(r.status.canary.orEmpty().knownGoodRelease());
  names.erase("");
  names.erase(r.meta.name);
  std::set<std::string> envs = {r.spec.runtimeEnvName};
  for (const std::string& n : names) {
    auto other = caches_.releases.get(ns, n);
    p.releases[n] = other;
    if (other) envs.insert(v1::decodeModelRelease(*other).spec.runtimeEnvName);
    // Prod's object gone: its RuntimeEnv as the Model records it (prod is
    // rebuilt from the record, prod_plan.h).
    if (!other && recordOf && recordOf->status.prod && n == recordOf->promoted())
      envs.insert(recordOf->status.prod->runtime.runtimeEnv);
  }
  for (const std::string& e : envs) {
    if (!e.empty()) p.runtimeEnvs[e] = caches_.runtimeEnvs.get(ns, e);
  }
  // GPU capacity from the caches: the compatible nodes and the unfinished pods bound to them.
  const v1::Stage* stage = r.prodStage();
  const int64_t gpusPerPod =
      stage != nullptr ? podGpuRequest(v1::decode::object(stage->serving->podTemplate, "spec")) : 0;
  const bool finished =
      r.status.phase && isTerminalPhase(std::string(v1::phaseName(*r.status.phase)));
  // A finished release counts GPUs only when asked to take prod back (a manual
  // rollback's one-pod trade, prod_plan.h planRollbackWrites).
  const bool rollbackAsked =
      rollbackAskedOnModel || (p.model && !r.annotation(std::string(v1::kRollbackAnnotationPrefix) +
                                                        v1::decodeModel(*p.model).prodRevision())
                                               .empty());
  if (gpusPerPod > 0 && (!finished || rollbackAsked)) {
    std::string minDriver;
    if (auto rte = p.runtimeEnvs[r.spec.runtimeEnvName])
      minDriver = v1::decodeRuntimeEnv(*rte).status.minDriver;
    // Counted again only when a node or GPU pod changed since the last count
    // (gpuCounts_: the versions are read before the caches' content).
    const uint64_t nodesVersion = caches_.nodes.version();
    const uint64_t podsVersion = caches_.gpuPods.version();
    GpuCapacity gpu;
    gpu.gpusPerPod = gpusPerPod;
    gpu.freePerNode = gpuCounts_.freePerNode(minDriver, nodesVersion, podsVersion, [&] {
      // The cached objects themselves, each node and pod read only when its
      // object changed since the last count (gpuTally_).
      return gpuTally_.freePerNode(caches_.nodes.list(), caches_.gpuPods.list(), minDriver);
    });
    p.gpu = std::move(gpu);
  }
  return p;
}

std::optional<CanaryProgress> ModelReleaseReconciler::progressOf(const Request& request,
                                                                 const std::string& uid) {
  std::lock_guard lock(progressMu_);
  auto it = progress_.find(request.key());
  if (it == progress_.end() || it->second.uid != uid) return std::nullopt;
  return it->second.progress;
}

void ModelReleaseReconciler::keepProgress(const Request& request, const std::string& uid,
                                          const std::optional<CanaryProgress>& progress) {
  std::lock_guard lock(progressMu_);
  if (progress) {
    progress_[request.key()] = {uid, *progress};
  } else {
    progress_.erase(request.key());
  }
}

Result ModelReleaseReconciler::reconcile(const Request& request) {
  // Observe: caches only.
  std::optional<ModelReleaseObserved> observed = observe(request);
  if (!observed) {
    if (metrics_) metrics_->forgetRelease(request.ns, request.name);
    keepProgress(request, "", std::nullopt);
    return healFromRecord(request);
  }
  const std::string uid = v1::decodeMeta(*observed->release).uid;
  observed->prod.progress = progressOf(request, uid);
  // The package, read once before the first stage (package_reader.h): the
  // planner describes it in status.package or refuses it.
  if (packages_)
    observed->gates.package = packages_->describe(*observed->release, observed->gates.nowUnix);
  // Plan: pure; once more with a measurement when the plan asks for one.
  ModelReleasePlan plan = planModelRelease(*observed);
  // A release in its prod stage: what stands at each prod name the labelled
  // caches miss is read (an object without Lockstep's labels is in no cache;
  // prod/ownership.h decides whether it is ours), then planned again: before
  // every plan that writes in prod (the Model, a serving object, the finalizer),
  // and while the release is stalled on a NameConflict (until the object is
  // gone). A plan that writes nothing there (waiting for pods, recording a
  // measurement) reads nothing: a foreign object at a name can change no write
  // it makes, and is found before the next one.
  const bool writesInProd = !plan.execution.apply.empty() || !plan.execution.prune.empty() ||
                            stalledOnNameConflict(*observed->release);
  if (((plan.prod && writesInProd) || plan.readProdNames) && !observed->prod.releaseDeleted) {
    readProdNames(v1::decodeModelRelease(*observed->release), observed->prod);
    plan = planModelRelease(*observed);
  }
  // A measurement is asked of its provider's queue, never awaited here
  // (prod/analysis_querier.h): pending, this plan goes on without it and the
  // release is enqueued again when the answer lands.
  bool measuring = false;
  if (plan.measure && querier_) {
    MeasurementAsk ask;
    ask.analysis = *plan.measure;
    ask.key = {v1::decodeMeta(*observed->release).uid, plan.measureStep, plan.measureIndex};
    ask.atUnix = observed->gates.nowUnix;
    ask.ns = request.ns;
    ask.name = request.name;
    ask.model = v1::decodeModelRelease(*observed->release).spec.model;
    observed->prod.measurement = querier_->measure(ask);
    if (observed->prod.measurement) {
      if (!observed->prod.measurement->error.empty())
        spdlog::info("modelrelease {}: analysis error: {}", request.key(),
                     observed->prod.measurement->error);
      plan = planModelRelease(*observed);
    } else {
      measuring = true;
    }
  }
  // A gate Job is irreversible, and it is created before the status write that
  // the release's resourceVersion guards: a plan from a release a moment behind
  // its cache would start a gate the next write refuses to record. A release
  // object re-created under prod's name (a prune and re-apply) is recognised as
  // prod in its first reconcile (docs/rollouts.md "Content identity"); a
  // reconcile that still saw it fresh, with the Model already naming it, started
  // its eval gate again. So a release's first gate Job starts only from the
  // release as the API server has it: one quorum read per release, at its start
  // (a list by name: the operator lists and watches releases, it never gets one).
  if (!plan.release.jobsToCreate.empty() &&
      !observed->release->contains("/status/runtime"_json_pointer)) {
    kube::ListOptions byName;
    byName.fieldSelector = "metadata.name=" + request.name;
    std::string ignored;
    auto live = client_->listPage(v1::kModelReleases, request.ns, byName, &ignored);
    if (!live.isOk()) return Result::failed(live.status());
    const std::string liveVersion =
        live->items.empty() ? "" : kube::resourceVersion(live->items.front());
    if (liveVersion != kube::resourceVersion(*observed->release)) {
      spdlog::info(
          "modelrelease {}: the cache is behind the release (resourceVersion \"{}\" "
          "against \"{}\"): no gate Job until it catches up",
          request.key(), liveVersion, kube::resourceVersion(*observed->release));
      return Result::after(std::chrono::seconds(1));
    }
  }
  // Execute: the Model's record and the serving objects, Jobs, Events, the status last.
  ExecutionOutcome outcome = execute(plan.execution, *client_, events_, "modelrelease");
  const std::string model = v1::decodeModelRelease(*observed->release).spec.model;
  // Counted at the Model write (guarded by its resourceVersion, so once per
  // rollback), not at the status write, which may conflict and be re-planned
  // from a Model that already moved.
  if (metrics_ && plan.rollbackRecordedAt && outcome.applied > *plan.rollbackRecordedAt)
    metrics_->rollback(model, v1::kReasonManualRollback);
  if (!outcome.result.error.isOk()) {
    reportServingWriteFailure(*observed, plan, outcome);
    return outcome.result;
  }
  if (plan.stop) {
    if (!plan.stopError.isOk()) return runtime::resultFor(plan.stopError);
    return Result::after(std::chrono::seconds(plan.stopRequeueSeconds));
  }
  if (plan.execution.status && !outcome.statusWritten) return outcome.result;  // gone meanwhile
  // The status the next plan reads is this plan's (written, or as it was):
  // so is the progress clock it goes on from. A plan without a canary (a
  // finished release, another stage) keeps none.
  keepProgress(request, uid,
               plan.prod && plan.prod->canary ? plan.prod->canary->progress : std::nullopt);
  recordMetrics(request, plan, *observed->release, outcome.statusWritten);

  int64_t requeue = plan.release.requeueAfterSeconds;
  if (options_.stageTagger && !model.empty()) {
    // Registry stage tags for what this plan recorded; never fails the reconcile.
    const ProdObserved& p = observed->prod;
    const v1::Model m = p.model ? v1::decodeModel(*p.model) : v1::Model{};
    int64_t retry =
        options_.stageTagger->run(*observed->release, plan.release.status, m.promoted(),
                                  m.status.prod ? m.status.prod->package : std::string(),
                                  observed->gates.now, observed->gates.nowUnix);
    if (retry > 0 && (requeue == 0 || retry < requeue)) requeue = retry;
  }
  // An error a retry cannot fix, recorded in the status just written.
  if (!plan.afterStatus.isOk()) return runtime::resultFor(plan.afterStatus);
  if (measuring) {
    const int64_t backstop = querier_->pendingRetrySeconds();
    if (requeue == 0 || backstop < requeue) requeue = backstop;
  } else if (observed->prod.measurement && requeue == 0) {
    // An answer that landed late (a timeout) can make the next measurement due
    // already: ask it on the next pass, never wait for an unrelated event.
    requeue = 1;
  }
  if (requeue > 0) return Result::after(std::chrono::seconds(requeue));
  return Result::done();
}

Result ModelReleaseReconciler::healFromRecord(const Request& request) {
  if (caches_.releases.get(request.ns, request.name)) return Result::done();  // not gone
  for (const auto& modelObject :
       caches_.models.byIndex(kModelByProdReleaseIndex, request.ns + "/" + request.name)) {
    const v1::Model m = v1::decodeModel(*modelObject);
    if (!m.status.prod || m.status.prod->release != request.name) continue;
    // What observeProd reads of a release, from the record.
    v1::ModelRelease recorded;
    recorded.meta = {request.name, request.ns, m.status.prod->uid, 0};
    recorded.spec.model = m.meta.name;
    recorded.spec.runtimeEnvName = m.status.prod->runtime.runtimeEnv;
    ProdObserved p = observeProd(recorded);
    std::optional<ProdPlan> heal = planRecordedProdHealing(p);
    if (heal && heal->needsNames) {
      readProdNames(recorded, p);
      heal = planRecordedProdHealing(p);
    }
    if (!heal) continue;
    ExecutionPlan x;
    x.apply = heal->writes;
    for (const ReleaseEvent& e : heal->events) {
      spdlog::info("modelrelease {}: Model {}: {}", request.key(), m.meta.name, e.message);
      x.events.push_back({modelObject, e.type, e.reason, e.message});
    }
    ExecutionOutcome outcome = execute(x, *client_, events_, "modelrelease");
    if (!outcome.result.error.isOk()) return outcome.result;
  }
  return Result::done();
}

void ModelReleaseReconciler::reportServingWriteFailure(const ModelReleaseObserved& observed,
                                                       const ModelReleasePlan& plan,
                                                       const ExecutionOutcome& outcome) {
  // Only a prod write (the serving objects, the Model) the server refused
  // for good; a Conflict or an unavailable server is simply retried.
  const Status& error = outcome.result.error;
  if (!plan.prod || outcome.applied >= plan.prod->writes.size() || kube::isTransient(error)) return;
  const v1::ModelRelease r = v1::decodeModelRelease(*observed.release);
  const json& previous = v1::decode::object(*observed.release, "status");
  PlannedApply status;
  status.resource = v1::kModelReleases;
  status.object = statusApply(
      v1::kModelReleases, r.meta.ns, r.meta.name,
      servingWriteFailedStatus(previous, error.message(), r.meta.generation, observed.gates.now));
  status.resourceVersion = r.resourceVersion;
  status.what = "status of ModelRelease " + r.meta.name;
  ExecutionPlan x;
  if (v1::decode::object(status.object, "status") == previous) return;
  x.status = std::move(status);
  (void)execute(x, *client_, events_, "modelrelease");
}

void ModelReleaseReconciler::recordMetrics(const Request& request, const ModelReleasePlan& plan,
                                           const kube::Object& release, bool statusWritten) {
  const ReleasePlan& p = plan.release;
  const v1::ModelRelease r = v1::decodeModelRelease(release);
  // A plan that writes no status (a deletion, a finalizer change) leaves it null.
  static const json kNoStatus = json::object();
  const json& st = p.status.is_object() ? p.status : kNoStatus;
  if (statusWritten) {
    spdlog::info("modelrelease {}: phase {} stage {}", request.key(), st.value("phase", ""),
                 st.value("currentStage", "-"));
  }
  if (!metrics_) return;
  // What the written status.canary records (nothing when it is unreadable).
  const json* written = v1::decode::member(st, "canary");
  const v1::CanaryStatusRead read = v1::readCanaryStatus(written != nullptr ? *written : json());
  const v1::CanaryStatus& canary = read.orEmpty();
  // Counted once the result is recorded: a crash before this point re-plans the
  // same transition, so the count is at-least-once and never lost.
  if (statusWritten) {
    for (const StageOutcome& out : p.outcomes)
      metrics_->stageResult(out.stage, out.result, out.durationSeconds);
    const std::string before = r.status.canary.orEmpty().phase.value_or("");
    const std::string after = canary.phase.value_or("");
    if (after != before && after == v1::kReasonRollingBack)
      metrics_->rollback(r.spec.model, canary.reason.value_or(""));
    if (after != before && after == v1::kPhasePromoted) metrics_->promotion(r.spec.model);
  }
  // The canary step of a release in its prod stage, as applied; gone once it is finished.
  if (p.prod && st.value("phase", "") == v1::kPhaseCanary && canary.step) {
    const int step = static_cast<int>(*canary.step);
    auto spec = v1::canarySpecOf(r.spec.stages.at(p.prod->index));
    const bool known = spec.isOk() && step >= 0 && step < static_cast<int>(spec->steps.size());
    metrics_->canaryStep(request.ns, request.name, r.spec.model, step,
                         known ? spec->steps[static_cast<size_t>(step)].weight : 0);
  } else {
    metrics_->forgetRelease(request.ns, request.name);
  }
}

void setupModelReleaseController(runtime::Manager& manager, ModelReleaseOptions options,
                                 int workers) {
  kube::Informer& releases = manager.informer(v1::kModelReleases);
  kube::Informer& rtes = manager.informer(v1::kRuntimeEnvs);
  const kube::InformerOptions jobOpts = labelled(v1::kJobs, v1::kReleaseLabel);
  // Slimmed to what their readers read (controllers/common/cached_serving_objects.h),
  // the same options as the webhooks' lookups (cmd/lockstep-operator/main.cc).
  const kube::InformerOptions podOpts = releasePods();
  const kube::InformerOptions deployOpts = modelDeployments();
  const kube::InformerOptions anchorOpts = labelled(v1::kConfigMaps, v1::kModelLabel);
  const kube::InformerOptions serviceOpts = modelServices();
  // The same options as the pod webhook's (cmd/lockstep-operator/main.cc): one informer.
  kube::InformerOptions replicaSetOpts = labelled(v1::kReplicaSets, v1::kModelLabel);
  replicaSetOpts.transform = v1::slimReplicaSet;
  kube::Informer& jobs = manager.informer(jobOpts);
  kube::Informer& pods = manager.informer(podOpts);
  kube::Informer& deployments = manager.informer(deployOpts);
  kube::Informer& anchors = manager.informer(anchorOpts);
  kube::Informer& models = manager.informer(v1::kModels);
  kube::Informer& services = manager.informer(serviceOpts);
  kube::Informer& replicaSets = manager.informer(replicaSetOpts);
  // GPU nodes for the canary's capacity pre-check (shared with the RuntimeEnv
  // controller), and the pods that hold their GPUs: every unfinished pod (in
  // the watched namespaces of a namespaced install; docs/rollouts.md "GPU
  // capacity"), slimmed: the cache shared with the drift scan
  // (controllers/common/cached_pods.h).
  kube::Informer& nodes = manager.informer(v1::kNodes);
  kube::Informer& gpuPods = manager.informer(unfinishedPods());
  // What stands at a prod name without Lockstep's label (a team's own Service
  // or Deployment): metadata only, so the ownership check needs no GET.
  kube::Informer& unlabelledDeployments = manager.informer(unlabelledMetadata(v1::kDeployments));
  kube::Informer& unlabelledServices = manager.informer(unlabelledMetadata(v1::kServices));
  releases.addIndex(v1::kReleaseByRuntimeEnvIndex, v1::indexByRuntimeEnv);
  releases.addIndex(v1::kReleaseByModelIndex, v1::indexByModel);
  jobs.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
  pods.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
  pods.addIndex(v1::kReleaseByModelIndex, byModelLabel);
  gpuPods.addIndex(kPodByNodeIndex, byNodeName);
  replicaSets.addIndex(v1::kReleaseByModelIndex, byModelLabel);
  models.addIndex(kModelByProdReleaseIndex, [](const kube::Object& m) {
    const std::string prod = m.value("/status/prod/release"_json_pointer, std::string());
    if (prod.empty()) return std::vector<std::string>{};
    return std::vector<std::string>{kube::namespaceOf(m) + "/" + prod};
  });

  if (!options.stageTagger) {
    options.stageTagger = std::make_shared<StageTagger>(
        manager.sharedClient(), manager.syncEvents(), makeRegistryTagger(options.registryCaPem));
  }
  if (!options.packageReader)
    options.packageReader = makeRegistryPackageReader(options.registryCaPem);
  if (!options.analysis) options.analysis = std::make_shared<AnalysisProviders>();
  std::shared_ptr<AnalysisProviders> analysis = options.analysis;
  const bool modelRollbackRequests = options.modelRollbackRequests;
  // One set of families on the registry, shared with the Model controller.
  std::shared_ptr<ReleaseMetrics> metrics =
      makePrometheusReleaseMetrics(*manager.metrics().registry());
  auto reconciler = std::make_shared<ModelReleaseReconciler>(
      manager.sharedClient(),
      ModelReleaseReconciler::Caches{
          releases.cache(), rtes.cache(), jobs.cache(), pods.cache(), deployments.cache(),
          models.cache(), anchors.cache(), services.cache(), nodes.cache(), gpuPods.cache(),
          replicaSets.cache(), &unlabelledDeployments.cache(), &unlabelledServices.cache()},
      manager.syncEvents(), manager.clock(), metrics, std::move(options), analysis);

  const kube::Indexer* releaseCache = &releases.cache();
  const kube::Indexer* modelCache = &models.cache();
  // The release the Model `model` records as prod when its object is gone:
  // that name stands for prod's record (ModelReleaseReconciler::healFromRecord).
  auto goneProd = [releaseCache](const kube::Object& model, std::vector<Request>& out) {
    const std::string prod = model.value("/status/prod/release"_json_pointer, std::string());
    const std::string ns = kube::namespaceOf(model);
    if (!prod.empty() && !releaseCache->get(ns, prod)) out.push_back({ns, prod});
  };
  // A model's legacy anchor: every release of that model (any of them takes
  // the migration), and prod's record when its release object is gone. Its
  // Deployments, Service and ReplicaSets: the releases that read them
  // (watch_filters.h releaseReadsModelObjects: the one in canary scales, the
  // one prod runs follows its pods; not one that finished without prod).
  auto releasesOf = [releaseCache, modelCache, goneProd](const kube::Object& o, bool readersOnly) {
    std::vector<Request> out;
    for (const std::string& key : byModelLabel(o)) {
      const kube::ObjectPtr model =
          modelCache->get(kube::namespaceOf(o), *kube::label(o, v1::kModelLabel));
      for (const auto& mr : releaseCache->byIndex(v1::kReleaseByModelIndex, key)) {
        if (!readersOnly || releaseReadsModelObjects(*mr, model.get()))
          out.push_back({kube::namespaceOf(*mr), kube::name(*mr)});
      }
      if (model) goneProd(*model, out);
    }
    return out;
  };
  auto releasesOfModel = [releasesOf](const kube::Object& o) { return releasesOf(o, false); };
  auto releasesReadingIt = [releasesOf](const kube::Object& o) { return releasesOf(o, true); };
  runtime::Controller& controller =
      runtime::ControllerBuilder(manager, "modelrelease")
          .workers(workers)
          // The release: spec edits and annotations (approve, abort); its status is ours
          // but for the evidence controller's answers.
          .forKind(v1::kModelReleases,
                   [](const kube::Object& a, const kube::Object& b) {
                     return kube::generation(a) != kube::generation(b) ||
                            kube::isBeingDeleted(a) != kube::isBeingDeleted(b) ||
                            a.value("/metadata/annotations"_json_pointer, json::object()) !=
                                b.value("/metadata/annotations"_json_pointer, json::object()) ||
                            // The evidence controller's answer for an evidence stage.
                            a.value("/status/evidenceChecks"_json_pointer, json::array()) !=
                                b.value("/status/evidenceChecks"_json_pointer, json::array());
                   })
          // A fleet abort recorded on the release prod runs: the release its
          // canary replaced takes prod back (gates/fleet_check.h).
          .watches(
              v1::kModelReleases,
              [](const kube::Object& o) {
                std::vector<Request> out;
                if (o.value("/status/evidenceChecks"_json_pointer, json::array()).empty())
                  return out;
                const v1::ModelRelease r = v1::decodeModelRelease(o);
                if (!concernedFleetAbort(r)) return out;
                const std::string known = r.status.canary.orEmpty().knownGoodRelease();
                if (!known.empty()) out.push_back({r.meta.ns, known});
                return out;
              },
              [](const kube::Object& a, const kube::Object& b) {
                return a.value("/status/evidenceChecks"_json_pointer, json::array()) !=
                       b.value("/status/evidenceChecks"_json_pointer, json::array());
              })
          // Its Jobs, by controller owner reference.
          .owns(jobOpts)
          // Pods of those Jobs and serving pods, by the release label they
          // carry, and a serving pod also wakes the canary slot's holder, which
          // waits on the stable track's pods (watch_filters.h releasesWokenByPod);
          // not an update of nothing but the resourceVersion.
          .watches(
              podOpts,
              [modelCache](const kube::Object& pod) {
                std::vector<Request> out;
                const std::string ns = kube::namespaceOf(pod);
                const std::optional<std::string> m = kube::label(pod, v1::kModelLabel);
                const kube::ObjectPtr model = m ? modelCache->get(ns, *m) : nullptr;
                for (std::string& r : releasesWokenByPod(pod, model.get()))
                  out.push_back({ns, std::move(r)});
                return out;
              },
              changedBeyondResourceVersion)
          // Not the replica counts the Deployment controller keeps (a release
          // counts Ready pods itself; watch_filters.h).
          .watches(deployOpts, releasesReadingIt, deploymentChangeConcernsReleases)
          .watches(anchorOpts, releasesOfModel)
          // The Model is named after the model; not the conditions the Model
          // controller writes (watch_filters.h).
          .watches(
              v1::kModels,
              [releaseCache, goneProd](const kube::Object& model) {
                std::vector<Request> out;
                const std::string key = kube::objectKey(model);
                for (const auto& mr : releaseCache->byIndex(v1::kReleaseByModelIndex, key))
                  out.push_back({kube::namespaceOf(*mr), kube::name(*mr)});
                goneProd(model, out);
                return out;
              },
              modelChangeConcernsReleases)
          .watches(serviceOpts, releasesReadingIt, changedBeyondResourceVersion)
          // A ReplicaSet the pods of which were seen first (the link that makes them
          // count) and the ones that drain: the Service's serving label.
          .watches(replicaSetOpts, releasesReadingIt,
                   [](const kube::Object& a, const kube::Object& b) {
                     json x = a, y = b;  // slimmed: the links, template labels and replicas
                     x["metadata"].erase("resourceVersion");
                     y["metadata"].erase("resourceVersion");
                     return x != y;
                   })
          // A RuntimeEnv's resolved hash or readiness decides whether its releases may
          // advance; not the names its revisions list as pinned (each release's move
          // rewrites them).
          .watches(
              v1::kRuntimeEnvs,
              [releaseCache](const kube::Object& rte) {
                std::vector<Request> out;
                for (const auto& mr :
                     releaseCache->byIndex(v1::kReleaseByRuntimeEnvIndex, kube::objectKey(rte)))
                  out.push_back({kube::namespaceOf(*mr), kube::name(*mr)});
                return out;
              },
              runtimeEnvChangeConcernsReleases)
          .complete(reconciler);
  // An analysis answer landed (or its deadline passed): the release takes it.
  analysis->setWakeRelease([&controller](const std::string& ns, const std::string& name) {
    controller.enqueue({ns, name});
  });
  // The Model's conditions, over the same caches (model_controller.h).
  setupModelController(
      manager,
      ModelReconciler::Caches{models.cache(), releases.cache(), deployments.cache(),
                              services.cache(), pods.cache(), replicaSets.cache()},
      ModelInformers{deployOpts, serviceOpts, podOpts}, metrics, 1, modelRollbackRequests);
}

}  // namespace lockstep::controllers
