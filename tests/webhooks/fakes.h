// Test doubles for the admission path: a recorder that keeps outcomes and an
// authorizer with knobs (the clock is tests/support/fake_clock.h).
// Thread-safety: FakeRecorder and FakeAuthorizer are thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "webhooks/admission/authorizer.h"
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

// Knobs: allow(user, verb) grants, failWith(status) makes every question fail
// (API server unreachable, deadline), answerReason(...) sets the reason of
// denials. Everything not granted is denied. Records every question.
class FakeAuthorizer final : public Authorizer {
 public:
  FakeAuthorizer& allow(const std::string& user, const std::string& verb) {
    std::lock_guard<std::mutex> lock(mu_);
    grants_[{user, verb}] = true;
    return *this;
  }
  FakeAuthorizer& failWith(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = std::move(s);
    return *this;
  }
  FakeAuthorizer& answerReason(std::string reason, std::string evaluationError = "") {
    std::lock_guard<std::mutex> lock(mu_);
    reason_ = std::move(reason);
    evaluationError_ = std::move(evaluationError);
    return *this;
  }
  StatusOr<AccessDecision> authorize(const AccessRequest& q) const override {
    std::lock_guard<std::mutex> lock(mu_);
    asked_.push_back(q);
    if (failure_) return *failure_;
    bool allowed = grants_.count({q.user.username, q.verb}) > 0;
    return AccessDecision{allowed, reason_, evaluationError_};
  }
  std::vector<AccessRequest> asked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, bool> grants_;
  std::optional<Status> failure_;
  std::string reason_;
  std::string evaluationError_;
  mutable std::vector<AccessRequest> asked_;
};

}  // namespace lockstep::webhooks::testing
