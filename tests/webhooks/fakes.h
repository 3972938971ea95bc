// Test doubles for the admission path: a recorder that keeps outcomes (the
// clock is tests/support/fake_clock.h). Thread-safety: FakeRecorder is thread-safe.
#pragma once

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

}  // namespace lockstep::webhooks::testing
