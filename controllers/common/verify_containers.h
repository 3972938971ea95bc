// The runtime verification containers (docs/verify.md): `lockstep verify-env`
// and `lockstep verify-host` as init containers on the lockstep CLI image
// (the operator's --cli-image), reading the closure ConfigMap (keys `lock`
// and `runtime.json`) and the runtime image mounted read-only by digest as an
// image volume. One builder for every pod that verifies its runtime: the
// scheduled verification Jobs (controllers/runtimeenv) and, with RuntimeEnv
// spec.verify.onStart, the gate Jobs and serving pods (controllers/modelrelease
// runtime_pod.h). Pod admission admits init containers on exactly the CLI
// image (webhooks/admission/pod_validator.h). A failed check ends the
// container with its report as the termination message
// (terminationMessagePolicy FallbackToLogsOnError).
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lockstep::controllers {

inline constexpr const char* kVerifyEnvContainer = "verify-env";
inline constexpr const char* kVerifyHostContainer = "verify-host";
inline constexpr const char* kClosureVolume = "lockstep-closure";
inline constexpr const char* kRuntimeVolume = "lockstep-runtime";
inline constexpr const char* kClosureDir = "/lockstep/closure";
inline constexpr const char* kRuntimeDir = "/lockstep/runtime";

struct VerifyContainers {
  std::string cliImage;               // repo@sha256:…
  std::string runtimeImage;           // repo@sha256:…, mounted at kRuntimeDir
  std::string closureConfigMap;       // its name (closureConfigMapName)
  std::string prefix = "/usr/local";  // the environment's directory inside the runtime image
  int64_t gpus = 0;                   // nvidia.com/gpu limit of verify-host (0: none)
  bool checkGpuCount = false;         // verify-host --gpus <gpus>
};

// `lockstep-closure-<runtime env>-<revision>`: the closure of one revision
// (hashed when longer than 63 characters).
std::string closureConfigMapName(const std::string& runtimeEnv, int64_t revision);

nlohmann::json verifyEnvContainer(const VerifyContainers& in);
nlohmann::json verifyHostContainer(const VerifyContainers& in);
// The two volumes the containers mount: the closure ConfigMap, the runtime image.
nlohmann::json verifyVolumes(const VerifyContainers& in);

// How a container of a pod failed, from the pod's status:
// "<container> exited <code>: <termination message>" (the message trimmed of
// trailing white space, cut at `maxMessage` bytes), or "… (<reason>)" without
// a message. Init containers first, then the main containers; a terminated
// state or, for a restarted container (restartPolicy Always: serving pods),
// its last terminated state. `verificationOnly`: only verify-env and
// verify-host (the onStart init containers). nullopt: none failed.
std::optional<std::string> containerFailure(const nlohmann::json& pod, bool verificationOnly,
                                            size_t maxMessage = 1024);

}  // namespace lockstep::controllers
