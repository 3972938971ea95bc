// FakeEventSink: keeps the Events a controller records, in order; a knob
// makes every record fail (Events are best effort: a reconcile must go on).
// Thread-safety: safe for concurrent use.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "operator/kube/event_sink.h"

namespace lockstep::testing {

class FakeEventSink final : public kube::EventSink {
 public:
  struct Recorded {
    std::string involvedKind;
    std::string involvedName;
    std::string type;
    std::string reason;
    std::string message;
  };

  Status record(const kube::Object& involved, const std::string& type, const std::string& reason,
                const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fail_.isOk()) return fail_;
    events_.push_back({kube::kindOf(involved), kube::name(involved), type, reason, message});
    return Status::ok();
  }
  void failWith(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = std::move(s);
  }
  std::vector<Recorded> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  Status fail_;
  std::vector<Recorded> events_;
};

}  // namespace lockstep::testing
