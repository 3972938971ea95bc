// RuntimeEnv reconcile planning (pure): from what the controller observed to
// the status it must write, the Events it must record and the Stale
// conditions of the ModelReleases that depend on it.
//
// No I/O and no clock: `now` is an input. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/common/conditions.h"

namespace lockstep::controllers {

// Everything one reconcile of a RuntimeEnv reads (from the informer caches).
struct RuntimeEnvObserved {
  nlohmann::json runtimeEnv;
  // The ConfigMap named by spec.lock.configMapRef; nullopt when absent (or inline lock).
  std::optional<nlohmann::json> configMap;
  std::vector<nlohmann::json> nodes;
  // ModelReleases of the namespace whose spec.runtimeEnvRef.name is this RuntimeEnv.
  std::vector<nlohmann::json> releases;
};

struct PlannedEvent {
  std::string release;  // "" = on the RuntimeEnv, else the ModelRelease's name
  std::string type;     // Normal | Warning
  std::string reason;
  std::string message;
};

// A Stale condition to apply to a ModelRelease's status.
struct ReleaseCondition {
  std::string release;
  int64_t generation = 0;
  Condition condition;
};

struct RuntimeEnvPlan {
  nlohmann::json status;  // the complete desired status
  bool statusChanged = false;
  std::vector<PlannedEvent> events;
  std::vector<ReleaseCondition> releaseConditions;  // only those that change
};

// Condition reasons on Ready (and Degraded), stable API for users' alerts.
inline constexpr const char* kReasonResolved = "Resolved";
inline constexpr const char* kReasonLockParseError = "LockParseError";
inline constexpr const char* kReasonUnhashedPackage = "UnhashedPackage";
// The lock is over a limit of docs/limits.md (size, lines, entries, includes, YAML nodes).
inline constexpr const char* kReasonLockTooLarge = "LockTooLarge";
inline constexpr const char* kReasonImageNotPinned = "ImageNotPinned";
inline constexpr const char* kReasonLockNotFound = "LockNotFound";
inline constexpr const char* kReasonNoCompatibleNodes = "NoCompatibleNodes";
inline constexpr const char* kReasonClosureHashChanged = "ClosureHashChanged";
inline constexpr const char* kReasonClosureHashMatches = "ClosureHashMatches";

RuntimeEnvPlan planRuntimeEnv(const RuntimeEnvObserved& observed, const std::string& now);

// True when `image` is "repo@sha256:<64 lowercase hex>".
bool isDigestPinned(const std::string& image);

}  // namespace lockstep::controllers
