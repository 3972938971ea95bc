#include "controllers/runtimeadmission/runtimeadmission_controller.h"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_admission.h"
#include "controllers/common/execute.h"
#include "controllers/runtimeadmission/runtimeadmission_plan.h"
#include "operator/runtime/builder.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using runtime::Request;
using runtime::Result;

RuntimeAdmissionReconciler::RuntimeAdmissionReconciler(std::shared_ptr<kube::Client> client,
                                                       const kube::Indexer& runtimeEnvs,
                                                       const kube::Indexer& tables,
                                                       kube::EventSink& events,
                                                       std::string trustedInitImage)
    : client_(std::move(client)),
      runtimeEnvs_(runtimeEnvs),
      tables_(tables),
      events_(events),
      trustedInitImage_(std::move(trustedInitImage)) {}

Result RuntimeAdmissionReconciler::reconcile(const Request& request) {
  // One table per namespace; an object of this kind under another name is no table.
  if (request.name != v1::kRuntimeAdmissionName) return Result::done();
  RuntimeAdmissionObserved o;
  o.ns = request.ns;
  o.trustedInitImage = trustedInitImage_;
  o.table = tables_.get(request.ns, request.name);
  for (const kube::ObjectPtr& env : runtimeEnvs_.byIndex(kube::kNamespaceIndex, request.ns)) {
    o.runtimeEnvs.push_back(v1::decodeRuntimeEnv(*env));
  }
  ExecutionPlan plan = planRuntimeAdmission(o);
  return execute(plan, *client_, events_, "runtimeadmission").result;
}

void setupRuntimeAdmissionController(runtime::Manager& manager, const std::string& trustedInitImage,
                                     int workers) {
  kube::Informer& envs = manager.informer(v1::kRuntimeEnvs);
  kube::Informer& tables = manager.informer(v1::kRuntimeAdmissions);
  auto reconciler = std::make_shared<RuntimeAdmissionReconciler>(
      manager.sharedClient(), envs.cache(), tables.cache(), manager.events(), trustedInitImage);
  runtime::ControllerBuilder(manager, "runtimeadmission")
      .workers(workers)
      // A table edited or deleted by hand is written again.
      .forKind(v1::kRuntimeAdmissions, nullptr)
      // Every change of a RuntimeEnv, its status included, rewrites its namespace's table.
      .watches(
          v1::kRuntimeEnvs,
          [](const kube::Object& env) {
            return std::vector<Request>{
                {kube::namespaceOf(env), std::string(v1::kRuntimeAdmissionName)}};
          },
          nullptr)
      .complete(reconciler);
}

}  // namespace lockstep::controllers
