#include "operator/kube/informer.h"

#include <spdlog/spdlog.h>

namespace lockstep::kube {
namespace {

ReflectorOptions reflectorOptions(const InformerOptions& o, const std::string& ns) {
  ReflectorOptions r;
  r.resource = o.resource;
  r.ns = ns;
  r.labelSelector = o.labelSelector;
  r.fieldSelector = o.fieldSelector;
  r.metadataOnly = o.metadataOnly;
  r.minWatchTimeout = o.minWatchTimeout;
  r.watchStallSlack = o.watchStallSlack;
  r.backoff = o.backoff;
  r.name = o.resource.id() + (ns.empty() ? "" : "/" + ns);
  return r;
}

}  // namespace

ObjectFilter matchLabels(std::map<std::string, std::string> want) {
  return [want = std::move(want)](const Object& o) {
    for (const auto& [k, v] : want) {
      if (label(o, k) != v) return false;
    }
    return true;
  };
}

Informer::Informer(std::shared_ptr<Client> client, InformerOptions options, Clock& clock)
    : client_(std::move(client)), options_(std::move(options)), clock_(clock) {
  std::vector<std::string> namespaces = {options_.ns};
  if (options_.ns.empty() && !options_.namespaces.empty()) namespaces = options_.namespaces;
  for (const auto& ns : namespaces) {
    auto part = std::make_unique<Part>(*this, ns);
    part->reflector =
        std::make_unique<Reflector>(*client_, reflectorOptions(options_, ns), *part, clock);
    parts_.push_back(std::move(part));
  }
}

Informer::~Informer() { stop(); }

template <typename F>
void Informer::dispatch(F&& f) {
  for (const auto& h : handlers_) {
    try {
      f(h);
    } catch (const std::exception& e) {
      spdlog::error("informer {}: event handler threw: {}", options_.resource.id(), e.what());
    }
  }
}

void Informer::addEventHandler(EventHandler handler) {
  std::lock_guard<std::mutex> lock(handlersMu_);
  if (synced_.load() || cache_.size() > 0) {
    for (const auto& obj : cache_.list()) {
      if (handler.onAdd) handler.onAdd(*obj, false);
    }
  }
  handlers_.push_back(std::move(handler));
}

void Informer::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_) return;
  started_ = true;
  for (auto& p : parts_) p->thread = std::thread([r = p->reflector.get()] { r->run(); });
}

void Informer::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    syncedCv_.notify_all();
  }
  for (auto& p : parts_) p->reflector->stop();
  for (auto& p : parts_) {
    if (p->thread.joinable()) p->thread.join();
  }
}

bool Informer::waitForSync(Clock::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = clock_.now() + timeout;
  while (!synced_.load() && !stopped_ && clock_.now() < deadline) {
    clock_.waitUntil(lock, syncedCv_, deadline);
  }
  return synced_.load();
}

bool Informer::admit(Object& o) const {
  if (options_.transform) options_.transform(o);
  return !options_.filter || options_.filter(o);
}

void Informer::replace(Part& part, std::vector<Object> items) {
  std::vector<ObjectPtr> fresh;
  fresh.reserve(items.size());
  for (auto& o : items) {
    if (admit(o)) fresh.push_back(std::make_shared<const Object>(std::move(o)));
  }
  std::lock_guard<std::mutex> lock(handlersMu_);
  bool initial = !synced_.load();
  std::vector<ObjectPtr> next;
  if (!part.ns.empty()) {
    // Other namespaces' objects stay as they are (same pointers: no events).
    for (const auto& obj : cache_.list()) {
      if (namespaceOf(*obj) != part.ns) next.push_back(obj);
    }
  }
  next.insert(next.end(), fresh.begin(), fresh.end());
  auto previous = cache_.replace(next);
  for (const auto& obj : next) {
    auto it = previous.find(objectKey(*obj));
    if (it != previous.end() && it->second == obj) {
      previous.erase(it);
      continue;
    }
    if (it == previous.end()) {
      dispatch([&](const EventHandler& h) {
        if (h.onAdd) h.onAdd(*obj, initial);
      });
    } else {
      ObjectPtr old = it->second;
      previous.erase(it);
      dispatch([&](const EventHandler& h) {
        if (h.onUpdate) h.onUpdate(*old, *obj);
      });
    }
  }
  // Whatever the new list lacks was deleted while we were not watching.
  for (const auto& entry : previous) {
    const auto& gone = entry.second;
    dispatch([&](const EventHandler& h) {
      if (h.onDelete) h.onDelete(*gone);
    });
  }
  part.listed = true;
  bool all = true;
  for (const auto& p : parts_) all = all && p->listed;
  if (initial && all) {
    std::lock_guard<std::mutex> l(mu_);
    synced_ = true;
    syncedCv_.notify_all();
  }
}

void Informer::apply(const WatchEvent& event) {
  if (event.type == WatchEvent::Type::kBookmark) return;
  Object copy = event.object;
  const bool kept = admit(copy);
  auto obj = std::make_shared<const Object>(std::move(copy));
  std::lock_guard<std::mutex> lock(handlersMu_);
  if (!kept) {
    // Filtered out: whatever the cache held under this key is gone for its readers.
    if (ObjectPtr old = cache_.erase(objectKey(*obj))) {
      dispatch([&](const EventHandler& h) {
        if (h.onDelete) h.onDelete(*old);
      });
    }
    return;
  }
  switch (event.type) {
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified: {
      ObjectPtr old = cache_.upsert(obj);
      if (old) {
        dispatch([&](const EventHandler& h) {
          if (h.onUpdate) h.onUpdate(*old, *obj);
        });
      } else {
        dispatch([&](const EventHandler& h) {
          if (h.onAdd) h.onAdd(*obj, false);
        });
      }
      break;
    }
    case WatchEvent::Type::kDeleted: {
      ObjectPtr old = cache_.erase(objectKey(*obj));
      // The event carries the final state; report it even if we never cached it.
      dispatch([&](const EventHandler& h) {
        if (h.onDelete) h.onDelete(*obj);
      });
      (void)old;
      break;
    }
    case WatchEvent::Type::kBookmark:
      break;
  }
}

}  // namespace lockstep::kube
