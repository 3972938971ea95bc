// ModelRelease admission policy (what CEL in the CRD schema cannot express, or
// cannot express with good messages). Pure function of the object, its old
// version on UPDATE, and the referenced RuntimeEnv as seen by the caller.
// Rules, each violation reported with its field path:
//  - spec.package is repo@sha256:<64 hex>; spec.closureHash is sha256:<64 hex>;
//    spec.runtimeEnvRef.name is set.
//  - UPDATE: spec.package, spec.runtimeEnvRef.name and spec.closureHash are
//    immutable. The stage list is re-validated only when it changed, so
//    metadata updates (finalizers, annotations) of old objects never fail.
//  - spec.stages: at least one; names DNS labels and unique; each stage has
//    exactly one of `gate` (a gate stage) or `serving` (the prod stage); the
//    names eval/ci are reserved for gate stages and prod for the serving
//    stage; at most one serving stage and it comes last; canary step weights
//    are in 1..100 and strictly increasing.
//  - RuntimeEnv: absent or not Ready → allowed with a warning; Ready with a
//    different status.closureHash → denied on CREATE, a warning on UPDATE
//    (an existing release whose RuntimeEnv moved on is stale, not invalid).
// Denials are 422 Invalid. Thread-safety: pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "webhooks/admission/types.h"

namespace lockstep::webhooks {

struct ModelReleaseReview {
  Operation operation = Operation::kCreate;
  std::string ns;
  std::string subResource;                     // "status" updates are not checked
  const nlohmann::json* release = nullptr;     // request.object
  const nlohmann::json* oldRelease = nullptr;  // request.oldObject (UPDATE)
  std::optional<RuntimeEnvView> runtimeEnv;    // the RuntimeEnv named by spec.runtimeEnvRef
};

// spec.runtimeEnvRef.name, when set.
std::optional<std::string> modelReleaseRuntimeEnvName(const nlohmann::json& release);

Verdict validateModelRelease(const ModelReleaseReview& review);

}  // namespace lockstep::webhooks
