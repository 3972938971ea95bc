#include "operator/runtime/work_queue.h"

#include <chrono>

namespace lockstep::runtime {

WorkQueue::WorkQueue(std::string name, Clock& clock, std::unique_ptr<RateLimiter> limiter,
                     std::shared_ptr<QueueMetrics> metrics)
    : name_(std::move(name)),
      clock_(clock),
      limiter_(limiter ? std::move(limiter) : defaultControllerRateLimiter(clock)),
      metrics_(std::move(metrics)) {}

void WorkQueue::addLocked(const std::string& item) {
  if (shuttingDown_) return;
  if (dirty_.count(item)) return;
  if (metrics_) metrics_->added();
  dirty_.insert(item);
  if (processing_.count(item)) return;  // queued again by done()
  queue_.push_back(item);
  if (metrics_) metrics_->depth(queue_.size());
  cv_.notify_one();
}

void WorkQueue::add(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  addLocked(item);
}

void WorkQueue::addAfter(const std::string& item, Clock::Duration delay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shuttingDown_) return;
  if (delay <= Clock::Duration::zero()) {
    addLocked(item);
    return;
  }
  auto at = clock_.now() + delay;
  auto it = waitingAt_.find(item);
  if (it != waitingAt_.end()) {
    if (it->second <= at) return;  // already due earlier
    waiting_.erase({it->second, item});
    it->second = at;
  } else {
    waitingAt_[item] = at;
  }
  waiting_.insert({at, item});
  // A worker may be sleeping until a later deadline.
  cv_.notify_all();
}

void WorkQueue::addRateLimited(const std::string& item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shuttingDown_) return;
  }
  if (metrics_) metrics_->retried();
  addAfter(item, limiter_->when(item));
}

void WorkQueue::forget(const std::string& item) { limiter_->forget(item); }

int WorkQueue::numRequeues(const std::string& item) { return limiter_->numRequeues(item); }

void WorkQueue::promoteReadyLocked() {
  auto now = clock_.now();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    std::string item = waiting_.begin()->second;
    waiting_.erase(waiting_.begin());
    waitingAt_.erase(item);
    addLocked(item);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (!shuttingDown_) promoteReadyLocked();
    if (!queue_.empty()) break;
    if (shuttingDown_) return std::nullopt;
    // Sleep until the next delayed item is due, or an add/shutdown notifies.
    auto deadline =
        waiting_.empty() ? clock_.now() + std::chrono::minutes(10) : waiting_.begin()->first;
    clock_.waitUntil(lock, cv_, deadline);
  }
  std::string item = std::move(queue_.front());
  queue_.pop_front();
  if (metrics_) metrics_->depth(queue_.size());
  processing_.insert(item);
  dirty_.erase(item);
  return item;
}

void WorkQueue::done(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(item);
  if (dirty_.count(item)) {
    queue_.push_back(item);
    if (metrics_) metrics_->depth(queue_.size());
  }
  cv_.notify_all();
}

size_t WorkQueue::len() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!shuttingDown_) promoteReadyLocked();
  return queue_.size();
}

size_t WorkQueue::waitingLen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

size_t WorkQueue::processingLen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processing_.size();
}

void WorkQueue::shutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shuttingDown_ = true;
  waiting_.clear();
  waitingAt_.clear();
  cv_.notify_all();
}

void WorkQueue::shutDownWithDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  shuttingDown_ = true;
  drain_ = true;
  waiting_.clear();
  waitingAt_.clear();
  cv_.notify_all();
  // Wait until every item handed out is done (workers may still take queued items). The
  // wait goes through the Clock like get()'s, so a test sees the drainer blocked.
  while (!processing_.empty()) {
    clock_.waitUntil(lock, cv_, clock_.now() + std::chrono::minutes(10));
  }
}

size_t WorkQueue::shutDownDiscarding() {
  std::lock_guard<std::mutex> lock(mu_);
  shuttingDown_ = true;
  size_t dropped = queue_.size() + waiting_.size();
  queue_.clear();
  dirty_.clear();  // done() re-queues nothing
  waiting_.clear();
  waitingAt_.clear();
  if (metrics_) metrics_->depth(0);
  cv_.notify_all();
  return dropped;
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shuttingDown_;
}

}  // namespace lockstep::runtime
