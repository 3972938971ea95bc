// Leader election against a tiny in-memory Lease API (FakeTransport handler).
#include "operator/runtime/leader_election.h"

#include <algorithm>
#include <future>
#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::FakeTransport;

// One Lease with optimistic concurrency; writes can be made to fail.
class LeaseServer {
 public:
  std::optional<testing::FakeReply> handle(const kube::Request& r) {
    std::unique_lock<std::mutex> l(mu);
    if (hangWrites && r.method != "GET") {
      // A renewal that hangs (a half-open connection): blocks until released.
      ++hanging;
      hangCv.notify_all();
      hangCv.wait(l, [this] { return !hangWrites; });
      return unavailable("connection reset after hanging");
    }
    if (failWrites && r.method != "GET") return unavailable("injected");
    ++requests[r.method];  // answered, refusals included
    if (r.method == "GET") {
      if (lease.is_null()) return FakeTransport::status(404, "NotFound", "leases not found");
      return FakeTransport::ok(lease);
    }
    auto body = nlohmann::json::parse(r.body);
    if (r.method == "POST") {
      if (!lease.is_null()) return FakeTransport::status(409, "AlreadyExists", "exists");
    } else if (r.method == "PUT") {
      if (kube::resourceVersion(body) != kube::resourceVersion(lease)) {
        return FakeTransport::status(409, "Conflict", "the object has been modified");
      }
    }
    body["metadata"]["resourceVersion"] = std::to_string(++rv);
    lease = body;
    return FakeTransport::ok(lease);
  }
  nlohmann::json spec() {
    std::lock_guard<std::mutex> l(mu);
    return lease.is_null() ? nlohmann::json() : lease["spec"];
  }
  void setHolder(const std::string& holder) {
    std::lock_guard<std::mutex> l(mu);
    lease = kube::newObject(kube::resources::kLeases, "ns", "lock");
    lease["metadata"]["resourceVersion"] = std::to_string(++rv);
    lease["spec"] = {{"holderIdentity", holder},
                     {"leaseDurationSeconds", 15},
                     {"renewTime", "2024-05-01T10:00:00.000000Z"},
                     {"leaseTransitions", 3}};
  }
  // Another writer changes the Lease (a label, say) and so its resourceVersion.
  void touch() {
    std::lock_guard<std::mutex> l(mu);
    lease["metadata"]["labels"]["touched"] = "yes";
    lease["metadata"]["resourceVersion"] = std::to_string(++rv);
  }
  int count(const std::string& method) {
    std::lock_guard<std::mutex> l(mu);
    return requests[method];
  }
  void setHangWrites(bool on) {
    std::lock_guard<std::mutex> l(mu);
    hangWrites = on;
    hangCv.notify_all();
  }
  bool waitHanging() {
    std::unique_lock<std::mutex> l(mu);
    return hangCv.wait_for(l, 10s, [this] { return hanging > 0; });
  }
  std::mutex mu;
  std::condition_variable hangCv;
  nlohmann::json lease;
  int rv = 0;
  std::map<std::string, int> requests;  // by method
  bool failWrites = false;
  bool hangWrites = false;
  int hanging = 0;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionTest() {
    fake_->setHandler([this](const kube::Request& r) { return server_.handle(r); });
  }
  LeaderElectionConfig config(const std::string& id) {
    LeaderElectionConfig c;
    c.ns = "ns";
    c.name = "lock";
    c.identity = id;
    return c;
  }
  FakeClock clock_;
  LeaseServer server_;
  std::shared_ptr<FakeTransport> fake_ = std::make_shared<FakeTransport>();
  std::shared_ptr<kube::Client> client_ = std::make_shared<kube::Client>(fake_);
};

TEST_F(LeaderElectionTest, ValidatesTimings) {
  auto c = config("a");
  EXPECT_TRUE(validate(c).isOk());
  c.renewDeadline = 15s;
  EXPECT_FALSE(validate(c).isOk());
  c = config("a");
  c.retryPeriod = 9s;
  EXPECT_FALSE(validate(c).isOk());
  c = config("");
  EXPECT_FALSE(validate(c).isOk());
}

TEST_F(LeaderElectionTest, CreatesAFreeLease) {
  LeaderElector e(client_, config("a"), {}, clock_);
  ASSERT_TRUE(e.tryAcquireOrRenew());
  auto spec = server_.spec();
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["renewTime"], "2024-05-01T10:00:00.000000Z");
  EXPECT_EQ(e.leader(), "a");
}

TEST_F(LeaderElectionTest, WaitsForAnotherHoldersLeaseToExpireOnItsOwnClock) {
  server_.setHolder("b");
  LeaderElector e(client_, config("a"), {}, clock_);
  EXPECT_FALSE(e.tryAcquireOrRenew());
  EXPECT_EQ(e.leader(), "b");
  clock_.advance(14s);
  EXPECT_FALSE(e.tryAcquireOrRenew());
  clock_.advance(1s);  // 15 s since we first saw this record unchanged
  EXPECT_TRUE(e.tryAcquireOrRenew());
  auto spec = server_.spec();
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseTransitions"], 4);
  EXPECT_EQ(spec["acquireTime"], spec["renewTime"]);
}

TEST_F(LeaderElectionTest, ARenewalByTheHolderRestartsTheExpiry) {
  server_.setHolder("b");
  LeaderElector e(client_, config("a"), {}, clock_);
  EXPECT_FALSE(e.tryAcquireOrRenew());
  clock_.advance(10s);
  server_.setHolder("b");  // b renewed: the record changed
  {
    std::lock_guard<std::mutex> l(server_.mu);
    server_.lease["spec"]["renewTime"] = "2024-05-01T10:00:10.000000Z";
  }
  EXPECT_FALSE(e.tryAcquireOrRenew());
  clock_.advance(10s);
  EXPECT_FALSE(e.tryAcquireOrRenew());  // only 10 s since the change
  clock_.advance(5s);
  EXPECT_TRUE(e.tryAcquireOrRenew());
}

TEST_F(LeaderElectionTest, AReleasedLeaseIsTakenAtOnce) {
  server_.setHolder("");
  LeaderElector e(client_, config("a"), {}, clock_);
  EXPECT_TRUE(e.tryAcquireOrRenew());
}

TEST_F(LeaderElectionTest, LeadsUntilStoppedThenReleases) {
  std::promise<void> started;
  std::atomic<int> stoppedCalls{0};
  LeaderCallbacks cb;
  cb.onStartedLeading = [&] { started.set_value(); };
  cb.onStoppedLeading = [&] { ++stoppedCalls; };
  LeaderElector e(client_, config("a"), cb, clock_);
  auto result = std::async(std::launch::async, [&] { return e.run(); });
  started.get_future().wait();
  EXPECT_TRUE(e.isLeader());
  // Renewals every retryPeriod keep the lease.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(clock_.waitForWaiters(2));  // renew loop and watchdog
    clock_.advance(2s);
  }
  EXPECT_TRUE(e.isLeader());
  e.stop();
  EXPECT_TRUE(result.get().isOk());
  EXPECT_FALSE(e.isLeader());
  EXPECT_EQ(stoppedCalls, 1);
  auto spec = server_.spec();
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
}

// A candidate run() on its own thread, leading once constructed; stopped and
// joined when it goes out of scope, whatever the test asserted.
class Leading {
 public:
  Leading(std::shared_ptr<kube::Client> client, LeaderElectionConfig config, FakeClock& clock) {
    std::promise<void> started;
    LeaderCallbacks cb;
    cb.onStartedLeading = [&started] { started.set_value(); };
    cb.onStoppedLeading = [this] { ++stoppedCalls; };
    elector = std::make_unique<LeaderElector>(std::move(client), std::move(config), cb, clock);
    result = std::async(std::launch::async, [this] { return elector->run(); });
    started.get_future().wait();
  }
  ~Leading() {
    elector->stop();
    result.wait();
  }
  Leading(const Leading&) = delete;
  Leading& operator=(const Leading&) = delete;
  std::unique_ptr<LeaderElector> elector;
  std::future<Status> result;
  std::atomic<int> stoppedCalls{0};
};

// client-go's fast path: a leader renews with one PUT of the Lease it last
// wrote, no GET; the renewals still move renewTime.
TEST_F(LeaderElectionTest, ALeaderRenewsWithOneWriteAndNoRead) {
  Leading a(client_, config("a"), clock_);
  ASSERT_TRUE(clock_.waitForWaiters(2));  // renew loop and watchdog
  const int gets = server_.count("GET"), puts = server_.count("PUT");
  std::string renewTime = server_.spec()["renewTime"];
  for (int i = 0; i < 5; ++i) {
    clock_.advance(2s);
    ASSERT_TRUE(clock_.waitForWaiters(2));
    EXPECT_NE(server_.spec()["renewTime"], renewTime) << "renewal " << i;
    renewTime = server_.spec()["renewTime"];
  }
  EXPECT_EQ(server_.count("GET"), gets) << "a leader's renewal read the Lease";
  EXPECT_EQ(server_.count("PUT"), puts + 5);
  EXPECT_TRUE(a.elector->isLeader());
}

// The Lease changed under the leader (another writer): the fast PUT is
// refused, and the same attempt reads the Lease and renews from it: still
// leading, no renewal missed. The next renewal is fast again.
TEST_F(LeaderElectionTest, ARefusedFastRenewalReadsTheLeaseAndRenewsInTheSameAttempt) {
  Leading a(client_, config("a"), clock_);
  ASSERT_TRUE(clock_.waitForWaiters(2));
  server_.touch();
  const int gets = server_.count("GET"), puts = server_.count("PUT");
  const std::string before = server_.spec()["renewTime"];
  clock_.advance(2s);
  ASSERT_TRUE(clock_.waitForWaiters(2));
  EXPECT_EQ(server_.count("GET"), gets + 1);
  EXPECT_EQ(server_.count("PUT"), puts + 2) << "the refused fast PUT, then the renewal";
  EXPECT_NE(server_.spec()["renewTime"], before);
  EXPECT_EQ(server_.spec()["holderIdentity"], "a");
  EXPECT_TRUE(a.elector->isLeader());
  clock_.advance(2s);
  ASSERT_TRUE(clock_.waitForWaiters(2));
  EXPECT_EQ(server_.count("GET"), gets + 1) << "fast again after the read";
  EXPECT_EQ(server_.count("PUT"), puts + 3);
  EXPECT_EQ(a.stoppedCalls, 0);
}

// Failed renewals (the API server refuses the write) lose leadership at the renew
// deadline counted from the last successful renewal: still leading 1 ms before it,
// stopped at it (not at leaseDuration, not at the first failure).
TEST_F(LeaderElectionTest, StopsLeadingWhenRenewalsFailForTheRenewDeadline) {
  std::promise<void> started;
  std::promise<void> stopped;
  LeaderCallbacks cb;
  cb.onStartedLeading = [&] { started.set_value(); };
  cb.onStoppedLeading = [&] { stopped.set_value(); };
  const LeaderElectionConfig cfg = config("a");
  LeaderElector e(client_, cfg, cb, clock_);
  auto result = std::async(std::launch::async, [&] { return e.run(); });
  // Whatever fails below, the elector stops before `result` is joined.
  struct StopOnExit {
    LeaderElector& e;
    ~StopOnExit() { e.stop(); }
  } stopOnExit{e};
  started.get_future().wait();  // acquired at the current fake time: the last renewal
  {
    std::lock_guard<std::mutex> l(server_.mu);
    server_.failWrites = true;
  }
  ASSERT_TRUE(clock_.waitForWaiters(2));  // renew loop and watchdog
  auto stoppedFuture = stopped.get_future();
  // Renewals fail every retryPeriod until just before the deadline.
  for (auto left = cfg.renewDeadline - 1ms; left > 0ms;) {
    auto step = std::min<kube::Clock::Duration>(left, cfg.retryPeriod);
    clock_.advance(step);
    left -= step;
    ASSERT_TRUE(clock_.waitForWaiters(2)) << "renew loop and watchdog wait again";
    EXPECT_TRUE(e.isLeader()) << "lost before the renew deadline";
  }
  EXPECT_NE(stoppedFuture.wait_for(0s), std::future_status::ready);
  clock_.advance(1ms);  // the renew deadline since the last successful renewal
  ASSERT_EQ(stoppedFuture.wait_for(10s), std::future_status::ready)
      << "still leading past the renew deadline while renewals fail";
  EXPECT_FALSE(e.isLeader());
  Status st = result.get();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), "leader election lost");
  // A lost lease is not released: it was never ours to clear any more.
  EXPECT_EQ(server_.spec()["holderIdentity"], "a");
}

// Issue 12 item 4: the watchdog declares the lease lost exactly at the renew deadline while
// the renewal call itself hangs (the renew loop cannot notice: it is stuck in the call).
TEST_F(LeaderElectionTest, AHangingRenewalLosesLeadershipAtTheRenewDeadline) {
  std::promise<void> started;
  std::promise<void> stopped;
  LeaderCallbacks cb;
  cb.onStartedLeading = [&] { started.set_value(); };
  cb.onStoppedLeading = [&] { stopped.set_value(); };
  const LeaderElectionConfig cfg = config("a");
  LeaderElector e(client_, cfg, cb, clock_);
  auto result = std::async(std::launch::async, [&] { return e.run(); });
  // Whatever fails below, the hanging call is released before `result` is joined.
  struct Unhang {
    LeaseServer& s;
    LeaderElector& e;
    ~Unhang() {
      s.setHangWrites(false);
      e.stop();
    }
  } unhang{server_, e};
  started.get_future().wait();
  server_.setHangWrites(true);
  ASSERT_TRUE(clock_.waitForWaiters(2));  // renew loop and watchdog
  clock_.advance(cfg.retryPeriod);        // the renewal starts and hangs
  ASSERT_TRUE(server_.waitHanging());
  ASSERT_TRUE(clock_.waitForWaiters(1));  // the watchdog alone
  auto stoppedFuture = stopped.get_future();
  clock_.advance(cfg.renewDeadline - cfg.retryPeriod - 1ms);
  ASSERT_TRUE(clock_.waitForWaiters(1));  // woke, deadline not reached: waits again
  EXPECT_TRUE(e.isLeader()) << "lost before the renew deadline";
  clock_.advance(1ms);  // the renew deadline since the last renewal
  ASSERT_EQ(stoppedFuture.wait_for(10s), std::future_status::ready)
      << "still leading past the renew deadline while the renewal hangs";
  EXPECT_FALSE(e.isLeader());
  server_.setHangWrites(false);
  Status st = result.get();
  EXPECT_EQ(st.code(), Code::kUnavailable) << st.toString();
}

// The FakeClock must not count a waiter whose deadline passed but which has not run yet:
// LeadsUntilStoppedThenReleases advanced again on such stale waiters and flaked.
TEST(FakeClockTest, AWaiterWhoseDeadlinePassedIsNotCountedBeforeItRuns) {
  FakeClock clock;
  std::mutex m;
  std::condition_variable cv;
  std::thread waiter([&] {
    std::unique_lock<std::mutex> l(m);
    auto deadline = clock.now() + 1s;
    while (clock.now() < deadline) clock.waitUntil(l, cv, deadline);
  });
  ASSERT_TRUE(clock.waitForWaiters(1));
  {
    // Registered waiters hold `m` except inside their wait: holding it, the waiter is
    // registered and cannot return.
    std::lock_guard<std::mutex> hold(m);
    clock.advance(1s);
    EXPECT_EQ(clock.waiters(), 0);
  }
  waiter.join();
}

TEST_F(LeaderElectionTest, TwoCandidatesOneLeader) {
  LeaderElector a(client_, config("a"), {}, clock_);
  LeaderElector b(client_, config("b"), {}, clock_);
  EXPECT_TRUE(a.tryAcquireOrRenew());
  EXPECT_FALSE(b.tryAcquireOrRenew());
  clock_.advance(2s);
  EXPECT_TRUE(a.tryAcquireOrRenew());
  EXPECT_FALSE(b.tryAcquireOrRenew());
  EXPECT_EQ(b.leader(), "a");
}

}  // namespace
}  // namespace lockstep::runtime
