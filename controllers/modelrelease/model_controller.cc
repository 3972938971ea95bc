#include "controllers/modelrelease/model_controller.h"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "controllers/common/execute.h"
#include "controllers/common/plan.h"
#include "controllers/modelrelease/prod/model_conditions.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/ownership.h"
#include "controllers/modelrelease/prod/prod_observed.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "controllers/modelrelease/watch_filters.h"
#include "operator/kube/conditions.h"
#include "operator/kube/object.h"
#include "operator/kube/views.h"
#include "operator/runtime/builder.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

std::string statusOfCondition(const json& conditions, const char* type) {
  auto c = kube::findCondition(conditions, type);
  return c ? c->value("status", "") : "";
}

// The Model named by an object's lockstep.dev/model label, in its namespace.
std::vector<Request> modelNamedByLabel(const kube::Object& o) {
  auto m = kube::label(o, v1::kModelLabel);
  if (!m || m->empty()) return {};
  return {{kube::namespaceOf(o), *m}};
}

}  // namespace

ModelReconciler::ModelReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                                 kube::EventSink& events, kube::Clock& clock,
                                 std::shared_ptr<ReleaseMetrics> metrics, bool rollbackRequests)
    : client_(std::move(client)),
      caches_(caches),
      events_(events),
      clock_(clock),
      metrics_(std::move(metrics)),
      rollbackRequests_(rollbackRequests) {}

Result ModelReconciler::reconcile(const Request& request) {
  kube::ObjectPtr object = caches_.models.get(request.ns, request.name);
  if (!object || kube::isBeingDeleted(*object)) {
    if (metrics_) metrics_->forgetModel(request.ns, request.name);
    {
      std::lock_guard lock(warnedMu_);
      warned_.erase(request.ns + "/" + request.name);
    }
    return Result::done();
  }
  const std::string& ns = request.ns;
  const std::string& model = request.name;

  // The same links the ModelRelease controller counts pods by (ownership.h).
  ProdObserved prod;
  prod.model = object;
  prod.service = caches_.services.get(ns, model);
  prod.stableDeployment = caches_.deployments.get(ns, servingDeploymentName(model, kTrackStable));
  prod.canaryDeployment = caches_.deployments.get(ns, servingDeploymentName(model, kTrackCanary));
  const std::string key = ns + "/" + model;
  for (const auto& rs : caches_.replicaSets.byIndex(v1::kReleaseByModelIndex, key))
    prod.replicaSets[kube::name(*rs)] = rs;

  ModelObserved o;
  o.model = object;
  // Only objects the Model owns stand for prod: a foreign object at a serving
  // name (the ModelRelease controller stalls on it) is not the Model's.
  const std::string uid = kube::uid(*object);
  auto owned = [&uid](const kube::ObjectPtr& x) -> kube::ObjectPtr {
    if (!x) return nullptr;
    const std::optional<kube::OwnerReference> owner = kube::controllerOf(*x);
    return owner && owner->kind == "Model" && owner->uid == uid ? x : nullptr;
  };
  o.service = owned(prod.service);
  o.stableDeployment = owned(prod.stableDeployment);
  o.canaryDeployment = owned(prod.canaryDeployment);
  o.pods = servingPodsOf(model, prod, caches_.pods.byIndex(v1::kReleaseByModelIndex, key));
  o.releases = static_cast<int>(caches_.releases.byIndex(v1::kReleaseByModelIndex, key).size());

  const ModelConditions planned = planModelConditions(o, kube::formatTime(clock_.wallNow(), false));
  const std::string degraded = statusOfCondition(planned.conditions, v1::kConditionDegraded);
  if (metrics_) metrics_->modelState(ns, model, planned.ready, degraded == "True");
  const v1::Model decoded = v1::decodeModel(*object);
  ExecutionPlan x;
  // A rollback asked on the Model that no release will act on: said once.
  if (rollbackRequests_) {
    auto releaseOfModel = [&](const std::string& name) -> std::optional<v1::ModelRelease> {
      auto r = caches_.releases.get(ns, name);
      if (!r) return std::nullopt;
      v1::ModelRelease release = v1::decodeModelRelease(*r);
      if (release.spec.model != model) return std::nullopt;
      return release;
    };
    const std::optional<std::string> why = unresolvableRollback(decoded, releaseOfModel);
    std::lock_guard lock(warnedMu_);
    if (!why) {
      warned_.erase(key);
    } else if (auto& said = warned_[key]; said != uid + " " + *why) {
      said = uid + " " + *why;
      x.events.push_back({object, kube::kEventTypeWarning, v1::kReasonRollbackRefused, *why});
    }
  }
  if (!planned.changed) {
    if (x.events.empty()) return Result::done();
    return execute(x, *client_, events_, "model").result;
  }

  v1::ModelStatus status = decoded.status;
  const json before = status.conditions;
  status.conditions = planned.conditions;
  status.observedGeneration = planned.observedGeneration;
  x.status = modelStatusWrite(*object, status, "conditions of Model " + key);
  x.status->ignoreNotFound = true;
  const std::string wasDegraded = statusOfCondition(before, v1::kConditionDegraded);
  if (degraded != wasDegraded) {
    auto c = kube::findCondition(planned.conditions, v1::kConditionDegraded);
    if (degraded == "True") {
      x.events.push_back(
          {object, kube::kEventTypeWarning, kReasonModelDegraded,
           "prod is not serving what the Model records: " + c->value("message", std::string())});
    } else if (wasDegraded == "True") {
      auto ready = kube::findCondition(planned.conditions, v1::kConditionReady);
      x.events.push_back({object, kube::kEventTypeNormal, kReasonModelServing,
                          ready ? ready->value("message", std::string()) : std::string()});
    }
  }
  ExecutionOutcome outcome = execute(x, *client_, events_, "model");
  return outcome.result;
}

void setupModelController(runtime::Manager& manager, const ModelReconciler::Caches& caches,
                          const ModelInformers& informers, std::shared_ptr<ReleaseMetrics> metrics,
                          int workers, bool rollbackRequests) {
  auto reconciler =
      std::make_shared<ModelReconciler>(manager.sharedClient(), caches, manager.syncEvents(),
                                        manager.clock(), std::move(metrics), rollbackRequests);
  runtime::ControllerBuilder(manager, "model")
      .workers(workers)
      // Spec edits, deletion, and the record the ModelRelease controller
      // writes; not the conditions this controller writes itself.
      .forKind(v1::kModels,
               [](const kube::Object& a, const kube::Object& b) {
                 auto part = [](const kube::Object& m, const char* at) {
                   return m.value(json::json_pointer(at), json());
                 };
                 return kube::generation(a) != kube::generation(b) ||
                        kube::isBeingDeleted(a) != kube::isBeingDeleted(b) ||
                        part(a, "/status/prod") != part(b, "/status/prod") ||
                        part(a, "/status/canary") != part(b, "/status/canary") ||
                        // A rollback request written on it (unresolvableRollback).
                        part(a, "/metadata/annotations") != part(b, "/metadata/annotations");
               })
      // What the conditions read of them (watch_filters.h).
      .owns(informers.deployments, deploymentChangeConcernsModel)
      .owns(informers.services, serviceChangeConcernsModel)
      // Serving pods: readiness, deletion and what they run.
      .watches(informers.pods, modelNamedByLabel,
               [](const kube::Object& a, const kube::Object& b) {
                 const kube::PodView x = kube::viewPod(a);
                 const kube::PodView y = kube::viewPod(b);
                 return x.ready != y.ready || x.terminating() != y.terminating() ||
                        x.meta.labels.copy() != y.meta.labels.copy() ||
                        x.meta.annotations.copy() != y.meta.annotations.copy() ||
                        x.meta.ownerReferences.size() != y.meta.ownerReferences.size();
               })
      // A release naming the model (NoProd's count), created or deleted.
      .watches(
          v1::kModelReleases,
          [](const kube::Object& r) {
            std::vector<Request> out;
            const std::string m = v1::decodeModelRelease(r).spec.model;
            if (!m.empty()) out.push_back({kube::namespaceOf(r), m});
            return out;
          },
          [](const kube::Object&, const kube::Object&) { return false; })
      .complete(reconciler);
}

}  // namespace lockstep::controllers
