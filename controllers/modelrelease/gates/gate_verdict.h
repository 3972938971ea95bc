// A gate's verdict (pure): the Job of a gate stage and its pods read as the
// scheduler and kubelet left them (conditions, the main container's
// terminated state), and the metrics the gate reported in its termination
// message checked against the stage's thresholds (docs/modelrelease.md,
// "Gate metrics"). Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"

namespace lockstep::controllers {

// The largest termination message a gate may report (the kubelet keeps 4 KiB).
inline constexpr size_t kMaxTerminationMessage = 4096;

// The condition `type` of a Job; nullopt when absent.
std::optional<nlohmann::json> jobCondition(const nlohmann::json& job, const std::string& type);
bool jobConditionTrue(const nlohmann::json& job, const std::string& type);

// The pods of `jobName` (label batch.kubernetes.io/job-name, or job-name).
std::vector<const nlohmann::json*> podsOfJob(const std::vector<nlohmann::json>& pods,
                                             const std::string& jobName);

// The terminated state of `container` in `pod`, or nullptr.
const nlohmann::json* terminatedState(const nlohmann::json& pod, const std::string& container);

// The name of the Job's first container (the gate's), "" when none.
std::string mainContainerOf(const nlohmann::json& job);

// The outcome of checking a gate's report against its thresholds.
struct GateVerdict {
  bool passed = false;
  std::string message;
  nlohmann::json metrics = nlohmann::json::object();  // the finite numbers reported
};

// Checks the termination message `text` of `container` against `thresholds`.
GateVerdict checkMetrics(const std::vector<api::v1alpha1::MetricThreshold>& thresholds,
                         const std::string& container, const std::string& text);

}  // namespace lockstep::controllers
