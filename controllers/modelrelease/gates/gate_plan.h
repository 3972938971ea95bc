// One gate stage whose Job exists (pure): the Job's state read into the
// stage's status entry — still running, completed with metrics that pass or
// fail the thresholds (gate_verdict.h), failed or timed out — with the
// evidence (package, closure hash, image, Job UID) the stage ran on.
// planRelease (release_plan.h) calls it for the first unfinished gate.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/release_status.h"

namespace lockstep::controllers {

// What planRelease is building, for the stage being planned.
struct GateJobContext {
  const ReleaseObserved& observed;
  const api::v1alpha1::ModelRelease& release;
  const api::v1alpha1::Stage& stage;
  const std::string& jobName;
  int attempt;
  nlohmann::json& status;       // the release's new status
  nlohmann::json& stageStatus;  // its status.stages entry for `stage`
  ReleaseSummary& summary;
  ReleasePlan& plan;
};

enum class GateJobStep {
  kPassed,  // the stage succeeded: go on with the next one
  kStop,    // running, waiting for its metrics, or failed: the plan ends here
};

GateJobStep planGateJob(GateJobContext& context, const nlohmann::json& job);

}  // namespace lockstep::controllers
