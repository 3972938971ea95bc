// The Manager's Runnables and the controller builder, without a cluster: a
// Manager with no informers syncs at once; its client talks to a FakeTransport.
#include "operator/runtime/manager.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "operator/runtime/builder.h"
#include "operator/runtime/write_guard.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::runtime {
namespace {

using namespace std::chrono_literals;

// Blocks in start() until stop(), or fails at once with `fail`.
class TestRunnable final : public Runnable {
 public:
  explicit TestRunnable(Status fail = Status::ok()) : fail_(std::move(fail)) {}
  Status start() override {
    std::unique_lock<std::mutex> lock(mu_);
    started_ = true;
    cv_.notify_all();
    if (!fail_.isOk()) return fail_;
    cv_.wait(lock, [this] { return stopped_; });
    return Status::ok();
  }
  void stop() noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  bool waitStarted() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [this] { return started_; });
  }
  bool started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  bool stopped() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }

 private:
  Status fail_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool stopped_ = false;
};

class ManagerTest : public ::testing::Test {
 protected:
  ManagerOptions options() {
    ManagerOptions o;
    o.healthAddress = "";
    o.metricsAddress = "";
    o.clock = &clock_;
    return o;
  }
  testing::FakeClock clock_;
  std::shared_ptr<kube::Client> client_ =
      std::make_shared<kube::Client>(std::make_shared<testing::FakeTransport>());
};

TEST_F(ManagerTest, RunsRunnablesUntilStopped) {
  Manager m(client_, options());
  auto everyReplica = std::make_shared<TestRunnable>();
  auto leaderOnly = std::make_shared<TestRunnable>();
  m.add(everyReplica, false);
  m.add(leaderOnly, true);  // without leader election this replica leads
  Status result;
  std::thread run([&] { result = m.run(); });
  ASSERT_TRUE(everyReplica->waitStarted());
  ASSERT_TRUE(leaderOnly->waitStarted());
  EXPECT_EQ(&m.clock(), &clock_);
  m.stop();
  run.join();
  EXPECT_TRUE(result.isOk()) << result.toString();
  EXPECT_TRUE(everyReplica->stopped());
  EXPECT_TRUE(leaderOnly->stopped());
}

TEST_F(ManagerTest, AFailingRunnableStopsTheManagerWithItsError) {
  Manager m(client_, options());
  auto healthy = std::make_shared<TestRunnable>();
  m.add(healthy, false);
  m.add(std::make_shared<TestRunnable>(unavailable("bind: address in use")), false);
  Status result = m.run();  // returns by itself
  EXPECT_EQ(result.code(), Code::kUnavailable);
  EXPECT_NE(result.message().find("address in use"), std::string::npos);
  EXPECT_TRUE(healthy->stopped());
}

TEST_F(ManagerTest, StopBeforeRunStartsNothing) {
  Manager m(client_, options());
  auto r = std::make_shared<TestRunnable>();
  m.add(r, false);
  m.stop();
  EXPECT_TRUE(m.run().isOk());
  EXPECT_FALSE(r->started());
}

class NoopReconciler final : public Reconciler {
 public:
  Result reconcile(const Request&) override { return Result::done(); }
};

TEST_F(ManagerTest, BuilderRegistersOneControllerOnTheSharedInformers) {
  Manager m(client_, options());
  kube::Informer& jobs = m.informer(kube::resources::kJobs);
  Controller& c = ControllerBuilder(m, "widgets")
                      .workers(3)
                      .forKind(kube::resources::kConfigMaps)
                      .owns(kube::resources::kJobs)
                      .watches(kube::resources::kNodes,
                               [](const kube::Object&) {
                                 return std::vector<Request>{{"ns", "all"}};
                               })
                      .complete(std::make_shared<NoopReconciler>());
  EXPECT_EQ(c.name(), "widgets");
  // The builder reuses the informer already made for Jobs.
  EXPECT_EQ(&m.informer(kube::resources::kJobs), &jobs);
}

// A tiny API server for the hand-over tests: one Lease with optimistic concurrency, and
// ConfigMap patches that record who held the Lease when each write arrived.
class HandOverServer {
 public:
  std::optional<testing::FakeReply> handle(const kube::Request& r) {
    std::lock_guard<std::mutex> l(mu_);
    if (r.path.find("/configmaps/") != std::string::npos) {
      writeHolders_.push_back(holderLocked());
      return testing::FakeTransport::ok(testing::testObject("ns", "cm", "1"));
    }
    if (r.method == "GET") {
      if (lease_.is_null()) return testing::FakeTransport::status(404, "NotFound", "not found");
      return testing::FakeTransport::ok(lease_);
    }
    if (failLeaseWrites_) return unavailable("injected");
    auto body = nlohmann::json::parse(r.body);
    if (r.method == "PUT" && kube::resourceVersion(body) != kube::resourceVersion(lease_)) {
      return testing::FakeTransport::status(409, "Conflict", "modified");
    }
    body["metadata"]["resourceVersion"] = std::to_string(++rv_);
    lease_ = body;
    if (holderLocked().empty()) released_ = true;
    changed_.notify_all();
    return testing::FakeTransport::ok(lease_);
  }
  std::string holder() {
    std::lock_guard<std::mutex> l(mu_);
    return holderLocked();
  }
  bool released() {
    std::lock_guard<std::mutex> l(mu_);
    return released_;
  }
  std::vector<std::string> writeHolders() {
    std::lock_guard<std::mutex> l(mu_);
    return writeHolders_;
  }
  void failLeaseWrites() {
    std::lock_guard<std::mutex> l(mu_);
    failLeaseWrites_ = true;
  }

 private:
  std::string holderLocked() const {
    return lease_.is_null() ? "" : lease_["spec"].value("holderIdentity", "");
  }
  std::mutex mu_;
  std::condition_variable changed_;
  nlohmann::json lease_;
  int rv_ = 0;
  bool released_ = false;
  bool failLeaseWrites_ = false;
  std::vector<std::string> writeHolders_;
};

// Counts reconciles; the first one blocks until `release` says so, then writes a ConfigMap
// through the Manager's client and records the write's Status.
class BlockingWriter final : public Reconciler {
 public:
  explicit BlockingWriter(std::function<bool()> release) : release_(std::move(release)) {}
  void setClient(kube::Client* c) { client_ = c; }
  Result reconcile(const Request& r) override {
    int n = ++calls_;
    if (n == 1) {
      {
        std::lock_guard<std::mutex> l(mu_);
        inFlight_ = true;
        cv_.notify_all();
      }
      // Polls a state of the code under test (not a delay standing in for an event): the
      // queue shutting down, the lease released or lost.
      while (!release_()) std::this_thread::yield();
    }
    Status st =
        client_->mergePatch(kube::resources::kConfigMaps, r.ns, r.name, {{"data", {{"x", "1"}}}})
            .status();
    std::lock_guard<std::mutex> l(mu_);
    writes_.push_back(st);
    return Result::done();
  }
  int calls() const { return calls_; }
  bool waitInFlight() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, 10s, [this] { return inFlight_; });
  }
  std::vector<Status> writes() {
    std::lock_guard<std::mutex> l(mu_);
    return writes_;
  }

 private:
  std::function<bool()> release_;
  kube::Client* client_ = nullptr;
  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool inFlight_ = false;
  std::vector<Status> writes_;
};

class ManagerHandOverTest : public ManagerTest {
 protected:
  ManagerHandOverTest() {
    fake_->setHandler([this](const kube::Request& r) { return server_.handle(r); });
  }
  ManagerOptions leaderOptions() {
    ManagerOptions o = options();
    o.leaderElection = true;
    o.leaderElectionConfig.ns = "ns";
    o.leaderElectionConfig.name = "lock";
    o.leaderElectionConfig.identity = "me";
    return o;
  }
  // Five queued requests; the first one in flight when this returns.
  void startWithBacklog(Manager& m, Controller& c, BlockingWriter& w) {
    for (int i = 0; i < 5; ++i) c.enqueue({"ns", "cm-" + std::to_string(i)});
    runner_ = std::thread([&m, this] { result_ = m.run(); });
    ASSERT_TRUE(w.waitInFlight());
    ASSERT_EQ(server_.holder(), "me");
  }
  HandOverServer server_;
  std::shared_ptr<testing::FakeTransport> fake_ = std::make_shared<testing::FakeTransport>();
  std::thread runner_;
  Status result_;
};

TEST_F(ManagerHandOverTest, StopFinishesInFlightReconcilesThenReleasesAndDropsTheBacklog) {
  auto client = std::make_shared<kube::Client>(fake_);
  Manager m(client, leaderOptions());
  Controller* c = nullptr;
  // The in-flight reconcile continues once its controller is stopping, or once the lease
  // was released (the defect: released while the controller still works).
  auto writer = std::make_shared<BlockingWriter>(
      [&] { return server_.released() || (c && c->queue().shuttingDown()); });
  writer->setClient(&m.client());
  ControllerOptions co;
  co.name = "handover";
  c = &m.addController(std::move(co), writer);
  startWithBacklog(m, *c, *writer);
  m.stop();
  runner_.join();
  EXPECT_TRUE(result_.isOk()) << result_.toString();
  // The in-flight reconcile wrote while this replica still held the lease...
  ASSERT_EQ(server_.writeHolders().size(), 1u);
  EXPECT_EQ(server_.writeHolders()[0], "me");
  // ...the four queued requests were left to the next leader, not drained...
  EXPECT_EQ(writer->calls(), 1);
  // ...and the lease was released after that.
  EXPECT_EQ(server_.holder(), "");
}

TEST_F(ManagerHandOverTest, ALostLeaseRefusesWritesAtOnceAndDoesNotDrain) {
  auto client = std::make_shared<kube::Client>(fake_);
  Manager m(client, leaderOptions());
  auto writer = std::make_shared<BlockingWriter>([&] { return !m.isLeader(); });
  writer->setClient(&m.client());
  ControllerOptions co;
  co.name = "handover";
  Controller& c = m.addController(std::move(co), writer);
  startWithBacklog(m, c, *writer);
  server_.failLeaseWrites();
  // Renewals fail; past the renew deadline the lease is lost (watchdog or renew loop).
  ASSERT_TRUE(clock_.waitForWaiters(2));  // the renew loop and the watchdog
  clock_.advance(leaderOptions().leaderElectionConfig.renewDeadline + 1s);
  runner_.join();
  EXPECT_EQ(result_.code(), Code::kUnavailable) << result_.toString();
  // The write of the reconcile in flight was refused without reaching the server.
  EXPECT_TRUE(server_.writeHolders().empty());
  ASSERT_EQ(writer->writes().size(), 1u);
  EXPECT_EQ(writer->writes()[0].code(), Code::kCancelled) << writer->writes()[0].toString();
  EXPECT_EQ(writer->calls(), 1);
  // Never released: it was not ours any more.
  EXPECT_EQ(server_.holder(), "me");
}

TEST(ClientWriteGuard, RefusesWritesButNotReads) {
  auto fake = std::make_shared<testing::FakeTransport>();
  fake->setHandler([](const kube::Request&) -> std::optional<testing::FakeReply> {
    return testing::FakeTransport::ok(testing::testObject("ns", "cm", "1"));
  });
  auto base = std::make_shared<kube::Client>(fake);
  auto guarded = withWriteGuard(base, [] { return Status(Code::kCancelled, "not the leader"); });
  EXPECT_TRUE(guarded->get(kube::resources::kConfigMaps, "ns", "cm").isOk());
  auto w = guarded->mergePatch(kube::resources::kConfigMaps, "ns", "cm", {{"data", {}}});
  EXPECT_EQ(w.status().code(), Code::kCancelled);
  EXPECT_NE(w.status().message().find("not the leader"), std::string::npos);
  EXPECT_EQ(guarded->remove(kube::resources::kConfigMaps, "ns", "cm").code(), Code::kCancelled);
  EXPECT_EQ(fake->requestCount(), 1u);  // only the GET was sent
  EXPECT_TRUE(base->remove(kube::resources::kConfigMaps, "ns", "cm").isOk());
}

class ThrowsNonStandard final : public Reconciler {
 public:
  Result reconcile(const Request&) override {
    ++calls;
    throw 42;  // NOLINT: the point of the test
  }
  std::atomic<int> calls{0};
};

TEST_F(ManagerTest, AReconcilerThrowingANonStandardExceptionDoesNotEndTheProcess) {
  ControllerOptions co;
  co.name = "thrower";
  auto r = std::make_shared<ThrowsNonStandard>();
  Controller c(std::move(co), r, clock_);
  c.enqueue({"ns", "a"});
  c.start();
  // The worker survived and waits for the backoff of the failed request.
  ASSERT_TRUE(clock_.waitForWaiters(1));
  EXPECT_EQ(r->calls, 1);
  EXPECT_EQ(c.queue().waitingLen(), 1u);  // failed: requeued with backoff
  c.stop();
}

TEST(GenerationChanged, FiltersStatusOnlyUpdates) {
  kube::Object a = {{"metadata", {{"generation", 1}}}, {"status", {{"x", 1}}}};
  kube::Object b = a;
  b["status"]["x"] = 2;
  EXPECT_FALSE(generationChanged()(a, b));
  b["metadata"]["generation"] = 2;
  EXPECT_TRUE(generationChanged()(a, b));
}

}  // namespace
}  // namespace lockstep::runtime
