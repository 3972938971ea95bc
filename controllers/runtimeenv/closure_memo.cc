#include "controllers/runtimeenv/closure_memo.h"

#include <algorithm>
#include <utility>

namespace lockstep::controllers {

std::optional<LockInputs> lockInputsOf(const kube::Object& runtimeEnv,
                                       const kube::Object* configMap) {
  LockInputs in;
  in.uid = kube::uid(runtimeEnv);
  in.generation = kube::generation(runtimeEnv);
  if (in.uid.empty() || in.generation <= 0) return std::nullopt;
  if (configMap != nullptr) {
    in.configMapUid = kube::uid(*configMap);
    in.configMapVersion = kube::resourceVersion(*configMap);
    if (in.configMapUid.empty() || in.configMapVersion.empty()) return std::nullopt;
  }
  return in;
}

std::shared_ptr<const LockResolution> ClosureMemo::resolution(const kube::Object& runtimeEnv,
                                                              const kube::Object* configMap,
                                                              const Resolve& resolve) {
  const std::optional<LockInputs> inputs = lockInputsOf(runtimeEnv, configMap);
  if (!inputs) return std::make_shared<const LockResolution>(resolve());
  const std::string key = kube::namespaceOf(runtimeEnv) + "/" + kube::name(runtimeEnv);
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.inputs == *inputs) {
      it->second.lastUsed = ++clock_;
      return it->second.resolution;
    }
  }
  // Resolved outside the lock: the other workers go on with other RuntimeEnvs.
  auto resolved = std::make_shared<const LockResolution>(resolve());
  std::lock_guard lock(mu_);
  if (entries_.size() >= kMaxEntries && entries_.count(key) == 0) {
    entries_.erase(std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.lastUsed < b.second.lastUsed; }));
  }
  entries_[key] = Entry{*inputs, resolved, ++clock_};
  return resolved;
}

void ClosureMemo::forget(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  entries_.erase(ns + "/" + name);
}

size_t ClosureMemo::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace lockstep::controllers
