// Indexer: the informer's thread-safe cache of objects keyed by "ns/name",
// with named secondary indexes (namespace, owner UID, label values, or any
// function of the object). Objects are immutable shared pointers: readers get
// a snapshot that later writes never change.
// Thread-safety: safe for concurrent use; add indexes before the first write.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "operator/kube/object.h"

namespace lockstep::kube {

// Values an object is indexed under (none, one or many).
using IndexFunc = std::function<std::vector<std::string>(const Object&)>;

inline constexpr const char* kNamespaceIndex = "namespace";
inline constexpr const char* kOwnerUidIndex = "owner-uid";
// "label:<key>": the index addLabelIndex(key) creates.
std::string labelIndexName(const std::string& labelKey);
IndexFunc namespaceIndexFunc();
IndexFunc ownerUidIndexFunc();
IndexFunc labelIndexFunc(const std::string& labelKey);

class Indexer {
 public:
  // Every Indexer has the namespace and owner-UID indexes.
  Indexer();

  void addIndex(const std::string& name, IndexFunc fn);
  void addLabelIndex(const std::string& labelKey) {
    addIndex(labelIndexName(labelKey), labelIndexFunc(labelKey));
  }
  bool hasIndex(const std::string& name) const;

  ObjectPtr get(const std::string& key) const;
  ObjectPtr get(const std::string& ns, const std::string& name) const {
    return get(objectKey(ns, name));
  }
  std::vector<ObjectPtr> list() const;
  std::vector<std::string> keys() const;
  size_t size() const;
  // Objects whose index `index` contains `value`; empty if the index is unknown.
  std::vector<ObjectPtr> byIndex(const std::string& index, const std::string& value) const;
  // Each value of index `index` and how many objects it holds; empty if the index
  // is unknown. A count kept as the objects change: reading it costs the number of
  // values, not of objects.
  std::map<std::string, size_t> indexSizes(const std::string& index) const;
  // A number that changes with every write (upsert, erase, replace), never with a
  // read: a reader that derived something from the content can tell it still holds.
  // Read it before reading the content (a write in between only makes it older).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // Writers (the informer). Return the previous object, if any.
  ObjectPtr upsert(const ObjectPtr& obj);
  ObjectPtr erase(const std::string& key);
  // Replaces the whole content; returns the previous content.
  std::map<std::string, ObjectPtr> replace(const std::vector<ObjectPtr>& objects);

 private:
  void indexLocked(const std::string& key, const Object& obj);
  void unindexLocked(const std::string& key, const Object& obj);

  mutable std::shared_mutex mu_;
  std::atomic<uint64_t> version_{0};
  std::map<std::string, ObjectPtr> items_;
  std::map<std::string, IndexFunc> indexFuncs_;
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::set<std::string>>> indexes_;
};

}  // namespace lockstep::kube
