// RuntimeEnv spec.mirror and status.mirror (lockstep.dev/v1alpha1): the operator's
// check that every locked artifact of the current revision is in the mirror
// (docs/supply-chain.md, "The operator's check"), decoded once into a typed view,
// with its vocabulary (the Mirrored condition and its reasons, the annotation a
// credentials Secret lends itself with) and the promotion rule the ModelRelease
// controller reads from the cached RuntimeEnv. Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

inline constexpr const char* kConditionMirrored = "Mirrored";
inline constexpr const char* kReasonMirrorComplete = "MirrorComplete";
inline constexpr const char* kReasonArtifactsMissing = "ArtifactsMissing";
inline constexpr const char* kReasonMirrorUnreachable = "MirrorUnreachable";
inline constexpr const char* kReasonMirrorCredentialsUnavailable = "MirrorCredentialsUnavailable";
inline constexpr const char* kReasonMirrorCheckPending = "MirrorCheckPending";
inline constexpr const char* kReasonInvalidMirror = "InvalidMirror";
// ModelRelease (Ready): spec.mirror.requiredForPromotion and the mirror is not complete.
inline constexpr const char* kReasonRuntimeNotMirrored = "RuntimeNotMirrored";

// A dockerconfigjson Secret lends its credentials to the mirror check only with this
// annotation: a comma-separated list of repositories ("registry.example/mirror") whose
// checks may use it (a repository matches itself and the repositories under it).
inline constexpr const char* kMirrorRepositoriesAnnotation = "lockstep.dev/mirror-repositories";

inline constexpr int64_t kDefaultMirrorIntervalSeconds = 3600;
inline constexpr int64_t kMinMirrorIntervalSeconds = 10;

struct MirrorSpec {
  std::string repository;         // "host[:port]/path"
  std::string credentialsSecret;  // spec.mirror.credentialsSecretRef.name; "" = anonymous
  int64_t intervalSeconds = kDefaultMirrorIntervalSeconds;
  bool requiredForPromotion = false;
};

// nullopt: no spec.mirror. InvalidArgument naming the field for a malformed one (not an
// object, an empty repository, an interval that is not a duration of at least 10s).
StatusOr<std::optional<MirrorSpec>> decodeMirrorSpec(const nlohmann::json& runtimeEnv);

// One artifact the mirror lacks.
struct MissingArtifact {
  std::string file;  // the file name, else "name version"
  std::string purl;
  std::string digest;  // sha256:…
  bool operator==(const MissingArtifact& o) const = default;
};

// status.mirror: the last finished check of the mirror.
inline constexpr const char* kMirrorResultComplete = "Complete";
inline constexpr const char* kMirrorResultMissing = "Missing";
inline constexpr const char* kMirrorResultUnreachable = "Unreachable";
inline constexpr size_t kMaxMissingListed = 10;  // status.mirror.missingArtifacts

struct MirrorStatus {
  std::string repository;
  int64_t revision = 0;
  std::string closureHash;
  std::string result;  // Complete | Missing | Unreachable ("" = never checked)
  std::string checkedAt;
  std::string nextCheckAt;
  int64_t artifacts = 0;  // files the closure has
  int64_t missing = 0;
  bool manifestPresent = false;                   // the artifact manifest under its closure tag
  std::vector<MissingArtifact> missingArtifacts;  // the first kMaxMissingListed
  std::string error;                              // Unreachable: why
  bool operator==(const MirrorStatus& o) const = default;
};

// `mirror`: status.mirror.
MirrorStatus decodeMirrorStatus(const nlohmann::json& mirror);
nlohmann::json encodeMirrorStatus(const MirrorStatus& s);

// requiredForPromotion: why no canary may start on this RuntimeEnv now, or nullopt:
// the Mirrored condition is not True for the current generation and closure hash.
std::optional<std::string> mirrorBlocksPromotion(const nlohmann::json& runtimeEnv);

}  // namespace lockstep::api::v1alpha1
