// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, with
// client-go's algorithm. A candidate acquires the Lease when it is free, when
// it already holds it, or when the holder has not renewed it for
// leaseDurationSeconds as observed on the candidate's own clock (no
// cross-machine clock comparison). The leader renews every retryPeriod; if it
// cannot renew for renewDeadline it stops leading (onStoppedLeading) — also
// while a renew call hangs — and must stop acting. On stop() a leader
// releases the Lease by clearing holderIdentity so a successor need not wait.
// A leader renews with one request, as client-go's fast path does: a PUT of
// the Lease it last wrote (its resourceVersion guards it); only when that is
// refused (another writer, a lost object) does it read the Lease first.
// Defaults: 15 s lease, 10 s renew deadline, 2 s retry.
// Thread-safety: run() on one thread; stop()/isLeader()/leader() from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "operator/kube/client.h"
#include "operator/kube/clock.h"

namespace lockstep::runtime {

using kube::Clock;

struct LeaderElectionConfig {
  std::string ns;        // the Lease's namespace
  std::string name;      // the Lease's name
  std::string identity;  // unique per process: hostname + "_" + random
  Clock::Duration leaseDuration = std::chrono::seconds(15);
  Clock::Duration renewDeadline = std::chrono::seconds(10);
  Clock::Duration retryPeriod = std::chrono::seconds(2);
  bool releaseOnStop = true;
};

// InvalidArgument unless leaseDuration > renewDeadline > retryPeriod * 1.2 > 0 and names are set.
Status validate(const LeaderElectionConfig& config);
// "<hostname>_<random hex>".
std::string defaultIdentity();

struct LeaderCallbacks {
  std::function<void()> onStartedLeading;  // called on its own thread; return promptly
  std::function<void()> onStoppedLeading;  // lease lost or released; called once
  std::function<void(const std::string& identity)> onNewLeader;
};

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<kube::Client> client, LeaderElectionConfig config,
                LeaderCallbacks callbacks, Clock& clock = kube::SystemClock::instance());
  ~LeaderElector();

  // Campaigns, then leads until stop() (returns OK after releasing) or until the lease is
  // lost (returns Unavailable "leader election lost").
  Status run();
  void stop();
  bool isLeader() const { return leading_.load(); }
  std::string leader() const;

  // One acquire-or-renew attempt (exposed for tests).
  bool tryAcquireOrRenew();

 private:
  bool sleep(Clock::Duration d);
  void lose(const std::string& why);
  void release();
  void watchdog();
  // The leader's renewal from the Lease it last wrote; false: read it first.
  bool tryFastRenew();
  void observeOwnWrite(const kube::Object& lease);

  std::shared_ptr<kube::Client> client_;
  LeaderElectionConfig config_;
  LeaderCallbacks callbacks_;
  Clock& clock_;
  std::mt19937_64 rng_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  std::atomic<bool> stoppedCalled_{false};
  Clock::TimePoint lastRenew_{};
  // The last Lease spec seen and when (our clock): expiry is judged from this.
  std::string observedRecord_;
  std::string observedHolder_;
  Clock::TimePoint observedTime_{};
  // The Lease as this candidate's last create or update returned it (empty:
  // none, or a fast renewal was refused since).
  kube::Object ownLease_;
  std::string reportedLeader_;
};

}  // namespace lockstep::runtime
