// A ModelRelease's `status.canary` (lockstep.dev/v1alpha1), typed: the canary
// planner's own record of a prod rollout (controllers/modelrelease/prod/
// canary_plan.h), from which a restarted operator resumes. Field names are
// those of crds/lockstep.dev_modelreleases.yaml (status.canary); the meaning
// of each field is docs/rollouts.md.
//
// Every member is optional, as written: absent stays absent through a decode
// and an encode (the planner tells "not reached yet" from "reached" by
// presence, e.g. weightReachedAt). Members this version does not know (written
// by a newer operator) are kept in `extra` at every level and written back, so
// an older operator never drops them.
//
// Malformed input: status.canary is written only by the operator, but the
// decoder never throws, never guesses and never reads a mistyped member as a
// default. decodeCanaryStatus() refuses the whole value with an error naming
// the first bad member ("status.canary.step: must be an integer"); the canary
// planner then plans nothing from it: the release stalls (Stalled=True,
// reason CanaryStatusUnreadable, the error as the message) with prod's
// Deployments as they are, until the status is repaired. A JSON null member
// reads as absent. Timestamps are strings here; the planner parses them.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// The canary's reason (Stalled=True) when its status.canary cannot be decoded.
inline constexpr const char* kReasonCanaryStatusUnreadable = "CanaryStatusUnreadable";

// status.canary.knownGood: the pair the canary falls back to, fixed when it starts.
struct CanaryKnownGood {
  std::optional<std::string> release, package, closureHash;
  nlohmann::json extra = nlohmann::json::object();
};

// status.canary.analysis.measurements[]: one Prometheus measurement.
struct CanaryMeasurement {
  std::optional<std::string> at;
  std::optional<double> value;
  std::optional<std::string> error;
  // `value` as written when it was a JSON integer: the API server gives the
  // operator's 0.0 back as 0. Encoded as written while `value` is still that
  // number, so a status read and written back, and the prod record built from
  // it (controllers/evidence/evidence_plan.h), keep their bytes.
  std::optional<int64_t> valueAsInteger;
  nlohmann::json extra = nlohmann::json::object();
};

// status.canary.analysis: the current step's analysis (Argo's MetricResult
// counters; prod/analysis.h reads and writes them).
struct CanaryAnalysisStatus {
  std::optional<std::string> phase;  // Running | Passed | Failed
  std::optional<std::string> message;
  std::optional<int64_t> count, successful, failed, errors, consecutiveErrors;
  std::optional<std::string> lastMeasuredAt;
  std::optional<bool> lastWasError;
  std::optional<std::vector<CanaryMeasurement>> measurements;  // the last 10
  nlohmann::json extra = nlohmann::json::object();
};

// status.canary.passedSteps[].analysis: the counters a passed step ended with.
struct PassedStepAnalysis {
  std::optional<int64_t> count, successful, failed, errors;
  nlohmann::json extra = nlohmann::json::object();
};

// status.canary.passedSteps[]: the evidence that a step ran and passed.
struct PassedStep {
  int64_t step = 0;  // required
  std::optional<int64_t> weight;
  std::optional<std::string> startedAt, weightReachedAt, passedAt, promotedBy;
  std::optional<PassedStepAnalysis> analysis;
  nlohmann::json extra = nlohmann::json::object();
};

struct CanaryStatus {
  std::optional<std::string>
      phase;  // Progressing | Promoting | Promoted | RollingBack | RolledBack
  std::optional<std::string> capacity;  // surge | drain
  std::optional<std::string> startedAt;
  std::optional<int64_t> step;  // index into the prod stage's canary.steps
  std::optional<std::string> stepStartedAt, weightReachedAt, lastProgressAt;
  std::optional<int64_t> podsToTarget;
  std::optional<std::string> windowPausedAt;  // a closed change window holds the step's clocks
  std::optional<std::string> promotion;       // FullWeight | Handover
  std::optional<std::string> promotedBy, abortedBy;
  std::optional<std::string> reason, message;
  std::optional<std::string> rollbackStartedAt, finishedAt;
  std::optional<std::string> modelUid;
  std::optional<std::string> anchorUid;  // written by earlier versions; replaced by modelUid
  std::optional<CanaryKnownGood> knownGood;
  std::optional<CanaryAnalysisStatus> analysis;
  std::optional<std::vector<PassedStep>> passedSteps;
  nlohmann::json extra = nlohmann::json::object();  // members this version does not know

  // knownGood.release; "" when there is none (prod ran nothing when it started).
  std::string knownGoodRelease() const {
    return knownGood ? knownGood->release.value_or("") : std::string();
  }
};

// Decodes `canary` (an object); `path` names it in errors. kInvalidArgument
// naming the first malformed member: "status.canary.analysis.count: must be an
// integer", "status.canary.passedSteps[2].step: is required".
StatusOr<CanaryStatus> decodeCanaryStatus(const nlohmann::json& canary,
                                          const std::string& path = "status.canary");

// The JSON form: the members present, plus `extra`. decode(encode(s)) == s and,
// for a value decoded from JSON, encode(decode(j)) == j (as JSON values).
nlohmann::json encodeCanaryStatus(const CanaryStatus& s);

// A release's status.canary as read: absent (no canary started), decoded, or
// refused. Assigning the JSON as written decodes it.
struct CanaryStatusRead {
  CanaryStatusRead() = default;
  // Decodes `written` (null: absent).
  CanaryStatusRead& operator=(const nlohmann::json& written);

  bool written = false;                // status.canary is present (not absent or null)
  std::optional<CanaryStatus> status;  // decoded; nullopt when absent or refused
  std::string error;                   // the decoder's refusal; "" otherwise
  nlohmann::json refused;              // the value as written, kept when refused

  // The decoded status, or nullptr (absent or refused).
  const CanaryStatus* get() const { return status ? &*status : nullptr; }
  // The decoded status, or an empty one (absent or refused): for readers
  // that treat both as "nothing recorded".
  const CanaryStatus& orEmpty() const;
};

CanaryStatusRead readCanaryStatus(const nlohmann::json& written);

// The status.canary of `release` (a ModelRelease object as the API server
// gives it), read: for readers of the raw object (the CLI, the evidence
// planner, the admission webhook). decodeModelRelease() reads it the same way
// into ModelReleaseStatus::canary.
CanaryStatusRead readReleaseCanary(const nlohmann::json& release);

}  // namespace lockstep::api::v1alpha1
