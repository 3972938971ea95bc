// The Job of a gate stage (pure): `<release>-<stage>-<attempt>`, owned by
// the release, run once (backoffLimit 0) within the stage's timeout, from the
// stage's pod template on the release's pinned runtime pair with the package
// mounted by reference (runtime_pod.h). docs/modelrelease.md.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "common/status.h"
#include "controllers/modelrelease/runtime_pod.h"

namespace lockstep::controllers {

// `<release>-<stage>-<attempt>`, at most 63 characters (a label value): longer
// names keep a prefix and end in 8 hex digits of a hash of the full name.
std::string gateJobName(const std::string& release, const std::string& stage, int attempt);

struct GateJobInput {
  std::string jobName;
  int attempt = 1;
  // The release's pinned pair (status.runtime): image by digest and closure hash.
  std::string runtimeImage;
  std::string closureHash;
  int64_t runtimeRevision = 0;  // the pinned revision's number; 0: none recorded
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
  // RuntimeEnv spec.verify.onStart: the verification init containers (onStartVerification).
  std::optional<VerifyContainers> verify;
  // evidence::stageSpecDigest of the stage's spec as the release holds it: the
  // policy a verdict is for, committed on the Job before it runs.
  std::string stageSpecDigest;
};

// The Job of gate stage `stage` of `release`; kInvalidArgument naming what
// when the template cannot run.
StatusOr<nlohmann::json> buildGateJob(const api::v1alpha1::ModelRelease& release,
                                      const api::v1alpha1::Stage& stage, const GateJobInput& in);

// The release generation a gate Job was built for (buildGateJob writes it):
// a Job of another generation is never credited (release_plan.cc).
inline constexpr const char* kGateJobGenerationAnnotation = "lockstep.dev/generation";
// The stage spec digest the Job was built for (GateJobInput::stageSpecDigest).
inline constexpr const char* kGateJobSpecDigestAnnotation = "lockstep.dev/stage-spec-digest";
// evidence::stageSpecDigest of the stage named `stage` in `release`'s spec.stages
// as the object holds it ("" when there is no such stage).
std::string stageSpecDigestOf(const nlohmann::json& release, const std::string& stage);
// Its value; nullopt when missing or not a number (a Job built before it was written).
std::optional<int64_t> jobGeneration(const nlohmann::json& job);

// How a gate Job (as buildGateJob made it) mounts the package: ImageVolume | InitContainer.
std::string jobMount(const nlohmann::json& job);

}  // namespace lockstep::controllers
