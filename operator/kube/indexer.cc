#include "operator/kube/indexer.h"

#include <mutex>

namespace lockstep::kube {

std::string labelIndexName(const std::string& labelKey) { return "label:" + labelKey; }

IndexFunc namespaceIndexFunc() {
  return [](const Object& o) { return std::vector<std::string>{namespaceOf(o)}; };
}

IndexFunc ownerUidIndexFunc() {
  return [](const Object& o) {
    std::vector<std::string> out;
    for (const auto& ref : ownerReferences(o)) out.push_back(ref.uid);
    return out;
  };
}

IndexFunc labelIndexFunc(const std::string& labelKey) {
  return [labelKey](const Object& o) {
    auto v = label(o, labelKey);
    return v ? std::vector<std::string>{*v} : std::vector<std::string>{};
  };
}

Indexer::Indexer() {
  indexFuncs_[kNamespaceIndex] = namespaceIndexFunc();
  indexFuncs_[kOwnerUidIndex] = ownerUidIndexFunc();
}

void Indexer::addIndex(const std::string& name, IndexFunc fn) {
  std::unique_lock lock(mu_);
  indexFuncs_[name] = std::move(fn);
  auto& idx = indexes_[name];
  idx.clear();
  for (const auto& [key, obj] : items_) {
    for (const auto& v : indexFuncs_[name](*obj)) idx[v].insert(key);
  }
}

bool Indexer::hasIndex(const std::string& name) const {
  std::shared_lock lock(mu_);
  return indexFuncs_.count(name) > 0;
}

ObjectPtr Indexer::get(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> Indexer::list() const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(v);
  return out;
}

std::vector<std::string> Indexer::keys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

size_t Indexer::size() const {
  std::shared_lock lock(mu_);
  return items_.size();
}

std::vector<ObjectPtr> Indexer::byIndex(const std::string& index, const std::string& value) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  auto keys = idx->second.find(value);
  if (keys == idx->second.end()) return out;
  for (const auto& k : keys->second) {
    auto it = items_.find(k);
    if (it != items_.end()) out.push_back(it->second);
  }
  return out;
}

std::map<std::string, size_t> Indexer::indexSizes(const std::string& index) const {
  std::shared_lock lock(mu_);
  std::map<std::string, size_t> out;
  auto idx = indexes_.find(index);
  if (idx == indexes_.end()) return out;
  for (const auto& [value, keys] : idx->second) out.emplace(value, keys.size());
  return out;
}

void Indexer::indexLocked(const std::string& key, const Object& obj) {
  for (const auto& [name, fn] : indexFuncs_) {
    for (const auto& v : fn(obj)) indexes_[name][v].insert(key);
  }
}

void Indexer::unindexLocked(const std::string& key, const Object& obj) {
  for (const auto& [name, fn] : indexFuncs_) {
    auto& idx = indexes_[name];
    for (const auto& v : fn(obj)) {
      auto it = idx.find(v);
      if (it == idx.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) idx.erase(it);
    }
  }
}

ObjectPtr Indexer::upsert(const ObjectPtr& obj) {
  std::unique_lock lock(mu_);
  std::string key = objectKey(*obj);
  ObjectPtr old;
  auto it = items_.find(key);
  if (it != items_.end()) {
    old = it->second;
    unindexLocked(key, *old);
  }
  items_[key] = obj;
  indexLocked(key, *obj);
  version_.fetch_add(1, std::memory_order_acq_rel);
  return old;
}

ObjectPtr Indexer::erase(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = it->second;
  unindexLocked(key, *old);
  items_.erase(it);
  version_.fetch_add(1, std::memory_order_acq_rel);
  return old;
}

std::map<std::string, ObjectPtr> Indexer::replace(const std::vector<ObjectPtr>& objects) {
  std::unique_lock lock(mu_);
  std::map<std::string, ObjectPtr> previous;
  previous.swap(items_);
  for (auto& [name, idx] : indexes_) idx.clear();
  for (auto& obj : objects) {
    std::string key = objectKey(*obj);
    items_[key] = obj;
    indexLocked(key, *obj);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
  return previous;
}

}  // namespace lockstep::kube
