// RuntimeEnv reconcile planning (pure): from what the controller observed to
// the status it must write, the Events it must record and the Stale
// conditions of the ModelReleases that depend on it; then the same as the
// generic ExecutionPlan that controllers/common/execute.h carries out.
//
// No I/O and no clock: `now` is an input. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/common/plan.h"
#include "operator/kube/conditions.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// Everything one reconcile of a RuntimeEnv reads: the informer caches' own
// shared objects, never copies.
struct RuntimeEnvObserved {
  kube::ObjectPtr runtimeEnv;
  // The ConfigMap named by spec.lock.configMapRef; null when absent (or inline lock).
  kube::ObjectPtr configMap;
  std::vector<kube::ObjectPtr> nodes;
  // ModelReleases of the namespace whose spec.runtimeEnvRef.name is this RuntimeEnv.
  std::vector<kube::ObjectPtr> releases;
};

struct RuntimeEnvEvent {
  std::string release;  // "" = on the RuntimeEnv, else the ModelRelease's name
  std::string type;     // Normal | Warning
  std::string reason;
  std::string message;
};

// A Stale condition to apply to a ModelRelease's status.
struct ReleaseCondition {
  std::string release;
  int64_t generation = 0;
  kube::Condition condition;
};

struct RuntimeEnvPlan {
  nlohmann::json status;  // the complete desired status
  bool statusChanged = false;
  std::vector<RuntimeEnvEvent> events;
  std::vector<ReleaseCondition> releaseConditions;  // only those that change
};

RuntimeEnvPlan planRuntimeEnv(const RuntimeEnvObserved& observed, const std::string& now);

// The plan as writes: each release's Stale condition (status, under the
// RuntimeEnv controller's field manager; a release gone meanwhile is fine),
// the Events, and the RuntimeEnv's status last (when it changed).
ExecutionPlan executionPlan(const RuntimeEnvPlan& plan, const RuntimeEnvObserved& observed,
                            const std::string& now);

// True when `image` is a valid reference pinned by digest (repo@sha256:<64 lowercase hex>).
bool isDigestPinned(const std::string& image);

}  // namespace lockstep::controllers
