// The model's prod record, the Model's status, as the prod stage writes it
// (pure, docs/rollouts.md "Objects and ownership"): the Model created (with
// defaults) by the first release of a model that has none, the canary slot
// claimed by the newest release to reach prod (the one it displaces turns
// Superseded), and every promotion, canary rollback and manual rollback
// recorded: status.prod (the release's uid, content digest, package and
// pinned runtime pair), the prod revision bumped by every change of prod, and
// the history (at most kModelHistoryKept entries). Every status write is an
// update of /status guarded by the resourceVersion it was planned from (a
// moved Model is a Conflict, planned again), and it is planned BEFORE the
// serving objects are changed: a plan from a stale cache never moves prod.
//
// Migration (docs/rollouts.md "Migration from the anchor ConfigMap"): a model
// that an earlier version ran has an anchor ConfigMap `lockstep-model-<model>`
// and no Model. The Model is created, its status built from the anchor (prod,
// canary slot, revision, history, and an Adopted entry), the serving objects
// re-owned by a merge patch of their ownerReferences (no pod restarts), and
// only then the anchor deleted (uid-guarded).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_anchor.h"
#include "common/status.h"
#include "controllers/common/plan.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// A new Model `model` in `ns`, spec empty (every field defaults to the
// release's own). A create: AlreadyExists means someone made it meanwhile (a
// Conflict: plan again and look at it).
PlannedApply createModel(const std::string& ns, const std::string& model);

// The highest n of the rollback.lockstep.dev/<n> annotations on `release`
// and of its status.rollback.revision; 0 when none (or not numbers).
int64_t highestRollbackRevision(const kube::Object& release);

// A release as the record names it.
struct RecordedRelease {
  std::string name, uid, contentDigest, package;
  api::v1alpha1::ModelRuntime runtime;
  // Its spec.stages: recorded in status.prod when it takes prod (bounded:
  // api/v1alpha1/model.h recordStages), never in status.canary.
  nlohmann::json stages;
};

// `model` with its canary slot given to `release` (nullopt: freed). The prod
// revision goes on past `revisionFloor` (the highest rollback request any
// release of the model carries): a re-created Model never lets an old request fire.
PlannedApply claimCanary(const kube::Object& model, const std::optional<RecordedRelease>& release,
                         const std::string& now, int64_t revisionFloor = 0);

// What the prod stage of a release records when its canary ends.
struct CanaryEndRecord {
  RecordedRelease release;
  std::string now;
  bool promoted = false;       // Promoted (else RolledBack)
  std::string rollbackReason;  // RolledBack: status.canary.reason
  std::string stable;          // RolledBack: the release stable stays on
};

// The Model status update for `r`; nullopt when the Model already records it.
std::optional<PlannedApply> recordCanaryEnd(const kube::Object& model, const CanaryEndRecord& r);

// What a manual rollback records: prod runs `release` again (from `from`, asked by `by`).
struct RollbackRecord {
  RecordedRelease release;
  std::string from, by, now;
};
PlannedApply recordRollback(const kube::Object& model, const RollbackRecord& r);

// Migration: the Model's status built from the anchor ConfigMap of an earlier
// version (its history kept, an Adopted entry appended); nullopt when the
// Model already records prod or history (adopted before). `prod`: the live
// release the anchor names as promoted, when its package and closure are the
// anchor's (its uid and content digest go in the record; else they stay empty).
std::optional<PlannedApply> adoptAnchor(const kube::Object& model, const kube::Object& anchor,
                                        const std::string& now,
                                        const std::optional<RecordedRelease>& prod);

// Content identity (docs/rollouts.md "Content identity"): how the release
// object `release` stands to the Model's prod record.
enum class ProdIdentity {
  kNotProd,       // the record names another release, or none
  kRecorded,      // the recorded object (its uid; a record without a uid: by name)
  kRecreated,     // another object under that name with the very recorded content
  kOtherContent,  // another object under that name with other content: never followed
};
ProdIdentity prodIdentity(const api::v1alpha1::Model& model, const kube::Object& release);

// A re-created release with prod's content takes the record over: the Model's
// status.prod names its uid (the content stays), and a Recognized entry is added.
// `stages` (its spec.stages, the very content) are recorded when the record
// has none yet (a record an earlier operator wrote).
PlannedApply recordRecognized(const kube::Object& model, const std::string& uid,
                              const std::string& now,
                              const nlohmann::json& stages = nlohmann::json());

// The release the Model records as prod, rebuilt from status.prod as the
// ModelRelease object it was (name, uid, package, RuntimeEnv, closure hash,
// spec.stages; status: Promoted on the recorded pair), for when that object
// is gone: prod's serving objects are built from it exactly as from the
// object (docs/rollouts.md "Prod heals"). kNotFound: nothing to rebuild from
// (no prod, or no stages recorded: an earlier operator's record, or over the
// bound; the message says which); kInvalid: recorded stages that
// do not hash to status.prod.contentDigest, never followed.
StatusOr<kube::Object> recordedProdRelease(const api::v1alpha1::Model& model);

// The status write of `model` with `status` (an update of /status guarded by
// the Model's resourceVersion).
PlannedApply modelStatusWrite(const kube::Object& model, const api::v1alpha1::ModelStatus& status,
                              std::string what);

}  // namespace lockstep::controllers
