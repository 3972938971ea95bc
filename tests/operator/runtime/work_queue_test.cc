// Work-queue semantics of client-go, driven by a FakeClock (no sleeps).
#include "operator/runtime/work_queue.h"

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace lockstep::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

class CountingMetrics : public QueueMetrics {
 public:
  void added() override { ++adds; }
  void depth(size_t n) override { lastDepth = static_cast<int>(n); }
  void retried() override { ++retries; }
  std::atomic<int> adds{0}, lastDepth{0}, retries{0};
};

class WorkQueueTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  std::shared_ptr<CountingMetrics> metrics_ = std::make_shared<CountingMetrics>();
  WorkQueue q_{"test", clock_, nullptr, metrics_};
};

TEST_F(WorkQueueTest, DeduplicatesQueuedItems) {
  q_.add("a");
  q_.add("a");
  q_.add("b");
  q_.add("a");
  EXPECT_EQ(q_.len(), 2u);
  EXPECT_EQ(metrics_->adds, 2);
  EXPECT_EQ(metrics_->lastDepth, 2);
  EXPECT_EQ(q_.get(), "a");
  EXPECT_EQ(q_.get(), "b");
  EXPECT_EQ(q_.len(), 0u);
}

TEST_F(WorkQueueTest, ItemAddedWhileProcessingRunsAgainOnceAfterDone) {
  q_.add("a");
  ASSERT_EQ(q_.get(), "a");
  q_.add("a");
  q_.add("a");
  // Not handed to another worker while being processed.
  EXPECT_EQ(q_.len(), 0u);
  EXPECT_EQ(q_.processingLen(), 1u);
  q_.done("a");
  EXPECT_EQ(q_.len(), 1u);
  ASSERT_EQ(q_.get(), "a");
  q_.done("a");
  EXPECT_EQ(q_.len(), 0u);
  EXPECT_EQ(q_.processingLen(), 0u);
}

TEST_F(WorkQueueTest, DelayedAddBecomesReadyOnTime) {
  q_.addAfter("a", 1s);
  EXPECT_EQ(q_.waitingLen(), 1u);
  EXPECT_EQ(q_.len(), 0u);
  clock_.advance(999ms);
  EXPECT_EQ(q_.len(), 0u);
  clock_.advance(1ms);
  EXPECT_EQ(q_.len(), 1u);
  EXPECT_EQ(q_.waitingLen(), 0u);
  EXPECT_EQ(q_.get(), "a");
}

TEST_F(WorkQueueTest, EarlierDelayWinsAndZeroDelayIsImmediate) {
  q_.addAfter("a", 10s);
  q_.addAfter("a", 1s);
  q_.addAfter("a", 5s);
  EXPECT_EQ(q_.waitingLen(), 1u);
  clock_.advance(1s);
  EXPECT_EQ(q_.len(), 1u);
  q_.addAfter("b", 0s);
  EXPECT_EQ(q_.len(), 2u);
}

TEST_F(WorkQueueTest, DelayedItemAlreadyQueuedIsNotDuplicated) {
  q_.add("a");
  q_.addAfter("a", 1s);
  clock_.advance(1s);
  EXPECT_EQ(q_.len(), 1u);
}

TEST_F(WorkQueueTest, BlockedGetWakesWhenTheClockReachesADelayedItem) {
  auto got = std::async(std::launch::async, [&] { return q_.get(); });
  q_.addAfter("a", 30s);
  ASSERT_TRUE(clock_.waitForWaiters(1));
  clock_.advance(30s);
  EXPECT_EQ(got.get(), "a");
}

TEST_F(WorkQueueTest, RateLimitedAddsBackOffExponentiallyAndForgetResets) {
  q_.addRateLimited("a");
  EXPECT_EQ(q_.numRequeues("a"), 1);
  EXPECT_EQ(metrics_->retries, 1);
  clock_.advance(4ms);
  EXPECT_EQ(q_.len(), 0u);
  clock_.advance(1ms);  // 5 ms
  ASSERT_EQ(q_.len(), 1u);
  ASSERT_EQ(q_.get(), "a");
  q_.done("a");
  q_.addRateLimited("a");  // 10 ms
  clock_.advance(9ms);
  EXPECT_EQ(q_.len(), 0u);
  clock_.advance(1ms);
  ASSERT_EQ(q_.len(), 1u);
  ASSERT_EQ(q_.get(), "a");
  q_.done("a");
  q_.forget("a");
  EXPECT_EQ(q_.numRequeues("a"), 0);
  q_.addRateLimited("a");  // back to 5 ms
  clock_.advance(5ms);
  EXPECT_EQ(q_.len(), 1u);
}

TEST_F(WorkQueueTest, ShutDownHandsOutQueuedItemsThenStops) {
  q_.add("a");
  q_.add("b");
  q_.addAfter("later", 1s);
  q_.shutDown();
  q_.add("c");             // ignored
  q_.addRateLimited("d");  // ignored
  EXPECT_TRUE(q_.shuttingDown());
  EXPECT_EQ(q_.get(), "a");
  EXPECT_EQ(q_.get(), "b");
  EXPECT_EQ(q_.get(), std::nullopt);
  clock_.advance(2s);
  EXPECT_EQ(q_.get(), std::nullopt);  // delayed items are dropped
}

TEST_F(WorkQueueTest, ShutDownWakesBlockedWorkers) {
  auto w1 = std::async(std::launch::async, [&] { return q_.get(); });
  auto w2 = std::async(std::launch::async, [&] { return q_.get(); });
  ASSERT_TRUE(clock_.waitForWaiters(2));
  q_.shutDown();
  EXPECT_EQ(w1.get(), std::nullopt);
  EXPECT_EQ(w2.get(), std::nullopt);
}

TEST_F(WorkQueueTest, ShutDownWithDrainWaitsForInFlightItems) {
  q_.add("a");
  ASSERT_EQ(q_.get(), "a");
  auto drained = std::async(std::launch::async, [&] { q_.shutDownWithDrain(); });
  // The drainer blocks (a waiter on the clock) while "a" is processing; a drain that
  // returned at once would never become a waiter, and this fails after its bound.
  ASSERT_TRUE(clock_.waitForWaiters(1)) << "shutDownWithDrain did not wait for \"a\"";
  EXPECT_TRUE(q_.shuttingDown());
  EXPECT_EQ(drained.wait_for(0s), std::future_status::timeout);
  EXPECT_EQ(q_.processingLen(), 1u);
  q_.done("a");
  drained.get();
  EXPECT_EQ(q_.get(), std::nullopt);
}

TEST_F(WorkQueueTest, ManyWorkersNeverProcessOneItemConcurrently) {
  constexpr int kWorkers = 4;
  std::map<std::string, std::atomic<int>> inFlight;
  for (int i = 0; i < 5; ++i) inFlight["k" + std::to_string(i)] = 0;
  std::atomic<int> overlaps{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto item = q_.get()) {
        if (inFlight[*item].fetch_add(1) != 0) ++overlaps;
        for (int i = 0; i < 1000; ++i) q_.add(*item);  // re-adds while processing
        inFlight[*item].fetch_sub(1);
        ++processed;
        q_.done(*item);
      }
    });
  }
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 5; ++i) q_.add("k" + std::to_string(i));
  }
  q_.shutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_GT(processed, 0);
}

}  // namespace
}  // namespace lockstep::runtime
