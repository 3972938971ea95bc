// Clock: the one source of time for the client and runtime, so tests can
// replace it with a fake clock (tests/support/fake_clock.h) and never sleep.
//
// `now()` is monotonic (timeouts, backoff, rate limits); `wallNow()` is UTC
// wall time (Lease and Event timestamps). `waitUntil` blocks the caller on its
// own condition variable until the clock reaches `deadline` or the variable is
// notified; callers re-check their predicate in a loop.
// Thread-safety: implementations are safe for concurrent use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace lockstep::kube {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  virtual WallTime wallNow() const = 0;
  // Waits on `cv` (with `lock` held on entry and exit) until `deadline` or a notify.
  virtual void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline) = 0;
};

// The real clock: steady_clock and system_clock.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  WallTime wallNow() const override { return std::chrono::system_clock::now(); }
  void waitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline) override {
    cv.wait_until(lock, deadline);
  }
  // A process-wide instance for production wiring.
  static SystemClock& instance();
};

// RFC 3339 in UTC with microseconds ("2024-05-01T10:00:00.123456Z"), the form of
// metav1.MicroTime; `micro=false` gives metav1.Time ("2024-05-01T10:00:00Z").
std::string formatTime(Clock::WallTime t, bool micro);
// Parses both forms (and numeric offsets); false on malformed input.
bool parseTime(const std::string& text, Clock::WallTime* out);
// Seconds since the epoch of a metav1.Time; 0 when `text` is empty or malformed.
int64_t unixSecondsOf(const std::string& text);
// A metav1.Time ("2024-05-01T10:00:00Z") of seconds since the epoch.
std::string timeOfUnixSeconds(int64_t seconds);

}  // namespace lockstep::kube
