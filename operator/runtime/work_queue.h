// WorkQueue: client-go's rate-limited delaying work queue for string keys.
//  - de-duplication: an item queued twice is handed out once;
//  - an item added while being processed is not handed to another worker; it
//    is queued again once, when done() is called for it;
//  - addAfter() queues after a delay (RequeueAfter); the earlier of two delays wins;
//  - addRateLimited() delays by the rate limiter (per-item exponential backoff
//    combined with an overall token bucket); forget() resets the item's backoff;
//  - shutDown(): no more adds; get() still hands out what is queued, then
//    returns nullopt; delayed items are dropped. shutDownWithDrain() also
//    waits until every handed-out item is done(). shutDownDiscarding() drops
//    the queued and delayed items too: get() returns nullopt at once, and an
//    item being processed is not queued again (how a controller stops when it
//    is no longer, or will no longer be, the leader: its successor relists).
// Time comes from a Clock (every wait goes through it), so tests drive delays
// with a FakeClock and see blocked callers as its waiters.
// Thread-safety: safe for concurrent use by any number of workers.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>

#include "operator/kube/clock.h"
#include "operator/runtime/rate_limiter.h"

namespace lockstep::runtime {

// Observes a queue (Prometheus in production).
class QueueMetrics {
 public:
  virtual ~QueueMetrics() = default;
  virtual void added() = 0;
  virtual void depth(size_t n) = 0;
  virtual void retried() = 0;
};

class WorkQueue {
 public:
  // `limiter` defaults to defaultControllerRateLimiter(clock).
  WorkQueue(std::string name, Clock& clock, std::unique_ptr<RateLimiter> limiter = nullptr,
            std::shared_ptr<QueueMetrics> metrics = nullptr);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const std::string& item);
  void addAfter(const std::string& item, Clock::Duration delay);
  void addRateLimited(const std::string& item);
  void forget(const std::string& item);
  int numRequeues(const std::string& item);

  // Blocks until an item is ready; nullopt once shut down and nothing is queued.
  std::optional<std::string> get();
  // Marks the item processed; re-queues it if it was added meanwhile.
  void done(const std::string& item);

  size_t len();               // ready items (due delayed items count as ready)
  size_t waitingLen() const;  // delayed items
  size_t processingLen() const;
  void shutDown();
  void shutDownWithDrain();
  // Returns how many queued and delayed items were dropped.
  size_t shutDownDiscarding();
  bool shuttingDown() const;
  const std::string& name() const { return name_; }

 private:
  void addLocked(const std::string& item);
  void promoteReadyLocked();

  const std::string name_;
  Clock& clock_;
  std::unique_ptr<RateLimiter> limiter_;
  std::shared_ptr<QueueMetrics> metrics_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  std::map<std::string, Clock::TimePoint> waitingAt_;
  std::set<std::pair<Clock::TimePoint, std::string>> waiting_;
  bool shuttingDown_ = false;
  bool drain_ = false;
};

}  // namespace lockstep::runtime
