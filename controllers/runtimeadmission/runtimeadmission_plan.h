// The RuntimeAdmission controller's planner: the table of admissible pairs of one
// namespace (api/v1alpha1/runtime_admission.h) from its RuntimeEnvs, written when
// it differs from the table that stands (a server-side apply of the whole spec, so
// a RuntimeEnv that is gone leaves the table with it). A table over its bounds is
// not written: the last one stands, and a Warning Event says why.
// Pure. Thread-safety: values.
#pragma once

#include <string>
#include <vector>

#include "api/v1alpha1/runtime_env.h"
#include "controllers/common/plan.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

struct RuntimeAdmissionObserved {
  std::string ns;
  std::vector<api::v1alpha1::RuntimeEnv> runtimeEnvs;  // of the namespace
  kube::ObjectPtr table;         // the RuntimeAdmission that stands; nullptr when none
  std::string trustedInitImage;  // the operator's --cli-image ("" = none)
};

ExecutionPlan planRuntimeAdmission(const RuntimeAdmissionObserved& o);

}  // namespace lockstep::controllers
