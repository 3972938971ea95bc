// ModelRelease (lockstep.dev/v1alpha1), decoded once into a typed view: one
// immutable checkpoint package (an OCI reference by digest), the RuntimeEnv
// and closure hash it was built for, and its ordered stages — gates (a Job
// template, metric thresholds, a timeout, optional manual approval) and a
// canary rollout of a serving Deployment — with the status the controller
// writes. Field names are those of crds/lockstep.dev_modelreleases.yaml;
// the semantics are in docs/modelrelease.md and docs/rollouts.md.
//
// The one decoder of the kind: the planners, the stage tags, the admission
// webhook and the CLI read a release through it. decodeModelRelease() is
// tolerant (a missing or mistyped field reads as its default, as written);
// checkStages(), canarySpecOf() and registryTagsOf() say what cannot run,
// naming the field.
// Thread-safety: values and pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_package.h"
#include "api/v1alpha1/runtime_revision.h"
#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// status.phase, and the phase of each stage in status.stages[].phase.
enum class Phase {
  kPending,
  kEvaluating,
  kTesting,
  kValidated,
  kCanary,
  kPromoted,
  kRolledBack,
  kFailed,
  kSuperseded
};
enum class StagePhase { kPending, kWaitingForApproval, kRunning, kSucceeded, kFailed };
// The names the CRD's enums spell ("RolledBack"); parse* is nullopt for anything else.
std::string_view phaseName(Phase p);
std::optional<Phase> parsePhase(std::string_view name);
std::string_view stagePhaseName(StagePhase p);
std::optional<StagePhase> parseStagePhase(std::string_view name);

// The same names as constants, for the JSON status the planners write.
inline constexpr const char* kPhasePending = "Pending";
inline constexpr const char* kPhaseEvaluating = "Evaluating";
inline constexpr const char* kPhaseTesting = "Testing";
inline constexpr const char* kPhaseValidated = "Validated";
inline constexpr const char* kPhaseFailed = "Failed";
inline constexpr const char* kPhaseCanary = "Canary";
inline constexpr const char* kPhasePromoted = "Promoted";
inline constexpr const char* kPhaseRolledBack = "RolledBack";
inline constexpr const char* kPhaseSuperseded = "Superseded";
inline constexpr const char* kStagePending = "Pending";
inline constexpr const char* kStageWaitingForApproval = "WaitingForApproval";
inline constexpr const char* kStageRunning = "Running";
inline constexpr const char* kStageSucceeded = "Succeeded";
inline constexpr const char* kStageFailed = "Failed";

// Parses a Go-style duration of whole units ("30m", "1h30m", "45s") to
// seconds: the grammar of every duration field of a ModelRelease.
std::optional<int64_t> parseStageDuration(const std::string& text);

// A duration field as written ("30m") and decoded (nullopt when absent or malformed).
struct DurationField {
  std::string text;
  std::optional<std::chrono::seconds> value;
};

struct MetricThreshold {
  std::string name;
  std::optional<double> min;  // the metric must be >= min
  std::optional<double> max;  // the metric must be <= max
};

inline constexpr int64_t kDefaultGateTimeoutSeconds = 1800;

struct Gate {
  nlohmann::json podTemplate = nlohmann::json::object();  // spec.stages[].gate.template
  std::vector<MetricThreshold> metrics;
  DurationField timeout;
  // The timeout in seconds: kDefaultGateTimeoutSeconds when none is written
  // (checkStages() refuses a malformed one).
  int64_t timeoutSeconds() const;
};

enum class Approval { kAutomatic, kManual };

struct Serving {
  nlohmann::json podTemplate = nlohmann::json::object();
  int64_t replicas = 1;
  int64_t port = 8080;
};

// canary.analysis / canary.steps[].analysis as written.
struct AnalysisField {
  bool prometheusGiven = false;  // analysis.prometheus is an object
  std::string provider;          // an AnalysisProvider's name (the platform's Prometheus)
  std::string address;       // a release-chosen URL: only with --allow-release-prometheus-address
  std::string query;         // free-form PromQL (only on providers that allow it)
  std::string templateName;  // or an AnalysisTemplate's name
  std::map<std::string, std::string> args;  // the template's arguments
  std::string argsError;                    // a malformed args map ("args.x: must be a string")
  std::optional<double> min;
  std::optional<double> max;
  DurationField interval;
  DurationField initialDelay;
  int64_t count = 0;  // 0: derived from the step's pause
  int64_t failureLimit = 0;
  int64_t consecutiveErrorLimit = 4;  // Argo Rollouts' DefaultConsecutiveErrorLimit
};

// canary.steps[] as written.
struct CanaryStepField {
  int64_t weight = 0;
  std::string pause;  // a duration, "Indefinite", or "" (none)
  DurationField progressDeadline;
  std::optional<AnalysisField> analysis;
};

// spec.stages[].canary as written.
struct CanaryField {
  std::string capacity;  // surge (default) | drain
  DurationField progressDeadline;
  std::optional<AnalysisField> analysis;  // the default of every step
  std::vector<CanaryStepField> steps;
};

// spec.stages[].evidence: the stage passes on signed evidence already in the
// package's registry, never a Job (docs/fleet.md "Evidence stages").
struct EvidenceStage {
  std::vector<std::string> stages;                 // whose decisions are needed: eval, ci
  std::string trustPolicy;                         // the TrustPolicy's name
  std::map<std::string, std::string> specDigests;  // stage → the spec digest required
};

// spec.stages[].fleet (the serving stage only): the canary starts once the
// registry holds a wave permit naming this cluster, signed by a key the
// TrustPolicy trusts for stage "fleet"; a fleet abort for its wave rolls it
// back (docs/fleet.md "The serving side").
struct FleetField {
  std::string trustPolicy;
};

struct Stage {
  std::string name;
  Approval approval = Approval::kAutomatic;
  // The whole policy (approval.h): Manual with minApprovers/allowSelfApproval,
  // and the decode error naming the field when `approval` is malformed.
  ApprovalPolicy approvalPolicy;
  std::string approvalError;
  std::optional<Gate> gate;
  std::optional<EvidenceStage> evidence;
  std::optional<Serving> serving;
  std::optional<CanaryField> canary;
  std::optional<FleetField> fleet;
};

// spec.registryTags: tag the package `<repo>:<stage>` after each stage passes
// (docs/rollouts.md, "Registry stage tags").
struct RegistryTags {
  bool enabled = true;     // the block given turns it on; enabled: false turns it off
  std::string secretName;  // secretRef.name: a kubernetes.io/dockerconfigjson Secret; "" anonymous
};

struct ModelReleaseSpec {
  std::string model;
  std::string package;  // repo@sha256:<hex>
  std::string runtimeEnvName;
  std::string closureHash;  // from the package's runtime.json
  // Optional (runtime.json may record it): the runtime image by digest the
  // package was built on; the pinned revision's image must be this one.
  std::string runtimeImage;
  std::vector<Stage> stages;
  bool stagesGiven = false;  // spec.stages is an array (possibly empty)
  std::optional<RegistryTags> registryTags;
  // spec.policy.maxSeverity: no stage or canary starts while the runtime's revision
  // has an OSV advisory above it (RuntimeEnv status.advisories; docs/supply-chain.md).
  // "" = no limit; else low | medium | high | critical.
  std::string maxSeverity;
};

struct StageStatus {
  std::string name;
  std::optional<StagePhase> phase;
  std::string jobName;
  std::string message;
  std::string approvedBy;
  std::string startedAt;
  std::string finishedAt;
  std::map<std::string, double> metrics;
};

// status.registryTags[]: where a stage tag points, or why it does not yet.
struct RegistryTagStatus {
  std::string tag;             // the stage: eval, ci, prod
  std::string reference;       // registry/repo:tag
  std::string digest;          // the digest it must point at
  std::string previousDigest;  // where it pointed before Lockstep moved it
  std::string phase;           // Tagged | Failed
  std::string message;
  int64_t attempts = 0;
  std::string lastAttemptAt;
};

struct ModelReleaseStatus {
  int64_t observedGeneration = -1;
  std::optional<Phase> phase;  // nullopt: not written yet
  std::string currentStage;
  int64_t canaryStep = 0;
  std::string promotedPackage;
  std::string previousRelease;
  std::string validatedClosureHash;  // the closure hash the gates ran on
  // status.runtime: the RuntimeEnv revision pinned at the first stage (never
  // changes once written); nullopt: not pinned yet (runtime_revision.h).
  std::optional<RuntimePin> runtime;
  // status.package: what the package's manifest (and a ModelPack config) says,
  // read by the controller before the first stage (model_package.h); nullopt
  // when not read (yet).
  std::optional<PackageInfo> package;
  std::vector<StageStatus> stages;
  std::vector<RegistryTagStatus> registryTags;
  // status.canary: the canary planner's own record (controllers/modelrelease/
  // prod/canary_plan.h), decoded once here (canary_status.h): absent when no
  // canary started, or refused with the error naming the malformed member (the
  // value as written kept in `refused`). Readers go through it, never through
  // the JSON: one with no use for a refused one says so (`error`), none reads
  // it as empty.
  CanaryStatusRead canary;
  // status.rollback: the last manual rollback to this release, or why it was
  // refused ({from, requestedBy, revision, at | refused}); empty when none.
  nlohmann::json rollback = nlohmann::json::object();
  // status.evidenceChecks: the evidence controller's answers (evidence stages,
  // a fleet rollout's wave permit), as written.
  nlohmann::json evidenceChecks = nlohmann::json::array();
  nlohmann::json conditions = nlohmann::json::array();
};

struct ModelRelease {
  ObjectMeta meta;
  std::string resourceVersion;
  std::map<std::string, std::string> annotations;
  ModelReleaseSpec spec;
  ModelReleaseStatus status;

  // Ready=True computed for the current generation.
  bool ready() const;
  // "ns/name" of the RuntimeEnv it runs on; "" when unset.
  std::string runtimeEnvKey() const;
  // The closure it was validated on: status.validatedClosureHash, else spec.closureHash.
  std::string validatedClosureHash() const;
  // The prod stage: the last stage with `serving`; nullptr when there is none.
  const Stage* prodStage() const;
  // The annotation's value; "" when absent.
  std::string annotation(const std::string& key) const;
};

ModelRelease decodeModelRelease(const nlohmann::json& object);

struct RuntimeEnv;

// Whether this release object is one a manual rollback acts on at all: it ran
// in prod (status.canary.phase Promoted, or a status.canary the planner cannot
// read, which it then refuses in status.rollback) and is Promoted or Superseded
// now. Another object under the name (re-created with other content, never
// promoted) is not: a request for it would go unanswered, so the default
// target skips it and the Model controller says so (docs/rollouts.md).
bool takesRollbackRequests(const ModelRelease& release);

// Whether a manual rollback to `target` can run its runtime, and on which pair
// (docs/rollouts.md "Manual rollback"; the CLI and the controller share it).
// It runs exactly the release's pinned pair (runtimeOf), refused only when the
// RuntimeEnv does not exist or that pair is no longer a recorded revision
// (pruned): `refusal` names the revision. A RuntimeEnv from before revisions:
// refused unless it resolves to the release's closure hash.
struct RollbackRuntime {
  std::optional<RuntimePin> pair;  // what the stable pods run (revision: its number)
  // The pair is not the current revision: the rollback runs, with a Warning.
  bool movedOn = false;
  std::string movedOnMessage;
  std::string refusal;  // not empty: refused
};
RollbackRuntime rollbackRuntime(const ModelRelease& target, const RuntimeEnv* env);

// What the release planner needs to run the stages at all: a non-empty list,
// every stage named, every gate timeout a positive duration. The error names
// the field ("spec.stages[1].gate.timeout \"soon\" is not a duration").
Status checkStages(const ModelReleaseSpec& spec);

// ---- the prod stage, checked for a rollout ------------------------------------------------

// How a step finds GPUs for its canary pods (docs/rollouts.md "GPU capacity").
//   kSurge: one extra pod at a time on spare GPUs (maxSurge 1, maxUnavailable 0);
//   kDrain: scale stable down by one first (maxSurge 0, maxUnavailable 1).
enum class CapacityMode { kSurge, kDrain };
const char* capacityModeName(CapacityMode m);

struct PrometheusAnalysis {
  // Exactly one: the AnalysisProvider queried (api/v1alpha1/analysis_provider.h),
  // or an address the release chose (refused unless the operator runs with
  // --allow-release-prometheus-address; docs/rollouts.md "Analysis providers").
  std::string provider, address;
  // Exactly one: free-form PromQL (refused by providers without
  // spec.allowFreeFormQueries), or an AnalysisTemplate and its arguments
  // (api/v1alpha1/analysis_template.h).
  std::string query;
  std::string templateName;
  std::map<std::string, std::string> args;
  std::optional<double> min, max;
  int64_t intervalSeconds = 30;
  // Argo Rollouts' initialDelay: no measurement before weightReachedAt + this.
  // A query over a range window ([1m]) needs it to cover the window plus one
  // scrape interval, or it measures series of pods that are not the canary's.
  int64_t initialDelaySeconds = 0;
  int count = 0;  // 0: derived (see effectiveCount in prod/analysis.h)
  int failureLimit = 0;
  int consecutiveErrorLimit = 4;  // Argo Rollouts' DefaultConsecutiveErrorLimit
};

struct CanaryStep {
  int weight = 0;  // percent of replicas on the canary
  enum class Pause { kNone, kDuration, kIndefinite } pause = Pause::kNone;
  int64_t pauseSeconds = 0;                    // kDuration
  std::optional<PrometheusAnalysis> analysis;  // the step's, or the canary default
  int64_t progressDeadlineSeconds = 600;
};

struct CanarySpec {
  int replicas = 1;
  int port = 8080;
  nlohmann::json podTemplate;  // serving.template
  CapacityMode capacity = CapacityMode::kSurge;
  std::vector<CanaryStep> steps;  // never empty: no steps is one step at weight 100
};

// The prod stage (`serving` and `canary`) as the canary planner runs it.
// kInvalidArgument naming the field when the stage cannot be run
// (`stage "prod".canary.capacity "steal" is not surge or drain`).
StatusOr<CanarySpec> canarySpecOf(const Stage& stage);

// spec.registryTags checked: disabled when absent; kInvalidArgument naming
// the field for a malformed value.
StatusOr<RegistryTags> registryTagsOf(const nlohmann::json& modelRelease);

// Index values for a cache of ModelReleases: the RuntimeEnv key it references.
std::vector<std::string> indexByRuntimeEnv(const nlohmann::json& modelRelease);
inline constexpr const char* kReleaseByRuntimeEnvIndex = "release-runtimeenv";
// Index values for a cache of ModelReleases (and of the objects labelled
// lockstep.dev/model): "<ns>/<model>".
std::vector<std::string> indexByModel(const nlohmann::json& modelRelease);
inline constexpr const char* kReleaseByModelIndex = "model";

}  // namespace lockstep::api::v1alpha1
