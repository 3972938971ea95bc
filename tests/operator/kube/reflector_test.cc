// The reflector reproduces client-go's list/watch resourceVersion rules.
#include "operator/kube/reflector.h"

#include <thread>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::kube {
namespace {

using testing::FakeClock;
using testing::FakeStream;
using testing::FakeTransport;
using testing::testObject;

class RecordingSink : public ReflectorSink {
 public:
  void replace(std::vector<Object> items, const std::string& rv) override {
    std::lock_guard<std::mutex> l(mu);
    log.push_back("replace " + std::to_string(items.size()) + " @" + rv);
  }
  void apply(const WatchEvent& e) override {
    std::lock_guard<std::mutex> l(mu);
    log.push_back(std::string(watchEventTypeName(e.type)) + " " + name(e.object) + " @" +
                  resourceVersion(e.object));
  }
  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> l(mu);
    return log;
  }
  std::mutex mu;
  std::vector<std::string> log;
};

std::string query(const Request& r, const std::string& key) {
  for (const auto& [k, v] : r.query) {
    if (k == key) return v;
  }
  return "<unset>";
}

FakeStream stream(std::vector<std::string> lines, FakeStream::End end = FakeStream::End::kClose) {
  FakeStream s;
  s.lines = std::move(lines);
  s.end = end;
  return s;
}

class ReflectorTest : public ::testing::Test {
 protected:
  ReflectorTest() {
    clock_.setAutoAdvance(true);
    options_.resource = resources::kConfigMaps;
    options_.ns = "ns";
  }
  // Runs the reflector until `n` requests were made, then stops it.
  std::vector<Request> runUntil(size_t n) {
    Reflector reflector(client_, options_, sink_, clock_);
    std::thread t([&] { reflector.run(); });
    bool got = fake_->waitForRequests(n);
    reflector.stop();
    t.join();
    EXPECT_TRUE(got) << "only " << fake_->requestCount() << " requests";
    lastRv_ = reflector.lastSyncResourceVersion();
    lists_ = reflector.listCount();
    return fake_->requests();
  }

  FakeClock clock_;
  std::shared_ptr<FakeTransport> fake_ = std::make_shared<FakeTransport>();
  Client client_{fake_};
  ReflectorOptions options_;
  RecordingSink sink_;
  std::string lastRv_;
  int lists_ = 0;
};

// The first list is a quorum read in pages of pageSize (memory bounded by a
// page), then the watch starts from the list's version.
TEST_F(ReflectorTest, FirstListIsAPagedQuorumReadThenWatchFromListVersion) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10"));
  auto reqs = runUntil(2);
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_FALSE(reqs[0].watch);
  EXPECT_EQ(query(reqs[0], "resourceVersion"), "<unset>");
  EXPECT_EQ(query(reqs[0], "limit"), "500");
  EXPECT_TRUE(reqs[1].watch);
  EXPECT_EQ(query(reqs[1], "resourceVersion"), "10");
  EXPECT_EQ(query(reqs[1], "allowWatchBookmarks"), "true");
  int timeout = std::stoi(query(reqs[1], "timeoutSeconds"));
  EXPECT_GE(timeout, 300);
  EXPECT_LT(timeout, 600);
  EXPECT_EQ(sink_.snapshot(), std::vector<std::string>{"replace 1 @10"});
}

TEST_F(ReflectorTest, BookmarksAdvanceAndAnEndedWatchResumesWithoutRelist) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10"));
  fake_->push(stream(
      {FakeTransport::event("ADDED", testObject("ns", "b", "11")), FakeTransport::bookmark("15")}));
  auto reqs = runUntil(3);
  ASSERT_GE(reqs.size(), 3u);
  EXPECT_TRUE(reqs[2].watch) << reqs[2].describe();
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "15");
  EXPECT_EQ(lists_, 1);
  EXPECT_EQ(lastRv_, "15");
  EXPECT_EQ(sink_.snapshot(), (std::vector<std::string>{"replace 1 @10", "ADDED b @11"}));
}

TEST_F(ReflectorTest, DroppedConnectionResumesFromLastEvent) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10"));
  fake_->push(stream({FakeTransport::event("MODIFIED", testObject("ns", "a", "12"))},
                     FakeStream::End::kError));
  auto reqs = runUntil(3);
  ASSERT_GE(reqs.size(), 3u);
  EXPECT_TRUE(reqs[2].watch);
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "12");
  EXPECT_EQ(lists_, 1);
}

TEST_F(ReflectorTest, WatchOpenFailureBacksOffAndRetriesTheWatch) {
  fake_->push(FakeTransport::list({}, "10"));
  fake_->push(unavailable("connect: connection refused"));
  fake_->push(FakeTransport::status(503, "ServiceUnavailable", "apiserver shutting down"));
  auto reqs = runUntil(4);
  ASSERT_GE(reqs.size(), 4u);
  EXPECT_TRUE(reqs[2].watch);
  EXPECT_TRUE(reqs[3].watch);
  EXPECT_EQ(query(reqs[3], "resourceVersion"), "10");
  EXPECT_EQ(lists_, 1);
  // Two backoffs: 800 ms then 1.6 s, each with up to 100% jitter.
  EXPECT_GE(clock_.autoAdvanced(), std::chrono::milliseconds(2400));
  EXPECT_LT(clock_.autoAdvanced(), std::chrono::milliseconds(4800));
}

TEST_F(ReflectorTest, ExpiredWatchRelistsFromLastVersionThenFromQuorum) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10"));
  fake_->push(
      stream({FakeTransport::event("ADDED", testObject("ns", "b", "11")),
              FakeTransport::errorEvent(410, "Expired", "too old resource version: 11 (40)")}));
  fake_->push(FakeTransport::status(410, "Expired", "too old resource version: 11 (40)"));
  fake_->push(
      FakeTransport::list({testObject("ns", "b", "11"), testObject("ns", "c", "39")}, "40"));
  auto reqs = runUntil(5);
  ASSERT_GE(reqs.size(), 5u);
  // The relist first asks for the last version it saw ...
  EXPECT_FALSE(reqs[2].watch);
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "11");
  EXPECT_EQ(query(reqs[2], "limit"), "<unset>");  // unpaginated: "not older than", from cache
  // ... and when that is gone too, restarts from a quorum read (no resourceVersion).
  EXPECT_FALSE(reqs[3].watch);
  EXPECT_EQ(query(reqs[3], "resourceVersion"), "<unset>");
  EXPECT_EQ(query(reqs[3], "limit"), "500");
  EXPECT_TRUE(reqs[4].watch);
  EXPECT_EQ(query(reqs[4], "resourceVersion"), "40");
  EXPECT_EQ(lists_, 2);
  EXPECT_EQ(sink_.snapshot(),
            (std::vector<std::string>{"replace 1 @10", "ADDED b @11", "replace 2 @40"}));
}

TEST_F(ReflectorTest, WatchAnswered410RelistsAndAQuorumListClearsUnavailable) {
  fake_->push(FakeTransport::list({}, "10"));
  fake_->push(FakeTransport::status(410, "Gone", "gone"));
  fake_->push(FakeTransport::status(410, "Expired", "expired"));
  fake_->push(FakeTransport::list({}, "50"));
  Reflector reflector(client_, options_, sink_, clock_);
  std::thread t([&] { reflector.run(); });
  ASSERT_TRUE(fake_->waitForRequests(5));
  reflector.stop();
  t.join();
  auto reqs = fake_->requests();
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "10");
  EXPECT_EQ(query(reqs[3], "resourceVersion"), "<unset>");
  EXPECT_EQ(query(reqs[4], "resourceVersion"), "50");
  EXPECT_FALSE(reflector.lastSyncResourceVersionUnavailable());
}

TEST_F(ReflectorTest, VeryShortEmptyWatchRelistsAfterBackoff) {
  fake_->push(FakeTransport::list({}, "10"));
  fake_->push(stream({}));
  auto reqs = runUntil(3);
  ASSERT_GE(reqs.size(), 3u);
  EXPECT_FALSE(reqs[2].watch);
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "10");
  EXPECT_GE(clock_.autoAdvanced(), std::chrono::milliseconds(800));
}

// Issue 13 item 12: a watch the server never ends (a half-open connection: no bytes, no
// close) is cancelled once it has been open for its timeoutSeconds plus the slack, and
// re-opened from the last resourceVersion (no relist).
TEST_F(ReflectorTest, AWatchSilentPastItsTimeoutPlusSlackIsReopenedFromTheLastVersion) {
  options_.watchStallSlack = std::chrono::seconds(30);
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10"));
  fake_->push(stream({}, FakeStream::End::kHang));
  auto reqs = runUntil(3);
  ASSERT_GE(reqs.size(), 3u);
  EXPECT_TRUE(reqs[1].watch);
  EXPECT_TRUE(reqs[2].watch) << reqs[2].describe();
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "10");
  EXPECT_EQ(lists_, 1);
  // Not before the server's own timeout plus the slack (the auto-advancing clock jumped
  // exactly to the deadline), on the configured durations only.
  int timeout = std::stoi(query(reqs[1], "timeoutSeconds"));
  EXPECT_GE(clock_.autoAdvanced(), std::chrono::seconds(timeout) + options_.watchStallSlack);
}

TEST_F(ReflectorTest, WithoutSlackAHangingWatchIsLeftAlone) {
  fake_->push(FakeTransport::list({}, "10"));
  fake_->push(stream({}, FakeStream::End::kHang));
  Reflector reflector(client_, options_, sink_, clock_);
  std::thread t([&] { reflector.run(); });
  ASSERT_TRUE(fake_->waitForRequests(2));
  EXPECT_EQ(clock_.autoAdvanced(), std::chrono::seconds(0));
  reflector.stop();
  t.join();
  EXPECT_EQ(fake_->requestCount(), 2u);
  EXPECT_EQ(reflector.stalledWatches(), 0);
}

// Issue 13 item 12: readiness sees a reflector that cannot follow its collection. Watches
// that cannot be opened for longer than the grace make syncing() fail, naming the resource
// and the error; a shorter run of failures does not.
TEST_F(ReflectorTest, SyncingFailsOnceWatchesHaveFailedForTheGrace) {
  fake_->push(FakeTransport::list({}, "10"));
  // Every later request fails, however far the reflector runs ahead of the
  // test (its back-off is on the auto-advancing fake clock): never a success.
  fake_->setHandler([](const kube::Request&) -> std::optional<testing::FakeReply> {
    return unavailable("connection refused");
  });
  Reflector reflector(client_, options_, sink_, clock_);
  std::thread t([&] { reflector.run(); });
  ASSERT_TRUE(fake_->waitForRequests(7));
  reflector.stop();
  t.join();
  // Backoffs of 0.8 + 1.6 + 3.2 + 6.4 + 12.8 s at least (jittered) since the first failure.
  Status failing = reflector.syncing(clock_.now(), std::chrono::seconds(20));
  EXPECT_EQ(failing.code(), Code::kUnavailable);
  EXPECT_NE(failing.message().find("connection refused"), std::string::npos) << failing.message();
  EXPECT_NE(failing.message().find("configmaps"), std::string::npos) << failing.message();
  EXPECT_TRUE(reflector.syncing(clock_.now(), std::chrono::hours(24)).isOk());
}

TEST_F(ReflectorTest, SyncingRecoversWhenAListSucceedsAndAWatchOpens) {
  fake_->push(unavailable("connection refused"));
  fake_->push(FakeTransport::status(500, "InternalError", "etcd down"));
  fake_->push(FakeTransport::list({}, "7"));
  fake_->push(stream({}, FakeStream::End::kHang));
  Reflector reflector(client_, options_, sink_, clock_);
  std::thread t([&] { reflector.run(); });
  ASSERT_TRUE(fake_->waitForRequests(4));
  reflector.stop();
  t.join();
  EXPECT_TRUE(reflector.syncing(clock_.now(), std::chrono::seconds(0)).isOk());
}

TEST_F(ReflectorTest, AStalledWatchThatCannotBeReopenedFailsSyncing) {
  options_.watchStallSlack = std::chrono::seconds(30);
  fake_->push(FakeTransport::list({}, "10"));
  fake_->push(stream({}, FakeStream::End::kHang));
  // Re-opening fails, however often the reflector tries before the test stops it.
  fake_->setHandler([](const kube::Request&) -> std::optional<testing::FakeReply> {
    return unavailable("connection timed out");
  });
  Reflector reflector(client_, options_, sink_, clock_);
  std::thread t([&] { reflector.run(); });
  ASSERT_TRUE(fake_->waitForRequests(3));
  reflector.stop();
  t.join();
  EXPECT_EQ(reflector.stalledWatches(), 1);
  Status s = reflector.syncing(clock_.now(), std::chrono::seconds(0));
  EXPECT_EQ(s.code(), Code::kUnavailable);
}

TEST_F(ReflectorTest, ListErrorsBackOffAndRetry) {
  fake_->push(unavailable("connection refused"));
  fake_->push(FakeTransport::status(500, "InternalError", "etcd down"));
  fake_->push(FakeTransport::list({}, "7"));
  auto reqs = runUntil(4);
  EXPECT_EQ(query(reqs[2], "resourceVersion"), "<unset>");
  EXPECT_EQ(query(reqs[2], "limit"), "500");
  EXPECT_TRUE(reqs[3].watch);
  EXPECT_EQ(query(reqs[3], "resourceVersion"), "7");
}

TEST_F(ReflectorTest, SelectorsAreSentOnListAndWatch) {
  options_.labelSelector = "app=x";
  options_.fieldSelector = "metadata.name=y";
  fake_->push(FakeTransport::list({}, "1"));
  auto reqs = runUntil(2);
  for (const auto& r : reqs) {
    EXPECT_EQ(query(r, "labelSelector"), "app=x");
    EXPECT_EQ(query(r, "fieldSelector"), "metadata.name=y");
  }
}

}  // namespace
}  // namespace lockstep::kube
