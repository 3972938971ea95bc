// The one rule for every pod Lockstep makes from a user's pod template (gate
// Jobs and serving Deployments): it runs on the release's pinned runtime
// (image by digest and closure hash of its RuntimeEnv revision),
// declares its runtime (label lockstep.dev/runtime-env, annotation
// lockstep.dev/closure-hash) so the pod admission webhook admits it, carries
// the LOCKSTEP_* environment, mounts the checkpoint package read-only at
// /model by reference (docs/modelrelease.md), and, with the RuntimeEnv's
// spec.verify.onStart, starts with the runtime verification init containers
// (docs/verify.md). Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "controllers/common/verify_containers.h"

namespace lockstep::controllers {

// How the checkpoint package is mounted into Lockstep's pods.
enum class PackageMount { kImageVolume, kInitContainer };
const char* packageMountName(PackageMount m);

inline constexpr const char* kPackageVolume = "lockstep-package";
// The annotation naming the package (by digest) a runtime pod mounts; serving
// pods count toward a release only with its package (serving_health.h, the
// Model's conditions).
inline constexpr const char* kPackageAnnotation = "lockstep.dev/package";
inline constexpr const char* kModelDir = "/model";
// InitContainer mode: the init container that fetches the package into kPackageVolume.
inline constexpr const char* kFetchPackageContainer = "lockstep-fetch-package";

struct RuntimePod {
  std::string owner;       // in messages: `stage "eval"`, `the serving template of release v7`
  std::string runtimeEnv;  // the RuntimeEnv's name
  // The release's pinned runtime pair (status.runtime): image by digest and hash.
  std::string runtimeImage;
  std::string closureHash;
  // The pinned revision's number, annotated lockstep.dev/runtime-revision
  // (informative: admission names it in a refusal); 0: no annotation.
  int64_t runtimeRevision = 0;
  std::string package;                        // the checkpoint, repo@sha256:…
  std::map<std::string, std::string> labels;  // more pod labels (release, stage or track, model)
  // LOCKSTEP_* variables between LOCKSTEP_PACKAGE/LOCKSTEP_CLOSURE_HASH (first)
  // and LOCKSTEP_MODEL_DIR (last), in order.
  std::vector<std::pair<std::string, std::string>> env;
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // kInitContainer: fetches $LOCKSTEP_PACKAGE
  // RuntimeEnv spec.verify.onStart: the verification init containers
  // (controllers/common/verify_containers.h) run first; verify-host gets the GPUs the
  // main containers ask for (nvidia.com/gpu limits) and checks their count.
  std::optional<VerifyContainers> verify;
};

// The verification init containers a pod on revision `revision` of RuntimeEnv
// `runtimeEnv` starts with (spec.verify.onStart): nullopt when off.
// kUnavailable when on but the operator has no CLI image (--cli-image),
// kInvalidArgument for a malformed spec.verify (named by field).
StatusOr<std::optional<VerifyContainers>> onStartVerification(const nlohmann::json& runtimeEnv,
                                                              const std::string& runtimeImage,
                                                              int64_t revision,
                                                              const std::string& cliImage);

// Rewrites the PodTemplateSpec `tmpl` in place. kInvalidArgument names what cannot run:
// no containers, or a container (or init container) naming another image than
// the RuntimeEnv's (a container without an image gets it).
Status prepareRuntimePod(nlohmann::json& tmpl, const RuntimePod& pod);

}  // namespace lockstep::controllers
