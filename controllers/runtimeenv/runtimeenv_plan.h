// RuntimeEnv reconcile planning (pure): from what the controller observed to
// the status it must write (closure, revisions and their pins:
// runtimeenv_revisions.h), the Events it must record and the in-use finalizer
// (added while a release pins a revision; while the RuntimeEnv is being
// deleted it is held, with condition Terminating naming the releases, until no
// release pins one); then the same as the generic ExecutionPlan that
// controllers/common/execute.h carries out.
//
// No I/O and no clock: `now` is an input. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/common/plan.h"
#include "controllers/runtimeenv/runtimeenv_advisories.h"
#include "controllers/runtimeenv/runtimeenv_lock.h"
#include "controllers/runtimeenv/runtimeenv_mirror.h"
#include "controllers/runtimeenv/runtimeenv_revisions.h"
#include "controllers/runtimeenv/runtimeenv_verification.h"
#include "operator/kube/conditions.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The schedulable nodes by the NVIDIA driver their GPU feature discovery labels
// report (nvidia.com/cuda.driver.*): what status.compatibleNodes is counted from.
struct NodeDriverCounts {
  std::map<std::string, int64_t> byDriver;  // "570.124.06" -> nodes
  bool operator==(const NodeDriverCounts&) const = default;
};
// The driver `node` reports when it is schedulable; nullopt when it is cordoned or
// reports none (or one that does not parse). Reads three labels, not the whole map.
std::optional<std::string> schedulableNodeDriver(const kube::Object& node);
NodeDriverCounts countNodeDrivers(const std::vector<kube::ObjectPtr>& nodes);
// The nodes of `counts` whose driver satisfies `minDriver` ("" = any driver).
int64_t compatibleNodes(const NodeDriverCounts& counts, const std::string& minDriver);

// Everything one reconcile of a RuntimeEnv reads: the informer caches' own
// shared objects, never copies.
struct RuntimeEnvObserved {
  kube::ObjectPtr runtimeEnv;
  // The ConfigMap named by spec.lock.configMapRef; null when absent (or inline lock).
  kube::ObjectPtr configMap;
  // The lock resolved from those two when the shell has it already (its ClosureMemo,
  // closure_memo.h); null: the plan resolves it (resolveLock).
  std::shared_ptr<const LockResolution> lock;
  std::vector<kube::ObjectPtr> nodes;
  // Their driver counts when the shell has them already (the node cache's
  // kNodeDriverIndex, derived_memo.h); null: the plan counts `nodes`.
  std::shared_ptr<const NodeDriverCounts> nodeDrivers;
  // Every ModelRelease of the RuntimeEnv's namespace (pins, and the rollback
  // targets of each model, are derived from them).
  std::vector<kube::ObjectPtr> releases;
  // Every Model of the namespace: the pairs their records of prod hold stay
  // pinned, whether or not a release object still exists.
  std::vector<kube::ObjectPtr> models;
  // releasePinFacts of each of `releases` and modelPins of each of `models` when
  // the shell has derived them already (its PinFactsMemo, derived_memo.h);
  // nullopt: the plan derives them.
  std::optional<std::vector<api::v1alpha1::ReleasePinFacts>> releaseFacts;
  std::optional<std::vector<api::v1alpha1::ModelPin>> modelPins;
  // Scheduled verification (runtimeenv_verification.h): the RuntimeEnv's
  // verification Jobs and their pods, its closure ConfigMaps (one per revision),
  // the CLI image the Jobs run the checks on, and the clock as Unix seconds.
  std::vector<kube::ObjectPtr> verifyJobs;
  std::vector<kube::ObjectPtr> verifyPods;
  std::vector<kube::ObjectPtr> closureConfigMaps;  // this RuntimeEnv's, one per revision
  std::string cliImage;
  int64_t nowUnix = 0;
  // The operator's advisory source (--osv-export or --osv-url; runtimeenv_advisories.h):
  // null when none is configured (status.advisories is then removed), else a snapshot
  // of the loaded export or of the endpoint's last answers.
  std::shared_ptr<const AdvisorySnapshot> advisories;
  // The mirror checker's latest finished check of this RuntimeEnv (runtimeenv_mirror.h).
  std::optional<MirrorCheckResult> mirrorLatest;
};

// An Event on the RuntimeEnv. (ModelReleases mark themselves Stale from the
// cached RuntimeEnv: controllers/modelrelease.)
struct RuntimeEnvEvent {
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
};

struct RuntimeEnvPlan {
  nlohmann::json status;  // the complete desired status
  bool statusChanged = false;
  std::vector<RuntimeEnvEvent> events;
  // Set when metadata.finalizers must change: true adds kRuntimeEnvInUseFinalizer,
  // false removes it (for a RuntimeEnv being deleted, that lets the deletion complete).
  std::optional<bool> inUseFinalizer;
  VerificationPlan verification;
  MirrorPlan mirror;  // spec.mirror: status.mirror, Mirrored, the check to start
  // Advisories (runtimeenv_advisories.h): the closures to ask the endpoint about, the
  // pinned revisions' advisories by severity (the metric; null without a source) and
  // when the next endpoint answer falls due (0: none).
  std::vector<AdvisoryLookup> advisoryLookups;
  nlohmann::json pinnedAdvisories;
  int64_t advisoryRequeueSeconds = 0;
};

RuntimeEnvPlan planRuntimeEnv(const RuntimeEnvObserved& observed, const std::string& now);

// The plan as writes: the Events, and the RuntimeEnv's status last (when it changed).
ExecutionPlan executionPlan(const RuntimeEnvPlan& plan, const RuntimeEnvObserved& observed);

// True when `image` is a valid reference pinned by digest (repo@sha256:<64 lowercase hex>).
bool isDigestPinned(const std::string& image);

}  // namespace lockstep::controllers
