// RuntimeEnv revision bookkeeping (pure): from the revisions recorded in the
// status, this reconcile's resolution and the namespace's ModelReleases to
// the revisions to record, the current one, the pins and what is pruned
// (docs/contracts.md, "Runtime revisions"). Modelled on a Deployment's
// ControllerRevisions and revisionHistoryLimit.
//
// No I/O and no clock: `now` is an input. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/runtime_revision.h"

namespace lockstep::controllers {

// What this reconcile resolved the spec to.
struct ResolvedPair {
  std::string image;
  std::string closureHash;
  std::string lockDigest;
  std::string cuda;
  std::string minDriver;
  // The closure as advisory matching needs it (runtimeenv_advisories.h
  // encodeAdvisoryPackages); "" when too large to keep.
  std::string packages;
};

// All revisions' stored packages together at most this many bytes: the current and
// pinned revisions keep theirs first, then the newest others.
inline constexpr size_t kMaxRevisionPackagesTotal = size_t{256} << 10;

struct RevisionsInput {
  std::string runtimeEnv;  // its name: releases name it in spec.runtimeEnvRef
  std::vector<api::v1alpha1::RuntimeRevision> recorded;  // status.revisions
  int64_t currentRevision = 0;                           // status.currentRevision
  std::optional<ResolvedPair> resolved;                  // nullopt: the lock did not resolve
  std::vector<api::v1alpha1::ReleasePinFacts> releases;  // every release of the namespace
  // What the namespace's Models' records hold (api/v1alpha1/model.h modelPins).
  std::vector<api::v1alpha1::ModelPin> models;
  int64_t historyLimit = api::v1alpha1::kDefaultRevisionHistoryLimit;
  std::string now;
};

struct RevisionsPlan {
  std::vector<api::v1alpha1::RuntimeRevision> revisions;  // to record, ascending number
  int64_t currentRevision = 0;
  std::vector<api::v1alpha1::ReleasePin> pins;  // the releases holding a pin, by name
  // The pairs the Models' records hold (pair.revision: the recorded revision
  // with that pair, 0 when pruned), besides the (release, revision) pins above.
  std::vector<api::v1alpha1::ModelPin> modelPins;
  std::vector<api::v1alpha1::RuntimeRevision> pruned;
  // Revisions pinned by more releases than pinnedBy lists (kMaxPinnedByListed).
  struct TruncatedPins {
    int64_t revision = 0;
    int64_t pins = 0;    // all of them
    bool newly = false;  // not truncated in the status read
  };
  std::vector<TruncatedPins> truncatedPins;
  // Set when the resolution is a pair never recorded: its new number.
  int64_t created = 0;
  // Set when the current revision changed to one recorded before.
  int64_t restored = 0;

  int64_t pinnedCount() const;
  // Whether a release or a Model's record pins a recorded revision.
  bool anyPinned() const;
  // "a (revision 2, in a gate), b (revision 3, rollback target)": the pins, for messages.
  std::string describePins() const;
};

// The rule:
//  - a resolution whose pair (image, closure hash) is recorded makes that
//    revision current (its lockDigest, CUDA and driver follow the resolution);
//    a new pair is a new revision numbered one above the highest recorded;
//  - a change of current sets lastResolved on both the old and new current;
//  - the resolved revision keeps the resolution's packages (the same closure hash has
//    the same packages, so a revision recorded without them gains them when current);
//    past kMaxRevisionPackagesTotal, unpinned non-current revisions lose theirs first;
//  - pinnedBy is re-derived from the releases and the Models' records of
//    prod every time (releasePins);
//  - kept: the current revision, every pinned one, the highest-numbered one
//    (numbers are never reused) and the newest `historyLimit` other ones;
//    the rest is pruned.
RevisionsPlan planRevisions(const RevisionsInput& in);

}  // namespace lockstep::controllers
