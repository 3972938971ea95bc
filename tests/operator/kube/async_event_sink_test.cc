#include "operator/kube/async_event_sink.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace lockstep::kube {
namespace {

using std::chrono::milliseconds;

// The wrapped sink, with knobs: hold every write until released, fail writes.
class GatedSink final : public EventSink {
 public:
  Status record(const Object& involved, const std::string& type, const std::string& reason,
                const std::string& message) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    seen_.push_back(involved);
    reasons_.push_back(reason);
    return fail_;
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void failWith(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = std::move(s);
  }
  bool waitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return entered_ >= n; });
  }
  std::vector<std::string> reasons() {
    std::lock_guard<std::mutex> lock(mu_);
    return reasons_;
  }
  std::vector<Object> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int entered_ = 0;
  Status fail_;
  std::vector<std::string> reasons_;
  std::vector<Object> seen_;
};

Object runtimeEnv(const std::string& name) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "RuntimeEnv"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", "u-" + name},
            {"resourceVersion", "7"},
            {"labels", {{"a", "b"}}}}},
          {"spec", {{"lock", {{"inline", std::string(4096, 'x')}}}}}};
}

// record() does not wait for the Events API; the sender writes in order, and
// flush() returns once what was recorded before it has been written.
TEST(AsyncEventSinkTest, RecordReturnsAtOnceAndTheSenderWritesInOrder) {
  GatedSink inner;
  AsyncEventSink sink(inner);
  for (const char* reason : {"First", "Second", "Third"})
    EXPECT_TRUE(sink.normal(runtimeEnv("torch"), reason, "m").isOk());  // the write is held
  ASSERT_TRUE(inner.waitEntered(1));
  EXPECT_FALSE(sink.flush(milliseconds(50)));  // held: not written yet
  inner.open();
  EXPECT_TRUE(sink.flush(milliseconds(10000)));
  EXPECT_EQ(inner.reasons(), (std::vector<std::string>{"First", "Second", "Third"}));
  EXPECT_EQ(sink.dropped(), 0u);
}

// The Event keeps only what names the object, not its spec (a queue of Events
// must not pin copies of large objects).
TEST(AsyncEventSinkTest, KeepsOnlyTheObjectReference) {
  GatedSink inner;
  inner.open();
  AsyncEventSink sink(inner);
  EXPECT_TRUE(sink.warning(runtimeEnv("torch"), "Resolved", "m").isOk());
  ASSERT_TRUE(sink.flush(milliseconds(10000)));
  ASSERT_EQ(inner.seen().size(), 1u);
  const Object want = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "RuntimeEnv"},
      {"metadata",
       {{"name", "torch"}, {"namespace", "ml"}, {"uid", "u-torch"}, {"resourceVersion", "7"}}}};
  EXPECT_EQ(inner.seen()[0], want);
}

// Past `capacity` waiting Events a new one is dropped and counted; flush()
// does not wait for dropped Events.
TEST(AsyncEventSinkTest, DropsPastCapacityAndCountsThem) {
  GatedSink inner;
  AsyncEventSink sink(inner, /*capacity=*/2);
  EXPECT_TRUE(sink.normal(runtimeEnv("a"), "InFlight", "m").isOk());
  ASSERT_TRUE(inner.waitEntered(1));  // the sender holds the first; two may wait
  EXPECT_TRUE(sink.normal(runtimeEnv("b"), "Queued1", "m").isOk());
  EXPECT_TRUE(sink.normal(runtimeEnv("c"), "Queued2", "m").isOk());
  EXPECT_TRUE(sink.normal(runtimeEnv("d"), "Dropped1", "m").isOk());
  EXPECT_TRUE(sink.normal(runtimeEnv("e"), "Dropped2", "m").isOk());
  EXPECT_EQ(sink.dropped(), 2u);
  inner.open();
  EXPECT_TRUE(sink.flush(milliseconds(10000)));
  EXPECT_EQ(inner.reasons(), (std::vector<std::string>{"InFlight", "Queued1", "Queued2"}));
}

// A failed write is counted and not retried; the next Events still go out.
TEST(AsyncEventSinkTest, FailedWritesAreCountedNotRetried) {
  GatedSink inner;
  inner.failWith(unavailable("events API down"));
  inner.open();
  AsyncEventSink sink(inner);
  EXPECT_TRUE(sink.normal(runtimeEnv("a"), "One", "m").isOk());
  EXPECT_TRUE(sink.normal(runtimeEnv("b"), "Two", "m").isOk());
  ASSERT_TRUE(sink.flush(milliseconds(10000)));
  EXPECT_EQ(sink.failed(), 2u);
  EXPECT_EQ(inner.reasons(), (std::vector<std::string>{"One", "Two"}));
}

// Destruction writes what is queued (within its drain time) before it returns.
TEST(AsyncEventSinkTest, DestructionWritesWhatIsQueued) {
  GatedSink inner;
  {
    AsyncEventSink sink(inner);
    for (int i = 0; i < 5; ++i)
      EXPECT_TRUE(sink.normal(runtimeEnv("torch"), "E" + std::to_string(i), "m").isOk());
    inner.open();
  }
  EXPECT_EQ(inner.reasons().size(), 5u);
}

}  // namespace
}  // namespace lockstep::kube
