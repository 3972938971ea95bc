#include "controllers/runtimeadmission/runtimeadmission_plan.h"

#include <utility>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/runtime_admission.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;

ExecutionPlan planRuntimeAdmission(const RuntimeAdmissionObserved& o) {
  ExecutionPlan plan;
  // A namespace without RuntimeEnvs gets no table: a pod there that names one is
  // refused by the policy's binding (no params), as the webhook refuses it.
  if (o.runtimeEnvs.empty() && !o.table) return plan;
  StatusOr<json> spec = v1::runtimeAdmissionSpec(o.ns, o.runtimeEnvs, o.trustedInitImage);
  if (!spec.isOk()) {
    if (o.table) {
      plan.events.push_back(
          {o.table, "Warning", "AdmissionTableTooLarge",
           spec.status().message() + "; the pod policy keeps admitting on the last table written"});
    }
    return plan;
  }
  if (o.table && v1::decode::object(*o.table, "spec") == *spec) return plan;
  json table = {{"apiVersion", std::string(v1::kGroup) + "/" + v1::kVersion},
                {"kind", v1::kRuntimeAdmissions.kind},
                {"metadata",
                 {{"name", v1::kRuntimeAdmissionName},
                  {"namespace", o.ns},
                  {"labels", {{"app.kubernetes.io/managed-by", "lockstep"}}}}},
                {"spec", std::move(*spec)}};
  plan.apply.push_back(plannedApply(v1::kRuntimeAdmissions, std::move(table),
                                    "admission table " + o.ns + "/" + v1::kRuntimeAdmissionName));
  return plan;
}

}  // namespace lockstep::controllers
