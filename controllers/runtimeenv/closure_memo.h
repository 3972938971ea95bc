// The last lock resolution (closure) of each RuntimeEnv, kept with the versions
// of what it was resolved from, so a reconcile whose inputs have not moved takes
// it instead of parsing the lock again. A RuntimeEnv is reconciled on every
// release pin change, node change, status write and resync, and its closure
// was computed again in each (docs/benchmarks.md: 3.5 % of the operator's CPU
// in the smoke profile); it changes only with what resolveLock reads
// (runtimeenv_lock.h): the RuntimeEnv's spec, whose every change moves
// metadata.generation (the CRD has the status subresource), and the lock
// ConfigMap's data, whose every change moves its resourceVersion. So the key is
// the RuntimeEnv's uid and generation and the ConfigMap's uid and
// resourceVersion (or its absence). An object without those (not from the API
// server) is resolved every time. Bounded: forget() drops a RuntimeEnv that is
// gone, and past kMaxEntries the least recently used entry goes.
// Thread-safety: safe for concurrent use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "controllers/runtimeenv/runtimeenv_lock.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The versions of what a RuntimeEnv's lock resolution reads.
struct LockInputs {
  std::string uid;
  int64_t generation = 0;
  std::string configMapUid;      // "" when no ConfigMap was read
  std::string configMapVersion;  // its resourceVersion
  bool operator==(const LockInputs&) const = default;
};

// Those of `runtimeEnv` and `configMap` (null: absent or not read); nullopt when one
// lacks its uid, the generation or the resourceVersion.
std::optional<LockInputs> lockInputsOf(const kube::Object& runtimeEnv,
                                       const kube::Object* configMap);

class ClosureMemo {
 public:
  static constexpr size_t kMaxEntries = 64;
  using Resolve = std::function<LockResolution()>;

  // The resolution of `runtimeEnv`'s lock from `configMap`: the kept one when
  // the last was resolved from the same inputs, else `resolve()`'s (kept).
  std::shared_ptr<const LockResolution> resolution(const kube::Object& runtimeEnv,
                                                   const kube::Object* configMap,
                                                   const Resolve& resolve);
  // Drops the entry of the RuntimeEnv `ns`/`name` (it is gone).
  void forget(const std::string& ns, const std::string& name);
  size_t size() const;

 private:
  struct Entry {
    LockInputs inputs;
    std::shared_ptr<const LockResolution> resolution;
    uint64_t lastUsed = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // by namespace/name
  uint64_t clock_ = 0;                    // ticks once per lookup, for lastUsed
};

}  // namespace lockstep::controllers
