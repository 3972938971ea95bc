#include "controllers/modelrelease/modelrelease_controller.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <mutex>

#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "controllers/modelrelease/prod_plan.h"
#include "operator/kube/api_error.h"
#include "operator/kube/object.h"
#include "operator/prometheus/client.h"

namespace lockstep::controllers {
namespace {

using api::v1alpha1::kModelReleases;
using api::v1alpha1::kReleaseByRuntimeEnvIndex;
using api::v1alpha1::kRuntimeEnvs;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

// Indexes: serving pods, Deployments and anchors by "<ns>/<model>"; releases likewise.
constexpr const char* kByModelIndex = "model";
// The anchor's data keys (docs/rollouts.md, "Ownership").
constexpr const char* kAnchorPromoted = "promoted";
constexpr const char* kAnchorPromotedPackage = "promotedPackage";
constexpr const char* kAnchorPromotedClosureHash = "promotedClosureHash";
constexpr const char* kAnchorCanary = "canary";
constexpr const char* kAnchorHistory = "history";
// Bumped by every change of `promoted` (promotion, manual rollback): a
// rollback request names the revision it was made against.
constexpr const char* kAnchorRevision = "revision";
constexpr size_t kHistoryKept = 50;

std::vector<std::string> byModelLabel(const kube::Object& o) {
  auto m = kube::label(o, kModelLabel);
  if (!m || m->empty()) return {};
  return {kube::namespaceOf(o) + "/" + *m};
}

std::vector<std::string> releaseByModel(const kube::Object& mr) {
  const json& spec = mr.contains("spec") ? mr["spec"] : json::object();
  std::string model = spec.is_object() ? spec.value("model", "") : "";
  if (model.empty()) return {};
  return {kube::namespaceOf(mr) + "/" + model};
}

std::string dataOf(const kube::Object* cm, const char* key) {
  if (cm == nullptr) return "";
  const json* d = cm->contains("data") ? &(*cm)["data"] : nullptr;
  if (d == nullptr || !d->is_object() || !d->contains(key) || !(*d)[key].is_string()) return "";
  return (*d)[key].get<std::string>();
}

// The anchor's prod revision: "0" before the first promotion recorded one.
std::string revisionOf(const kube::Object* anchor) {
  std::string r = dataOf(anchor, kAnchorRevision);
  return r.empty() ? "0" : r;
}

std::string nextRevision(const kube::Object* anchor) {
  const std::string r = revisionOf(anchor);
  uint64_t n = 0;
  for (char c : r) {
    if (c < '0' || c > '9' || n > 1'000'000'000'000ULL) return "1";  // not ours: start again
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return std::to_string(n + 1);
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

class PrometheusQuerier final : public AnalysisQuerier {
 public:
  Measurement measure(const PrometheusAnalysis& a, int64_t nowUnix) override {
    Measurement m;
    m.atUnix = nowUnix;
    const prometheus::Client* client = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = clients_.find(a.address);
      if (it == clients_.end()) {
        prometheus::ClientConfig config;
        config.address = a.address;
        config.timeout = std::chrono::seconds(10);
        auto c = prometheus::Client::connect(config);
        if (!c.isOk()) {
          m.error = c.status().message();
          return m;
        }
        it = clients_.emplace(a.address, std::move(*c)).first;
      }
      client = it->second.get();
    }
    prometheus::QueryResult r = client->query(a.query, nowUnix);
    if (r.value) {
      m.value = *r.value;
    } else {
      m.error = r.error.empty() ? std::string("no value") : r.error;
    }
    return m;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<prometheus::Client>> clients_;
};

bool transient(const Status& s) { return kube::isTransient(s); }

class PrometheusReleaseMetrics final : public ReleaseMetrics {
 public:
  explicit PrometheusReleaseMetrics(::prometheus::Registry& registry)
      : results_(::prometheus::BuildCounter()
                     .Name("lockstep_release_stage_results_total")
                     .Help("Gate stage results by stage and result "
                           "(succeeded, failed, timed_out, aborted)")
                     .Register(registry)),
        durations_(::prometheus::BuildHistogram()
                       .Name("lockstep_release_stage_duration_seconds")
                       .Help("Time from a gate stage's start to its result")
                       .Register(registry)),
        promotions_(::prometheus::BuildCounter()
                        .Name("lockstep_release_promotions_total")
                        .Help("Releases promoted to prod, by model")
                        .Register(registry)),
        rollbacks_(::prometheus::BuildCounter()
                       .Name("lockstep_release_rollbacks_total")
                       .Help("Canary rollbacks by model and reason (docs/rollouts.md)")
                       .Register(registry)),
        canarySteps_(::prometheus::BuildGauge()
                         .Name("lockstep_release_canary_step")
                         .Help("Canary step (index into canary.steps) of each release in prod")
                         .Register(registry)),
        canaryWeights_(::prometheus::BuildGauge()
                           .Name("lockstep_release_canary_weight")
                           .Help("Target weight (percent) of each release's current canary step")
                           .Register(registry)) {}

  void canaryStep(const std::string& ns, const std::string& release, const std::string& model,
                  int step, int weight) override {
    std::lock_guard<std::mutex> lock(mu_);
    const ::prometheus::Labels labels{{"namespace", ns}, {"release", release}, {"model", model}};
    auto& [stepGauge, weightGauge] = canary_[ns + "/" + release];
    stepGauge = &canarySteps_.Add(labels);
    weightGauge = &canaryWeights_.Add(labels);
    stepGauge->Set(step);
    weightGauge->Set(weight);
  }
  void forgetRelease(const std::string& ns, const std::string& release) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = canary_.find(ns + "/" + release);
    if (it == canary_.end()) return;
    canarySteps_.Remove(it->second.first);
    canaryWeights_.Remove(it->second.second);
    canary_.erase(it);
  }

  void promotion(const std::string& model) override {
    promotions_.Add({{"model", model}}).Increment();
  }
  void rollback(const std::string& model, const std::string& reason) override {
    rollbacks_.Add({{"model", model}, {"reason", reason}}).Increment();
  }

  void stageResult(const std::string& stage, const std::string& result, double seconds) override {
    results_.Add({{"stage", stage}, {"result", result}}).Increment();
    static const ::prometheus::Histogram::BucketBoundaries kBuckets = {
        5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400};
    durations_.Add({{"stage", stage}}, kBuckets).Observe(seconds);
  }

 private:
  ::prometheus::Family<::prometheus::Counter>& results_;
  ::prometheus::Family<::prometheus::Histogram>& durations_;
  ::prometheus::Family<::prometheus::Counter>& promotions_;
  ::prometheus::Family<::prometheus::Counter>& rollbacks_;
  ::prometheus::Family<::prometheus::Gauge>& canarySteps_;
  ::prometheus::Family<::prometheus::Gauge>& canaryWeights_;
  std::mutex mu_;  // guards canary_
  std::map<std::string, std::pair<::prometheus::Gauge*, ::prometheus::Gauge*>> canary_;
};

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
      querier_(std::move(querier)) {}

std::shared_ptr<AnalysisQuerier> makePrometheusQuerier() {
  return std::make_shared<PrometheusQuerier>();
}

Result ModelReleaseReconciler::reconcile(const Request& request) {
  // Observe: caches only.
  auto release = caches_.releases.get(request.ns, request.name);
  if (!release || kube::isBeingDeleted(*release)) {
    if (metrics_) metrics_->forgetRelease(request.ns, request.name);
    return Result::done();
  }
  ReleaseObserved o;
  o.release = *release;
  std::string env = release->value("/spec/runtimeEnvRef/name"_json_pointer, std::string());
  if (auto rte = caches_.runtimeEnvs.get(request.ns, env)) o.runtimeEnv = *rte;
  std::string uid = release->value("/metadata/uid"_json_pointer, std::string());
  for (const auto& job : caches_.jobs.byIndex(kube::kOwnerUidIndex, uid)) {
    o.jobs.push_back(*job);
    std::string jobUid = job->value("/metadata/uid"_json_pointer, std::string());
    for (const auto& pod : caches_.pods.byIndex(kube::kOwnerUidIndex, jobUid))
      o.pods.push_back(*pod);
  }
  o.mount = options_.mount;
  o.fetchCommand = options_.fetchCommand;
  auto wall = clock_.wallNow();
  o.now = kube::formatTime(wall, false);
  o.nowUnix = std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count();
  std::string model = release->value("/spec/model"_json_pointer, std::string());
  if (!model.empty()) {
    auto anchor = caches_.anchors.get(request.ns, modelAnchorName(model));
    o.promotedRelease = dataOf(anchor.get(), kAnchorPromoted);
    o.canaryRelease = dataOf(anchor.get(), kAnchorCanary);
    o.modelRevision = anchor ? revisionOf(anchor.get()) : std::string();
    // The last manual rollback to this release, as the anchor recorded it (a
    // status write lost after the anchor moved is re-derived from it).
    json history = json::parse(dataOf(anchor.get(), kAnchorHistory), nullptr, false);
    if (history.is_array() && !history.empty() && history.back().is_object() &&
        history.back().value("action", "") == "Rollback" &&
        history.back().value("release", "") == request.name)
      o.rollbackFrom = history.back().value("from", "");
  }

  // Plan: pure.
  ReleasePlan plan = planRelease(o);
  if (plan.prod) {
    if (auto done = runProdStage(request, *release, o, plan)) return *done;
  }
  if (plan.modelRollback) {
    if (auto done = runModelRollback(request, *release, o, plan)) return *done;
  }

  // Execute: Jobs first (deterministic names make a retry harmless), status last.
  for (const std::string& name : plan.jobsToDelete) {
    kube::DeleteOptions del;
    del.propagationPolicy = "Background";
    Status s = client_->remove(kube::resources::kJobs, request.ns, name, del);
    if (!s.isOk() && s.code() != Code::kNotFound)
      return Result::failed(s.withContext("deleting Job " + name));
  }
  for (const json& job : plan.jobsToCreate) {
    auto created = client_->create(kube::resources::kJobs, job);
    if (!created.isOk() && created.status().code() != Code::kAlreadyExists) {
      if (transient(created.status())) return Result::failed(created.status());
      // A refused Job (quota, an invalid template): say so on the release and retry later.
      (void)events_.warning(*release, "JobRefused",
                            "creating Job " + kube::name(job) + ": " + created.status().message());
      return Result::failed(created.status().withContext("creating Job " + kube::name(job)));
    }
  }
  for (const ReleaseEvent& e : plan.events) {
    Status s = events_.record(*release, e.type, e.reason, e.message);
    if (!s.isOk())
      spdlog::warn("modelrelease {}: event {}: {}", request.key(), e.reason, s.toString());
  }
  if (plan.statusChanged) {
    // Planned from the cache: the write carries the resourceVersion it was
    // planned from, so a plan made on a stale copy (our previous write not yet
    // in the cache) is refused with a Conflict and re-planned, never applied
    // over the newer status.
    json apply = {{"apiVersion", kModelReleases.apiVersion()},
                  {"kind", kModelReleases.kind},
                  {"metadata",
                   {{"name", request.name},
                    {"namespace", request.ns},
                    {"resourceVersion", kube::resourceVersion(*release)}}},
                  {"status", plan.status}};
    auto applied = client_->applyStatus(kModelReleases, apply);
    if (!applied.isOk()) {
      if (applied.status().code() == Code::kNotFound) return Result::done();
      if (!transient(applied.status()))
        spdlog::error("modelrelease {}: status rejected: {}", request.key(),
                      applied.status().toString());
      return Result::failed(applied.status());
    }
    spdlog::info("modelrelease {}: phase {} stage {}", request.key(),
                 plan.status.value("phase", ""), plan.status.value("currentStage", "-"));
    // Counted once the result is recorded: a crash before this point re-plans the
    // same transition, so the count is at-least-once and never lost.
    if (metrics_) {
      for (const StageOutcome& out : plan.outcomes)
        metrics_->stageResult(out.stage, out.result, out.durationSeconds);
      const json& prevCanary = release->value("/status/canary"_json_pointer, json::object());
      const json& canary = plan.status.value("canary", json::object());
      std::string before = prevCanary.value("phase", "");
      std::string after = canary.value("phase", "");
      if (after != before && after == "RollingBack")
        metrics_->rollback(model, canary.value("reason", ""));
      if (after != before && after == "Promoted") metrics_->promotion(model);
    }
  }
  if (options_.stageTagger && !model.empty()) {
    // Registry stage tags for what this plan recorded; never fails the reconcile.
    auto anchor = caches_.anchors.get(request.ns, modelAnchorName(model));
    int64_t retry =
        options_.stageTagger->run(*release, plan.status, dataOf(anchor.get(), kAnchorPromoted),
                                  dataOf(anchor.get(), kAnchorPromotedPackage), o.now, o.nowUnix);
    if (retry > 0 && (plan.requeueAfterSeconds == 0 || retry < plan.requeueAfterSeconds))
      plan.requeueAfterSeconds = retry;
  }
  // The canary step of a release in its prod stage, as applied; gone once it is finished.
  if (metrics_) {
    const json& canary = plan.status.value("canary", json::object());
    if (plan.prod && plan.status.value("phase", "") == kPhaseCanary && canary.contains("step")) {
      const int step = canary.value("step", 0);
      CanarySpec spec;
      const bool known = !decodeCanarySpec(plan.prod->stageSpec, spec) && step >= 0 &&
                         step < static_cast<int>(spec.steps.size());
      metrics_->canaryStep(request.ns, request.name, model, step,
                           known ? spec.steps[static_cast<size_t>(step)].weight : 0);
    } else {
      metrics_->forgetRelease(request.ns, request.name);
    }
  }
  if (plan.requeueAfterSeconds > 0)
    return Result::after(std::chrono::seconds(plan.requeueAfterSeconds));
  return Result::done();
}

// ---- the prod stage -------------------------------------------------------------------------

namespace {

// The serving recipe of `mr` (a release object): its package, validated
// closure, RuntimeEnv image and the serving template of its prod stage.
std::optional<ServingRelease> servingReleaseOf(const kube::Object& mr, const kube::Indexer& rtes,
                                               std::string* why) {
  ServingRelease r;
  r.release = kube::name(mr);
  r.package = mr.value("/spec/package"_json_pointer, std::string());
  r.closureHash = mr.value("/spec/closureHash"_json_pointer, std::string());
  r.runtimeEnv = mr.value("/spec/runtimeEnvRef/name"_json_pointer, std::string());
  for (const json& st : mr.value("/spec/stages"_json_pointer, json::array())) {
    if (st.contains("serving")) r.podTemplate = st["serving"].value("template", json::object());
  }
  auto rte = rtes.get(kube::namespaceOf(mr), r.runtimeEnv);
  if (!rte) {
    *why = "RuntimeEnv " + r.runtimeEnv + " of release " + r.release + " does not exist";
    return std::nullopt;
  }
  r.runtimeImage = rte->value("/spec/image"_json_pointer, std::string());
  return r;
}

json anchorHistory(const kube::Object* anchor) {
  json h = json::parse(dataOf(anchor, kAnchorHistory), nullptr, false);
  return h.is_array() ? h : json::array();
}

}  // namespace

std::optional<Result> ModelReleaseReconciler::runProdStage(const Request& request,
                                                           const kube::Object& release,
                                                           const ReleaseObserved& o,
                                                           ReleasePlan& plan) {
  const json prevStatus = release.value("status", json::object());
  const int64_t generation = release.value("/metadata/generation"_json_pointer, int64_t{0});
  const std::string name = request.name;
  const std::string ns = request.ns;
  const std::string model = release.value("/spec/model"_json_pointer, std::string());

  CanarySpec spec;
  if (auto err = decodeCanarySpec(plan.prod->stageSpec, spec)) {
    failProdStage(plan, *err, prevStatus, generation, o.now);
    return std::nullopt;
  }

  // The anchor: create it, or claim the canary slot (the newest release to
  // reach prod takes it; the one it displaces turns Superseded).
  auto anchor = caches_.anchors.get(ns, modelAnchorName(model));
  if (!anchor) {
    json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata",
                {{"name", modelAnchorName(model)},
                 {"namespace", ns},
                 {"labels", {{kModelLabel, model}, {"app.kubernetes.io/managed-by", "lockstep"}}}}},
               {"data", {{kAnchorCanary, name}}}};
    auto created = client_->create(kube::resources::kConfigMaps, cm);
    if (!created.isOk() && created.status().code() != Code::kAlreadyExists)
      return Result::failed(created.status().withContext("creating the model's anchor ConfigMap"));
    return Result::after(std::chrono::seconds(1));  // plan again from the cache
  }
  if (dataOf(anchor.get(), kAnchorCanary) != name &&
      !prevStatus.value("canary", json()).is_object()) {
    json claimed = *anchor;
    claimed["data"][kAnchorCanary] = name;
    auto updated = client_->update(kube::resources::kConfigMaps, claimed);
    if (!updated.isOk()) return Result::failed(updated.status().withContext("claiming the canary"));
    return Result::after(std::chrono::seconds(1));
  }

  // Observe the serving objects.
  auto canaryDep = caches_.deployments.get(ns, servingDeploymentName(model, kTrackCanary));
  auto stableDep = caches_.deployments.get(ns, servingDeploymentName(model, kTrackStable));
  std::vector<json> pods;
  for (const auto& p : caches_.pods.byIndex(kByModelIndex, ns + "/" + model)) pods.push_back(*p);

  CanaryObserved co;
  co.spec = spec;
  co.release = name;
  co.model = model;
  co.package = release.value("/spec/package"_json_pointer, std::string());
  co.closureHash = release.value("/spec/closureHash"_json_pointer, std::string());
  co.previous = prevStatus.value("canary", json());
  co.stableRelease = templateRelease(stableDep.get());
  // A canary Deployment still carrying the displaced release: its pods are
  // that release's, and this release's canary starts from zero pods.
  const std::string canaryTemplate = templateRelease(canaryDep.get());
  const bool displaced = !canaryTemplate.empty() && canaryTemplate != name;
  co.canary.specReplicas = displaced ? 0 : specReplicas(canaryDep.get());
  co.canary.readyReplicas = countReadyPods(pods, kTrackCanary, name);
  if (displaced) {
    co.displacedRelease = canaryTemplate;
    co.displaced = {specReplicas(canaryDep.get()),
                    countReadyPods(pods, kTrackCanary, canaryTemplate)};
  }
  co.stable.specReplicas = specReplicas(stableDep.get());
  co.stable.readyReplicas =
      co.stableRelease.empty() ? 0 : countReadyPods(pods, kTrackStable, co.stableRelease);
  // Pending with PodScheduled=False; with `forLackOf`, only when the scheduler
  // said some node lacks a resource ("0/5 nodes are available: 2 Insufficient
  // nvidia.com/gpu, ..."), i.e. when freeing a pod's resources could help
  // (not when every node is cordoned or tainted).
  auto unschedulable = [](const json& p, bool forLackOf) {
    if (p.contains("/metadata/deletionTimestamp"_json_pointer) ||
        p.value("/status/phase"_json_pointer, std::string()) != "Pending")
      return false;
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False")
        return !forLackOf || c.value("message", "").find("Insufficient ") != std::string::npos;
    }
    return false;
  };
  for (const json& p : pods) {
    if (p.contains("/metadata/deletionTimestamp"_json_pointer)) ++co.podsTerminating;
    const std::string track =
        p.value("/metadata/labels/lockstep.dev~1track"_json_pointer, std::string());
    const std::string of =
        p.value("/metadata/labels/lockstep.dev~1release"_json_pointer, std::string());
    if (track == kTrackStable && !co.stableRelease.empty() && of == co.stableRelease &&
        unschedulable(p, /*forLackOf=*/true))
      ++co.stablePendingUnschedulable;
    if (track != kTrackCanary || of != name) continue;
    for (const json& cs : p.value("/status/containerStatuses"_json_pointer, json::array()))
      co.canaryRestarts += cs.value("restartCount", 0);
    if (unschedulable(p, /*forLackOf=*/false)) ++co.canaryPendingUnschedulable;
  }
  if (templateRelease(canaryDep.get()) == name)
    co.admissionRefusals = replicaFailures(canaryDep.get());
  std::string promoted = dataOf(anchor.get(), kAnchorPromoted);
  if (!promoted.empty() && promoted != name) {
    co.knownGood = KnownGood{promoted, dataOf(anchor.get(), kAnchorPromotedPackage),
                             dataOf(anchor.get(), kAnchorPromotedClosureHash)};
    if (auto kg = caches_.releases.get(ns, promoted)) {
      std::string env = kg->value("/spec/runtimeEnvRef/name"_json_pointer, std::string());
      if (auto rte = caches_.runtimeEnvs.get(ns, env)) {
        std::string hash = rte->value("/status/closureHash"_json_pointer, std::string());
        co.knownGoodStale = !hash.empty() && hash != co.knownGood->closureHash;
      }
    }
  }
  int step = co.previous.is_object() ? co.previous.value("step", 0) : 0;
  auto ann = [&](const std::string& key) {
    return kube::annotation(release, key).value_or(std::string());
  };
  co.promoteStepBy = ann(kPromoteAnnotationPrefix + std::to_string(step));
  co.promoteFullBy = ann(kPromoteFullAnnotation);
  co.abortBy = ann(kAbortAnnotation);
  co.now = o.now;
  co.nowUnix = o.nowUnix;

  CanaryPlan cp = planCanary(co);
  if (cp.measureNow && querier_) {
    int at = cp.status.value("step", 0);
    if (at >= 0 && at < static_cast<int>(spec.steps.size()) && spec.steps[at].analysis) {
      co.measurement = querier_->measure(*spec.steps[at].analysis, o.nowUnix);
      if (!co.measurement->error.empty())
        spdlog::info("modelrelease {}: analysis error: {}", request.key(), co.measurement->error);
      cp = planCanary(co);
    }
  }

  // GPU pre-check: only when this plan adds canary pods that ask for GPUs. The
  // pods bound to each compatible node are read now, not cached (the operator
  // keeps no cluster-wide pod cache): in every namespace, or in a namespaced
  // install only in the watched ones (other tenants' pods are then not seen;
  // docs/rollouts.md "GPU capacity").
  const int64_t gpusPerPod = podGpuRequest(spec.podTemplate.value("spec", json::object()));
  // Also when the plan gives up on the step's deadline: with the capacity
  // known, a step that never got its GPUs says InsufficientGPUCapacity.
  const bool addsPods = cp.canaryRelease.empty() && cp.replicas.canary > co.canary.specReplicas;
  const bool deadlineHit = cp.rollbackReason == kReasonProgressDeadlineExceeded;
  if (gpusPerPod > 0 && (addsPods || deadlineHit) && !co.gpu) {
    std::string minDriver;
    if (auto rte = caches_.runtimeEnvs.get(
            ns, release.value("/spec/runtimeEnvRef/name"_json_pointer, std::string())))
      minDriver = rte->value("/status/minDriver"_json_pointer, std::string());
    std::vector<json> nodes, bound;
    for (const auto& n : caches_.nodes.list()) {
      if (!gpuNodeCompatible(*n, minDriver)) continue;
      nodes.push_back(*n);
      kube::ListOptions on;
      on.fieldSelector =
          "spec.nodeName=" + kube::name(*n) + ",status.phase!=Succeeded,status.phase!=Failed";
      const std::vector<std::string> all = {""};
      for (const std::string& where :
           options_.podNamespaces.empty() ? all : options_.podNamespaces) {
        auto listed = client_->list(kube::resources::kPods, where, on);
        if (!listed.isOk())
          return Result::failed(
              listed.status().withContext("GPU pre-check: pods on node " + kube::name(*n)));
        for (auto& p : listed->items) bound.push_back(std::move(p));
      }
    }
    co.gpu = gpuCapacityOf(gpusPerPod, nodes, bound, minDriver);
    cp = planCanary(co);
  }

  // Apply: the Service, then both Deployments (stable first when it grows).
  ServingObjectsInput in;
  in.model = model;
  in.ns = ns;
  in.port = spec.port;
  in.capacity = spec.capacity;
  in.mount = options_.mount;
  in.fetchCommand = options_.fetchCommand;
  in.anchorUid = anchor->value("/metadata/uid"_json_pointer, std::string());
  kube::PatchParams force;
  force.force = true;
  auto svc = client_->apply(kube::resources::kServices, buildModelService(in), force);
  if (!svc.isOk()) return Result::failed(svc.status().withContext("applying Service " + model));

  const std::string canaryWho = !cp.canaryRelease.empty() ? cp.canaryRelease
                                : cp.replicas.canary > 0 || templateRelease(canaryDep.get()) == name
                                    ? name
                                    : std::string();
  auto placeStable = [&] {
    return placeTrack(in, release, kTrackStable, cp.stableRelease, cp.replicas.stable,
                      stableDep.get());
  };
  auto placeCanary = [&] {
    return placeTrack(in, release, kTrackCanary, canaryWho, cp.replicas.canary, canaryDep.get());
  };
  // The track that grows goes first; a failed write stops before the other one.
  const bool stableFirst = cp.replicas.stable >= co.stable.specReplicas;
  for (bool stableTurn : {stableFirst, !stableFirst}) {
    Status s = stableTurn ? placeStable() : placeCanary();
    if (s.isOk()) continue;
    if (s.code() == Code::kInvalidArgument) {
      failProdStage(plan, s.message(), prevStatus, generation, o.now);
      return std::nullopt;
    }
    (void)events_.warning(release, "ServingApplyFailed", s.message());
    return Result::failed(s);
  }

  // The anchor records promotions and rollbacks (and frees the canary slot).
  bool promotedNow =
      cp.action == CanaryAction::kPromoted && (dataOf(anchor.get(), kAnchorPromoted) != name ||
                                               dataOf(anchor.get(), kAnchorCanary) == name);
  bool rolledBackNow =
      cp.action == CanaryAction::kRolledBack && dataOf(anchor.get(), kAnchorCanary) == name;
  if (promotedNow || rolledBackNow) {
    json updated = *anchor;
    json& data = updated["data"];
    if (!data.is_object()) data = json::object();
    json history = anchorHistory(anchor.get());
    json entry = {
        {"release", name}, {"package", co.package}, {"closureHash", co.closureHash}, {"at", o.now}};
    if (promotedNow) {
      if (dataOf(anchor.get(), kAnchorPromoted) != name)
        data[kAnchorRevision] = nextRevision(anchor.get());
      data[kAnchorPromoted] = name;
      data[kAnchorPromotedPackage] = co.package;
      data[kAnchorPromotedClosureHash] = co.closureHash;
      entry["action"] = "Promoted";
    } else {
      entry["action"] = "RolledBack";
      entry["reason"] = cp.status.value("reason", "");
      entry["stable"] = co.knownGood ? co.knownGood->release : std::string();
    }
    data[kAnchorCanary] = "";
    bool recorded = false;
    for (const json& h : history)
      recorded = recorded || (h.value("release", "") == name &&
                              h.value("action", "") == entry["action"].get<std::string>());
    if (!recorded) history.push_back(entry);
    while (history.size() > kHistoryKept) history.erase(history.begin());
    data[kAnchorHistory] = history.dump();
    auto u = client_->update(kube::resources::kConfigMaps, updated);
    if (!u.isOk()) return Result::failed(u.status().withContext("recording on the anchor"));
  }
  foldCanaryPlan(plan, cp, prevStatus, generation, o.now);
  return std::nullopt;
}

Status ModelReleaseReconciler::placeTrack(const ServingObjectsInput& in, const kube::Object& self,
                                          const std::string& track, const std::string& who,
                                          int replicas, const kube::Object* current) {
  const std::string name = servingDeploymentName(in.model, track);
  // A Deployment already running `who` is only scaled; otherwise it is applied
  // whole from that release's serving template. No `who`: scaled to zero.
  if (who.empty() || (current != nullptr && templateRelease(current) == who)) {
    const int want = who.empty() ? 0 : replicas;
    if (current == nullptr || specReplicas(current) == want) return Status::ok();
    auto p = client_->mergePatch(kube::resources::kDeployments, in.ns, name,
                                 json{{"spec", {{"replicas", want}}}});
    return p.isOk() ? Status::ok() : p.status();
  }
  std::string why;
  std::optional<ServingRelease> sr;
  if (who == kube::name(self)) {
    sr = servingReleaseOf(self, caches_.runtimeEnvs, &why);
  } else if (auto other = caches_.releases.get(in.ns, who)) {
    sr = servingReleaseOf(*other, caches_.runtimeEnvs, &why);
  } else {
    why = "release " + who + " is gone; the " + track + " Deployment keeps its pods";
  }
  if (!sr) return Status(Code::kUnavailable, why);
  BuiltDeployment built = buildServingDeployment(in, track, *sr, replicas);
  if (!built.error.empty()) return Status(Code::kInvalidArgument, built.error);
  kube::PatchParams force;
  force.force = true;
  auto a = client_->apply(kube::resources::kDeployments, built.deployment, force);
  return a.isOk() ? Status::ok() : a.status();
}

std::optional<Result> ModelReleaseReconciler::runModelRollback(const Request& request,
                                                               const kube::Object& release,
                                                               const ReleaseObserved& o,
                                                               const ReleasePlan& plan) {
  const ModelRollbackRequest& rb = *plan.modelRollback;
  const std::string model = release.value("/spec/model"_json_pointer, std::string());
  auto anchor = caches_.anchors.get(request.ns, modelAnchorName(model));
  // The planner decided from this same cache; a moved anchor means plan again.
  if (!anchor || dataOf(anchor.get(), kAnchorPromoted) != rb.from ||
      revisionOf(anchor.get()) != rb.revision || !dataOf(anchor.get(), kAnchorCanary).empty())
    return Result::after(std::chrono::seconds(1));
  json prodStage;
  for (const json& st : release.value("/spec/stages"_json_pointer, json::array())) {
    if (st.contains("serving") && st.contains("canary")) prodStage = st;
  }
  CanarySpec spec;
  if (auto err = decodeCanarySpec(prodStage, spec))
    return Result::failed(Status(Code::kInvalidArgument, "rollback target: " + *err));

  ServingObjectsInput in;
  in.model = model;
  in.ns = request.ns;
  in.port = spec.port;
  in.capacity = spec.capacity;
  in.mount = options_.mount;
  in.fetchCommand = options_.fetchCommand;
  in.anchorUid = anchor->value("/metadata/uid"_json_pointer, std::string());
  auto stableDep = caches_.deployments.get(request.ns, servingDeploymentName(model, kTrackStable));
  auto canaryDep = caches_.deployments.get(request.ns, servingDeploymentName(model, kTrackCanary));
  Status s = placeTrack(in, release, kTrackStable, request.name, spec.replicas, stableDep.get());
  if (s.isOk()) s = placeTrack(in, release, kTrackCanary, "", 0, canaryDep.get());
  if (!s.isOk()) {
    (void)events_.warning(release, "ServingApplyFailed", s.message());
    return Result::failed(s.withContext("rolling model " + model + " back to " + request.name));
  }

  json updated = *anchor;
  json& data = updated["data"];
  if (!data.is_object()) data = json::object();
  const std::string package = release.value("/spec/package"_json_pointer, std::string());
  const std::string hash = release.value("/spec/closureHash"_json_pointer, std::string());
  data[kAnchorPromoted] = request.name;
  data[kAnchorRevision] = nextRevision(anchor.get());
  data[kAnchorPromotedPackage] = package;
  data[kAnchorPromotedClosureHash] = hash;
  json history = anchorHistory(anchor.get());
  history.push_back({{"action", "Rollback"},
                     {"release", request.name},
                     {"from", rb.from},
                     {"by", rb.by},
                     {"package", package},
                     {"closureHash", hash},
                     {"at", o.now}});
  while (history.size() > kHistoryKept) history.erase(history.begin());
  data[kAnchorHistory] = history.dump();
  auto u = client_->update(kube::resources::kConfigMaps, updated);
  if (!u.isOk()) return Result::failed(u.status().withContext("recording the rollback"));
  // Counted at the anchor write (guarded by its resourceVersion, so once per
  // rollback), not at the status write, which may conflict and be re-planned
  // from an anchor that already moved.
  if (metrics_) metrics_->rollback(model, kReasonManualRollback);
  return std::nullopt;
}

StatusOr<PackageMount> probePackageMount(kube::Client& client, const std::string& ns) {
  json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", "lockstep-image-volume-probe"}, {"namespace", ns}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"restartPolicy", "Never"},
            {"containers",
             json::array(
                 {{{"name", "probe"},
                   {"image", "registry.example/probe:1"},
                   {"volumeMounts", json::array({{{"name", "pkg"}, {"mountPath", "/model"}}})}}})},
            {"volumes",
             json::array({{{"name", "pkg"},
                           {"image", {{"reference", "registry.example/probe:1"}}}}})}}}}}}}};
  auto created = client.create(kube::resources::kJobs, job, ns, /*dryRun=*/true);
  if (!created.isOk()) return created.status().withContext("image volume probe (dry run)");
  const json::json_pointer p("/spec/template/spec/volumes/0/image/reference");
  return created->contains(p) ? PackageMount::kImageVolume : PackageMount::kInitContainer;
}

void setupModelReleaseController(runtime::Manager& manager, ModelReleaseOptions options,
                                 int workers) {
  kube::Informer& releases = manager.informer(kModelReleases);
  kube::Informer& rtes = manager.informer(kRuntimeEnvs);
  kube::InformerOptions jobOpts;
  jobOpts.resource = kube::resources::kJobs;
  jobOpts.labelSelector = kReleaseLabel;
  kube::Informer& jobs = manager.informer(jobOpts);
  kube::InformerOptions podOpts;
  podOpts.resource = kube::resources::kPods;
  podOpts.labelSelector = kReleaseLabel;
  kube::Informer& pods = manager.informer(podOpts);
  kube::InformerOptions deployOpts;
  deployOpts.resource = kube::resources::kDeployments;
  deployOpts.labelSelector = kModelLabel;
  kube::Informer& deployments = manager.informer(deployOpts);
  kube::InformerOptions anchorOpts;
  anchorOpts.resource = kube::resources::kConfigMaps;
  anchorOpts.labelSelector = kModelLabel;
  kube::Informer& anchors = manager.informer(anchorOpts);
  // GPU nodes for the canary's capacity pre-check (shared with the RuntimeEnv controller).
  kube::Informer& nodes = manager.informer(kube::resources::kNodes);
  releases.addIndex(kReleaseByRuntimeEnvIndex, api::v1alpha1::indexByRuntimeEnv);
  releases.addIndex(kByModelIndex, releaseByModel);
  jobs.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
  pods.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
  pods.addIndex(kByModelIndex, byModelLabel);

  options.podNamespaces = manager.watchNamespaces();
  if (!options.stageTagger) {
    options.stageTagger = std::make_shared<StageTagger>(
        manager.sharedClient(), manager.syncEvents(), makeRegistryTagger(options.registryCaPem));
  }
  auto reconciler = std::make_shared<ModelReleaseReconciler>(
      manager.sharedClient(),
      ModelReleaseReconciler::Caches{releases.cache(), rtes.cache(), jobs.cache(), pods.cache(),
                                     deployments.cache(), anchors.cache(), nodes.cache()},
      manager.syncEvents(), manager.clock(),
      std::make_shared<PrometheusReleaseMetrics>(*manager.metrics().registry()), std::move(options),
      makePrometheusQuerier());
  runtime::ControllerOptions co;
  co.name = "modelrelease";
  co.workers = workers;
  runtime::Controller& c = manager.addController(std::move(co), reconciler);

  // The release: spec edits and annotations (approve, abort); its status is ours.
  c.watch(releases, runtime::requestForObject(), [](const kube::Object& a, const kube::Object& b) {
    return a.value("/metadata/generation"_json_pointer, 0) !=
               b.value("/metadata/generation"_json_pointer, 0) ||
           a.value("/metadata/annotations"_json_pointer, json::object()) !=
               b.value("/metadata/annotations"_json_pointer, json::object());
  });
  // Its Jobs, by controller owner reference.
  c.watch(jobs, runtime::requestForOwner("ModelRelease", "lockstep.dev"));
  // Pods of those Jobs, by the release label the Job's template carries.
  c.watch(pods, [](const kube::Object& pod) {
    std::vector<Request> out;
    if (auto r = kube::label(pod, kReleaseLabel)) out.push_back({kube::namespaceOf(pod), *r});
    return out;
  });
  // A model's Deployments and anchor: every release of that model (the one in
  // canary scales, a promoted one notices it was superseded).
  const kube::Indexer* byModel = &releases.cache();
  auto releasesOfModel = [byModel](const kube::Object& o) {
    std::vector<Request> out;
    for (const std::string& key : byModelLabel(o)) {
      for (const auto& mr : byModel->byIndex(kByModelIndex, key))
        out.push_back({kube::namespaceOf(*mr), kube::name(*mr)});
    }
    return out;
  };
  c.watch(deployments, releasesOfModel);
  c.watch(anchors, releasesOfModel);
  // A RuntimeEnv's resolved hash or readiness decides whether its releases may advance.
  const kube::Indexer* releaseCache = &releases.cache();
  c.watch(rtes, [releaseCache](const kube::Object& rte) {
    std::vector<Request> out;
    for (const auto& mr : releaseCache->byIndex(kReleaseByRuntimeEnvIndex, kube::objectKey(rte)))
      out.push_back({kube::namespaceOf(*mr), kube::name(*mr)});
    return out;
  });
}

}  // namespace lockstep::controllers
