// Leader election against a tiny in-memory Lease API (FakeTransport handler).
#include "operator/runtime/leader_election.h"

#include <future>

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
    std::lock_guard<std::mutex> l(mu);
    if (failWrites && r.method != "GET") return unavailable("injected");
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
  std::mutex mu;
  nlohmann::json lease;
  int rv = 0;
  bool failWrites = false;
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

TEST_F(LeaderElectionTest, StopsLeadingWhenRenewalsFailForTheRenewDeadline) {
  std::promise<void> started;
  std::promise<void> stopped;
  LeaderCallbacks cb;
  cb.onStartedLeading = [&] { started.set_value(); };
  cb.onStoppedLeading = [&] { stopped.set_value(); };
  LeaderElector e(client_, config("a"), cb, clock_);
  auto result = std::async(std::launch::async, [&] { return e.run(); });
  started.get_future().wait();
  {
    std::lock_guard<std::mutex> l(server_.mu);
    server_.failWrites = true;
  }
  auto stoppedFuture = stopped.get_future();
  for (int i = 0; i < 10 && stoppedFuture.wait_for(0s) != std::future_status::ready; ++i) {
    clock_.waitForWaiters(1, 1000ms);
    clock_.advance(2s);
  }
  stoppedFuture.wait();
  EXPECT_FALSE(e.isLeader());
  Status st = result.get();
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), "leader election lost");
  // A lost lease is not released: it was never ours to clear any more.
  EXPECT_EQ(server_.spec()["holderIdentity"], "a");
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
