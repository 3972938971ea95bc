// Runtime revisions (lockstep.dev/v1alpha1): the runtime identity is the pair
// (image by digest, closure hash). Every distinct pair a RuntimeEnv resolves
// to is a revision in its status.revisions, numbered from 1 and never reused;
// a ModelRelease pins the revision it was validated on (its status.runtime).
// This file is the vocabulary both sides share: the revision and pin records
// as typed values, their JSON form (crds/lockstep.dev_runtimeenvs.yaml), and
// the rule saying which releases pin which revision (docs/contracts.md,
// "Runtime revisions").
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::api::v1alpha1 {

// spec.revisionHistoryLimit when absent: unpinned revisions kept besides the
// current one, and a model's promoted releases that keep their revision pinned.
inline constexpr int64_t kDefaultRevisionHistoryLimit = 5;

// The finalizer that holds a RuntimeEnv while a live release pins one of its revisions.
inline constexpr const char* kRuntimeEnvInUseFinalizer = "lockstep.dev/runtimeenv-in-use";

// Optional pod annotation: the revision number the pod was built from (set on
// pods built from a release's pin). Admission never trusts it to admit: it
// only names the revision in a refusal (e.g. "revision 2 was pruned").
inline constexpr const char* kRuntimeRevisionAnnotation = "lockstep.dev/runtime-revision";

// ModelRelease reasons of the pin (the Stale condition, Events, a failure).
// Stale=True: the pinned revision has the closure hash the RuntimeEnv resolves
// to now but another image (the image was swapped with the same lock).
inline constexpr const char* kReasonRuntimeRevisionChanged = "RuntimeRevisionChanged";
// Failed: spec.runtimeImage is not the image of the revision it would pin.
inline constexpr const char* kReasonRuntimeImageMismatch = "RuntimeImageMismatch";
// Warning Event: a manual rollback runs a pinned revision that is no longer current.
inline constexpr const char* kReasonRuntimeMovedOn = "RuntimeMovedOn";

// The most release names one revision's status.revisions[].pinnedBy lists (the CRD's
// maxItems); the others are counted in pinnedByCount (docs/limits.md).
inline constexpr size_t kMaxPinnedByListed = 1024;
inline constexpr const char* kReasonPinsTruncated = "PinsTruncated";

// One entry of status.revisions.
struct RuntimeRevision {
  int64_t number = 0;
  std::string image;        // repo@sha256:<hex>, as spec.image gave it
  std::string closureHash;  // sha256:<hex>
  std::string lockDigest;   // sha256 of the lock file's bytes (not the closure)
  std::string cuda;
  std::string minDriver;
  std::string firstResolved;  // when the RuntimeEnv first resolved to this pair
  // The last transition of this pair: when it became current the last time
  // (the current revision) or when another pair replaced it (every other one).
  std::string lastResolved;
  std::vector<std::string> pinnedBy;  // release names (same namespace), sorted
  // Every pin when pinnedBy lists only the first kMaxPinnedByListed names (0: it lists
  // them all). A RuntimeEnv's status stays bounded with thousands of models in prod on
  // one revision; admission admits a pinned revision only for the releases listed.
  int64_t pinnedByCount = 0;
  // What advisory matching needs of its closure, kept from when it was resolved, so a
  // pinned revision is matched after the lock moved on: one line per entry
  // ("<ecosystem> <name> <version>"; controllers/runtimeenv/runtimeenv_advisories.h).
  // "" for a revision recorded before it was kept, or one too large to keep.
  std::string packages;

  bool pinned() const { return !pinnedBy.empty(); }
  bool samePair(const std::string& img, const std::string& hash) const {
    return image == img && closureHash == hash;
  }
};

nlohmann::json encodeRevision(const RuntimeRevision& r);
RuntimeRevision decodeRevision(const nlohmann::json& j);
// status.revisions of a RuntimeEnv status object, in the stored order
// (ascending number); malformed entries (no number) are skipped.
std::vector<RuntimeRevision> decodeRevisions(const nlohmann::json& status);

// The advisories RuntimeEnv status.advisories records for `revision`: the top level
// when it is that revision's (the current one), else its entry in revisions[]; null when
// none is recorded (docs/supply-chain.md "Advisories of a RuntimeEnv").
nlohmann::json advisoriesOfRevision(const nlohmann::json& advisories, int64_t revision);

// A release's status.runtime: the revision it pinned at its first gate.
struct RuntimePin {
  int64_t revision = 0;
  std::string image;
  std::string closureHash;
  bool operator==(const RuntimePin&) const = default;
};
// nullopt when the release has no (well-formed) status.runtime.
std::optional<RuntimePin> decodeRuntimePin(const nlohmann::json& release);
nlohmann::json encodeRuntimePin(const RuntimePin& pin);
// "revision 3 (repo@sha256:…, closure sha256:…)", for messages.
std::string describePin(const RuntimePin& pin);

// A release's spec.runtimeImage names a revision's image when both are the same
// pinned image in any spelling ("torch@sha256:x" is "docker.io/library/torch@sha256:x",
// as admission compares them: api::sameImage), or the same text.
bool sameRuntimeImage(const std::string& a, const std::string& b);

// THE pin rule (docs/contracts.md "Runtime revisions"), shared by the release
// side (status.runtime, written when the release's first stage starts) and
// releasePins() (a release not pinned yet): the revision a release with
// `closureHash` (and `runtimeImage`, when not empty) runs on is the current
// revision when its pair matches, else the newest recorded revision that
// matches; nullopt when none does. The release side pins only the current one
// (a stage starts only on the current runtime), so both agree.
std::optional<RuntimePin> pinFor(const std::vector<RuntimeRevision>& revisions,
                                 int64_t currentRevision, const std::string& closureHash,
                                 const std::string& runtimeImage);

// The pair a release's pods run on: its status.runtime once pinned (never
// re-chosen), else pinFor() (a release from before pins, or not started).
std::optional<RuntimePin> runtimeOf(const std::optional<RuntimePin>& pinned,
                                    const std::vector<RuntimeRevision>& revisions,
                                    int64_t currentRevision, const std::string& closureHash,
                                    const std::string& runtimeImage);

// The number of the recorded revision with `pin`'s pair; 0 when none (pruned).
int64_t recordedRevision(const std::vector<RuntimeRevision>& revisions, const RuntimePin& pin);

// What the pinning rule reads of one ModelRelease (decoded by the caller from
// the informer cache's object): its model, phase and pin, and the times that
// order a model's promoted releases.
struct ReleasePinFacts {
  std::string name;
  std::string model;
  std::string runtimeEnv;    // spec.runtimeEnvRef.name
  std::string closureHash;   // spec.closureHash
  std::string runtimeImage;  // spec.runtimeImage ("" = any)
  std::string phase;         // status.phase ("" = not written)
  std::optional<RuntimePin> pin;
  // True once its canary completed (status.canary.phase Promoted): it was prod
  // once. Also true when status.canary cannot be read (canary_status.h): such
  // a release keeps its pin rather than lose it on a guess.
  bool promotedOnce = false;
  // The last time prod ran it (RFC 3339; compared as text): the latest of its
  // stages' finishedAt, status.canary.finishedAt and status.rollback.at.
  std::string lastProdAt;
  // When a Validated release passed its last gate (its stages' latest finishedAt;
  // "" unless status.phase is Validated).
  std::string validatedAt;
  bool deleting = false;  // metadata.deletionTimestamp set
};
ReleasePinFacts releasePinFacts(const nlohmann::json& release);

// Why a release holds a revision (for messages and the history).
enum class PinHold { kNone, kInFlight, kPromoted, kRollbackTarget };

// Which revision each release pins (the rule of docs/contracts.md):
//  - the releases considered are those naming `runtimeEnv`, not being deleted;
//  - a release holds its pin while it is in a gate (Evaluating, Testing), in the
//    canary or Promoted; Validated while it is among the last `historyLimit` releases
//    of its model validated (by validatedAt; a gate-only release's pin does not
//    outlive `historyLimit` newer validations); and while it is among the last `historyLimit`
//    releases of its model that prod ran (rollback targets, by lastProdAt;
//    all releases of the model count, whatever their RuntimeEnv);
//  - the revision held is the one whose pair equals status.runtime's; a
//    release without status.runtime (not yet pinned by the release side) holds
//    the revision pinFor() names, once it has left Pending.
struct ReleasePin {
  std::string release;
  int64_t revision = 0;  // 0: its pair is not among `revisions` (pruned, or never resolved)
  PinHold hold = PinHold::kNone;
  RuntimePin pair;  // the pair it holds
};
std::vector<ReleasePin> releasePins(const std::string& runtimeEnv,
                                    const std::vector<ReleasePinFacts>& releases,
                                    const std::vector<RuntimeRevision>& revisions,
                                    int64_t currentRevision, int64_t historyLimit);

}  // namespace lockstep::api::v1alpha1
