#include "tests/support/fake_clock.h"

namespace lockstep::testing {

FakeClock::FakeClock()
    : now_(TimePoint(std::chrono::hours(1000))),
      wallBase_(WallTime(std::chrono::seconds(1714557600))),  // 2024-05-01T10:00:00Z
      steadyBase_(now_) {}

kube::Clock::TimePoint FakeClock::now() const {
  std::lock_guard<std::mutex> g(mu_);
  now_ += tick_;
  return now_;
}

void FakeClock::setTickOnRead(Duration step) {
  std::lock_guard<std::mutex> g(mu_);
  tick_ = step;
}

kube::Clock::WallTime FakeClock::wallNow() const {
  std::lock_guard<std::mutex> g(mu_);
  return wallBase_ + std::chrono::duration_cast<WallTime::duration>(now_ - steadyBase_);
}

void FakeClock::waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          TimePoint deadline) {
  std::list<Waiter>::iterator self;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (now_ >= deadline) return;
    if (auto_) {
      autoAdvanced_ += deadline - now_;
      now_ = deadline;
      changed_.notify_all();
      return;
    }
    self = waiters_.insert(waiters_.end(), Waiter{lock.mutex(), &cv, deadline});
    changed_.notify_all();
  }
  // advance() notifies under mu_ (so `cv` outlives the notify); a notify landing between
  // our registration and this wait is caught by the short real-time fallback.
  cv.wait_for(lock, std::chrono::milliseconds(5));
  std::lock_guard<std::mutex> g(mu_);
  waiters_.erase(self);
  changed_.notify_all();
}

void FakeClock::advance(Duration d) {
  std::lock_guard<std::mutex> g(mu_);
  now_ += d;
  for (auto& w : waiters_) w.cv->notify_all();
  changed_.notify_all();
}

void FakeClock::setAutoAdvance(bool on) {
  std::lock_guard<std::mutex> g(mu_);
  auto_ = on;
}

int FakeClock::pendingLocked() const {
  // A waiter whose deadline has passed is about to return (it may not have run yet): it no
  // longer waits, so counting it would let a test advance again before it acted (the
  // stale-waiter flake of LeaderElectionTest.LeadsUntilStoppedThenReleases).
  int n = 0;
  for (const auto& w : waiters_) n += w.deadline > now_ ? 1 : 0;
  return n;
}

int FakeClock::waiters() const {
  std::lock_guard<std::mutex> g(mu_);
  return pendingLocked();
}

bool FakeClock::waitForWaiters(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> g(mu_);
  return changed_.wait_for(g, timeout, [&] { return pendingLocked() >= n; });
}

kube::Clock::Duration FakeClock::autoAdvanced() const {
  std::lock_guard<std::mutex> g(mu_);
  return autoAdvanced_;
}

}  // namespace lockstep::testing
