// Readers of a ReleasePlan for the planner's unit tests (release_plan_test,
// runtime_pin_test): a condition's field and whether an Event was planned.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "controllers/modelrelease/release_plan.h"

namespace lockstep::controllers::plan_readers {

// `field` of the condition `type` in the planned status ("" when absent).
inline std::string condition(const ReleasePlan& p, const std::string& type,
                             const char* field = "status") {
  for (const nlohmann::json& c : p.status["conditions"]) {
    if (c["type"] == type) return c.value(field, "");
  }
  return "";
}

// Whether the plan has an Event with `reason` whose message contains `text`.
inline bool hasEvent(const ReleasePlan& p, const std::string& reason,
                     const std::string& text = "") {
  for (const auto& e : p.events) {
    if (e.reason == reason && e.message.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace lockstep::controllers::plan_readers
