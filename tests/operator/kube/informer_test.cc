// Informer: cache, indexes, handlers and sync over a FakeTransport.
#include "operator/kube/informer.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::kube {
namespace {

using testing::FakeClock;
using testing::FakeStream;
using testing::FakeTransport;
using testing::testObject;

Object owned(const std::string& name, const std::string& rv, const std::string& ownerUid,
             const std::string& app) {
  Object o = testObject("ns", name, rv);
  setLabel(o, "app", app);
  OwnerReference ref{"lockstep.dev/v1alpha1", "ModelRelease", "mr", ownerUid, true, true};
  setOwnerReference(o, ref);
  return o;
}

struct Recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> log;
  EventHandler handler() {
    EventHandler h;
    h.onAdd = [this](const Object& o, bool initial) {
      push("add " + name(o) + (initial ? " (initial)" : ""));
    };
    h.onUpdate = [this](const Object& a, const Object& b) {
      push("update " + name(b) + " " + resourceVersion(a) + "->" + resourceVersion(b));
    };
    h.onDelete = [this](const Object& o) { push("delete " + name(o)); };
    return h;
  }
  void push(std::string s) {
    std::lock_guard<std::mutex> l(mu);
    log.push_back(std::move(s));
    cv.notify_all();
  }
  bool waitFor(size_t n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(10), [&] { return log.size() >= n; });
  }
  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> l(mu);
    return log;
  }
};

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() { clock_.setAutoAdvance(false); }
  std::unique_ptr<Informer> make() {
    InformerOptions o;
    o.resource = resources::kConfigMaps;
    o.ns = "ns";
    return std::make_unique<Informer>(client_, o, clock_);
  }
  FakeClock clock_;
  std::shared_ptr<FakeTransport> fake_ = std::make_shared<FakeTransport>();
  std::shared_ptr<Client> client_ = std::make_shared<Client>(fake_);
};

TEST_F(InformerTest, SyncsAndDispatchesWatchEventsInOrder) {
  fake_->push(FakeTransport::list({owned("a", "5", "u1", "web")}, "10"));
  FakeStream s;
  s.lines = {FakeTransport::event("ADDED", owned("b", "11", "u1", "db")),
             FakeTransport::event("MODIFIED", owned("a", "12", "u2", "web")),
             FakeTransport::event("DELETED", owned("b", "13", "u1", "db"))};
  s.end = FakeStream::End::kHang;
  fake_->push(s);
  auto informer = make();
  informer->addLabelIndex("app");
  Recorder rec;
  informer->addEventHandler(rec.handler());
  informer->start();
  ASSERT_TRUE(informer->waitForSync(std::chrono::seconds(10)));
  ASSERT_TRUE(rec.waitFor(4));
  EXPECT_EQ(rec.snapshot(),
            (std::vector<std::string>{"add a (initial)", "add b", "update a 5->12", "delete b"}));
  EXPECT_EQ(informer->cache().size(), 1u);
  EXPECT_EQ(resourceVersion(*informer->cache().get("ns", "a")), "12");
  EXPECT_EQ(informer->cache().byIndex(kOwnerUidIndex, "u2").size(), 1u);
  EXPECT_TRUE(informer->cache().byIndex(kOwnerUidIndex, "u1").empty());
  EXPECT_EQ(informer->cache().byIndex(labelIndexName("app"), "web").size(), 1u);
  EXPECT_EQ(informer->cache().byIndex(kNamespaceIndex, "ns").size(), 1u);
  EXPECT_EQ(informer->lastSyncResourceVersion(), "13");
  informer->stop();
}

TEST_F(InformerTest, TransformsBeforeCachingAndFiltersByLabel) {
  Object a = owned("a", "5", "u", "web");
  a["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  fake_->push(FakeTransport::list({a, owned("b", "6", "u", "db")}, "10"));
  FakeStream s;
  // a leaves the selected set: its readers see a delete; b joins it: an add.
  s.lines = {FakeTransport::event("MODIFIED", owned("a", "11", "u", "batch")),
             FakeTransport::event("MODIFIED", owned("b", "12", "u", "web"))};
  s.end = FakeStream::End::kHang;
  fake_->push(s);
  InformerOptions o;
  o.resource = resources::kConfigMaps;
  o.ns = "ns";
  o.filter = matchLabels({{"app", "web"}});
  Informer informer(client_, o, clock_);
  Recorder rec;
  informer.addEventHandler(rec.handler());
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds(10)));
  ASSERT_TRUE(rec.waitFor(3));
  EXPECT_EQ(rec.snapshot(), (std::vector<std::string>{"add a (initial)", "delete a", "add b"}));
  EXPECT_EQ(informer.cache().keys(), (std::vector<std::string>{"ns/b"}));
  informer.stop();

  // The default transform strips managedFields: cached objects are shared, keep them small.
  Object copy = a;
  InformerOptions defaults;
  ASSERT_TRUE(defaults.transform);
  defaults.transform(copy);
  EXPECT_FALSE(copy["metadata"].contains("managedFields"));
  EXPECT_EQ(name(copy), "a");
}

TEST_F(InformerTest, RelistReportsVanishedObjectsAsDeletesAndKeepsNoPhantoms) {
  fake_->push(FakeTransport::list({owned("a", "5", "u", "x"), owned("b", "6", "u", "x")}, "10"));
  FakeStream s;
  s.lines = {FakeTransport::errorEvent(410, "Expired", "too old")};
  s.end = FakeStream::End::kClose;
  fake_->push(s);
  // The relist (after backoff) sees b deleted and c created while we were away.
  fake_->push(FakeTransport::list({owned("a", "5", "u", "x"), owned("c", "30", "u", "x")}, "40"));
  auto informer = make();
  Recorder rec;
  informer->addEventHandler(rec.handler());
  informer->start();
  ASSERT_TRUE(rec.waitFor(2));
  // Backoff before the relist waits on the fake clock.
  ASSERT_TRUE(fake_->waitForRequests(2));
  ASSERT_TRUE(clock_.waitForWaiters(1));
  clock_.advance(std::chrono::seconds(2));
  ASSERT_TRUE(rec.waitFor(5));
  auto log = rec.snapshot();
  EXPECT_EQ(log, (std::vector<std::string>{"add a (initial)", "add b (initial)", "update a 5->5",
                                           "add c", "delete b"}));
  auto keys = informer->cache().keys();
  EXPECT_EQ(keys, (std::vector<std::string>{"ns/a", "ns/c"}));
  EXPECT_EQ(informer->listCount(), 2);
  informer->stop();
}

TEST_F(InformerTest, LateHandlerReceivesCachedObjects) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "1"), testObject("ns", "b", "2")}, "3"));
  auto informer = make();
  informer->start();
  ASSERT_TRUE(informer->waitForSync(std::chrono::seconds(10)));
  Recorder rec;
  informer->addEventHandler(rec.handler());
  EXPECT_EQ(rec.snapshot(), (std::vector<std::string>{"add a", "add b"}));
  informer->stop();
}

TEST_F(InformerTest, WaitForSyncTimesOutOnTheClock) {
  fake_->push(FakeTransport::status(403, "Forbidden", "configmaps is forbidden"));
  auto informer = make();
  informer->start();
  std::thread advancer([&] {
    // The informer's reflector and waitForSync both wait on the clock.
    clock_.waitForWaiters(2);
    clock_.advance(std::chrono::seconds(31));
  });
  EXPECT_FALSE(informer->waitForSync(std::chrono::seconds(30)));
  advancer.join();
  informer->stop();
}

TEST(IndexerTest, CustomIndexAndReplace) {
  Indexer idx;
  idx.addIndex("by-phase", [](const Object& o) {
    return std::vector<std::string>{o.value("status", nlohmann::json::object()).value("phase", "")};
  });
  Object a = testObject("n1", "a", "1");
  a["status"]["phase"] = "Running";
  Object b = testObject("n2", "b", "1");
  b["status"]["phase"] = "Pending";
  idx.upsert(std::make_shared<const Object>(a));
  idx.upsert(std::make_shared<const Object>(b));
  EXPECT_EQ(idx.byIndex("by-phase", "Running").size(), 1u);
  EXPECT_EQ(idx.byIndex(kNamespaceIndex, "n2").size(), 1u);
  b["status"]["phase"] = "Running";
  auto old = idx.upsert(std::make_shared<const Object>(b));
  ASSERT_TRUE(old);
  EXPECT_EQ(idx.byIndex("by-phase", "Running").size(), 2u);
  EXPECT_TRUE(idx.byIndex("by-phase", "Pending").empty());
  auto prev = idx.replace({std::make_shared<const Object>(testObject("n3", "c", "2"))});
  EXPECT_EQ(prev.size(), 2u);
  EXPECT_TRUE(idx.byIndex("by-phase", "Running").empty());
  EXPECT_EQ(idx.keys(), std::vector<std::string>{"n3/c"});
  EXPECT_TRUE(idx.byIndex("no-such-index", "x").empty());
  EXPECT_TRUE(idx.erase("n3/c"));
  EXPECT_EQ(idx.size(), 0u);
}

// indexSizes counts each value's objects as they come, change and go: what a
// reader sums without walking the objects (the RuntimeEnv's compatible nodes).
TEST(IndexerTest, IndexSizesFollowEveryWrite) {
  Indexer idx;
  idx.addIndex("by-phase", [](const Object& o) {
    const std::string phase = o.value("status", nlohmann::json::object()).value("phase", "");
    return phase.empty() ? std::vector<std::string>{} : std::vector<std::string>{phase};
  });
  auto put = [&](const std::string& name, const std::string& phase) {
    Object o = testObject("n1", name, "1");
    if (!phase.empty()) o["status"]["phase"] = phase;
    idx.upsert(std::make_shared<const Object>(o));
  };
  using Sizes = std::map<std::string, size_t>;
  put("a", "Running");
  put("b", "Running");
  put("c", "Pending");
  put("d", "");  // indexed under no value
  EXPECT_EQ(idx.indexSizes("by-phase"), (Sizes{{"Pending", 1}, {"Running", 2}}));
  put("c", "Running");  // changed
  EXPECT_EQ(idx.indexSizes("by-phase"), (Sizes{{"Running", 3}})) << "an emptied value is gone";
  idx.erase("n1/a");
  EXPECT_EQ(idx.indexSizes("by-phase"), (Sizes{{"Running", 2}}));
  idx.replace({std::make_shared<const Object>(testObject("n2", "e", "2"))});
  EXPECT_TRUE(idx.indexSizes("by-phase").empty());
  EXPECT_EQ(idx.indexSizes(kNamespaceIndex), (Sizes{{"n2", 1}}));
  EXPECT_TRUE(idx.indexSizes("no-such-index").empty());
}

// Every write moves the version, a read never does: a reader that derived
// something from the content can tell whether it still holds (the GPU count).
TEST(IndexerTest, VersionMovesWithEveryWriteAndNoRead) {
  Indexer idx;
  uint64_t v = idx.version();
  auto moved = [&] {
    const uint64_t now = idx.version();
    const bool m = now != v;
    v = now;
    return m;
  };
  idx.upsert(std::make_shared<const Object>(testObject("n1", "a", "1")));
  EXPECT_TRUE(moved());
  idx.upsert(std::make_shared<const Object>(testObject("n1", "a", "2")));  // a new version
  EXPECT_TRUE(moved());
  (void)idx.get("n1/a");
  (void)idx.list();
  (void)idx.byIndex(kNamespaceIndex, "n1");
  EXPECT_FALSE(moved());
  idx.replace({std::make_shared<const Object>(testObject("n1", "b", "3"))});
  EXPECT_TRUE(moved());
  EXPECT_FALSE(idx.erase("n1/gone"));  // nothing there: nothing changed
  EXPECT_FALSE(moved());
  EXPECT_TRUE(idx.erase("n1/b"));
  EXPECT_TRUE(moved());
}

// A namespaced install: one list+watch per namespace, one cache, never a
// request for all namespaces (the operator's Role does not allow one).
TEST(InformerNamespaces, ListsEachNamespaceIntoOneCache) {
  FakeClock clock;
  clock.setAutoAdvance(false);
  auto fake = std::make_shared<FakeTransport>();
  fake->setHandler([](const Request& r) -> std::optional<testing::FakeReply> {
    for (const auto& [k, v] : r.query) {
      if (k == "watch") return std::nullopt;  // watches hang
    }
    if (r.path == "/api/v1/namespaces/a/configmaps")
      return FakeTransport::list({testObject("a", "x", "5")}, "10");
    if (r.path == "/api/v1/namespaces/b/configmaps")
      return FakeTransport::list({testObject("b", "y", "6")}, "11");
    return FakeTransport::status(403, "Forbidden", "not in a watched namespace: " + r.path);
  });
  InformerOptions o;
  o.resource = resources::kConfigMaps;
  o.namespaces = {"a", "b"};
  Informer informer(std::make_shared<Client>(fake), o, clock);
  Recorder rec;
  informer.addEventHandler(rec.handler());
  informer.start();
  ASSERT_TRUE(informer.waitForSync(std::chrono::seconds(10)));
  ASSERT_TRUE(rec.waitFor(2));
  // The second namespace's list keeps the first one's objects (no delete, no update).
  auto log = rec.snapshot();
  std::sort(log.begin(), log.end());
  EXPECT_EQ(log, (std::vector<std::string>{"add x (initial)", "add y (initial)"}));
  EXPECT_EQ(informer.cache().size(), 2u);
  EXPECT_TRUE(informer.cache().get("a", "x"));
  EXPECT_TRUE(informer.cache().get("b", "y"));
  for (const auto& r : fake->requests()) EXPECT_NE(r.path, "/api/v1/configmaps");
  informer.stop();
}

}  // namespace
}  // namespace lockstep::kube
