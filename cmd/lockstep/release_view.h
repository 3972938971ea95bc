// The pure side of `lockstep release`: what to show for a ModelRelease (list
// rows, the status page) and what an approve, abort or wait means for it,
// decided from the object as read, before anything is written. No I/O; the
// clock is an argument. Field meanings: docs/modelrelease.md.
// Thread-safety: pure functions and values.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/clock.h"

namespace lockstep::cli {

// Aligned columns, two spaces apart, the first row being the header; empty
// cells print "-"; newlines inside cells become spaces.
std::string renderTable(const std::vector<std::vector<std::string>>& rows);

// "45s", "12m", "5h", "3d" as kubectl prints ages; "<unknown>" without a time.
std::string formatAge(const std::string& rfc3339, kube::Clock::WallTime now);

// NAME MODEL PHASE STAGE READY PACKAGE AGE (NAMESPACE first with `allNamespaces`).
std::string renderReleaseList(const nlohmann::json& list, bool allNamespaces,
                              kube::Clock::WallTime now);

// The status page: summary, stages (phase, attempt, Job, times, approval,
// message), metrics, evidence, conditions.
std::string renderReleaseStatus(const nlohmann::json& release);

// "ns/name".
std::string releaseId(const nlohmann::json& release);

// status.stages[name].phase, "Pending" when the stage has no status yet.
std::string stagePhase(const nlohmann::json& release, const std::string& stage);

// What an approve or abort will write.
struct ActionPlan {
  std::string annotation;  // the key to set to the user's name
  std::string stage;       // approve: the chosen stage
  std::string alreadyBy;   // set: the annotation already holds this user (nothing to write)
};

// Approve `requestedStage` ("" = the one stage in WaitingForApproval) as `user`.
// Errors (kInvalidArgument): an unknown stage (naming
// the stages), a stage that is not waiting (naming its phase), no or several
// stages waiting, a stage approved by someone else the controller has not
// acted on yet.
StatusOr<ActionPlan> planApproval(const nlohmann::json& release, const std::string& requestedStage,
                                  const std::string& user);

// Abort. Errors: the release already ended (naming its phase). An abort
// already requested (by anyone) is reported in alreadyBy.
StatusOr<ActionPlan> planAbort(const nlohmann::json& release);

// Promote a release in its canary: end the current step's pause
// (promote.lockstep.dev/<step>), or with `full` skip every remaining step
// (lockstep.dev/promote-full). Errors: the release is not in its canary
// (naming its phase). An annotation already holding `user` is reported in alreadyBy.
StatusOr<ActionPlan> planPromote(const nlohmann::json& release, bool full, const std::string& user);

enum class WaitState { kReached, kWaiting, kEndedElsewhere };
// kEndedElsewhere: the release is in a terminal phase other than `phase`.
WaitState waitState(const nlohmann::json& release, const std::string& phase);

// "phase Failed, stage eval: accuracy 0.7 < 0.82" — for wait and errors.
std::string releaseSummary(const nlohmann::json& release);

}  // namespace lockstep::cli
