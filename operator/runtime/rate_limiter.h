// Rate limiters for the work queue, with client-go's semantics:
//  - ItemExponentialRateLimiter: per item, base * 2^failures, capped (5 ms .. 1000 s);
//  - BucketRateLimiter: one token bucket for all items (10/s, burst 100);
//    reservations may go into debt, so each caller waits its turn;
//  - MaxOfRateLimiter: the longest delay of its members.
// defaultControllerRateLimiter() is the max of the first two.
// Thread-safety: all implementations are safe for concurrent use.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "operator/kube/clock.h"

namespace lockstep::runtime {

using kube::Clock;

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // How long `item` should wait before its next attempt; counts a failure.
  virtual Clock::Duration when(const std::string& item) = 0;
  // Clears the item's failure history.
  virtual void forget(const std::string& item) = 0;
  virtual int numRequeues(const std::string& item) = 0;
};

class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  ItemExponentialRateLimiter(Clock::Duration base, Clock::Duration max) : base_(base), max_(max) {}
  Clock::Duration when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  Clock::Duration base_, max_;
  std::mutex mu_;
  std::map<std::string, int> failures_;
};

class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, Clock& clock);
  Clock::Duration when(const std::string& item) override;
  void forget(const std::string&) override {}
  int numRequeues(const std::string&) override { return 0; }

 private:
  double qps_;
  double burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;
  Clock::TimePoint last_;
};

class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
      : limiters_(std::move(limiters)) {}
  Clock::Duration when(const std::string& item) override;
  void forget(const std::string& item) override;
  int numRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// max(per-item 5 ms doubling to 1000 s, bucket 10 qps burst 100).
std::unique_ptr<RateLimiter> defaultControllerRateLimiter(Clock& clock);

}  // namespace lockstep::runtime
