#include "operator/kube/backoff.h"

#include <algorithm>

namespace lockstep::kube {

Clock::Duration jittered(Clock::Duration d, double maxFactor, std::mt19937_64& rng) {
  if (maxFactor <= 0) return d;
  std::uniform_real_distribution<double> dist(0.0, maxFactor);
  return d + std::chrono::duration_cast<Clock::Duration>(d * dist(rng));
}

Backoff::Backoff(BackoffOptions options, Clock& clock, uint64_t seed)
    : options_(options), clock_(clock), rng_(seed), current_(options.initial) {}

Clock::Duration Backoff::next() {
  auto now = clock_.now();
  if (!started_ || now - last_ > options_.resetAfter) current_ = options_.initial;
  started_ = true;
  Clock::Duration d = current_;
  auto grown = std::chrono::duration_cast<Clock::Duration>(current_ * options_.factor);
  current_ = std::min(grown, options_.max);
  d = jittered(d, options_.jitter, rng_);
  last_ = now + d;
  return d;
}

void Backoff::reset() {
  started_ = false;
  current_ = options_.initial;
}

}  // namespace lockstep::kube
