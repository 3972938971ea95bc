// RuntimeEnv spec.verify and status.verification (lockstep.dev/v1alpha1):
// scheduled runtime verification (docs/verify.md, "In the operator"), decoded
// once into a typed view, with its vocabulary (the Verified condition, its
// reasons, the verification Jobs' labels) and the one promotion rule that the
// ModelRelease controller reads from the cached RuntimeEnv.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

inline constexpr const char* kConditionVerified = "Verified";
inline constexpr const char* kReasonVerificationPassed = "VerificationPassed";
inline constexpr const char* kReasonVerificationFailed = "VerificationFailed";
inline constexpr const char* kReasonVerificationRunning = "VerificationRunning";
inline constexpr const char* kReasonInvalidSchedule = "InvalidSchedule";
// ModelRelease (Ready): the runtime's verification fails or is missing/old.
inline constexpr const char* kReasonRuntimeNotVerified = "RuntimeNotVerified";
// ModelRelease, spec.verify.onStart: a stage does not start (no --cli-image, a
// malformed spec.verify) / a stage failed or a canary rolled back because a
// verification init container failed (its termination message is the message).
inline constexpr const char* kReasonRuntimeVerificationUnavailable =
    "RuntimeVerificationUnavailable";
inline constexpr const char* kReasonRuntimeVerificationFailed = "RuntimeVerificationFailed";

// Labels of verification Jobs and their pods.
inline constexpr const char* kVerifyRuntimeEnvLabel = "lockstep.dev/verify-runtime-env";
inline constexpr const char* kVerifyRunLabel = "lockstep.dev/verify-run";
inline constexpr const char* kVerifyGpuProductLabel = "lockstep.dev/verify-gpu-product";

inline constexpr int64_t kDefaultVerifyTimeoutSeconds = 1800;
inline constexpr const char* kDefaultVerifyPrefix = "/usr/local";

struct VerifySpec {
  std::string schedule;  // cron or @macro; "" = no scheduled verification
  std::string smoke;     // shell command on the runtime image; "" = none
  bool requiredForPromotion = false;
  bool onStart = false;
  std::string prefix = kDefaultVerifyPrefix;  // the environment inside the runtime image
  int64_t timeoutSeconds = kDefaultVerifyTimeoutSeconds;
  std::map<std::string, std::string> podAnnotations;     // spec.verify.pod.annotations
  nlohmann::json tolerations = nlohmann::json::array();  // spec.verify.pod.tolerations
};

// One GPU product's result of a run.
struct VerificationResult {
  std::string gpuProduct;  // nvidia.com/gpu.product; "cpu" for a CPU-only closure
  std::string node;
  std::string driver;
  std::string job;
  std::string result;  // Running | Passed | Failed
  std::string message;
  std::string finishedAt;
};

inline constexpr const char* kResultRunning = "Running";
inline constexpr const char* kResultPassed = "Passed";
inline constexpr const char* kResultFailed = "Failed";

// The latest finished run of the revision the status describes.
struct VerificationVerdict {
  int64_t run = 0;     // 0: none finished
  std::string result;  // Passed | Failed
  std::string startedAt;
  std::string finishedAt;
  std::string message;  // the Verified condition's message
};

struct VerificationStatus {
  int64_t run = 0;       // 0: never ran
  int64_t revision = 0;  // the revision the run verifies
  std::string closureHash;
  std::string startedAt;
  std::string finishedAt;  // "" while running
  std::string result;      // Running | Passed | Failed
  std::vector<VerificationResult> results;
  VerificationVerdict verdict;
  std::string nextRunAt;
  // After this instant (RFC 3339, UTC) a passed run no longer counts for
  // requiredForPromotion: the next scheduled run plus its timeout.
  std::string staleAfter;
};

std::optional<VerifySpec> decodeVerifySpec(const nlohmann::json& runtimeEnv);

// What a pod on this RuntimeEnv starts with when spec.verify.onStart is true
// (docs/verify.md, "onStart"): nullopt when off (absent, false, or no
// spec.verify). kInvalidArgument naming the field when spec.verify or one of
// onStart / prefix has the wrong type (the CRD schema refuses those; this
// guards objects that bypassed it).
struct OnStartVerification {
  std::string prefix = kDefaultVerifyPrefix;
};
StatusOr<std::optional<OnStartVerification>> decodeOnStart(const nlohmann::json& runtimeEnv);
VerificationStatus decodeVerificationStatus(const nlohmann::json& runtimeEnv);
nlohmann::json encodeVerificationStatus(const VerificationStatus& v);

// requiredForPromotion: why no canary may start on this RuntimeEnv now, or
// nullopt. `now` is RFC 3339 UTC ("2026-12-01T17:00:00Z", the controllers' form:
// comparable as text). Blocks when the current revision's latest run failed,
// none finished for it, or the passed one is older than its schedule allows.
std::optional<std::string> verificationBlocksPromotion(const nlohmann::json& runtimeEnv,
                                                       const std::string& now);

}  // namespace lockstep::api::v1alpha1
