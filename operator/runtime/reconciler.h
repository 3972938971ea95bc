// The reconcile contract (level-based, as controller-runtime): a Request
// names an object by namespace and name, never the event; the Reconciler
// re-reads state each time and says what should happen next.
// Thread-safety: a Reconciler is called concurrently for different requests
// (never concurrently for the same one) when the controller has >1 worker.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "operator/kube/clock.h"

namespace lockstep::runtime {

struct Request {
  std::string ns;  // "" for cluster-scoped objects
  std::string name;

  // The work-queue key: "ns/name" or "name".
  std::string key() const { return ns.empty() ? name : ns + "/" + name; }
  static Request fromKey(const std::string& key) {
    auto slash = key.find('/');
    if (slash == std::string::npos) return {"", key};
    return {key.substr(0, slash), key.substr(slash + 1)};
  }
  bool operator==(const Request& o) const { return ns == o.ns && name == o.name; }
};

struct Result {
  bool requeue = false;                   // again, rate-limited
  kube::Clock::Duration requeueAfter{0};  // again after this delay (wins over requeue)
  Status error;                           // non-OK: logged, rate-limited requeue...
  bool terminal = false;                  // ...unless terminal: retrying cannot help

  static Result done() { return {}; }
  static Result requeueNow() { return {true, {}, {}}; }
  static Result after(kube::Clock::Duration d) { return {false, d, {}}; }
  static Result failed(Status s) { return {false, {}, std::move(s)}; }
  // An error a retry cannot fix (controller-runtime's TerminalError): logged and
  // counted, not requeued; the next change of a watched object reconciles again.
  static Result terminalError(Status s) { return {false, {}, std::move(s), true}; }
};

// The one mapping from the Status of a reconcile's I/O to what happens next:
//   OK, NotFound (the object is gone: nothing left to do)  -> done
//   InvalidArgument (our own input is wrong)               -> terminal
//   anything else (Unavailable, Conflict, Gone, Invalid, Forbidden, ...)
//                                                          -> failed: backoff requeue
Result resultFor(const Status& s);

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  virtual Result reconcile(const Request& request) = 0;
};

}  // namespace lockstep::runtime
