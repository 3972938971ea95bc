// The shape of a ModelRelease's status shared by its planners (pure): the
// summary a plan ends in (phase, Ready, Reconciling, Stalled) turned into
// metav1.Conditions, the per-stage entries of status.stages, and which phases
// are terminal. docs/modelrelease.md. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"

namespace lockstep::controllers {

// What a plan concluded, turned into conditions at the end.
struct ReleaseSummary {
  std::string phase = api::v1alpha1::kPhasePending;
  std::string readyReason, readyMessage;
  bool ready = false;
  bool reconciling = false;
  std::string stalledReason, stalledMessage;  // empty: not stalled
};

// Sets Ready, Reconciling and Stalled in `conditions` (an array) from `sum`.
void setReleaseConditions(nlohmann::json& conditions, const ReleaseSummary& sum, int64_t generation,
                          const std::string& now);

// The entry of `stages` (status.stages, an array) for stage `name`, added Pending if missing.
nlohmann::json& stageStatus(nlohmann::json& stages, const std::string& name);

// Validated, Failed, Promoted, RolledBack, Superseded: a release that never moves again.
bool isTerminalPhase(const std::string& phase);

// startedAt -> finishedAt (or now) of a status.stages entry, in seconds; 0 when unknown.
double stageDurationSeconds(const nlohmann::json& stage, int64_t nowUnix);

// "\"s\"", for messages.
std::string quote(const std::string& s);

}  // namespace lockstep::controllers
