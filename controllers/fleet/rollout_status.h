// The status of a ModelRollout (pure; docs/fleet.md "Running the hub"): the
// wave planner's status when the hub could read the registry, else what
// stopped it, over the status as it stands:
//   - a plan: its phase, waves, clusters, failures and message; Ready=True
//     once Succeeded; Stalled=True once Aborted (final);
//   - the registry unreadable (or refusing a push): phase WaitingForRegistry
//     with the registry's error as message; the waves and clusters as last
//     seen stay; Ready=False, Stalled=False (retried with back-off);
//   - a problem no retry fixes before someone edits an object (an invalid
//     spec, a TrustPolicy or SigningConfig missing or broken, the signing key
//     unreadable, no SigningConfig for what the plan would write): Stalled=True
//     and Ready=False with the problem's reason and message; the plan's view
//     when there is one, else the rest as last seen.
// The same input gives the same status (lastTransitionTime kept while a
// condition's status holds), so an unchanged pass writes nothing.
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/fleet/fleet_referrers.h"
#include "controllers/fleet/wave_plan.h"

namespace lockstep::controllers {

// status.phase while the registry cannot be read (the planner's phases are in wave_plan.h).
inline constexpr char kRolloutWaitingForRegistry[] = "WaitingForRegistry";

// Reasons of Ready/Stalled beside the phases.
inline constexpr char kReasonRolloutInvalidSpec[] = "InvalidSpec";
inline constexpr char kReasonTrustPolicyNotFound[] = "TrustPolicyNotFound";
inline constexpr char kReasonTrustPolicyInvalid[] = "TrustPolicyInvalid";
inline constexpr char kReasonSigningConfigNotFound[] = "SigningConfigNotFound";
inline constexpr char kReasonSigningKeyUnavailable[] = "SigningKeyUnavailable";
inline constexpr char kReasonInventoryUnavailable[] = "InventoryUnavailable";

struct RolloutProblem {
  std::string reason;
  std::string message;
};

struct RolloutObserved {
  int64_t generation = 0;
  nlohmann::json status = nlohmann::json::object();  // as it stands
  std::string now;                                   // RFC 3339, for lastTransitionTime
  // A problem (Stalled) wins over the registry's error, which wins over the plan;
  // a plan with a problem (what it planned cannot be signed) still shows.
  std::optional<RolloutProblem> problem;
  std::optional<std::string> registryError;
  std::optional<WavePlan> plan;
  std::vector<IgnoredStatement> ignored;  // listed with a plan (status.ignored, at most 100)
};

nlohmann::json rolloutStatus(const RolloutObserved& o);

}  // namespace lockstep::controllers
