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
// On a ModelRelease: something is in progress (kstatus "Reconciling").
inline constexpr const char* kConditionReconciling = "Reconciling";
// On a ModelRelease with spec.registryTags: every stage tag points where it must.
inline constexpr const char* kConditionRegistryTagged = "RegistryTagged";

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

// ModelRelease reasons (Ready, Reconciling, Stalled): the gates and the release.
inline constexpr const char* kReasonValidated = "Validated";
inline constexpr const char* kReasonGateRunning = "GateRunning";
inline constexpr const char* kReasonWaitingForApproval = "WaitingForApproval";
inline constexpr const char* kReasonGateFailed = "GateFailed";
inline constexpr const char* kReasonGateTimedOut = "GateTimedOut";
inline constexpr const char* kReasonAborted = "Aborted";
inline constexpr const char* kReasonInvalidSpec = "InvalidSpec";
// Failed before any stage: the package is neither an image nor a ModelPack model
// (api/v1alpha1/model_package.h); the message names its media types.
inline constexpr const char* kReasonPackageRefused = "PackageRefused";
inline constexpr const char* kReasonRuntimeEnvNotFound = "RuntimeEnvNotFound";
inline constexpr const char* kReasonRuntimeEnvNotReady = "RuntimeEnvNotReady";
inline constexpr const char* kReasonRuntimeStale = "RuntimeStale";
inline constexpr const char* kReasonSuperseded = "Superseded";
inline constexpr const char* kReasonWaitingForMetrics = "WaitingForMetrics";
// An evidence stage (docs/fleet.md): its evidence is being read from the registry;
// held, it carries evidence/stage_evidence.h's reasons (EvidenceMissing, …).
inline constexpr const char* kReasonCheckingEvidence = "CheckingEvidence";
inline constexpr const char* kReasonEvidenceVerified = "EvidenceVerified";
inline constexpr const char* kReasonManualRollback = "ManualRollback";
inline constexpr const char* kReasonRollbackRefused = "RollbackRefused";
// A manual rollback's target did not have N Ready stable pods within the
// Model's spec.rollbackDeadlineSeconds (Ready=False, Stalled=True, a Warning).
inline constexpr const char* kReasonRollbackDeadlineExceeded = "RollbackDeadlineExceeded";
// A gate Job built for another generation of the release, or existing for a
// Manual stage not approved: deleted, never credited (a Warning Event).
inline constexpr const char* kReasonGateJobNotCredited = "GateJobNotCredited";

// ModelRelease reasons of the prod stage (docs/rollouts.md; also the `reason`
// label of lockstep_release_rollbacks_total).
inline constexpr const char* kReasonCanaryProgressing = "CanaryProgressing";
inline constexpr const char* kReasonCanaryPaused = "CanaryPaused";
inline constexpr const char* kReasonAnalysisRunning = "AnalysisRunning";
inline constexpr const char* kReasonWaitingForGPUCapacity = "WaitingForGPUCapacity";
inline constexpr const char* kReasonPromoting = "Promoting";
inline constexpr const char* kReasonPromoted = "Promoted";
inline constexpr const char* kReasonRollingBack = "RollingBack";
inline constexpr const char* kReasonRolledBack = "RolledBack";
inline constexpr const char* kReasonAnalysisFailed = "AnalysisFailed";
inline constexpr const char* kReasonAnalysisError = "AnalysisError";
inline constexpr const char* kReasonAdmissionRefused = "AdmissionRefused";
inline constexpr const char* kReasonCanaryRestarting = "CanaryRestarting";
inline constexpr const char* kReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded";
inline constexpr const char* kReasonInsufficientGPUCapacity = "InsufficientGPUCapacity";
inline constexpr const char* kReasonRollbackTargetStale = "RollbackTargetStale";
// An object at one of the model's prod names (its Service, Deployments, anchor)
// is not Lockstep's (controllers/modelrelease/prod/ownership.h): Stalled, prod untouched.
inline constexpr const char* kReasonNameConflict = "NameConflict";
// The release's serving port differs from the port of the model's Service
// while another release runs prod: Stalled before its canary, the Service untouched.
inline constexpr const char* kReasonServicePortConflict = "ServicePortConflict";
// The anchor's `promoted` names a release that does not match (gone while
// stable does not run it, another model, never promoted, another package or
// closure than the anchor records): Stalled, prod untouched.
inline constexpr const char* kReasonAnchorMismatch = "AnchorMismatch";
// The API server refused a write to the model's serving objects or anchor
// (not a transient error): Stalled, with the object and the server's message.
inline constexpr const char* kReasonServingApplyFailed = "ServingApplyFailed";
// The release was deleted while its canary ran: rolled back before it goes
// (the finalizer lockstep.dev/release-cleanup).
inline constexpr const char* kReasonReleaseDeleted = "ReleaseDeleted";
// A release prod runs (Promoted, or the target of a manual rollback) while its
// stable Deployment has fewer than N Ready pods of it (controllers/modelrelease/
// serving_health.h): Ready=False and Degraded=True; Degraded=False once N are Ready.
inline constexpr const char* kReasonProdShortOfReadyPods = "ProdShortOfReadyPods";
inline constexpr const char* kReasonStablePodsReady = "StablePodsReady";

}  // namespace lockstep::api::v1alpha1
