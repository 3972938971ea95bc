// Test doubles for the admission path: a recorder that keeps outcomes and a
// manual clock. Thread-safety: FakeRecorder is thread-safe; ManualClock is not
// meant to be advanced concurrently with reads.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "webhooks/admission/recorder.h"

namespace lockstep::webhooks::testing {

class FakeRecorder final : public AdmissionRecorder {
 public:
  void record(const AdmissionOutcome& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    outcomes_.push_back(o);
  }
  std::vector<AdmissionOutcome> outcomes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return outcomes_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<AdmissionOutcome> outcomes_;
};

// Advances by `step` on every read, so durations are deterministic and > 0.
class ManualClock final : public MonotonicClock {
 public:
  explicit ManualClock(std::chrono::nanoseconds step = std::chrono::microseconds(250))
      : step_(step) {}
  std::chrono::nanoseconds now() const override {
    return std::chrono::nanoseconds(t_ += step_.count());
  }

 private:
  std::chrono::nanoseconds step_;
  mutable std::atomic<long long> t_{0};
};

}  // namespace lockstep::webhooks::testing
