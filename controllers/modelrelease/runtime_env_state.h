// The RuntimeEnv a ModelRelease runs on, as admission sees it (pure): found,
// Ready for its current generation with a closure hash, the hash and image,
// its revisions, or why not; and the release's runtime on it (releaseRuntime):
// the revision it pinned (status.runtime) or pins when its first stage starts,
// and whether it is Stale (docs/contracts.md "Runtime revisions").
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/runtime_revision.h"

namespace lockstep::controllers {

struct RuntimeEnvState {
  bool found = false;
  bool ready = false;  // Ready=True for its current generation, with a hash
  std::string closureHash, image;
  std::string notReadyMessage;
  int64_t currentRevision = 0;  // 0: none recorded (a RuntimeEnv from before revisions)
  std::vector<api::v1alpha1::RuntimeRevision> revisions;
  nlohmann::json advisories;  // status.advisories (null: no advisory source)
};

RuntimeEnvState runtimeEnvState(const std::optional<nlohmann::json>& runtimeEnv);

// Whether a RuntimeEnv's change can matter to its releases: every change but the
// names its revisions list as pinning them (status.revisions[].pinnedBy and
// pinnedByCount, which the RuntimeEnv controller rewrites as its releases move: with
// 10,000 releases on one RuntimeEnv, each such write would wake all of them) and the
// object's bookkeeping (resourceVersion, managedFields). The one reader of pinnedBy
// on the release side, a canary's check of its rollback target (canary_observe.cc),
// runs on the canary's own polls.
bool runtimeEnvChangeConcernsReleases(const nlohmann::json& before, const nlohmann::json& after);

// The release's runtime on a Ready RuntimeEnv (env not Ready: only `pin`, as recorded).
struct ReleaseRuntime {
  // status.runtime; or, when not pinned yet and the current revision fits, the
  // current revision that the first stage to start pins (newPin).
  std::optional<api::v1alpha1::RuntimePin> pin;
  bool newPin = false;
  // Pinned: the pinned pair is not the current revision's. Not pinned: the
  // current closure hash is not spec.closureHash. No new stage, no new canary.
  bool stale = false;
  std::string staleReason;  // ClosureHashChanged | RuntimeRevisionChanged
  std::string message;      // the Stale condition's message (True or False)
  // Not pinned, not stale, and spec.runtimeImage is not the current image:
  // the release fails with this message (it names both images).
  std::string mismatch;
};

ReleaseRuntime releaseRuntime(const RuntimeEnvState& env, const api::v1alpha1::ModelRelease& r);

// Why the release may start nothing new because of advisories ("" = it may): with
// spec.policy.maxSeverity set, the advisories the RuntimeEnv records for the revision
// the release runs on (its pin, else the current one) above that severity (an unknown
// severity is above every maximum). Nothing is known, and nothing held, when the
// RuntimeEnv records no advisories (the operator has no --osv-export) or records them
// for another revision than the release's.
inline constexpr const char* kReasonAdvisoriesAboveMaxSeverity = "AdvisoriesAboveMaxSeverity";
std::string advisoryHold(const RuntimeEnvState& env, const ReleaseRuntime& rt,
                         const api::v1alpha1::ModelRelease& r);

}  // namespace lockstep::controllers
