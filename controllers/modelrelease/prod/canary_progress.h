// The canary's progress clock between status writes (docs/rollouts.md
// "Progress deadline"): what the last plan of a release saw, kept in the
// shell's memory (modelrelease_controller.h) and passed back to the planner
// (canary_plan.h). Thread-safety: a value.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep::controllers {

// It holds for the step, phase and promotion stage it was taken in (a record
// of another one is not used). status.canary records the clock only when one
// of those changes, a rollback is decided, or the clock moved more than half
// the deadline past the written one, so a change of a Ready count is no
// status write. With no record (a restarted operator; a new leader, since a
// leader that loses its lease exits) the clock resumes at the written one
// plus half the deadline, or the plan's `now` if sooner: a deadline only
// ever comes later than the lost record's, never earlier.
struct CanaryProgress {
  int64_t step = 0;
  std::string phase, promotion, stepStartedAt;  // the stage it was taken in
  std::string lastProgressAt;                   // RFC 3339: the last plan that saw progress
  int64_t podsToTarget = 0;                     // what that plan saw still to do
};

}  // namespace lockstep::controllers
