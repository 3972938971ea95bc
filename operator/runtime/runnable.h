// Runnable: a long-running piece of a process that the Manager starts and
// stops (controller-runtime's manager.Runnable): controllers, the webhook
// server with its certificate upkeep. start() blocks until stop() is called
// (or fails); an error ends the whole manager, which then returns it.
// Thread-safety: stop() may be called from any thread, before, during or
// after start(), and more than once.
#pragma once

#include "common/status.h"

namespace lockstep::runtime {

class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual Status start() = 0;
  // Must not throw: it runs on signal and shutdown paths.
  virtual void stop() noexcept = 0;
};

}  // namespace lockstep::runtime
