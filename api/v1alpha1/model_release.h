// ModelRelease (lockstep.dev/v1alpha1), decoded once into a typed view: one
// immutable checkpoint package (an OCI reference by digest), the RuntimeEnv
// and closure hash it was built for, and its ordered stages — gates (a Job
// template, metric thresholds, a timeout, optional manual approval) and a
// canary rollout of a serving Deployment — with the status the controller
// writes. Field names are those of crds/lockstep.dev_modelreleases.yaml;
// the semantics are in docs/contracts.md.
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

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {

// status.phase, and the phase of each stage in status.stages[].phase.
enum class Phase {
  kPending,
  kEvaluating,
  kTesting,
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

// A duration field as written ("30m") and decoded (nullopt when absent or malformed).
struct DurationField {
  std::string text;
  std::optional<std::chrono::milliseconds> value;
};

struct MetricThreshold {
  std::string name;
  std::optional<double> min;  // the metric must be >= min
  std::optional<double> max;  // the metric must be <= max
};

struct Gate {
  nlohmann::json podTemplate = nlohmann::json::object();  // spec.stages[].gate.template
  std::vector<MetricThreshold> metrics;
  DurationField timeout;
};

enum class Approval { kAutomatic, kManual };

struct Serving {
  nlohmann::json podTemplate = nlohmann::json::object();
  int64_t replicas = 1;
  int64_t port = 8080;
};

struct CanaryStep {
  int64_t weight = 0;  // percent of replicas on the canary
  DurationField pause;
};

struct PrometheusAnalysis {
  std::string address;
  std::string query;
  std::optional<double> min;
  std::optional<double> max;
  DurationField interval{"30s", std::chrono::seconds(30)};
  int64_t failureLimit = 1;
};

struct Canary {
  std::vector<CanaryStep> steps;
  std::optional<PrometheusAnalysis> prometheus;
};

struct Stage {
  std::string name;
  Approval approval = Approval::kAutomatic;
  std::optional<Gate> gate;
  std::optional<Serving> serving;
  std::optional<Canary> canary;
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
  std::vector<Stage> stages;
  std::optional<RegistryTags> registryTags;
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
  std::vector<StageStatus> stages;
  std::vector<RegistryTagStatus> registryTags;
  nlohmann::json conditions = nlohmann::json::array();
};

struct ModelRelease {
  ObjectMeta meta;
  ModelReleaseSpec spec;
  ModelReleaseStatus status;

  // Ready=True computed for the current generation.
  bool ready() const;
  // "ns/name" of the RuntimeEnv it runs on; "" when unset.
  std::string runtimeEnvKey() const;
  // The closure it was validated on: status.validatedClosureHash, else spec.closureHash.
  std::string validatedClosureHash() const;
};

ModelRelease decodeModelRelease(const nlohmann::json& object);

// Index values for a cache of ModelReleases: the RuntimeEnv key it references.
std::vector<std::string> indexByRuntimeEnv(const nlohmann::json& modelRelease);
inline constexpr const char* kReleaseByRuntimeEnvIndex = "release-runtimeenv";

}  // namespace lockstep::api::v1alpha1
