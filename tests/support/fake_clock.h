// FakeClock: the one simulated clock of the tests (and fuzz targets). Time
// moves only when a test calls advance() (which wakes every waiter whose
// deadline passed); in auto-advance mode, whenever someone waits (the wait
// returns at once with the clock moved to its deadline) — so backoff loops run
// instantly; and, with setTickOnRead(step), by `step` on every now(), so
// measured durations are deterministic and > 0.
// Thread-safety: safe for concurrent use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>

#include "operator/kube/clock.h"

namespace lockstep::testing {

class FakeClock final : public kube::Clock {
 public:
  FakeClock();
  TimePoint now() const override;
  WallTime wallNow() const override;
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline) override;

  void advance(Duration d);
  void setAutoAdvance(bool on);
  void setTickOnRead(Duration step);
  // Threads blocked in waitUntil whose deadline is still ahead (one whose deadline passed is
  // on its way out and is not counted, even before it has run).
  int waiters() const;
  // Blocks (real time, bounded) until at least `n` threads wait on this clock (as waiters()).
  bool waitForWaiters(int n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // Total time waited in auto-advance mode (for asserting backoff lengths).
  Duration autoAdvanced() const;

 private:
  struct Waiter {
    std::mutex* mu;
    std::condition_variable* cv;
    TimePoint deadline;
  };
  int pendingLocked() const;  // with mu_ held
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  mutable TimePoint now_;
  WallTime wallBase_;
  TimePoint steadyBase_;
  bool auto_ = false;
  Duration tick_{0};
  Duration autoAdvanced_{0};
  std::list<Waiter> waiters_;
};

}  // namespace lockstep::testing
