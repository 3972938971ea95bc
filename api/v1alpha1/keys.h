// Label and annotation keys under lockstep.dev/, the field managers Lockstep
// writes with, and the names of the cache indexes both controllers and
// webhooks share: the vocabulary that crosses process and component lines.
// Thread-safety: constants.
#pragma once

#include <string_view>

namespace lockstep::api::v1alpha1 {

// Pod label naming the RuntimeEnv (same namespace) the pod runs on.
inline constexpr std::string_view kRuntimeEnvLabel = "lockstep.dev/runtime-env";
// Pod annotation carrying the closure hash the workload was validated with.
inline constexpr std::string_view kClosureHashAnnotation = "lockstep.dev/closure-hash";
// Namespace label selecting the admission mode: enforce | warn | audit | off.
inline constexpr std::string_view kEnforceLabel = "lockstep.dev/enforce";

// Labels of the objects a ModelRelease runs: gate Jobs and their pods carry the
// release; serving Deployments and pods also the model and the track
// (stable | canary), and the per-model anchor ConfigMap the model.
inline constexpr const char* kReleaseLabel = "lockstep.dev/release";
inline constexpr const char* kModelLabel = "lockstep.dev/model";
inline constexpr const char* kTrackLabel = "lockstep.dev/track";
// The label the model's Service selects on besides the model: the operator
// puts it on its serving Deployments' pod templates, and admission refuses it
// on every pod that the ReplicaSet of such a Deployment did not create
// (api/v1alpha1/serving_pod.h). Its value is always kServingLabelValue.
inline constexpr const char* kServingLabel = "lockstep.dev/serving";
inline constexpr const char* kServingLabelValue = "true";

// ModelRelease annotations whose value is the acting user's name, each checked
// by the webhook against a SubjectAccessReview (docs/modelrelease.md,
// docs/rollouts.md): approve a stage, abort, end a canary step's pause, skip
// every remaining canary step, and roll the model back to this (previously
// promoted) release. The rollback key names the model's prod revision (the
// anchor ConfigMap's `revision`, bumped by every promotion and rollback) it
// was asked against: acted on only while prod is still at that revision, so a
// request is never replayed and a later one is a new key.
inline constexpr const char* kApproveAnnotationPrefix = "approve.lockstep.dev/";  // + stage
inline constexpr const char* kAbortAnnotation = "lockstep.dev/abort";
inline constexpr const char* kPromoteAnnotationPrefix = "promote.lockstep.dev/";  // + step index
inline constexpr const char* kPromoteFullAnnotation = "lockstep.dev/promote-full";
inline constexpr const char* kRollbackAnnotationPrefix = "rollback.lockstep.dev/";  // + revision
// On a Model (docs/rollouts.md "Manual rollback of a model"), the rollback
// request is rollback.lockstep.dev/<revision>: <user> with, optionally,
// rollback-to.lockstep.dev/<revision>: <release> naming the target (unset: the
// release prod ran before the current one). The ValidatingAdmissionPolicy of
// the chart (templates/model-rollback-policy.yaml) admits either only from a
// user who may `rollback` that Model, as the user's own name, at its current
// revision.
inline constexpr const char* kRollbackToAnnotationPrefix =
    "rollback-to.lockstep.dev/";  // + revision

// The finalizer a ModelRelease carries while its prod stage may hold canary
// pods or the model's canary slot (docs/modelrelease.md "Deleting a release"):
// deleting it mid-canary rolls prod back to the known-good first.
inline constexpr const char* kReleaseCleanupFinalizer = "lockstep.dev/release-cleanup";

// The server-side apply field manager (managedFields) of everything the
// operator writes: objects and statuses.
inline constexpr const char* kOperatorFieldManager = "lockstep-operator";

}  // namespace lockstep::api::v1alpha1
