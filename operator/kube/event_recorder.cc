#include "operator/kube/event_recorder.h"

#include <cstdio>

namespace lockstep::kube {

EventRecorder::EventRecorder(std::shared_ptr<Client> client, std::string component, Clock& clock,
                             size_t maxCached)
    : client_(std::move(client)),
      component_(std::move(component)),
      clock_(clock),
      maxCached_(maxCached) {}

Status EventRecorder::record(const Object& involved, const std::string& type,
                             const std::string& reason, const std::string& message) {
  std::string key = uid(involved) + "\x1f" + kindOf(involved) + "\x1f" + objectKey(involved) +
                    "\x1f" + type + "\x1f" + reason + "\x1f" + message;
  std::string now = formatTime(clock_.wallNow(), false);
  std::string ns, evName;
  int64_t count = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      ns = it->second.ns;
      evName = it->second.name;
      count = ++it->second.count;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
  }
  if (!evName.empty()) {
    nlohmann::json patch = {{"count", count}, {"lastTimestamp", now}};
    auto patched = client_->mergePatch(resources::kEvents, ns, evName, patch);
    if (patched.isOk()) return Status::ok();
    if (patched.status().code() != Code::kNotFound) return patched.status();
    // The Event expired (TTL) or was deleted: start a new one.
  }
  return create(involved, type, reason, message, key);
}

Status EventRecorder::create(const Object& involved, const std::string& type,
                             const std::string& reason, const std::string& message,
                             const std::string& key) {
  auto wall = clock_.wallNow();
  std::string now = formatTime(wall, false);
  std::string ns = namespaceOf(involved);
  if (ns.empty()) ns = "default";  // events about cluster-scoped objects
  char suffix[32];
  std::snprintf(
      suffix, sizeof suffix, ".%llx",
      static_cast<unsigned long long>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count()));
  std::string evName = name(involved) + suffix;
  nlohmann::json involvedRef = {{"apiVersion", apiVersionOf(involved)},
                                {"kind", kindOf(involved)},
                                {"name", name(involved)},
                                {"uid", uid(involved)}};
  if (!namespaceOf(involved).empty()) involvedRef["namespace"] = namespaceOf(involved);
  if (!resourceVersion(involved).empty())
    involvedRef["resourceVersion"] = resourceVersion(involved);
  nlohmann::json ev = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", evName}, {"namespace", ns}}},
      {"involvedObject", involvedRef},
      {"type", type},
      {"reason", reason},
      {"message", message},
      {"source", {{"component", component_}}},
      {"reportingComponent", component_},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
  };
  auto created = client_->create(resources::kEvents, ev, ns);
  if (!created.isOk()) return created.status();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) {
    lru_.erase(it->second.lru);
    cache_.erase(it);
  }
  lru_.push_front(key);
  cache_[key] = Entry{ns, evName, 1, lru_.begin()};
  while (cache_.size() > maxCached_) {
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  return Status::ok();
}

}  // namespace lockstep::kube
