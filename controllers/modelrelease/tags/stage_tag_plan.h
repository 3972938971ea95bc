// Registry stage tags (pure): which `<repo>:<stage>` tag must point at which
// package digest, from a release's spec (spec.registryTags), its status (the
// gates that passed, Promoted or RolledBack) and the model's Model (the
// last known-good package), and how the outcome of tagging is recorded in
// status.registryTags and the RegistryTagged condition. The shell that talks
// to the registry is stage_tagger.h; spec.registryTags is decoded by
// api/v1alpha1/model_release.h (registryTagsOf). The contract is docs/rollouts.md,
// "Registry stage tags".
//
// A tag already recorded as pointing at its digest is never written again; a
// failed one is retried with exponential back-off (10 s doubling to 5 min).
// Tags never gate the release: a failure only shows in the condition, an
// Event and status.registryTags. No I/O, no clock. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/conditions.h"

namespace lockstep::controllers {

struct StageTagTarget {
  std::string tag;      // the stage's name: eval, ci, prod
  std::string package;  // registry/repo@sha256:… the tag must point at
  std::string why;      // "stage eval passed", "release promoted", "rolled back to <release>"
};

struct StageTagsObserved {
  nlohmann::json release;       // metadata + spec from the cache
  nlohmann::json status;        // the status just planned (and written)
  std::string promotedRelease;  // the model's Model: the release prod runs
  std::string promotedPackage;  // and its package
  std::string now;              // RFC 3339
  int64_t nowUnix = 0;
};

struct StageTagsPlan {
  std::vector<StageTagTarget> wanted;  // every tag this release answers for, in stage order
  std::vector<StageTagTarget> due;     // those to write now
  int64_t retryAfterSeconds = 0;       // the earliest back-off that has not expired (0: none)
};

StageTagsPlan planStageTags(const StageTagsObserved& observed);

// The result of one attempt to point target.tag at target.package.
struct StageTagResult {
  StageTagTarget target;
  std::string reference;       // "registry/repo:tag"
  std::string digest;          // sha256:… of target.package
  std::string previousDigest;  // where the tag pointed before ("" when new or unknown)
  bool moved = false;
  std::string error;  // empty: tagged
};

using api::v1alpha1::kConditionRegistryTagged;
inline constexpr const char* kTagPhaseTagged = "Tagged";
inline constexpr const char* kTagPhaseFailed = "Failed";

// The seconds to wait after the n-th failed attempt (n >= 1): 10, 20, 40 … 300.
int64_t stageTagBackoffSeconds(int attempts);

// The new status.registryTags (entries keyed by tag; results replace the
// entry of their tag) and the RegistryTagged condition for `wanted`.
struct StageTagsStatus {
  nlohmann::json entries;    // array
  nlohmann::json condition;  // metav1.Condition
};
StageTagsStatus foldStageTagResults(const nlohmann::json& status,
                                    const std::vector<StageTagTarget>& wanted,
                                    const std::vector<StageTagResult>& results, int64_t generation,
                                    const std::string& now);

}  // namespace lockstep::controllers
