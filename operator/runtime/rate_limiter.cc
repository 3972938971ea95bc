#include "operator/runtime/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace lockstep::runtime {

Clock::Duration ItemExponentialRateLimiter::when(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  int exp = failures_[item]++;
  // Compute in double and cap before converting: 2^exp overflows durations quickly.
  double scaled = static_cast<double>(base_.count()) * std::pow(2.0, exp);
  if (scaled >= static_cast<double>(max_.count())) return max_;
  return Clock::Duration(static_cast<Clock::Duration::rep>(scaled));
}

void ItemExponentialRateLimiter::forget(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(item);
}

int ItemExponentialRateLimiter::numRequeues(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), tokens_(burst), last_(clock.now()) {}

Clock::Duration BucketRateLimiter::when(const std::string&) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = clock_.now();
  double elapsed = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  tokens_ -= 1.0;
  if (tokens_ >= 0) return Clock::Duration::zero();
  return std::chrono::duration_cast<Clock::Duration>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

Clock::Duration MaxOfRateLimiter::when(const std::string& item) {
  Clock::Duration d = Clock::Duration::zero();
  for (auto& l : limiters_) d = std::max(d, l->when(item));
  return d;
}

void MaxOfRateLimiter::forget(const std::string& item) {
  for (auto& l : limiters_) l->forget(item);
}

int MaxOfRateLimiter::numRequeues(const std::string& item) {
  int n = 0;
  for (auto& l : limiters_) n = std::max(n, l->numRequeues(item));
  return n;
}

std::unique_ptr<RateLimiter> defaultControllerRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::make_unique<ItemExponentialRateLimiter>(std::chrono::milliseconds(5),
                                                           std::chrono::seconds(1000)));
  v.push_back(std::make_unique<BucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(v));
}

}  // namespace lockstep::runtime
