// EventSink: where a controller's Events go. EventRecorder (core/v1 Events
// through the API) implements it; controller shells take an EventSink so
// their unit tests use tests/support/fake_event_sink.h instead of a server.
// Thread-safety: implementations are safe for concurrent use.
#pragma once

#include <string>

#include "common/status.h"
#include "operator/kube/object.h"

namespace lockstep::kube {

inline constexpr const char* kEventTypeNormal = "Normal";
inline constexpr const char* kEventTypeWarning = "Warning";

class EventSink {
 public:
  virtual ~EventSink() = default;
  // Records an Event about `involved` (which carries kind, apiVersion, metadata.name/uid).
  virtual Status record(const Object& involved, const std::string& type, const std::string& reason,
                        const std::string& message) = 0;
  Status normal(const Object& involved, const std::string& reason, const std::string& message) {
    return record(involved, kEventTypeNormal, reason, message);
  }
  Status warning(const Object& involved, const std::string& reason, const std::string& message) {
    return record(involved, kEventTypeWarning, reason, message);
  }
};

}  // namespace lockstep::kube
