// A RuntimeEnv's advisories (docs/supply-chain.md "Advisories of a RuntimeEnv"): the
// OSV records of the operator's export that affect the current revision's closure,
// as status.advisories, and the Event when a revision gains one.
// Pure. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "advisories/match.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"

namespace lockstep::controllers {

inline constexpr size_t kMaxAdvisoryItems = 100;
inline constexpr const char* kReasonAdvisoryPublished = "AdvisoryPublished";
inline constexpr const char* kReasonAdvisoriesFound = "AdvisoriesFound";

// status.advisories of one match: counts by severity, the highest, the findings
// (highest severity first, at most kMaxAdvisoryItems; `truncated` counts the rest).
nlohmann::json advisoryStatus(const advisories::AdvisoryReport& report, int64_t revision,
                              const std::string& closureHash, const std::string& source);

// The Event when `now` names advisories `previous` did not (for the same closure or
// not): a Warning AdvisoryPublished when the revision is pinned (a release or prod
// runs it), else a Normal AdvisoriesFound. None when nothing is new.
std::optional<RuntimeEnvEvent> advisoryEvent(const nlohmann::json& previous,
                                             const nlohmann::json& now, bool pinned);

}  // namespace lockstep::controllers
