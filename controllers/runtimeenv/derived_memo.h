// What a RuntimeEnv reconcile derives from the objects of other kinds, kept so
// that it is derived again only when they change.
//
// A RuntimeEnv is re-planned on every release pin change, Model pin change,
// node change, status write and resync, and each plan read every node's
// labels (to count compatibleNodes) and decoded every ModelRelease and Model
// of its namespace (pins). With 1,000 nodes, 200 Models and 250 releases in
// one namespace that was 38 % of the operator's CPU in the sized promotion
// run (docs/benchmarks.md, "The RuntimeEnv's re-plan"), for answers that had
// not changed.
//
// - The node cache's index kNodeDriverIndex: each schedulable node under the
//   driver it reports, kept by the informer as each node changes (a node's
//   heartbeat rewrites its status, so a count per cache version would count
//   again for nearly every reconcile at 1,000 nodes); the count reads the
//   index's sizes, one per driver.
// - PinFactsMemo: each release's pin facts and each Model's pins, kept by the
//   object's uid and resourceVersion (every write moves it). An object without
//   those (not from the API server) is derived every time. Bounded: each call
//   keeps only the objects it was given, that is the namespace's live ones;
//   forget() drops a namespace that holds no RuntimeEnv.
//
// Thread-safety: safe for concurrent use. Derivations run outside the lock;
// two concurrent calls for one namespace both derive (correct, and the later
// one's kept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"
#include "operator/kube/indexer.h"
#include "operator/kube/object.h"

namespace lockstep::controllers {

// The node cache's index of schedulable nodes by driver (schedulableNodeDriver).
inline constexpr const char* kNodeDriverIndex = "lockstep.dev/schedulable-driver";
kube::IndexFunc nodeDriverIndexFunc();
// The driver counts of the cache `nodes`: from its kNodeDriverIndex, or, in a
// cache without that index, by reading every node.
NodeDriverCounts nodeDriverCounts(const kube::Indexer& nodes);

class PinFactsMemo {
 public:
  // releasePinFacts of each of `releases` (all of namespace `ns`), in their order.
  std::vector<api::v1alpha1::ReleasePinFacts> releases(
      const std::string& ns, const std::vector<kube::ObjectPtr>& releases);
  // modelPins of each of `models` (all of namespace `ns`), concatenated in their order.
  std::vector<api::v1alpha1::ModelPin> modelPins(const std::string& ns,
                                                 const std::vector<kube::ObjectPtr>& models);
  // Drops what is kept for namespace `ns`.
  void forget(const std::string& ns);
  // Objects kept, and derivations made (tests).
  size_t size() const;
  uint64_t derivations() const;

 private:
  template <class T>
  struct Entry {
    std::string uid;
    std::string resourceVersion;
    T value;
  };
  template <class T>
  using ByName = std::map<std::string, Entry<T>>;

  // One namespace's objects through `derive`, reusing and refreshing `kept`.
  template <class T, class Derive>
  std::vector<T> derive(std::map<std::string, ByName<T>>& kept, const std::string& ns,
                        const std::vector<kube::ObjectPtr>& objects, const Derive& fn);

  mutable std::mutex mu_;
  std::map<std::string, ByName<api::v1alpha1::ReleasePinFacts>> releases_;  // by namespace
  std::map<std::string, ByName<std::vector<api::v1alpha1::ModelPin>>> models_;
  uint64_t derivations_ = 0;
};

}  // namespace lockstep::controllers
