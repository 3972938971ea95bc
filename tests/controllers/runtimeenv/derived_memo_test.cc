// What the RuntimeEnv controller keeps of other objects (controllers/runtimeenv/
// derived_memo.h): the node cache's driver index counts what reading every node
// counts, through every kind of node change; a release's pin facts or a Model's
// pins are derived once per uid and resourceVersion, answer what deriving afresh
// answers, and nothing that is gone is kept.
// Also modelPinsChanged(), the filter that keeps a Model's other status writes
// from waking its RuntimeEnvs.
#include "controllers/runtimeenv/derived_memo.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/runtimeenv/runtimeenv_controller.h"
#include "tests/support/builders.h"

namespace lockstep::controllers::derived_memo_test {

namespace v1 = api::v1alpha1;
using nlohmann::json;

kube::ObjectPtr withVersion(kube::Object o, const std::string& uid, const std::string& rv) {
  o["metadata"]["uid"] = uid;
  o["metadata"]["resourceVersion"] = rv;
  return testing::share(std::move(o));
}

// A release that pins revision `revision` of RuntimeEnv torch (status.runtime).
kube::Object pinningRelease(const std::string& name, int64_t revision) {
  kube::Object r = testing::modelRelease(name).model("gpt2").runtimeEnv("torch").build();
  r["status"]["phase"] = "Promoting";
  r["status"]["runtime"] = v1::encodeRuntimePin(
      {revision, "i@sha256:" + std::string(64, 'a'), "sha256:" + std::string(64, 'b')});
  return r;
}

// A Model whose prod runs `release` on revision `revision` of RuntimeEnv torch.
kube::Object prodModel(const std::string& name, const std::string& release, int64_t revision) {
  v1::Model m = v1::decodeModel(json{{"metadata", {{"name", name}, {"namespace", "ml"}}}});
  v1::ProdContent prod;
  prod.release = release;
  prod.uid = "u-" + release;
  prod.contentDigest = "sha256:c";
  prod.package = "p";
  prod.runtime = {"torch", "i@sha256:" + std::string(64, 'a'), "sha256:h", revision};
  m.status.prod = prod;
  return json{{"apiVersion", "lockstep.dev/v1alpha1"},
              {"kind", "Model"},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"status", v1::encodeModelStatus(m.status)}};
}

std::vector<v1::ModelPin> pinsAfresh(const std::vector<kube::ObjectPtr>& models) {
  std::vector<v1::ModelPin> out;
  for (const auto& m : models) {
    for (auto& p : v1::modelPins(v1::decodeModel(*m))) out.push_back(p);
  }
  return out;
}

TEST(NodeDriverIndexTest, CountsWhatReadingEveryNodeCountsThroughEveryChange) {
  kube::Indexer indexed;
  indexed.addIndex(kNodeDriverIndex, nodeDriverIndexFunc());
  kube::Indexer plain;  // no index: nodeDriverCounts reads every node
  auto put = [&](const kube::Object& node) {
    indexed.upsert(testing::share(node));
    plain.upsert(testing::share(node));
  };
  auto agree = [&](const std::string& when) {
    const NodeDriverCounts counted = countNodeDrivers(indexed.list());
    EXPECT_EQ(nodeDriverCounts(indexed), counted) << when;
    EXPECT_EQ(nodeDriverCounts(plain), counted) << when;
    return counted;
  };
  put(testing::gpuNode("gpu-0", "570", "124", "06"));
  put(testing::gpuNode("gpu-1", "570", "124", "06"));
  put(testing::gpuNode("gpu-2", "535", "183", "01"));
  put(testing::cpuNode("cpu-0"));
  NodeDriverCounts c = agree("four nodes");
  EXPECT_EQ(c.byDriver, (std::map<std::string, int64_t>{{"535.183.01", 1}, {"570.124.06", 2}}));
  EXPECT_EQ(compatibleNodes(c, "550.54.14"), 2);
  EXPECT_EQ(compatibleNodes(c, ""), 3) << "the CPU node reports no driver";

  kube::Object cordoned = testing::gpuNode("gpu-0", "570", "124", "06");
  cordoned["spec"]["unschedulable"] = true;
  put(cordoned);
  EXPECT_EQ(compatibleNodes(agree("gpu-0 cordoned"), "550.54.14"), 1);

  put(testing::gpuNode("gpu-2", "580", "65", "06"));  // its driver upgraded
  EXPECT_EQ(compatibleNodes(agree("gpu-2 upgraded"), "550.54.14"), 2);

  kube::Object garbled = testing::gpuNode("gpu-1", "570", "124", "06");
  garbled["metadata"]["labels"]["nvidia.com/cuda.driver.major"] = "five-seventy";
  put(garbled);
  EXPECT_EQ(compatibleNodes(agree("gpu-1's driver unreadable"), ""), 1);

  indexed.erase("gpu-2");
  plain.erase("gpu-2");
  EXPECT_TRUE(agree("gpu-2 gone").byDriver.empty());

  kube::Object heartbeat = testing::cpuNode("cpu-0");
  heartbeat["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
  put(heartbeat);
  agree("a heartbeat");
}

TEST(PinFactsMemoTest, DerivesOncePerUidAndResourceVersion) {
  PinFactsMemo memo;
  std::vector<kube::ObjectPtr> releases = {withVersion(pinningRelease("v1", 1), "u1", "10"),
                                           withVersion(pinningRelease("v2", 2), "u2", "11")};
  auto first = memo.releases("ml", releases);
  EXPECT_EQ(memo.derivations(), 2u);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].name, "v1");
  ASSERT_TRUE(first[1].pin);
  EXPECT_EQ(first[1].pin->revision, 2);

  auto second = memo.releases("ml", releases);
  EXPECT_EQ(memo.derivations(), 2u) << "nothing moved: nothing derived";
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[1].pin, first[1].pin);

  // v2 written (its resourceVersion moves): only v2 is derived again, and the new
  // facts are what it says now.
  releases[1] = withVersion(pinningRelease("v2", 3), "u2", "12");
  auto third = memo.releases("ml", releases);
  EXPECT_EQ(memo.derivations(), 3u);
  ASSERT_TRUE(third[1].pin);
  EXPECT_EQ(third[1].pin->revision, 3);

  // v2 deleted and created again under its name (a new uid, the same resourceVersion
  // text is possible in another etcd): derived again, never taken for the old one.
  releases[1] = withVersion(pinningRelease("v2", 4), "u2-new", "12");
  auto fourth = memo.releases("ml", releases);
  EXPECT_EQ(memo.derivations(), 4u);
  EXPECT_EQ(fourth[1].pin->revision, 4);
}

TEST(PinFactsMemoTest, KeepsOnlyTheObjectsGivenAndForgetsANamespace) {
  PinFactsMemo memo;
  std::vector<kube::ObjectPtr> releases = {withVersion(pinningRelease("v1", 1), "u1", "10"),
                                           withVersion(pinningRelease("v2", 2), "u2", "11")};
  memo.releases("ml", releases);
  memo.modelPins("ml", {withVersion(prodModel("gpt2", "v1", 1), "m1", "20")});
  EXPECT_EQ(memo.size(), 3u);
  releases.pop_back();  // v2 is gone
  memo.releases("ml", releases);
  EXPECT_EQ(memo.size(), 2u);
  memo.forget("ml");
  EXPECT_EQ(memo.size(), 0u);
}

TEST(PinFactsMemoTest, ObjectsWithoutVersionsAreDerivedEveryTime) {
  PinFactsMemo memo;
  const std::vector<kube::ObjectPtr> releases = {testing::share(pinningRelease("v1", 1))};
  memo.releases("ml", releases);
  memo.releases("ml", releases);
  EXPECT_EQ(memo.derivations(), 2u);
  EXPECT_EQ(memo.size(), 0u);
}

TEST(PinFactsMemoTest, ModelPinsAreWhatDerivingAfreshGives) {
  PinFactsMemo memo;
  std::vector<kube::ObjectPtr> models = {withVersion(prodModel("gpt2", "v1", 1), "m1", "20"),
                                         withVersion(prodModel("bert", "b7", 3), "m2", "21")};
  EXPECT_EQ(memo.modelPins("ml", models), pinsAfresh(models));
  models[0] = withVersion(prodModel("gpt2", "v2", 2), "m1", "22");
  const auto pins = memo.modelPins("ml", models);
  EXPECT_EQ(pins, pinsAfresh(models));
  EXPECT_EQ(memo.derivations(), 3u);
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins[0].release, "v2");
}

TEST(ModelPinsChangedTest, OnlyAChangeOfThePinnedPairsWakesTheRuntimeEnv) {
  const auto changed = modelPinsChanged();
  const kube::Object before = prodModel("gpt2", "v1", 1);
  kube::Object stepped = before;
  stepped["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "False"}}});
  stepped["status"]["observedGeneration"] = 9;
  EXPECT_FALSE(changed(before, stepped)) << "a status write that moves no pin";
  EXPECT_TRUE(changed(before, prodModel("gpt2", "v2", 1))) << "another release took prod";
  EXPECT_TRUE(changed(before, prodModel("gpt2", "v1", 2))) << "prod's pair moved revision";
}

}  // namespace lockstep::controllers::derived_memo_test
