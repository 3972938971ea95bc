// The controller loop's result handling, driven by a FakeClock.
#include "operator/runtime/controller.h"

#include <deque>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

// Returns scripted results and records calls.
class ScriptedReconciler : public Reconciler {
 public:
  Result reconcile(const Request& r) override {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back(r.key());
    Result res = script.empty() ? Result::done() : script.front();
    if (!script.empty()) script.pop_front();
    return res;
  }
  std::mutex mu;
  std::deque<Result> script;
  std::vector<std::string> calls;
};

// Observed after the queue was updated: a sync point for the test.
class RecordingMetrics : public ReconcileMetrics {
 public:
  void observe(const std::string& result, double) override {
    std::lock_guard<std::mutex> l(mu);
    results.push_back(result);
    cv.notify_all();
  }
  bool waitFor(size_t n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, 10s, [&] { return results.size() >= n; });
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> results;
};

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ControllerOptions o;
    o.name = "widgets";
    o.workers = 2;
    controller_ =
        std::make_unique<Controller>(std::move(o), reconciler_, clock_, nullptr, metrics_);
  }
  FakeClock clock_;
  std::shared_ptr<ScriptedReconciler> reconciler_ = std::make_shared<ScriptedReconciler>();
  std::shared_ptr<RecordingMetrics> metrics_ = std::make_shared<RecordingMetrics>();
  std::unique_ptr<Controller> controller_;
};

TEST_F(ControllerTest, ErrorsRequeueWithGrowingBackoffAndSuccessForgets) {
  reconciler_->script = {Result::failed(unavailable("api down")),
                         Result::failed(Status(Code::kConflict, "stale")), Result::done()};
  controller_->start();
  controller_->enqueue({"ns", "w"});
  ASSERT_TRUE(metrics_->waitFor(1));
  EXPECT_EQ(controller_->queue().numRequeues("ns/w"), 1);
  clock_.advance(5ms);
  ASSERT_TRUE(metrics_->waitFor(2));
  EXPECT_EQ(controller_->queue().numRequeues("ns/w"), 2);
  clock_.advance(9ms);
  EXPECT_EQ(controller_->queue().waitingLen(), 1u);
  clock_.advance(1ms);
  ASSERT_TRUE(metrics_->waitFor(3));
  EXPECT_EQ(controller_->queue().numRequeues("ns/w"), 0);
  EXPECT_EQ(metrics_->results, (std::vector<std::string>{"error", "error", "success"}));
  controller_->stop();
}

TEST_F(ControllerTest, RequeueAfterForgetsBackoffAndWaitsExactly) {
  reconciler_->script = {Result::failed(unavailable("x")), Result::after(30s), Result::done()};
  controller_->start();
  controller_->enqueue({"ns", "w"});
  ASSERT_TRUE(metrics_->waitFor(1));
  clock_.advance(5ms);
  ASSERT_TRUE(metrics_->waitFor(2));
  EXPECT_EQ(controller_->queue().numRequeues("ns/w"), 0);  // forgotten
  clock_.advance(29s);
  EXPECT_EQ(controller_->queue().len(), 0u);
  clock_.advance(1s);
  ASSERT_TRUE(metrics_->waitFor(3));
  EXPECT_EQ(metrics_->results[1], "requeue_after");
  controller_->stop();
}

TEST_F(ControllerTest, RequeueIsRateLimited) {
  reconciler_->script = {Result::requeueNow()};
  controller_->start();
  controller_->enqueue({"", "cluster-scoped"});
  ASSERT_TRUE(metrics_->waitFor(1));
  EXPECT_EQ(metrics_->results[0], "requeue");
  EXPECT_EQ(controller_->queue().waitingLen(), 1u);
  clock_.advance(5ms);
  ASSERT_TRUE(metrics_->waitFor(2));
  EXPECT_EQ(reconciler_->calls, (std::vector<std::string>{"cluster-scoped", "cluster-scoped"}));
  controller_->stop();
}

TEST_F(ControllerTest, ThrowingReconcilerIsAnError) {
  class Thrower : public Reconciler {
    Result reconcile(const Request&) override { throw std::runtime_error("boom"); }
  };
  ControllerOptions o;
  o.name = "thrower";
  Controller c(std::move(o), std::make_shared<Thrower>(), clock_, nullptr, metrics_);
  c.start();
  c.enqueue({"ns", "x"});
  ASSERT_TRUE(metrics_->waitFor(1));
  EXPECT_EQ(metrics_->results[0], "error");
  c.stop();
}

TEST_F(ControllerTest, TerminalErrorsAreCountedButNotRequeued) {
  reconciler_->script = {Result::terminalError(invalidArgument("spec.lock needs inline"))};
  controller_->start();
  controller_->enqueue({"ns", "w"});
  ASSERT_TRUE(metrics_->waitFor(1));
  EXPECT_EQ(metrics_->results[0], "error");
  EXPECT_EQ(controller_->queue().numRequeues("ns/w"), 0);
  EXPECT_EQ(controller_->queue().waitingLen(), 0u);
  clock_.advance(1h);
  EXPECT_EQ(reconciler_->calls.size(), 1u);
  controller_->stop();
}

TEST(ResultFor, OneMappingFromStatusToWhatHappensNext) {
  EXPECT_TRUE(resultFor(Status::ok()).error.isOk());
  EXPECT_TRUE(resultFor(notFound("gone")).error.isOk());  // nothing left to do
  Result invalid = resultFor(invalidArgument("bad input"));
  EXPECT_FALSE(invalid.error.isOk());
  EXPECT_TRUE(invalid.terminal);
  for (Code c : {Code::kUnavailable, Code::kConflict, Code::kDeadlineExceeded, Code::kGone,
                 Code::kInternal, Code::kForbidden, Code::kInvalid}) {
    Result r = resultFor(Status(c, "x"));
    EXPECT_EQ(r.error.code(), c);
    EXPECT_FALSE(r.terminal) << codeName(c);  // requeued with backoff
  }
}

TEST(RequestTest, KeysRoundTrip) {
  EXPECT_EQ(Request::fromKey("ns/name"), (Request{"ns", "name"}));
  EXPECT_EQ(Request::fromKey("node-1"), (Request{"", "node-1"}));
  EXPECT_EQ((Request{"a", "b"}).key(), "a/b");
}

TEST(MapFuncTest, OwnerMapping) {
  kube::Object job = testing::testObject("ml", "gate", "1", "Job");
  EXPECT_TRUE(requestForOwner("ModelRelease")(job).empty());
  kube::setOwnerReference(job, {"lockstep.dev/v1alpha1", "ModelRelease", "mr", "u", true, true});
  auto reqs = requestForOwner("ModelRelease", "lockstep.dev")(job);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0], (Request{"ml", "mr"}));
  EXPECT_TRUE(requestForOwner("ModelRelease", "other.dev")(job).empty());
  EXPECT_TRUE(requestForOwner("RuntimeEnv")(job).empty());
  EXPECT_EQ(requestForObject()(job)[0], (Request{"ml", "gate"}));
}

}  // namespace
}  // namespace lockstep::runtime
