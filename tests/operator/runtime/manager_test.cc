// The Manager's Runnables and the controller builder, without a cluster: a
// Manager with no informers syncs at once; its client talks to a FakeTransport.
#include "operator/runtime/manager.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "operator/runtime/builder.h"
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
