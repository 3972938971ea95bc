#include "operator/kube/event_recorder.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::kube {
namespace {

using testing::FakeClock;
using testing::FakeTransport;

Object release() {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "ModelRelease"},
          {"metadata",
           {{"name", "gpt2"}, {"namespace", "ml"}, {"uid", "u-1"}, {"resourceVersion", "7"}}}};
}

TEST(EventRecorderTest, CreatesThenFoldsRepeatsIntoCount) {
  auto fake = std::make_shared<FakeTransport>();
  FakeClock clock;
  EventRecorder rec(std::make_shared<Client>(fake), "lockstep-operator", clock);
  fake->push(FakeTransport::ok({}));
  ASSERT_TRUE(rec.warning(release(), "GateFailed", "accuracy 0.7 < 0.82").isOk());
  auto reqs = fake->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ml/events");
  auto ev = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_EQ(ev["reason"], "GateFailed");
  EXPECT_EQ(ev["involvedObject"]["kind"], "ModelRelease");
  EXPECT_EQ(ev["involvedObject"]["uid"], "u-1");
  EXPECT_EQ(ev["count"], 1);
  EXPECT_EQ(ev["source"]["component"], "lockstep-operator");
  EXPECT_EQ(ev["firstTimestamp"], "2024-05-01T10:00:00Z");
  std::string evName = ev["metadata"]["name"];
  EXPECT_EQ(evName.rfind("gpt2.", 0), 0u);

  clock.advance(std::chrono::seconds(30));
  fake->push(FakeTransport::ok({}));
  ASSERT_TRUE(rec.warning(release(), "GateFailed", "accuracy 0.7 < 0.82").isOk());
  reqs = fake->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/ml/events/" + evName);
  auto patch = nlohmann::json::parse(reqs[1].body);
  EXPECT_EQ(patch["count"], 2);
  EXPECT_EQ(patch["lastTimestamp"], "2024-05-01T10:00:30Z");

  // A different message is a different event.
  fake->push(FakeTransport::ok({}));
  ASSERT_TRUE(rec.warning(release(), "GateFailed", "timeout").isOk());
  EXPECT_EQ(fake->requests()[2].method, "POST");
}

TEST(EventRecorderTest, ExpiredEventIsRecreated) {
  auto fake = std::make_shared<FakeTransport>();
  FakeClock clock;
  EventRecorder rec(std::make_shared<Client>(fake), "c", clock);
  fake->push(FakeTransport::ok({}));
  ASSERT_TRUE(rec.normal(release(), "Promoted", "ok").isOk());
  fake->push(FakeTransport::status(404, "NotFound", "events not found"));
  fake->push(FakeTransport::ok({}));
  ASSERT_TRUE(rec.normal(release(), "Promoted", "ok").isOk());
  auto reqs = fake->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[2].method, "POST");
  EXPECT_EQ(nlohmann::json::parse(reqs[2].body)["count"], 1);
}

TEST(EventRecorderTest, ClusterScopedObjectsGoToDefault) {
  auto fake = std::make_shared<FakeTransport>();
  FakeClock clock;
  EventRecorder rec(std::make_shared<Client>(fake), "c", clock);
  fake->push(FakeTransport::ok({}));
  Object node = {
      {"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "gpu-1"}, {"uid", "n"}}}};
  ASSERT_TRUE(rec.normal(node, "Seen", "x").isOk());
  EXPECT_EQ(fake->requests()[0].path, "/api/v1/namespaces/default/events");
}

}  // namespace
}  // namespace lockstep::kube
