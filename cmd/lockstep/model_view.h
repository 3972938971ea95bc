// The pure side of `lockstep model`: a model's prod record (the Model's
// status, docs/rollouts.md "Objects and ownership") shown as a history table, and what a rollback
// means for it, decided from the objects as read, before anything is written. No I/O; the clock is
// an argument. Thread-safety: pure functions and values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/clock.h"

namespace lockstep::cli {

// The Model's status.history (promotions and rollbacks, oldest first).
StatusOr<nlohmann::json> modelHistory(const nlohmann::json& model);

// TIME ACTION RELEASE PACKAGE CLOSURE-HASH DETAIL, oldest first, and a first
// line naming the release prod runs now, its content digest (and the one in
// canary, if any).
std::string renderModelHistory(const nlohmann::json& model, const nlohmann::json& history,
                               kube::Clock::WallTime now);

// What `lockstep model rollback MODEL [--to RELEASE]` will write.
struct ModelRollbackPlan {
  std::string target;    // the release prod goes back to
  std::string from;      // the release prod runs now
  std::string revision;  // the model's prod revision the request names
  // On the Model: rollback.lockstep.dev/<revision>, to set to the user's name, and
  // rollback-to.lockstep.dev/<revision>, to set to the target.
  std::string annotation;
  std::string targetAnnotation;
  std::string alreadyBy;  // set: the same request is already written (nothing to write)
  // Set: the target runs its pinned runtime revision, which is no longer the
  // RuntimeEnv's current one (printed as a warning; the rollback goes ahead).
  std::string runtimeMovedOn;
};

// Picks the target (`to`, else the newest release in the history that prod
// ran before the current one and that still exists) and checks it: the model
// runs a release and has no canary in flight; the target was promoted once
// (status.canary.phase Promoted) and is not the current one; its RuntimeEnv
// (`runtimeEnvs` by name, from the release's namespace) still records the
// revision the target pinned (api::v1alpha1::rollbackRuntime, the
// controller's rule). Errors (kInvalidArgument, kNotFound) say
// which and what to do. `releases`: the model's
// ModelReleases by name.
StatusOr<ModelRollbackPlan> planModelRollback(
    const nlohmann::json& model, const std::map<std::string, nlohmann::json>& releases,
    const std::map<std::string, nlohmann::json>& runtimeEnvs, const std::string& to,
    const std::string& user);

}  // namespace lockstep::cli
