// Informer: a reflector (one per namespace of `namespaces`) feeding an indexed cache, with event
// handlers called after the cache changes. Controllers read objects from cache() (no API call) and
// enqueue work from handlers.
//
// Handlers run one at a time on the informer's thread, in event order; keep
// them short (enqueue, don't reconcile). A relist reports objects that
// vanished meanwhile as deletes and every surviving object as an update, so
// a handler sees the same end state the server has.
// Thread-safety: all methods are safe from any thread; add indexes before start().
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/indexer.h"
#include "operator/kube/reflector.h"

namespace lockstep::kube {

struct EventHandler {
  // `initialList` is true for objects of the first list, before the informer synced.
  std::function<void(const Object& obj, bool initialList)> onAdd;
  std::function<void(const Object& oldObj, const Object& newObj)> onUpdate;
  // The last state the informer knew.
  std::function<void(const Object& obj)> onDelete;
};

// Changes an object before it is cached (client-go's SetTransform).
using ObjectTransform = std::function<void(Object&)>;
// Keeps an object in the cache when true; others are treated as absent.
using ObjectFilter = std::function<bool(const Object&)>;
// A filter keeping objects whose labels include all of `labels`.
ObjectFilter matchLabels(std::map<std::string, std::string> labels);

struct InformerOptions {
  Resource resource;
  std::string ns;  // "" = all namespaces
  // With `ns` empty: watch only these namespaces (one list+watch each, one
  // cache; synced once every namespace listed). Empty: all namespaces.
  std::vector<std::string> namespaces;
  std::string labelSelector;  // server-side
  std::string fieldSelector;
  // Lists and watches the objects' metadata only (PartialObjectMetadata: no spec,
  // no status); for a cache that only says what stands at a name.
  bool metadataOnly = false;
  // Applied to every listed or watched object before caching: cached objects are
  // shared by every reader and never copied per reconcile, so keep them small.
  ObjectTransform transform = stripManagedFields;
  ObjectFilter filter;  // client-side; empty keeps everything
  std::chrono::seconds minWatchTimeout{300};
  // > 0: a watch open past its timeoutSeconds plus this is re-opened (reflector.h).
  std::chrono::seconds watchStallSlack{0};
  BackoffOptions backoff;
};

class Informer {
 public:
  Informer(std::shared_ptr<Client> client, InformerOptions options,
           Clock& clock = SystemClock::instance());
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Secondary indexes: namespace and owner-uid exist already.
  void addIndex(const std::string& name, IndexFunc fn) { cache_.addIndex(name, std::move(fn)); }
  void addLabelIndex(const std::string& labelKey) { cache_.addLabelIndex(labelKey); }
  // Registers a handler; one added after the informer started first receives every
  // cached object as an add.
  void addEventHandler(EventHandler handler);

  void start();  // idempotent
  void stop();   // idempotent; joins the thread
  bool hasSynced() const { return synced_.load(); }
  // Blocks until the first list was applied, stop(), or the timeout.
  bool waitForSync(Clock::Duration timeout);

  const Indexer& cache() const { return cache_; }
  const InformerOptions& options() const { return options_; }
  // Of the first namespace's reflector (the only one unless `namespaces` has several).
  std::string lastSyncResourceVersion() const {
    return parts_.front()->reflector->lastSyncResourceVersion();
  }
  int listCount() const { return parts_.front()->reflector->listCount(); }
  // OK once synced and while every reflector follows its collection: not when one has been
  // failing to list or watch for `grace` or longer (readiness; Reflector::syncing).
  Status syncing(Clock::Duration grace) const {
    if (!hasSynced()) return unavailable(options_.resource.id() + " cache not synced yet");
    for (const auto& p : parts_) {
      if (Status s = p->reflector->syncing(clock_.now(), grace); !s.isOk()) return s;
    }
    return Status::ok();
  }
  // Watches re-opened because they stayed silent past their timeout (all namespaces).
  int stalledWatches() const {
    int n = 0;
    for (const auto& p : parts_) n += p->reflector->stalledWatches();
    return n;
  }

 private:
  // One reflector and the namespace it lists ("" = all).
  struct Part final : ReflectorSink {
    Part(Informer& informer, std::string ns) : informer(informer), ns(std::move(ns)) {}
    void replace(std::vector<Object> items, const std::string& resourceVersion) override {
      informer.replace(*this, std::move(items));
    }
    void apply(const WatchEvent& event) override { informer.apply(event); }
    Informer& informer;
    std::string ns;
    bool listed = false;  // under handlersMu_
    std::unique_ptr<Reflector> reflector;
    std::thread thread;
  };
  // A list of `part`'s namespace: replaces what the cache holds there.
  void replace(Part& part, std::vector<Object> items);
  // Transforms `o`; false when the filter drops it.
  bool admit(Object& o) const;
  void apply(const WatchEvent& event);
  template <typename F>
  void dispatch(F&& f);

  std::shared_ptr<Client> client_;
  InformerOptions options_;
  Clock& clock_;
  Indexer cache_;
  std::vector<std::unique_ptr<Part>> parts_;

  std::mutex handlersMu_;  // serializes dispatch and handler registration
  std::vector<EventHandler> handlers_;

  std::mutex mu_;
  std::condition_variable syncedCv_;
  std::atomic<bool> synced_{false};
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace lockstep::kube
