// Scheduled runtime verification (pure): from a RuntimeEnv's spec.verify, its
// current revision, the nodes and the verification Jobs (and their pods) to
// status.verification, the Verified condition, the Jobs to create and delete,
// the closure ConfigMap (the lock and runtime.json the Jobs check against),
// Events and when to look again. docs/verify.md, "In the operator".
//
// A run verifies one revision: one Job per GPU product, on the first node (by
// name) of that product whose driver satisfies the closure's minimum (the
// table the compatible-node count uses, closure/cuda.h); a CPU-only closure
// runs once, anywhere. A run starts when none ran yet, when the current
// revision is not the one the last run verified (a new revision is verified
// at once, superseding a run of the old one still going), and when the
// schedule's next time after the last run's start has come. A scheduled time
// that comes while a run is going is skipped (as a CronJob with
// concurrencyPolicy Forbid). Only the latest run's Jobs are kept.
//
// No I/O and no clock: `now` is an input. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/common/verify_containers.h"
#include "operator/kube/conditions.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// What the verification plan needs of the resolved RuntimeEnv.
struct VerificationInput {
  kube::ObjectPtr runtimeEnv;
  std::optional<api::v1alpha1::VerifySpec> spec;
  // The current revision and what it resolved to; revision 0: nothing resolved.
  int64_t revision = 0;
  std::string image;  // repo@sha256:…
  std::string closureHash;
  std::string cuda;       // "" = CPU-only
  std::string minDriver;  // "" = any driver
  // The closure files: the lock text and what runtime.json carries.
  std::string lockText;
  std::string format, platform, environment;
  std::vector<kube::ObjectPtr> nodes;
  std::vector<kube::ObjectPtr> jobs;  // labelled kVerifyRuntimeEnvLabel = this RuntimeEnv
  std::vector<kube::ObjectPtr> pods;  // their pods
  // This RuntimeEnv's closure ConfigMaps as cached (closureConfigMapName, one per
  // revision), and the revisions releases pin: their ConfigMaps are kept.
  std::vector<kube::ObjectPtr> closureConfigMaps;
  std::vector<int64_t> pinnedRevisions;
  // status.revisions as planned (the pinned ones' pair and lock digest): a pinned
  // revision resolved from the same lock bytes as the current one gets its closure
  // ConfigMap too (the operator still knows that closure).
  std::vector<api::v1alpha1::RuntimeRevision> revisions;
  std::string cliImage;  // the lockstep CLI image (operator flag --cli-image)
  std::string now;       // RFC 3339 UTC
  int64_t nowUnix = 0;
};

struct VerificationEvent {
  std::string type;
  std::string reason;
  std::string message;
};

struct VerificationPlan {
  bool enabled = false;  // spec.verify.schedule is set
  // status.verification (null: remove it) and the Verified condition (nullopt: remove it).
  nlohmann::json status;
  std::optional<kube::Condition> verified;
  std::vector<nlohmann::json> jobsToCreate;
  std::vector<std::string> jobsToDelete;
  std::optional<nlohmann::json> closureConfigMap;  // to apply (it differs from the cached one)
  // Closure ConfigMaps of pinned revisions the operator can still write (their lock
  // digest is the current revision's), to apply.
  std::vector<nlohmann::json> pinnedClosureConfigMaps;
  // The revisions whose closure ConfigMap exists or is applied by this plan
  // (status.closureRevisions, ascending; the ModelRelease controller starts no pod
  // with the checks on another revision). nullopt: leave the status as it is (the
  // runtime is not resolved now); empty: remove it (no closure wanted).
  std::optional<std::vector<int64_t>> closureRevisions;
  // Closure ConfigMaps of revisions neither current nor pinned.
  std::vector<std::string> closureConfigMapsToDelete;
  std::vector<VerificationEvent> events;
  // A run that finished in this plan: "passed" | "failed" (the metric's result label).
  std::string finishedResult;
  int64_t requeueAfterSeconds = 0;  // 0: nothing timed
};

VerificationPlan planVerification(const VerificationInput& in);

// `<runtime env>-verify-<run>-<product index>` (hashed when longer than 63 characters).
std::string verificationJobName(const std::string& runtimeEnv, int64_t run, size_t index);

}  // namespace lockstep::controllers
