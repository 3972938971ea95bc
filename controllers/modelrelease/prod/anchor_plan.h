// The model's anchor ConfigMap `lockstep-model-<model>` as the prod stage
// writes it (pure, docs/rollouts.md "Ownership"): created by the first
// release to reach prod, the canary slot claimed by the newest (the one it
// displaces turns Superseded), and every promotion, canary rollback and
// manual rollback recorded — `promoted`, its package and closure, the prod
// `revision` bumped by every change of `promoted`, and the history (at most
// kAnchorHistoryKept entries). Each write is an update guarded by the
// resourceVersion it was planned from: a moved anchor is a Conflict, planned
// again. The vocabulary is api/v1alpha1/model_anchor.h.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_anchor.h"
#include "controllers/common/plan.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// A new anchor for `model` in `ns` whose canary slot `release` holds, its
// prod revision starting at `revision` ("": 0). A create: AlreadyExists means
// someone took the name meanwhile (a Conflict: plan again and look at it).
PlannedApply createAnchor(const std::string& ns, const std::string& model,
                          const std::string& release, const std::string& revision = "");

// The highest n of the rollback.lockstep.dev/<n> annotations on `release`
// and of its status.rollback.revision; 0 when none (or not numbers).
int64_t highestRollbackRevision(const kube::Object& release);

// `anchor` with its canary slot given to `release`.
PlannedApply claimCanary(const kube::Object& anchor, const std::string& release);

// What the prod stage of `release` records when its canary ends.
struct AnchorRecord {
  std::string release, package, closureHash, now;
  bool promoted = false;       // Promoted (else RolledBack)
  std::string rollbackReason;  // RolledBack: status.canary.reason
  std::string stable;          // RolledBack: the release stable stays on
};

// The anchor update for `r`; nullopt when the anchor already records it.
std::optional<PlannedApply> recordCanaryEnd(const kube::Object& anchor, const AnchorRecord& r);

// What a manual rollback records: prod runs `release` again (from `from`, asked by `by`).
struct RollbackRecord {
  std::string release, package, closureHash, from, by, now;
};
PlannedApply recordRollback(const kube::Object& anchor, const RollbackRecord& r);

}  // namespace lockstep::controllers
