// A RuntimeEnv's lock resolved to its closure (pure): spec.image must be pinned
// by digest, then the lock text (spec.lock.inline, or the key of the ConfigMap
// spec.lock.configMapRef names, its other keys the pip `-r` includes) is parsed
// by closure::computeClosure with spec.lock's format, platform and environment
// and spec.allowUnhashed. What it reads is the RuntimeEnv's spec and that
// ConfigMap's data and binaryData, nothing else (ClosureMemo keys on it).
// Thread-safety: a pure function over values.
#pragma once

#include <string>

#include "api/v1alpha1/runtime_env.h"
#include "closure/closure.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// A closure, or a classified failure (a condition reason of api/v1alpha1/conditions.h).
struct LockResolution {
  bool ok = false;
  std::string reason;
  std::string message;
  closure::Closure closure;
  std::string lockDigest;  // sha256 of the lock file's bytes
  std::string lockText;
};

// `configMap`: the ConfigMap spec.lock.configMapRef names, null when absent (or
// the lock is inline).
LockResolution resolveLock(const api::v1alpha1::RuntimeEnv& runtimeEnv,
                           const kube::Object* configMap);

}  // namespace lockstep::controllers
