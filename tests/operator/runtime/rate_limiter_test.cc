#include "operator/runtime/rate_limiter.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace lockstep::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;

TEST(RateLimiterTest, PerItemBackoffDoublesFrom5msAndCapsAt1000s) {
  ItemExponentialRateLimiter l(5ms, 1000s);
  Clock::Duration expected = 5ms;
  for (int i = 0; i < 18; ++i) {
    EXPECT_EQ(l.when("a"), expected) << "failure " << i;
    expected *= 2;
  }
  // 5 ms * 2^18 = 1310.72 s > 1000 s: capped from here on, without overflow.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(l.when("a"), Clock::Duration(1000s));
  EXPECT_EQ(l.numRequeues("a"), 118);
  EXPECT_EQ(l.when("b"), Clock::Duration(5ms));  // per item
  l.forget("a");
  EXPECT_EQ(l.numRequeues("a"), 0);
  EXPECT_EQ(l.when("a"), Clock::Duration(5ms));
}

TEST(RateLimiterTest, TokenBucketAllowsBurstThenTenPerSecond) {
  FakeClock clock;
  BucketRateLimiter l(10, 100, clock);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(l.when("x" + std::to_string(i)), Clock::Duration::zero());
  // Reservations queue up: each further one waits another 100 ms.
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(l.when("y")), 100ms);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(l.when("z")), 200ms);
  clock.advance(1200ms);  // refills 12 tokens, 2 of them owed
  for (int i = 0; i < 10; ++i) EXPECT_EQ(l.when("w"), Clock::Duration::zero()) << i;
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(l.when("w")), 100ms);
  clock.advance(1h);  // never more than the burst
  for (int i = 0; i < 100; ++i) EXPECT_EQ(l.when("v"), Clock::Duration::zero());
  EXPECT_GT(l.when("v"), Clock::Duration::zero());
}

TEST(RateLimiterTest, DefaultIsTheMaxOfBoth) {
  FakeClock clock;
  auto l = defaultControllerRateLimiter(clock);
  // Per-item backoff dominates for a few items ...
  EXPECT_EQ(l->when("a"), Clock::Duration(5ms));
  EXPECT_EQ(l->when("a"), Clock::Duration(10ms));
  // ... the bucket dominates when many distinct items fail at once.
  for (int i = 0; i < 98; ++i) (void)l->when("item" + std::to_string(i));
  auto d = l->when("fresh");
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(d), 100ms);
  EXPECT_EQ(l->numRequeues("a"), 2);
  l->forget("a");
  EXPECT_EQ(l->numRequeues("a"), 0);
}

}  // namespace
}  // namespace lockstep::runtime
