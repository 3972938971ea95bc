// RuntimeEnv (lockstep.dev/v1alpha1), decoded once into a typed view: one
// runtime closure — where its lock comes from, the image built from it (by
// digest) and its accelerator needs — and the status the controller writes.
// The field names are those of crds/lockstep.dev_runtimeenvs.yaml.
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/runtime_revision.h"

namespace lockstep::api::v1alpha1 {

struct ConfigMapKeyRef {
  std::string name;
  std::string key;
};

struct LockSource {
  std::optional<std::string> inlineText;        // spec.lock.inline
  std::optional<ConfigMapKeyRef> configMapRef;  // spec.lock.configMapRef
  std::optional<std::string> format;            // uv, pip, ...; absent: detected
  std::string platform;                         // per-platform locks only
  std::string environment;                      // pixi: "" = default
};

struct Accelerator {
  std::optional<std::string> cuda;  // absent: detected from the lock
  std::string minDriver;            // "" = derived from cuda
};

struct RuntimeEnvSpec {
  LockSource lock;
  bool allowUnhashed = false;
  std::string image;  // repo@sha256:<hex>
  Accelerator accelerator;
  // Unpinned revisions kept besides the current one, and promoted releases per
  // model whose revisions stay pinned (the rollback targets).
  int64_t revisionHistoryLimit = kDefaultRevisionHistoryLimit;
};

struct RuntimeEnvStatus {
  int64_t observedGeneration = -1;  // -1: never written
  std::string closureHash;
  std::string format;
  std::string platform;
  int64_t packageCount = 0;
  bool weak = false;
  std::string cuda;
  std::string minDriver;
  std::optional<int64_t> compatibleNodes;
  std::string image;
  int64_t currentRevision = 0;             // 0: never resolved
  std::vector<RuntimeRevision> revisions;  // ascending number
  // status.closureRevisions: the revisions with a closure ConfigMap (spec.verify set);
  // nullopt when the status has none (verification off, or an older operator).
  std::optional<std::vector<int64_t>> closureRevisions;
  nlohmann::json conditions = nlohmann::json::array();  // metav1.Condition objects
};

struct RuntimeEnv {
  ObjectMeta meta;
  RuntimeEnvSpec spec;
  RuntimeEnvStatus status;

  // Ready=True computed for the current generation, with a closure hash: only
  // then does the status describe the spec (admission trusts nothing less).
  bool ready() const;
  // "ns/name" of the ConfigMap holding the lock; "" for an inline lock.
  std::string configMapKey() const;
  // The revision numbered `number`; nullptr when it is not (or no longer) recorded.
  const RuntimeRevision* revision(int64_t number) const;
};

RuntimeEnv decodeRuntimeEnv(const nlohmann::json& object);

// Index values for a cache of RuntimeEnvs: the ConfigMap key it reads its lock from.
std::vector<std::string> indexByConfigMap(const nlohmann::json& runtimeEnv);
inline constexpr const char* kRuntimeEnvByConfigMapIndex = "runtimeenv-configmap";

}  // namespace lockstep::api::v1alpha1
