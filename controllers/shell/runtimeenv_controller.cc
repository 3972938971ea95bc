#include "controllers/shell/runtimeenv_controller.h"

#include <spdlog/spdlog.h>

#include "controllers/runtimeenv/runtimeenv_plan.h"
#include "controllers/shell/lockstep_resources.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using runtime::Request;
using runtime::Result;

std::string configMapKeyOf(const kube::Object& rte) {
  const json::json_pointer p("/spec/lock/configMapRef/name");
  if (!rte.contains(p) || !rte.at(p).is_string()) return "";
  return kube::objectKey(kube::namespaceOf(rte), rte.at(p).get<std::string>());
}

std::string runtimeEnvKeyOf(const kube::Object& mr) {
  const json::json_pointer p("/spec/runtimeEnvRef/name");
  if (!mr.contains(p) || !mr.at(p).is_string()) return "";
  return kube::objectKey(kube::namespaceOf(mr), mr.at(p).get<std::string>());
}

json conditionJson(const Condition& c, int64_t generation, const std::string& now) {
  json conditions = json::array();
  setCondition(conditions, c, generation, now);
  return conditions[0];
}

// Requeue on transient API errors; an object gone meanwhile is simply done.
bool transient(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kConflict ||
         s.code() == Code::kDeadlineExceeded || s.code() == Code::kInternal ||
         s.code() == Code::kGone;
}

}  // namespace

RuntimeEnvReconciler::RuntimeEnvReconciler(std::shared_ptr<kube::Client> client,
                                           std::shared_ptr<kube::Client> releaseClient,
                                           Caches caches, kube::EventRecorder& events,
                                           kube::Clock& clock)
    : client_(std::move(client)),
      releaseClient_(std::move(releaseClient)),
      caches_(caches),
      events_(events),
      clock_(clock) {}

Result RuntimeEnvReconciler::reconcile(const Request& request) {
  // Observe: caches only.
  auto rte = caches_.runtimeEnvs.get(request.ns, request.name);
  if (!rte || kube::isBeingDeleted(*rte)) return Result::done();
  RuntimeEnvObserved observed;
  observed.runtimeEnv = *rte;
  if (std::string cmKey = configMapKeyOf(*rte); !cmKey.empty()) {
    if (auto cm = caches_.configMaps.get(cmKey)) observed.configMap = *cm;
  }
  for (const auto& n : caches_.nodes.list()) observed.nodes.push_back(*n);
  // ModelReleases compute their own Stale condition from the cached RuntimeEnv
  // (controllers/modelrelease): this controller writes only RuntimeEnv status.

  // Plan: pure.
  const std::string now = kube::formatTime(clock_.wallNow(), false);
  RuntimeEnvPlan plan = planRuntimeEnv(observed, now);

  // Execute: dependants first, the RuntimeEnv's own status last.
  for (const auto& rc : plan.releaseConditions) {
    json patch = {
        {"apiVersion", kModelReleases.apiVersion()},
        {"kind", kModelReleases.kind},
        {"metadata", {{"name", rc.release}, {"namespace", request.ns}}},
        {"status",
         {{"conditions", json::array({conditionJson(rc.condition, rc.generation, now)})}}}};
    auto applied = releaseClient_->applyStatus(kModelReleases, patch);
    if (!applied.isOk() && applied.status().code() != Code::kNotFound) {
      return Result::failed(applied.status().withContext("marking ModelRelease " + rc.release));
    }
  }
  for (const auto& e : plan.events) {
    Status s;
    if (e.release.empty()) {
      s = events_.record(*rte, e.type, e.reason, e.message);
    } else if (auto mr = caches_.releases.get(request.ns, e.release)) {
      s = events_.record(*mr, e.type, e.reason, e.message);
    }
    // Events are best effort: never fail a reconcile for one.
    if (!s.isOk())
      spdlog::warn("runtimeenv {}: event {}: {}", request.key(), e.reason, s.toString());
  }
  if (plan.statusChanged) {
    json apply = {{"apiVersion", kRuntimeEnvs.apiVersion()},
                  {"kind", kRuntimeEnvs.kind},
                  {"metadata", {{"name", request.name}, {"namespace", request.ns}}},
                  {"status", plan.status}};
    auto applied = client_->applyStatus(kRuntimeEnvs, apply);
    if (!applied.isOk()) {
      if (applied.status().code() == Code::kNotFound) return Result::done();
      if (transient(applied.status())) return Result::failed(applied.status());
      // A rejected status is our bug or a schema mismatch: log loudly, back off.
      spdlog::error("runtimeenv {}: status rejected: {}", request.key(),
                    applied.status().toString());
      return Result::failed(applied.status());
    }
    auto ready = findCondition(plan.status["conditions"], "Ready");
    spdlog::info("runtimeenv {}: {} {} ({})", request.key(), plan.status.value("closureHash", ""),
                 ready ? ready->value("reason", "") : "", ready ? ready->value("message", "") : "");
  }
  return Result::done();
}

void setupRuntimeEnvController(runtime::Manager& manager, int workers) {
  kube::Informer& rtes = manager.informer(kRuntimeEnvs);
  kube::Informer& cms = manager.informer(kube::resources::kConfigMaps);
  kube::Informer& nodes = manager.informer(kube::resources::kNodes);
  kube::Informer& releases = manager.informer(kModelReleases);
  rtes.addIndex(kRuntimeEnvByConfigMapIndex, [](const kube::Object& o) {
    std::string k = configMapKeyOf(o);
    return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
  });
  releases.addIndex(kReleaseByRuntimeEnvIndex, [](const kube::Object& o) {
    std::string k = runtimeEnvKeyOf(o);
    return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
  });

  auto releaseClientOptions = kube::ClientOptions{};
  releaseClientOptions.fieldManager = "lockstep-runtimeenv-controller";
  auto releaseClient = std::make_shared<kube::Client>(
      std::shared_ptr<kube::Transport>(manager.sharedClient(), &manager.client().transport()),
      releaseClientOptions);
  auto reconciler = std::make_shared<RuntimeEnvReconciler>(
      manager.sharedClient(), releaseClient,
      RuntimeEnvReconciler::Caches{rtes.cache(), cms.cache(), nodes.cache(), releases.cache()},
      manager.events(), kube::SystemClock::instance());
  runtime::ControllerOptions options;
  options.name = "runtimeenv";
  options.workers = workers;
  runtime::Controller& c = manager.addController(std::move(options), reconciler);

  // The RuntimeEnv itself: spec changes only (its status is ours).
  c.watch(rtes, runtime::requestForObject(), [](const kube::Object& a, const kube::Object& b) {
    return a.value("/metadata/generation"_json_pointer, 0) !=
           b.value("/metadata/generation"_json_pointer, 0);
  });
  // A ConfigMap change re-resolves every RuntimeEnv reading its lock from it.
  const kube::Indexer* rteCache = &rtes.cache();
  c.watch(cms, [rteCache](const kube::Object& cm) {
    std::vector<Request> out;
    for (const auto& r : rteCache->byIndex(kRuntimeEnvByConfigMapIndex, kube::objectKey(cm))) {
      out.push_back({kube::namespaceOf(*r), kube::name(*r)});
    }
    return out;
  });
  // Node driver labels decide compatibleNodes: any node change re-counts for all.
  c.watch(
      nodes,
      [rteCache](const kube::Object&) {
        std::vector<Request> out;
        for (const auto& r : rteCache->list())
          out.push_back({kube::namespaceOf(*r), kube::name(*r)});
        return out;
      },
      [](const kube::Object& a, const kube::Object& b) {
        return a.value("/metadata/labels"_json_pointer, json::object()) !=
                   b.value("/metadata/labels"_json_pointer, json::object()) ||
               a.value("/spec/unschedulable"_json_pointer, false) !=
                   b.value("/spec/unschedulable"_json_pointer, false);
      });
}

}  // namespace lockstep::controllers
