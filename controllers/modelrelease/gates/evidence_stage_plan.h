// planRelease's step for an evidence stage (evidence_stage.h has the contract).
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/release_status.h"

namespace lockstep::controllers {

// True when the stage passed (Succeeded now or before): go on with the next
// stage. False: the plan ends here (checking, or held with the reason).
bool planEvidenceStage(const ReleaseObserved& observed, const api::v1alpha1::ModelRelease& release,
                       const api::v1alpha1::Stage& stage, const std::string& closureHash,
                       const std::string& runtimeImage, nlohmann::json& status,
                       nlohmann::json& stageStatus, ReleaseSummary& summary, ReleasePlan& plan);

}  // namespace lockstep::controllers
