#include "controllers/modelrelease/modelrelease_controller.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {
namespace {

using api::v1alpha1::kModelReleases;
using api::v1alpha1::kReleaseByRuntimeEnvIndex;
using api::v1alpha1::kRuntimeEnvs;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

constexpr const char* kReleaseLabel = "lockstep.dev/release";

bool transient(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kConflict ||
         s.code() == Code::kDeadlineExceeded || s.code() == Code::kInternal ||
         s.code() == Code::kGone;
}

class PrometheusReleaseMetrics final : public ReleaseMetrics {
 public:
  explicit PrometheusReleaseMetrics(prometheus::Registry& registry)
      : results_(prometheus::BuildCounter()
                     .Name("lockstep_release_stage_results_total")
                     .Help("Gate stage results by stage and result "
                           "(succeeded, failed, timed_out, aborted)")
                     .Register(registry)),
        durations_(prometheus::BuildHistogram()
                       .Name("lockstep_release_stage_duration_seconds")
                       .Help("Time from a gate stage's start to its result")
                       .Register(registry)) {}

  void stageResult(const std::string& stage, const std::string& result, double seconds) override {
    results_.Add({{"stage", stage}, {"result", result}}).Increment();
    static const prometheus::Histogram::BucketBoundaries kBuckets = {
        5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400};
    durations_.Add({{"stage", stage}}, kBuckets).Observe(seconds);
  }

 private:
  prometheus::Family<prometheus::Counter>& results_;
  prometheus::Family<prometheus::Histogram>& durations_;
};

}  // namespace

ModelReleaseReconciler::ModelReleaseReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                                               kube::EventRecorder& events, kube::Clock& clock,
                                               std::shared_ptr<ReleaseMetrics> metrics,
                                               ModelReleaseOptions options)
    : client_(std::move(client)),
      caches_(caches),
      events_(events),
      clock_(clock),
      metrics_(std::move(metrics)),
      options_(std::move(options)) {}

Result ModelReleaseReconciler::reconcile(const Request& request) {
  // Observe: caches only.
  auto release = caches_.releases.get(request.ns, request.name);
  if (!release || kube::isBeingDeleted(*release)) return Result::done();
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

  // Plan: pure.
  ReleasePlan plan = planRelease(o);

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
    json apply = {{"apiVersion", kModelReleases.apiVersion()},
                  {"kind", kModelReleases.kind},
                  {"metadata", {{"name", request.name}, {"namespace", request.ns}}},
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
    }
  }
  if (plan.requeueAfterSeconds > 0)
    return Result::after(std::chrono::seconds(plan.requeueAfterSeconds));
  return Result::done();
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
  releases.addIndex(kReleaseByRuntimeEnvIndex, api::v1alpha1::indexByRuntimeEnv);
  jobs.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
  pods.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());

  auto reconciler = std::make_shared<ModelReleaseReconciler>(
      manager.sharedClient(),
      ModelReleaseReconciler::Caches{releases.cache(), rtes.cache(), jobs.cache(), pods.cache()},
      manager.events(), manager.clock(),
      std::make_shared<PrometheusReleaseMetrics>(*manager.metrics().registry()),
      std::move(options));
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
