#include "controllers/runtimeenv/derived_memo.h"

#include <utility>

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

kube::IndexFunc nodeDriverIndexFunc() {
  return [](const kube::Object& node) {
    std::vector<std::string> out;
    if (auto driver = schedulableNodeDriver(node)) out.push_back(std::move(*driver));
    return out;
  };
}

NodeDriverCounts nodeDriverCounts(const kube::Indexer& nodes) {
  if (!nodes.hasIndex(kNodeDriverIndex)) return countNodeDrivers(nodes.list());
  NodeDriverCounts counts;
  for (const auto& [driver, n] : nodes.indexSizes(kNodeDriverIndex))
    counts.byDriver.emplace(driver, static_cast<int64_t>(n));
  return counts;
}

template <class T, class Derive>
std::vector<T> PinFactsMemo::derive(std::map<std::string, ByName<T>>& kept, const std::string& ns,
                                    const std::vector<kube::ObjectPtr>& objects, const Derive& fn) {
  ByName<T> old;
  {
    std::lock_guard lock(mu_);
    auto it = kept.find(ns);
    if (it != kept.end()) old = std::move(it->second);
  }
  ByName<T> now;
  std::vector<T> out;
  out.reserve(objects.size());
  uint64_t derived = 0;
  for (const auto& object : objects) {
    const std::string uid = kube::uid(*object);
    const std::string version = kube::resourceVersion(*object);
    if (uid.empty() || version.empty()) {
      out.push_back(fn(*object));
      ++derived;
      continue;
    }
    const std::string name = kube::name(*object);
    auto it = old.find(name);
    if (it == old.end() || it->second.uid != uid || it->second.resourceVersion != version) {
      out.push_back(fn(*object));
      ++derived;
      now.insert_or_assign(name, Entry<T>{uid, version, out.back()});
      continue;
    }
    out.push_back(it->second.value);
    now.insert_or_assign(name, std::move(it->second));
  }
  std::lock_guard lock(mu_);
  derivations_ += derived;
  kept[ns] = std::move(now);
  return out;
}

std::vector<v1::ReleasePinFacts> PinFactsMemo::releases(
    const std::string& ns, const std::vector<kube::ObjectPtr>& releases) {
  return derive<v1::ReleasePinFacts>(releases_, ns, releases,
                                     [](const kube::Object& r) { return v1::releasePinFacts(r); });
}

std::vector<v1::ModelPin> PinFactsMemo::modelPins(const std::string& ns,
                                                  const std::vector<kube::ObjectPtr>& models) {
  std::vector<std::vector<v1::ModelPin>> each = derive<std::vector<v1::ModelPin>>(
      models_, ns, models, [](const kube::Object& m) { return v1::modelPins(v1::decodeModel(m)); });
  std::vector<v1::ModelPin> out;
  for (auto& pins : each) {
    for (auto& p : pins) out.push_back(std::move(p));
  }
  return out;
}

void PinFactsMemo::forget(const std::string& ns) {
  std::lock_guard lock(mu_);
  releases_.erase(ns);
  models_.erase(ns);
}

size_t PinFactsMemo::size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [ns, byName] : releases_) n += byName.size();
  for (const auto& [ns, byName] : models_) n += byName.size();
  return n;
}

uint64_t PinFactsMemo::derivations() const {
  std::lock_guard lock(mu_);
  return derivations_;
}

}  // namespace lockstep::controllers
