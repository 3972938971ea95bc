#include "api/v1alpha1/model.h"

#include <gtest/gtest.h>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

const std::string kPkg = "registry.example/models/gpt2@sha256:" + std::string(64, 'a');
const std::string kImg = "registry.example/runtimes/torch@sha256:" + std::string(64, 'b');
const std::string kHash = "sha256:" + std::string(64, 'c');

json stages() {
  return json::parse(R"([
    {"name": "eval", "gate": {"template": {"spec": {"containers": [{"name": "e", "image": "x"}]}},
                              "metrics": [{"name": "acc", "min": 0.9}], "timeout": "30m"}},
    {"name": "prod", "serving": {"replicas": 2, "port": 8080,
                                 "template": {"spec": {"containers": [{"name": "s"}]}}},
     "canary": {"steps": [{"weight": 50, "pause": "1m"}]}}])");
}

ReleaseContent content() { return {kPkg, kImg, kHash, stages()}; }

TEST(ContentDigest, IsASha256DigestAndDeterministic) {
  const std::string d = contentDigest(content());
  EXPECT_EQ(d.rfind("sha256:", 0), 0U);
  EXPECT_EQ(d.size(), 7U + 64U);
  EXPECT_EQ(contentDigest(content()), d);
}

TEST(ContentDigest, StableUnderKeyOrderFormattingAndNumberSpelling) {
  const std::string d = contentDigest(content());
  // The same stages, keys in another order, written with other whitespace,
  // replicas as 2.0 and the weight as 50.0.
  ReleaseContent c = content();
  c.stages = json::parse(R"([
    {"gate": {"timeout": "30m", "metrics": [{"min": 0.9, "name": "acc"}],
              "template": {"spec": {"containers": [{"image": "x", "name": "e"}]}}},
     "name": "eval"},
    {"canary": {"steps": [{"pause": "1m", "weight": 50.0}]},
     "serving": {"template": {"spec": {"containers": [{"name": "s"}]}},
                 "port": 8080, "replicas": 2.0},
     "name": "prod"}])");
  EXPECT_EQ(contentDigest(c), d);
  // Only the digests of the package and the image count, not how the
  // repository is spelled.
  c.package = "other.example/mirror/gpt2@sha256:" + std::string(64, 'a');
  c.image = "docker.io/library/torch@sha256:" + std::string(64, 'b');
  EXPECT_EQ(contentDigest(c), d);
}

TEST(ContentDigest, ChangesWithEachPartOfTheContent) {
  const std::string d = contentDigest(content());
  ReleaseContent c = content();
  c.package = "registry.example/models/gpt2@sha256:" + std::string(64, 'd');
  EXPECT_NE(contentDigest(c), d) << "package digest";
  c = content();
  c.image = "registry.example/runtimes/torch@sha256:" + std::string(64, 'e');
  EXPECT_NE(contentDigest(c), d) << "runtime image digest";
  c = content();
  c.closureHash = "sha256:" + std::string(64, 'f');
  EXPECT_NE(contentDigest(c), d) << "closure hash";
  c = content();
  c.stages[1]["serving"]["replicas"] = 3;
  EXPECT_NE(contentDigest(c), d) << "a serving field";
  c = content();
  c.stages[0]["gate"]["metrics"][0]["min"] = 0.91;
  EXPECT_NE(contentDigest(c), d) << "a gate threshold";
  c = content();
  c.stages[1]["canary"]["steps"].push_back({{"weight", 100}});
  EXPECT_NE(contentDigest(c), d) << "a canary step";
  c = content();
  std::swap(c.stages[0], c.stages[1]);
  EXPECT_NE(contentDigest(c), d) << "the stage order";
}

TEST(ContentDigest, OfAReleaseReadsItsSpecAndThePinnedPair) {
  json release = {{"metadata", {{"name", "v1"}}},
                  {"spec",
                   {{"model", "gpt2"},
                    {"package", kPkg},
                    {"closureHash", kHash},
                    {"runtimeEnvRef", {{"name", "torch"}}},
                    {"stages", stages()}}}};
  RuntimePin pin{3, kImg, kHash};
  EXPECT_EQ(contentDigest(releaseContent(release, pin)), contentDigest(content()));
  // The name and the model are not content: the same spec under another name is the same content.
  release["metadata"]["name"] = "v1-again";
  EXPECT_EQ(contentDigest(releaseContent(release, pin)), contentDigest(content()));
  pin.image = "registry.example/runtimes/torch@sha256:" + std::string(64, '0');
  EXPECT_NE(contentDigest(releaseContent(release, pin)), contentDigest(content()));
}

// What a manual rollback may target: a release the Model's record shows prod ran.
TEST(ModelRecord, ShowsProdRanByUidByContentOrByNameForAnAdoptedEntry) {
  Model m;
  ProdContent prod;
  prod.release = "v3";
  prod.uid = "u3";
  prod.contentDigest = "sha256:33";
  m.status.prod = prod;
  auto entry = [](const char* action, const char* release, const char* uid, const char* digest) {
    ModelHistoryEntry h;
    h.action = action;
    h.release = release;
    h.uid = uid;
    h.contentDigest = digest;
    return h;
  };
  m.status.history = {entry(kModelActionAdopted, "v0", "", ""),
                      entry(kModelActionPromoted, "v1", "u1", "sha256:11"),
                      entry(kModelActionRolledBack, "v2", "u2", "sha256:22"),
                      entry(kModelActionRollback, "v1", "u1", "sha256:11")};
  EXPECT_TRUE(recordShowsProdRan(m, "v3", "u3", "")) << "prod, by uid";
  EXPECT_TRUE(recordShowsProdRan(m, "v1", "u1", "")) << "a promotion, by uid";
  EXPECT_TRUE(recordShowsProdRan(m, "v1", "u9", "sha256:11")) << "re-created with that content";
  EXPECT_FALSE(recordShowsProdRan(m, "v1", "u9", "sha256:99")) << "re-created, other content";
  EXPECT_FALSE(recordShowsProdRan(m, "v1", "u9", "")) << "re-created, no pinned pair";
  EXPECT_FALSE(recordShowsProdRan(m, "v2", "u2", "sha256:22")) << "a canary that rolled back";
  EXPECT_FALSE(recordShowsProdRan(m, "v4", "u4", "")) << "never in the record";
  EXPECT_TRUE(recordShowsProdRan(m, "v0", "u0", "")) << "adopted from an anchor: by name";
  EXPECT_FALSE(recordShowsProdRan(m, "u1", "v1", "")) << "name and uid are not swapped";
}

TEST(ModelView, DecodesSpecAndStatusAndEncodesTheStatusBack) {
  json model = json::parse(R"({
    "apiVersion": "lockstep.dev/v1alpha1", "kind": "Model",
    "metadata": {"name": "gpt2", "namespace": "ml", "uid": "m1", "resourceVersion": "9",
                 "generation": 2},
    "spec": {"port": 9000, "replicas": 4, "capacity": "drain",
             "service": {"type": "NodePort"}, "revisionHistoryLimit": 3},
    "status": {"observedGeneration": 2, "revision": 7,
      "prod": {"release": "v1", "uid": "r1", "contentDigest": "sha256:11",
               "package": "p@sha256:aa",
               "runtime": {"runtimeEnv": "torch", "image": "i@sha256:bb",
                           "closureHash": "sha256:cc", "revision": 2},
               "since": "2026-01-01T00:00:00Z"},
      "canary": {"release": "v2", "uid": "r2"},
      "history": [{"action": "Promoted", "release": "v1", "uid": "r1", "revision": 7,
                   "at": "2026-01-01T00:00:00Z"}]}})");
  const Model m = decodeModel(model);
  EXPECT_EQ(m.meta.name, "gpt2");
  EXPECT_EQ(m.resourceVersion, "9");
  EXPECT_EQ(m.spec.port, 9000);
  EXPECT_EQ(m.spec.replicas, 4);
  EXPECT_EQ(m.spec.capacity, "drain");
  EXPECT_EQ(m.spec.serviceType, "NodePort");
  EXPECT_EQ(m.spec.revisionHistoryLimit, 3);
  EXPECT_EQ(m.status.revision, 7);
  EXPECT_EQ(m.prodRevision(), "7");
  ASSERT_TRUE(m.status.prod);
  EXPECT_EQ(m.status.prod->uid, "r1");
  EXPECT_EQ(m.status.prod->runtime.revision, 2);
  ASSERT_TRUE(m.status.canary);
  EXPECT_EQ(m.status.canary->release, "v2");
  ASSERT_EQ(m.status.history.size(), 1U);
  EXPECT_EQ(m.status.history[0].revision, 7);
  json back = encodeModelStatus(m.status);
  EXPECT_EQ(back, model["status"]);
}

TEST(ModelView, AnEmptyModelHasDefaultsAndNoProd) {
  const Model m = decodeModel(json{{"metadata", {{"name", "gpt2"}}}});
  EXPECT_FALSE(m.spec.port);
  EXPECT_FALSE(m.spec.replicas);
  EXPECT_EQ(m.spec.capacity, "");
  EXPECT_EQ(m.spec.serviceType, "ClusterIP");
  EXPECT_EQ(m.spec.revisionHistoryLimit, 5);
  EXPECT_FALSE(m.status.prod);
  EXPECT_FALSE(m.status.canary);
  EXPECT_EQ(m.prodRevision(), "0");
}

TEST(ModelPins, ProdCanaryAndTheLastRevisionHistoryLimitEarlierReleases) {
  Model m = decodeModel(json{{"metadata", {{"name", "gpt2"}}}});
  m.spec.revisionHistoryLimit = 2;
  auto rt = [](char c) {
    return ModelRuntime{"torch", "i@sha256:" + std::string(64, c), "sha256:" + std::string(64, c),
                        c - '0'};
  };
  auto entry = [&](const std::string& action, const std::string& release, char c) {
    ModelHistoryEntry e;
    e.action = action;
    e.release = release;
    e.runtime = rt(c);
    return e;
  };
  m.status.history = {entry("Promoted", "v1", '1'),   entry("Promoted", "v2", '2'),
                      entry("RolledBack", "v3", '3'), entry("Promoted", "v4", '4'),
                      entry("Rollback", "v2", '2'),   entry("Promoted", "v5", '5')};
  m.status.prod = ProdContent{"v5", "u5", "sha256:c5", "p5", rt('5'), ""};
  m.status.canary = ProdContent{"v6", "u6", "", "p6", rt('6'), ""};
  std::vector<std::string> got;
  for (const ModelPin& p : modelPins(m)) {
    got.push_back(p.release + "@" + std::to_string(p.pair.revision) + "/" +
                  std::to_string(static_cast<int>(p.hold)));
    EXPECT_EQ(p.model, "gpt2");
    EXPECT_EQ(p.runtimeEnv, "torch");
  }
  // prod v5, the canary v6, then the two newest other releases prod ran: v2
  // (its rollback) and v4; v3 only rolled back, v1 is past the limit.
  const auto h = [](ModelPinHold x) { return std::to_string(static_cast<int>(x)); };
  EXPECT_EQ(got, (std::vector<std::string>{"v5@5/" + h(ModelPinHold::kProd),
                                           "v6@6/" + h(ModelPinHold::kCanary),
                                           "v2@2/" + h(ModelPinHold::kRollbackTarget),
                                           "v4@4/" + h(ModelPinHold::kRollbackTarget)}));
}

TEST(ModelView, HistoryIsBounded) {
  std::vector<ModelHistoryEntry> h;
  for (size_t i = 0; i < kModelHistoryKept + 5; ++i) {
    ModelHistoryEntry e;
    e.action = kModelActionPromoted;
    e.release = "v" + std::to_string(i);
    appendHistory(h, e);
  }
  ASSERT_EQ(h.size(), kModelHistoryKept);
  EXPECT_EQ(h.front().release, "v5");
  EXPECT_EQ(h.back().release, "v" + std::to_string(kModelHistoryKept + 4));
}

TEST(DecodeModel, ChangeWindowsWithDefaults) {
  const json model = json::parse(R"({
    "metadata": {"name": "gpt2", "namespace": "ml"},
    "spec": {"changeWindows": [
      {"name": "weekend-freeze", "kind": "Deny", "rrule": "FREQ=WEEKLY;BYDAY=FR;BYHOUR=16",
       "duration": "2d16h", "timeZone": "Europe/Berlin", "inFlight": "pause", "rollbacks": "Deny"},
      {"kind": "Allow", "rrule": "FREQ=DAILY;BYHOUR=9", "duration": "8h"},
      {"kind": "Allow", "rrule": "FREQ=DAILY", "duration": "8h", "timeZone": 1},
      "not an object"]}})");
  const Model m = decodeModel(model);
  ASSERT_EQ(m.spec.changeWindows.size(), 4U);
  const ChangeWindowSpec& freeze = m.spec.changeWindows[0];
  EXPECT_EQ(freeze.name, "weekend-freeze");
  EXPECT_EQ(freeze.kind, "Deny");
  EXPECT_EQ(freeze.duration, "2d16h");
  EXPECT_EQ(freeze.timeZone, "Europe/Berlin");
  EXPECT_EQ(freeze.inFlight, "pause");
  EXPECT_EQ(freeze.rollbacks, "Deny");
  // Absent: the defaults.
  EXPECT_EQ(m.spec.changeWindows[1].timeZone, "UTC");
  EXPECT_EQ(m.spec.changeWindows[1].inFlight, "finishStep");
  EXPECT_EQ(m.spec.changeWindows[1].rollbacks, "Allow");
  // Mistyped: "", so that the compiler refuses it by name rather than defaulting it.
  EXPECT_EQ(m.spec.changeWindows[2].timeZone, "");
  EXPECT_EQ(m.spec.changeWindows[3].kind, "");
  EXPECT_EQ(encodeChangeWindow(freeze), model["spec"]["changeWindows"][0]);
  EXPECT_TRUE(decodeModel(json::parse(R"({"spec": {}})")).spec.changeWindows.empty());
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
