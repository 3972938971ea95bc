// Planning the serving stage of a fleet rollout before its canary starts
// (pure; gates/fleet_check.h has the whole contract): a permit naming this
// cluster lets it start, recorded in status.stages[].permit; otherwise it
// waits with the reason, or fails (FleetAborted) without making a pod.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/release_status.h"

namespace lockstep::controllers {

// The serving stage `s` (with fleet) before its canary starts: true when a
// permit lets it start (recorded in `st`); false when it waits or the release
// failed (FleetAborted), `sum` and `plan` saying why. `waitingPhase` is the
// phase to show while waiting (Pending before any gate, else Testing).
bool planFleetPermit(const ReleaseObserved& o, const api::v1alpha1::ModelRelease& r,
                     const api::v1alpha1::Stage& s, const std::string& waitingPhase,
                     nlohmann::json& status, nlohmann::json& st, ReleaseSummary& sum,
                     ReleasePlan& plan);

}  // namespace lockstep::controllers
