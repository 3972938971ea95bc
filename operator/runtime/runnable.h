// Runnable: a long-running piece of a process that the Manager starts and
// stops (controller-runtime's manager.Runnable): controllers, the webhook
// server with its certificate upkeep. start() blocks until stop() is called
// (or fails); an error ends the whole manager, which then returns it.
// Thread-safety: stop() may be called from any thread, before, during or
// after start(), and more than once.
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/status.h"

namespace lockstep::runtime {

class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual Status start() = 0;
  virtual void stop() = 0;
};

// The stop flag of a Runnable that sleeps between rounds of work.
class StopFlag {
 public:
  void request() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  bool requested() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }
  std::mutex& mutex() { return mu_; }
  std::condition_variable& cv() { return cv_; }
  // With mutex() held.
  bool requestedLocked() const { return stopped_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

}  // namespace lockstep::runtime
