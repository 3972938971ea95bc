// Issue 28, must-show 8: an upgrade from the release before the Model kind
// (the commit in tests/upgrade/previous-commit, built by
// tests/upgrade/previous.sh) to this build, on the real control plane. The
// previous operator, with its own CRDs and chart pieces, promotes two releases
// (prod recorded in the anchor ConfigMap lockstep-model-<model>); then it
// stops, this build's pieces are installed and its operator starts, as a
// `helm upgrade` does. Prod keeps serving on the same pods (no restart), the
// anchor becomes a Model with its history, the serving objects are re-owned
// by the Model, and the next release goes through to prod on the new operator.
// The Service keeps its selector (and its pods their traffic) until the next
// release's templates carry the serving label (issue 29).
// docs/rollouts.md "Migration from the anchor ConfigMap".
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

// $LOCKSTEP_CACHE/previous-<commit> as tests/upgrade/previous.sh makes it; "" when absent.
std::string previousRelease(std::string& why) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/upgrade/previous-commit");
  std::string commit;
  in >> commit;
  const char* cache = std::getenv("LOCKSTEP_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir = (cache != nullptr && *cache != '\0'
                               ? std::string(cache)
                               : std::string(home != nullptr ? home : "") + "/.cache/lockstep") +
                          "/previous-" + commit;
  auto built = [&] { return !readFile(dir + "/src/crds/lockstep.dev_modelreleases.yaml").empty(); };
  // tools/test.sh builds it beside the integration tests: wait while that build runs
  // (previous.sh keeps its pid in <dir>.building).
  auto building = [&] {
    const std::string pid = readFile(dir + ".building");
    return !pid.empty() && kill(std::stoi(pid), 0) == 0;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(40);
  while (!built() && building() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::seconds(5));
  if (!built()) {
    why = "the previous release's operator is not built in " + dir +
          ": run tests/upgrade/previous.sh (tools/test.sh does)";
    return "";
  }
  return dir;
}

// The uids of the model's Ready, not terminating, stable pods.
std::set<std::string> readyStablePods(const std::string& ns) {
  std::set<std::string> out;
  json pods = kubectlJson(
      {"get", "pods", "-n", ns, "-l", "lockstep.dev/model=gpt2,lockstep.dev/track=stable"});
  if (pods.is_discarded()) return out;
  for (const json& p : pods["items"]) {
    if (p["metadata"].contains("deletionTimestamp")) continue;
    for (const json& c : p.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "Ready" && c.value("status", "") == "True")
        out.insert(p["metadata"].value("uid", ""));
    }
  }
  return out;
}

// The names of the pods with these uids.
std::set<std::string> podNames(const std::string& ns, const std::set<std::string>& uids) {
  std::set<std::string> out;
  json pods = kubectlJson({"get", "pods", "-n", ns, "-l", "lockstep.dev/model=gpt2"});
  if (pods.is_discarded()) return out;
  for (const json& p : pods["items"])
    if (uids.count(p["metadata"].value("uid", "")) != 0)
      out.insert(p["metadata"].value("name", ""));
  return out;
}

// The pods the Service gpt2 sends traffic to (its EndpointSlices' Ready endpoints).
std::set<std::string> endpointPods(const std::string& ns) {
  std::set<std::string> out;
  json slices =
      kubectlJson({"get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=gpt2"});
  if (slices.is_discarded()) return out;
  for (const json& s : slices["items"])
    for (const json& e : s.value("endpoints", json::array()))
      if (e.value("/conditions/ready"_json_pointer, false))
        out.insert(e.value("/targetRef/name"_json_pointer, std::string()));
  return out;
}

class UpgradeClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    previous_ = previousRelease(why);
    ASSERT_FALSE(previous_.empty()) << why;
    useOperatorRelease(previous_);
    ASSERT_EQ(ReleaseWorld::startOperator(), "");
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    // The cluster as every other test binary expects it: this build's pieces.
    useOperatorRelease("");
    OperatorProcess::installCrdsAndRbac();
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  static inline std::string previous_;
  ReleaseWorld w_;
};

TEST_F(UpgradeClusterTest, TheAnchorBecomesAModelProdKeepsItsPodsAndTheHistoryIsKept) {
  ASSERT_EQ(w_.setUp({.nsPrefix = "upgrade"}), "");
  const std::string ns = w_.ns();
  auto prodStage = [] {
    return ProdStageBuilder(json::array({json{{"weight", 100}}})).replicas(2).build();
  };
  // The previous release: v1 then v2 promoted; the anchor records both.
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage()})).exitCode, 0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'), json::array({prodStage()})).exitCode, 0);
  w_.waitPhase("v2", "Promoted");
  w_.waitPhase("v1", "Superseded", std::chrono::seconds(30));
  json anchor = kubectlJson({"get", "configmap", "lockstep-model-gpt2", "-n", ns});
  ASSERT_FALSE(anchor.is_discarded()) << "the previous release records prod in its anchor";
  EXPECT_EQ(anchor.value("/data/promoted"_json_pointer, std::string()), "v2") << anchor.dump(2);
  ASSERT_TRUE(eventually([&] { return readyStablePods(ns).size() == 2; }))
      << json(w_.readyPods()).dump();
  ASSERT_TRUE(eventually([&] { return w_.readyPods().size() == 1; }))
      << json(w_.readyPods()).dump();
  const std::set<std::string> before = readyStablePods(ns);

  // The upgrade: the previous operator stops, this build's pieces and operator start.
  ASSERT_EQ(ReleaseWorld::op().stop(), "");
  useOperatorRelease("");
  OperatorProcess::installClusterPieces(sharedWebhookPort());
  // From here on prod must keep N Ready pods (fixed: there is no Model yet)
  // and serve only what the Model names once it exists.
  ASSERT_EQ(w_.startMonitor({.replicas = 2, .capacity = "surge"}), "");
  ASSERT_EQ(ReleaseWorld::ensureOperator(), "");

  json model;
  ASSERT_TRUE(eventually(
      [&] {
        model = w_.get("models.lockstep.dev", "gpt2");
        return !model.is_discarded() &&
               kubectl({"get", "configmap", "lockstep-model-gpt2", "-n", ns})
                       .err.find("NotFound") != std::string::npos;
      },
      std::chrono::seconds(90)))
      << model.dump(2);
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v2")
      << model["status"].dump(2);
  EXPECT_EQ(model.value("/status/prod/package"_json_pointer, std::string()), testPackage('2'));
  EXPECT_EQ(model.value("/status/prod/uid"_json_pointer, std::string()),
            w_.get("mr", "v2")["metadata"].value("uid", ""))
      << "the live v2 is the record's release";
  std::vector<std::string> actions;
  for (const json& h : model.value("/status/history"_json_pointer, json::array()))
    actions.push_back(h.value("action", "") + " " + h.value("release", ""));
  EXPECT_EQ(actions, (std::vector<std::string>{"Promoted v1", "Promoted v2", "Adopted v2"}))
      << model["status"]["history"].dump(2);
  for (const std::string name : {"gpt2-stable", "gpt2-canary"}) {
    json d = w_.get("deployment", name);
    ASSERT_FALSE(d.is_discarded()) << name;
    ASSERT_EQ(d["metadata"].value("ownerReferences", json::array()).size(), 1u) << d.dump(2);
    EXPECT_EQ(d["metadata"]["ownerReferences"][0].value("kind", ""), "Model") << name;
    EXPECT_EQ(d["metadata"]["ownerReferences"][0].value("uid", ""),
              model["metadata"].value("uid", ""));
  }
  EXPECT_EQ(w_.get("service", "gpt2")["metadata"]["ownerReferences"][0].value("kind", ""), "Model");
  EXPECT_EQ(readyStablePods(ns), before) << "prod kept its pods: nothing restarted";
  // Issue 29: the pods of the earlier template carry no serving label, so the
  // Service does not select on it yet; they keep their traffic.
  auto selector = [&] { return w_.get("service", "gpt2")["spec"]["selector"]; };
  EXPECT_FALSE(selector().contains("lockstep.dev/serving")) << selector().dump();
  EXPECT_EQ(endpointPods(ns), podNames(ns, before));
  json v2 = w_.get("mr", "v2");
  EXPECT_EQ(v2.value("/status/phase"_json_pointer, std::string()), "Promoted");
  EXPECT_TRUE(eventually([&] { return conditionField(w_.get("mr", "v2"), "Ready") == "True"; }))
      << w_.get("mr", "v2")["status"].dump(2);

  // The new operator runs prod from the Model: v3 goes through, v2 is Superseded.
  ASSERT_EQ(w_.createRelease("v3", testPackage('3'), json::array({prodStage()})).exitCode, 0);
  w_.waitPhase("v3", "Promoted");
  w_.waitPhase("v2", "Superseded", std::chrono::seconds(30));
  EXPECT_TRUE(eventually([&] {
    auto r = w_.readyPods();
    return r["stable/v3"] == 2 && r.size() == 1;
  })) << json(w_.readyPods()).dump();
  // v3's templates carry the serving label: once v2's pods are gone the Service selects on it.
  EXPECT_TRUE(eventually([&] { return selector().value("lockstep.dev/serving", "") == "true"; }))
      << selector().dump();
  EXPECT_TRUE(eventually([&] { return endpointPods(ns) == podNames(ns, readyStablePods(ns)); }))
      << json(endpointPods(ns)).dump();
  model = w_.get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v3");
  EXPECT_EQ(model.value("/status/history"_json_pointer, json::array()).size(), 4u)
      << model["status"]["history"].dump(2);
}

}  // namespace
}  // namespace lockstep::testing
