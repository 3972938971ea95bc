// AsyncEventSink: Events off the reconcile path, as client-go's broadcaster
// does it. record() keeps what the Event needs (the involved object's
// apiVersion, kind, name, namespace, uid, resourceVersion, and the time) and
// returns at once; one sender thread writes the Events through the wrapped
// sink (EventRecorder, which folds repeats), in the order they were recorded.
// A slow or failing Events API never slows a reconcile: when `capacity` Events
// already wait, a new one is dropped and counted, and a failed write is logged
// and counted, never retried here (an Event is a hint, the status is the truth).
// Thread-safety: record() may be called from any thread; flush() and the
// destructor from one thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "operator/kube/event_sink.h"

namespace lockstep::kube {

class AsyncEventSink final : public EventSink {
 public:
  explicit AsyncEventSink(EventSink& inner, size_t capacity = 1000);
  // Writes what is queued for up to two seconds, then drops the rest.
  ~AsyncEventSink() override;
  AsyncEventSink(const AsyncEventSink&) = delete;
  AsyncEventSink& operator=(const AsyncEventSink&) = delete;

  // Queues the Event; always OK (a dropped Event is counted in dropped()).
  Status record(const Object& involved, const std::string& type, const std::string& reason,
                const std::string& message) override;
  // Waits until every Event recorded before the call has been written (or
  // failed), at most `timeout`. True when nothing recorded before is pending.
  bool flush(std::chrono::milliseconds timeout);
  uint64_t dropped() const { return dropped_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  struct Pending {
    Object involved;
    std::string type, reason, message;
  };
  void run();

  EventSink& inner_;
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  uint64_t recorded_ = 0;  // sequence numbers, with mu_
  uint64_t written_ = 0;   // recorded Events written or failed (dropped ones count too)
  bool stopping_ = false;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> failed_{0};
  std::thread sender_;
};

}  // namespace lockstep::kube
