// Approving a stage and aborting a ModelRelease are annotations whose value is
// the acting user's name (docs/modelrelease.md, "Approvals and abort"):
//   approve.lockstep.dev/<stage>: <user>   RBAC verb "approve" on modelreleases.lockstep.dev
//   lockstep.dev/abort: <user>             RBAC verb "abort"
//   promote.lockstep.dev/<step>: <user>    RBAC verb "promote" (end a canary step's pause)
//   lockstep.dev/promote-full: <user>      RBAC verb "promote" (skip the remaining steps)
// This header is their one vocabulary (the webhook, the CLI and the controller
// read it) and the pure diff of which of them a write adds or changes.
// Thread-safety: pure functions and constants.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::webhooks {

inline constexpr std::string_view kApproveAnnotationPrefix = "approve.lockstep.dev/";
inline constexpr std::string_view kAbortAnnotation = "lockstep.dev/abort";
inline constexpr std::string_view kPromoteAnnotationPrefix = "promote.lockstep.dev/";
inline constexpr std::string_view kPromoteFullAnnotation = "lockstep.dev/promote-full";
inline constexpr std::string_view kPromoteVerb = "promote";
inline constexpr std::string_view kApproveVerb = "approve";
inline constexpr std::string_view kAbortVerb = "abort";
inline constexpr std::string_view kLockstepGroup = "lockstep.dev";
inline constexpr std::string_view kModelReleasesResource = "modelreleases";
// The chart's aggregated ClusterRole that grants both verbs (named in denials).
inline constexpr std::string_view kApproverClusterRole = "lockstep-release-approver";

enum class ReleaseActionKind { kApprove, kAbort, kPromote };

struct ReleaseAction {
  ReleaseActionKind kind = ReleaseActionKind::kApprove;
  std::string annotation;  // the full key
  std::string stage;       // approve: the stage the key names (may be empty: invalid);
                           // promote: the canary step index ("" for promote-full)
  std::string value;       // the user name written (empty when not a string)

  std::string_view verb() const {
    return kind == ReleaseActionKind::kAbort     ? kAbortVerb
           : kind == ReleaseActionKind::kPromote ? kPromoteVerb
                                                 : kApproveVerb;
  }
};

// "approve.lockstep.dev/<stage>".
std::string approveAnnotation(std::string_view stage);

// The action an annotation key stands for, or nullopt for any other key.
std::optional<ReleaseAction> parseReleaseAction(std::string_view key, const nlohmann::json& value);

// Action annotations that `release` adds or changes relative to `oldRelease`
// (nullptr on CREATE: every action annotation present). Removing one is not
// an action. Sorted by annotation key.
std::vector<ReleaseAction> changedReleaseActions(const nlohmann::json* release,
                                                 const nlohmann::json* oldRelease);

}  // namespace lockstep::webhooks
