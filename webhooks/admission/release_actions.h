// Approving a stage, aborting a ModelRelease and promoting its canary are
// annotations whose value is the acting user's name (docs/modelrelease.md,
// "Approvals and abort"; the keys are api/v1alpha1/keys.h):
//   approve.lockstep.dev/<stage>: <user>   RBAC verb "approve" on modelreleases.lockstep.dev
//   approve.lockstep.dev/<stage>.<k>: <user>  the k-th approver (minApprovers; approval.h)
//   lockstep.dev/abort: <user>             RBAC verb "abort"
//   promote.lockstep.dev/<step>: <user>    RBAC verb "promote" (end a canary step's pause)
//   lockstep.dev/promote-full: <user>      RBAC verb "promote" (skip the remaining steps)
//   rollback.lockstep.dev/<rev>: <user>    RBAC verb "rollback" (re-point the model's stable
//                                          track to this release while prod is at revision <rev>)
// This header maps each key to its RBAC verb (the webhook and the CLI read it)
// and computes the pure diff of which of them a write adds or changes.
// Thread-safety: pure functions and constants.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/keys.h"

namespace lockstep::webhooks {

inline constexpr std::string_view kApproveAnnotationPrefix =
    api::v1alpha1::kApproveAnnotationPrefix;
inline constexpr std::string_view kAbortAnnotation = api::v1alpha1::kAbortAnnotation;
inline constexpr std::string_view kPromoteAnnotationPrefix =
    api::v1alpha1::kPromoteAnnotationPrefix;
inline constexpr std::string_view kPromoteFullAnnotation = api::v1alpha1::kPromoteFullAnnotation;
inline constexpr std::string_view kRollbackAnnotationPrefix =
    api::v1alpha1::kRollbackAnnotationPrefix;
inline constexpr std::string_view kRollbackVerb = "rollback";
inline constexpr std::string_view kPromoteVerb = "promote";
inline constexpr std::string_view kApproveVerb = "approve";
inline constexpr std::string_view kAbortVerb = "abort";
inline constexpr std::string_view kLockstepGroup = "lockstep.dev";
inline constexpr std::string_view kModelReleasesResource = "modelreleases";
// The chart's aggregated ClusterRole that grants these verbs (named in denials).
inline constexpr std::string_view kApproverClusterRole = "lockstep-release-approver";

enum class ReleaseActionKind { kApprove, kAbort, kPromote, kRollback };

struct ReleaseAction {
  ReleaseActionKind kind = ReleaseActionKind::kApprove;
  std::string annotation;  // the full key
  std::string stage;       // approve: the stage the key names, without a .<k> slot (may be
                           // empty or unknown: invalid);
                           // promote: the canary step index ("" for promote-full);
                           // rollback: the model's prod revision (digits)
  std::string value;       // the user name written (empty when not a string)

  std::string_view verb() const {
    switch (kind) {
      case ReleaseActionKind::kAbort:
        return kAbortVerb;
      case ReleaseActionKind::kPromote:
        return kPromoteVerb;
      case ReleaseActionKind::kRollback:
        return kRollbackVerb;
      case ReleaseActionKind::kApprove:
        break;
    }
    return kApproveVerb;
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
