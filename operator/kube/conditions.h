// metav1.Condition helpers over JSON status objects (pure, client-less).
//
// setCondition keeps lastTransitionTime when the status does not change, as
// the Kubernetes API conventions require, so a level-based reconcile that
// recomputes the same condition writes an identical status (no churn).
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lockstep::kube {

struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;  // CamelCase
  std::string message;
};

// Sets (or replaces) the condition of `c.type` in `conditions` (a JSON array).
// `now` is an RFC 3339 timestamp supplied by the caller (the clock is an input).
void setCondition(nlohmann::json& conditions, const Condition& c, int64_t observedGeneration,
                  const std::string& now);

// The condition of `type`, or nullopt.
std::optional<nlohmann::json> findCondition(const nlohmann::json& conditions,
                                            const std::string& type);

// True when `conditions` has `type` with status "True".
bool conditionTrue(const nlohmann::json& conditions, const std::string& type);

}  // namespace lockstep::kube
