// Backoff: jittered exponential delays for retrying failed API calls, shaped
// like client-go's wait.Backoff / exponential backoff manager (the reflector
// uses 800 ms doubling to 30 s, jitter 1.0, reset after 2 min without errors).
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

#include "operator/kube/clock.h"

namespace lockstep::kube {

struct BackoffOptions {
  Clock::Duration initial = std::chrono::milliseconds(800);
  Clock::Duration max = std::chrono::seconds(30);
  double factor = 2.0;
  // Each delay is d + U[0, jitter) * d.
  double jitter = 1.0;
  // After this long without a backoff, the next one starts from `initial` again.
  Clock::Duration resetAfter = std::chrono::minutes(2);
};

class Backoff {
 public:
  Backoff(BackoffOptions options, Clock& clock, uint64_t seed = std::random_device{}());
  // The next delay to wait; grows until `max`.
  Clock::Duration next();
  void reset();

 private:
  BackoffOptions options_;
  Clock& clock_;
  std::mt19937_64 rng_;
  Clock::Duration current_;
  Clock::TimePoint last_{};
  bool started_ = false;
};

// Multiplies `d` by a random factor in [1, 1 + maxFactor).
Clock::Duration jittered(Clock::Duration d, double maxFactor, std::mt19937_64& rng);

}  // namespace lockstep::kube
