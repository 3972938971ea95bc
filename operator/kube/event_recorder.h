// EventRecorder: writes core/v1 Events about an object (reason, message,
// Normal/Warning). Repeats of the same event (same object, type, reason,
// message) are folded into one Event whose `count` and `lastTimestamp` are
// patched, as client-go's event correlator does, so a retry loop does not
// flood the namespace.
// Thread-safety: safe for concurrent use.
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"

namespace lockstep::kube {

class EventRecorder final : public EventSink {
 public:
  // `component` is the source/reportingController, e.g. "lockstep-operator".
  EventRecorder(std::shared_ptr<Client> client, std::string component,
                Clock& clock = SystemClock::instance(), size_t maxCached = 4096);

  // Records an Event about `involved` (which needs kind, apiVersion, metadata.name/uid).
  Status record(const Object& involved, const std::string& type, const std::string& reason,
                const std::string& message) override;

 private:
  struct Entry {
    std::string ns;
    std::string name;
    int64_t count = 0;
    std::list<std::string>::iterator lru;
  };
  Status create(const Object& involved, const std::string& type, const std::string& reason,
                const std::string& message, const std::string& key);

  std::shared_ptr<Client> client_;
  std::string component_;
  Clock& clock_;
  size_t maxCached_;
  std::mutex mu_;
  std::map<std::string, Entry> cache_;
  std::list<std::string> lru_;  // most recent at the front
};

}  // namespace lockstep::kube
