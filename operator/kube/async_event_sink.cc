#include "operator/kube/async_event_sink.h"

#include <spdlog/spdlog.h>

namespace lockstep::kube {
namespace {

constexpr std::chrono::seconds kDrainOnStop{2};

// The parts of the involved object an Event names (EventRecorder reads no others).
Object reference(const Object& involved) {
  Object ref = Object::object();
  for (const char* key : {"apiVersion", "kind"}) {
    if (auto it = involved.find(key); it != involved.end()) ref[key] = *it;
  }
  if (auto meta = involved.find("metadata"); meta != involved.end() && meta->is_object()) {
    Object m = Object::object();
    for (const char* key : {"name", "namespace", "uid", "resourceVersion"}) {
      if (auto it = meta->find(key); it != meta->end()) m[key] = *it;
    }
    ref["metadata"] = std::move(m);
  }
  return ref;
}

}  // namespace

AsyncEventSink::AsyncEventSink(EventSink& inner, size_t capacity)
    : inner_(inner), capacity_(capacity), sender_([this] { run(); }) {}

AsyncEventSink::~AsyncEventSink() {
  flush(kDrainOnStop);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  sender_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) spdlog::warn("events: {} Events not written at shutdown", queue_.size());
}

Status AsyncEventSink::record(const Object& involved, const std::string& type,
                              const std::string& reason, const std::string& message) {
  Pending p{reference(involved), type, reason, message};
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++recorded_;
    if (queue_.size() >= capacity_) {
      ++written_;  // nothing will write it: flush() must not wait for it
      const uint64_t n = ++dropped_;
      if ((n & (n - 1)) == 0)  // 1, 2, 4, 8, ...: a flood logs a handful of lines
        spdlog::warn("events: {} Events waiting; dropped {} so far (latest: {} {})", capacity_, n,
                     reason, message);
      cv_.notify_all();
      return Status::ok();
    }
    queue_.push_back(std::move(p));
  }
  cv_.notify_all();
  return Status::ok();
}

bool AsyncEventSink::flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = recorded_;
  return cv_.wait_for(lock, timeout, [&] { return written_ >= target; });
}

void AsyncEventSink::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    if (stopping_) return;       // the destructor already waited for a flush
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status st = inner_.record(p.involved, p.type, p.reason, p.message);
    if (!st.isOk()) {
      ++failed_;
      spdlog::warn("events: {} {} about {}/{}: {}", p.type, p.reason, namespaceOf(p.involved),
                   name(p.involved), st.toString());
    }
    lock.lock();
    ++written_;
    cv_.notify_all();
  }
}

}  // namespace lockstep::kube
