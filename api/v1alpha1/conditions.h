// Condition types and reasons Lockstep writes (metav1.Condition form): a
// stable API that users' alerts, Argo CD health checks and `kubectl wait`
// rely on; change none of them within v1alpha1.
// Thread-safety: constants.
#pragma once

namespace lockstep::api::v1alpha1 {

// Types.
inline constexpr const char* kConditionReady = "Ready";
inline constexpr const char* kConditionStalled = "Stalled";
inline constexpr const char* kConditionDegraded = "Degraded";
inline constexpr const char* kConditionProgressing = "Progressing";
// On a RuntimeEnv being deleted: the deletion waits for the releases pinning it.
inline constexpr const char* kConditionTerminating = "Terminating";
// On a ModelRelease: its runtime's closure moved away from the validated one.
inline constexpr const char* kConditionStale = "Stale";

inline constexpr const char* kStatusTrue = "True";
inline constexpr const char* kStatusFalse = "False";
inline constexpr const char* kStatusUnknown = "Unknown";

// RuntimeEnv reasons (Ready, Stalled, Degraded).
inline constexpr const char* kReasonResolved = "Resolved";
inline constexpr const char* kReasonLockParseError = "LockParseError";
inline constexpr const char* kReasonUnhashedPackage = "UnhashedPackage";
// The lock is over a limit of docs/limits.md (size, lines, entries, includes, YAML nodes).
inline constexpr const char* kReasonLockTooLarge = "LockTooLarge";
inline constexpr const char* kReasonImageNotPinned = "ImageNotPinned";
inline constexpr const char* kReasonLockNotFound = "LockNotFound";
inline constexpr const char* kReasonNoCompatibleNodes = "NoCompatibleNodes";
inline constexpr const char* kReasonCompatibleNodesFound = "CompatibleNodesFound";
inline constexpr const char* kReasonNoAcceleratorRequired = "NoAcceleratorRequired";
// RuntimeEnv revisions (Events) and in-use protection (Terminating).
inline constexpr const char* kReasonRevisionCreated = "RevisionCreated";
inline constexpr const char* kReasonRevisionRestored = "RevisionRestored";
inline constexpr const char* kReasonRevisionPruned = "RevisionPruned";
inline constexpr const char* kReasonInUse = "InUse";

// ModelRelease reasons (Stale).
inline constexpr const char* kReasonClosureHashChanged = "ClosureHashChanged";
inline constexpr const char* kReasonClosureHashMatches = "ClosureHashMatches";

}  // namespace lockstep::api::v1alpha1
