// The mirror check of a RuntimeEnv (pure): from spec.mirror, the current revision's
// closure, the last recorded check (status.mirror) and the checker's latest result to
// status.mirror, the Mirrored condition, its Events, the check to start and when to
// look again (docs/supply-chain.md, "The operator's check").
//
// A check asks the registry, by a HEAD per blob, whether every file of the closure
// (mirror::planMirror) is in spec.mirror.repository under its locked digest, and
// whether the artifact manifest is under its closure tag. One is due when none was
// recorded for the current closure and repository (a new revision is checked at once),
// and spec.mirror.interval after the last one (a minute after an unreachable registry,
// when the interval is longer). The checks themselves run off the reconcile workers
// (mirror_checker.h); this file only decides.
//
// No I/O and no clock: `now` is an input. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/runtime_mirror.h"
#include "closure/closure.h"
#include "mirror/mirror.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {

// What the checker is asked to look at.
struct MirrorCheckRequest {
  std::string ns, name;         // the RuntimeEnv
  std::string repository;       // spec.mirror.repository as written
  mirror::RepositoryRef where;  // … parsed
  std::string credentialsSecret;
  int64_t revision = 0;
  std::string closureHash;
  std::vector<mirror::Entry> artifacts;
};

// What a finished check found.
struct MirrorCheckResult {
  std::string repository;  // as in the request
  std::string closureHash;
  int64_t revision = 0;
  int64_t checkedAtUnix = 0;
  // kChecked: the registry answered for every artifact; else the check stopped at
  // `error` (the registry, or the credentials Secret).
  enum class Outcome { kChecked, kUnreachable, kCredentials } outcome = Outcome::kChecked;
  int64_t artifacts = 0;
  bool manifestPresent = false;
  std::vector<api::v1alpha1::MissingArtifact> missing;  // every one, in plan order
  std::string error;
};

struct MirrorInput {
  std::optional<api::v1alpha1::MirrorSpec> spec;
  std::string specError;  // a malformed spec.mirror (spec is then nullopt)
  bool beingDeleted = false;
  std::string name;  // the RuntimeEnv, for messages
  // The current revision and its closure; null: the lock does not resolve now.
  int64_t revision = 0;
  const closure::Closure* closure = nullptr;
  std::string closureHash;
  nlohmann::json previousStatus;            // status.mirror as cached (null: none)
  nlohmann::json previousCondition;         // the Mirrored condition as cached (null: none)
  std::optional<MirrorCheckResult> latest;  // the checker's last result for this RuntimeEnv
  int64_t nowUnix = 0;
};

struct MirrorEvent {
  std::string type;
  std::string reason;
  std::string message;
};

struct MirrorPlan {
  // Leave status.mirror and the condition as they are (the lock does not resolve now, or
  // the RuntimeEnv is being deleted).
  bool keep = false;
  nlohmann::json status;                    // status.mirror (null: remove it)
  std::optional<kube::Condition> mirrored;  // nullopt: remove the condition
  std::vector<MirrorEvent> events;
  std::optional<MirrorCheckRequest> check;  // a check to start
  int64_t requeueAfterSeconds = 0;          // 0: nothing timed
  // The metric: the missing files of the recorded check; nullopt: leave it; -1: remove it.
  std::optional<int64_t> missingGauge;
};

MirrorPlan planMirrorCheck(const MirrorInput& in);

// The Mirrored condition's message for a check with missing artifacts: the count, the
// first kMaxNamed names with their digests, and the manifest when it is missing.
inline constexpr size_t kMaxNamed = 3;
std::string missingMessage(const api::v1alpha1::MirrorStatus& s);

// The record of a finished check as status.mirror has it (the first kMaxMissingListed
// missing artifacts), with its next check due per `spec`.
api::v1alpha1::MirrorStatus recordOf(const MirrorCheckResult& r,
                                     const api::v1alpha1::MirrorSpec& spec);

// True when the credentials Secret's lockstep.dev/mirror-repositories annotation (comma-separated
// repositories) lends to `repository`: an entry equal to it, or a parent of it
// ("registry.example/mirror" lends to "registry.example/mirror/torch").
bool secretLendsTo(const std::string& annotation, const mirror::RepositoryRef& repository);

// When the check after one recorded at `checkedAtUnix` is due.
int64_t nextCheckUnix(const api::v1alpha1::MirrorSpec& spec, int64_t checkedAtUnix,
                      bool unreachable);

}  // namespace lockstep::controllers
