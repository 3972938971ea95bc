// Client verbs over a FakeTransport: what is sent, how answers are mapped.
#include "operator/kube/client.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::kube {
namespace {

using testing::FakeStream;
using testing::FakeTransport;
using testing::testObject;

class ClientTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTransport> fake_ = std::make_shared<FakeTransport>();
  Client client_{fake_};
};

TEST_F(ClientTest, GetMapsNotFound) {
  fake_->push(FakeTransport::status(404, "NotFound", "configmaps \"x\" not found"));
  auto r = client_.get(resources::kConfigMaps, "ns", "x");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(), "configmaps \"x\" not found");
}

// (The Client never holds the token: the transport adds it. That the token stays out of
// errors is KubeConnectTest.UnreachableServerIsUnavailableAndTheErrorCarriesNoToken.)
TEST_F(ClientTest, TransportErrorsCarryTheRequest) {
  fake_->push(unavailable("connection refused"));
  auto r = client_.get(resources::kConfigMaps, "ns", "x");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(), "GET /api/v1/namespaces/ns/configmaps/x: connection refused");
}

TEST_F(ClientTest, ListFollowsContinueTokens) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10", "tok1"));
  fake_->push(FakeTransport::list({testObject("ns", "b", "6")}, "10", "tok2"));
  fake_->push(FakeTransport::list({testObject("ns", "c", "7")}, "10"));
  ListOptions o;
  o.limit = 1;
  o.resourceVersion = "";
  auto r = client_.list(resources::kConfigMaps, "ns", o);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->items.size(), 3u);
  EXPECT_EQ(r->resourceVersion, "10");
  EXPECT_EQ(name(r->items[2]), "c");
  EXPECT_EQ(kindOf(r->items[0]), "ConfigMap");
  auto reqs = fake_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].uri(), "/api/v1/namespaces/ns/configmaps?limit=1");
  EXPECT_EQ(reqs[1].uri(), "/api/v1/namespaces/ns/configmaps?continue=tok1&limit=1");
  EXPECT_EQ(reqs[2].uri(), "/api/v1/namespaces/ns/configmaps?continue=tok2&limit=1");
}

TEST_F(ClientTest, ExpiredContinueFallsBackToFullList) {
  fake_->push(FakeTransport::list({testObject("ns", "a", "5")}, "10", "tok1"));
  fake_->push(FakeTransport::status(410, "Expired", "continue token expired"));
  fake_->push(FakeTransport::list({testObject("ns", "a", "5"), testObject("ns", "b", "8")}, "12"));
  auto r = client_.list(resources::kConfigMaps, "ns", ListOptions{});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->items.size(), 2u);
  EXPECT_EQ(r->resourceVersion, "12");
  EXPECT_EQ(fake_->requests()[2].uri(), "/api/v1/namespaces/ns/configmaps");
}

TEST_F(ClientTest, CreateUsesObjectNamespaceAndFieldManager) {
  auto obj = testObject("ml", "c", "");
  fake_->push(FakeTransport::ok(testObject("ml", "c", "1")));
  auto r = client_.create(resources::kConfigMaps, obj);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(resourceVersion(*r), "1");
  EXPECT_EQ(fake_->requests()[0].uri(), "/api/v1/namespaces/ml/configmaps?fieldManager=lockstep");
  fake_->push(FakeTransport::status(409, "AlreadyExists", "exists"));
  EXPECT_EQ(client_.create(resources::kConfigMaps, obj).status().code(), Code::kAlreadyExists);
}

TEST_F(ClientTest, UpdateConflictAndStatusSubresource) {
  fake_->push(FakeTransport::status(409, "Conflict", "the object has been modified"));
  auto obj = testObject("ml", "c", "3");
  EXPECT_EQ(client_.update(resources::kConfigMaps, obj).status().code(), Code::kConflict);
  fake_->push(FakeTransport::ok(obj));
  ASSERT_TRUE(client_.updateStatus(resources::kConfigMaps, obj).isOk());
  EXPECT_EQ(fake_->requests()[1].method, "PUT");
  EXPECT_EQ(fake_->requests()[1].path, "/api/v1/namespaces/ml/configmaps/c/status");
}

TEST_F(ClientTest, PatchStatusAndApply) {
  fake_->push(FakeTransport::ok(testObject("ml", "c", "4")));
  ASSERT_TRUE(client_.patchStatus(resources::kConfigMaps, "ml", "c", {{"phase", "Ready"}}).isOk());
  auto req = fake_->requests()[0];
  EXPECT_EQ(req.method, "PATCH");
  EXPECT_EQ(req.path, "/api/v1/namespaces/ml/configmaps/c/status");
  EXPECT_EQ(req.body, R"({"status":{"phase":"Ready"}})");
  fake_->push(FakeTransport::ok(testObject("ml", "c", "5")));
  ASSERT_TRUE(client_.apply(resources::kConfigMaps, testObject("ml", "c", "")).isOk());
  req = fake_->requests()[1];
  EXPECT_EQ(req.uri(), "/api/v1/namespaces/ml/configmaps/c?fieldManager=lockstep&force=true");
  EXPECT_EQ(req.header("Content-Type"), "application/apply-patch+yaml");
}

TEST_F(ClientTest, FieldManagerIsChosenPerCall) {
  fake_->push(FakeTransport::ok(testObject("ml", "c", "5")));
  fake_->push(FakeTransport::ok(testObject("ml", "c", "6")));
  fake_->push(FakeTransport::ok(testObject("ml", "c", "7")));
  ASSERT_TRUE(client_
                  .applyStatus(resources::kConfigMaps, testObject("ml", "c", ""),
                               PatchParams::apply("lockstep-runtimeenv-controller"))
                  .isOk());
  ASSERT_TRUE(client_
                  .apply(resources::kConfigMaps, testObject("ml", "c", ""),
                         PatchParams{.fieldManager = "", .force = false, .dryRun = true})
                  .isOk());
  ASSERT_TRUE(client_.applyStatus(resources::kConfigMaps, testObject("ml", "c", "")).isOk());
  auto reqs = fake_->requests();
  EXPECT_EQ(reqs[0].uri(),
            "/api/v1/namespaces/ml/configmaps/c/status"
            "?fieldManager=lockstep-runtimeenv-controller&force=true");
  EXPECT_EQ(reqs[1].uri(), "/api/v1/namespaces/ml/configmaps/c?dryRun=All&fieldManager=lockstep");
  EXPECT_EQ(reqs[2].uri(),
            "/api/v1/namespaces/ml/configmaps/c/status?fieldManager=lockstep&force=true");
}

TEST_F(ClientTest, DeleteSendsOptions) {
  fake_->push(FakeTransport::ok({{"kind", "Status"}, {"status", "Success"}}));
  DeleteOptions o;
  o.propagationPolicy = "Background";
  o.preconditions.uid = "u";
  ASSERT_TRUE(client_.remove(resources::kJobs, "ml", "j", o).isOk());
  auto body = nlohmann::json::parse(fake_->requests()[0].body);
  EXPECT_EQ(body["propagationPolicy"], "Background");
  fake_->push(
      FakeTransport::status(409, "Conflict", "Precondition failed: UID in precondition: u"));
  EXPECT_EQ(client_.remove(resources::kJobs, "ml", "j", o).code(), Code::kConflict);
}

TEST_F(ClientTest, WatchDecodesEventsAndErrors) {
  FakeStream s;
  s.lines = {FakeTransport::event("ADDED", testObject("ns", "a", "1")),
             FakeTransport::bookmark("2"),
             FakeTransport::errorEvent(410, "Expired", "too old resource version: 1 (5)")};
  s.end = FakeStream::End::kClose;
  fake_->push(s);
  auto w = client_.watch(resources::kConfigMaps, "ns", WatchOptions{});
  ASSERT_TRUE(w.isOk());
  auto e1 = (*w)->next();
  ASSERT_TRUE(e1.isOk() && e1->has_value());
  EXPECT_EQ((*e1)->type, WatchEvent::Type::kAdded);
  auto e2 = (*w)->next();
  EXPECT_EQ((*e2)->type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(resourceVersion((*e2)->object), "2");
  auto e3 = (*w)->next();
  ASSERT_FALSE(e3.isOk());
  EXPECT_EQ(e3.status().code(), Code::kGone);
}

TEST_F(ClientTest, MalformedWatchLineIsAnError) {
  FakeStream s;
  s.lines = {"{not json"};
  fake_->push(s);
  auto w = client_.watch(resources::kConfigMaps, "ns", WatchOptions{});
  ASSERT_TRUE(w.isOk());
  EXPECT_EQ((*w)->next().status().code(), Code::kInternal);
}

TEST(RetryOnConflictTest, RetriesOnlyConflicts) {
  testing::FakeClock clock;
  clock.setAutoAdvance(true);
  RetryOptions o;
  o.clock = &clock;
  int calls = 0;
  Status st = retryOnConflict(
      [&] { return ++calls < 3 ? Status(Code::kConflict, "stale") : Status::ok(); }, o);
  EXPECT_TRUE(st.isOk());
  EXPECT_EQ(calls, 3);
  calls = 0;
  st = retryOnConflict(
      [&] {
        ++calls;
        return Status(Code::kConflict, "stale");
      },
      o);
  EXPECT_EQ(st.code(), Code::kConflict);
  EXPECT_EQ(calls, 5);
  calls = 0;
  st = retryOnConflict(
      [&] {
        ++calls;
        return notFound("gone");
      },
      o);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace lockstep::kube
