// Evaluates the chart's pod-webhook matchConditions in the real API server for
// every kind of pod request: CREATE, UPDATE (label, annotation, finalizer,
// image), DELETE, and the status, ephemeralcontainers, eviction and binding
// subresources; and the ModelRelease webhook's, which skip finalizer-only
// updates (so the operator's cleanup finalizer never waits on the operator).
//
// The configuration under test keeps the chart's matchConditions verbatim but
// widens the rules to every operation on pods and pods/* (so each expression
// meets each request kind) and points at a port where nothing listens, with
// failurePolicy Fail. So each request shows what the expressions decided:
//   - not matched:  the request succeeds (the webhook is never called);
//   - matched:      "failed calling webhook" (connection refused);
//   - expression error: "resulted in error" — the defect this test guards
//     against (an error applies failurePolicy and refuses the request).
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string& kImage = kClusterTestImage;
const std::string kOtherImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '9');

enum class Want { kNotMatched, kMatched };

class MatchConditionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = uniqueName("mc");
    config_ = uniqueName("lockstep-mc");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  }
  void TearDown() override {
    kubectl({"delete", "validatingwebhookconfiguration", config_, "--ignore-not-found"});
    auto r = kubectl({"delete", "namespace", ns_, "--timeout=120s"});
    EXPECT_EQ(r.exitCode, 0) << "namespace did not finish deleting: " << r.err;
  }

  // The chart's pod webhook, widened as described at the top of this file.
  json widenedChartWebhook() {
    json pods;
    for (const json& vwc : renderChart("templates/webhooks.yaml")) {
      for (const json& w : vwc["webhooks"]) {
        if (w["name"] == "pods.lockstep.dev") pods = w;
      }
    }
    EXPECT_TRUE(pods.contains("matchConditions")) << pods.dump();
    pods["name"] = "pods.mc.lockstep.dev";
    pods["failurePolicy"] = "Fail";
    pods["timeoutSeconds"] = 2;
    pods["rules"] = json::array({{{"apiGroups", {""}},
                                  {"apiVersions", {"v1"}},
                                  {"operations", {"*"}},
                                  {"resources", {"pods", "pods/*"}},
                                  {"scope", "Namespaced"}}});
    pods["namespaceSelector"] = {{"matchLabels", {{"kubernetes.io/metadata.name", ns_}}}};
    json admin = json::parse(kubectl({"config", "view", "--raw", "-o", "json"}).out);
    pods["clientConfig"] = {
        {"url", "https://127.0.0.1:" + std::to_string(freePort()) + "/validate/pods"},
        {"caBundle", admin["clusters"][0]["cluster"]["certificate-authority-data"]}};
    return {{"apiVersion", "admissionregistration.k8s.io/v1"},
            {"kind", "ValidatingWebhookConfiguration"},
            {"metadata", {{"name", config_}}},
            {"webhooks", json::array({pods})}};
  }

  json pod(const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name},
              {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
              {"annotations", {{"lockstep.dev/closure-hash", "sha256:" + std::string(64, 'a')}}}}},
            {"spec",
             {{"initContainers", json::array({{{"name", "setup"}, {"image", kImage}}})},
              {"containers", json::array({{{"name", "main"}, {"image", kImage}}})}}}};
  }

  void expect(const std::string& what, const CommandResult& r, Want want) {
    SCOPED_TRACE(what);
    EXPECT_EQ(r.err.find("resulted in error"), std::string::npos)
        << "a matchConditions expression errored: " << r.err;
    if (want == Want::kNotMatched) {
      EXPECT_EQ(r.exitCode, 0) << "the webhook was called (or the request failed): " << r.err;
    } else {
      EXPECT_NE(r.exitCode, 0) << "the webhook was not called";
      EXPECT_NE(r.err.find("failed calling webhook \"pods.mc.lockstep.dev\""), std::string::npos)
          << r.err;
    }
  }

  std::string ns_, config_;
};

TEST_F(MatchConditionsTest, EveryRequestKindEvaluatesWithoutError) {
  // Pods made before the webhook exists; "unbound" never gets a node (no such scheduler).
  for (const char* name : {"p", "evicted", "doomed"}) {
    ASSERT_EQ(kubectl({"create", "-n", ns_, "-f", "-"}, pod(name).dump()).exitCode, 0);
  }
  json served = pod("served");
  served["metadata"]["labels"]["lockstep.dev/serving"] = "true";
  ASSERT_EQ(kubectl({"create", "-n", ns_, "-f", "-"}, served.dump()).exitCode, 0);
  json unbound = pod("unbound");
  unbound["spec"]["schedulerName"] = "nobody";
  ASSERT_EQ(kubectl({"create", "-n", ns_, "-f", "-"}, unbound.dump()).exitCode, 0);

  auto applied = kubectl({"apply", "-f", "-"}, widenedChartWebhook().dump());
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  // The API server loads the configuration asynchronously: wait until a CREATE is matched.
  int probes = 0;
  ASSERT_TRUE(eventually([&] {
    std::string name = "probe-" + std::to_string(probes++);
    auto r = kubectl({"create", "-n", ns_, "-f", "-"}, pod(name).dump());
    if (r.exitCode == 0) kubectl({"delete", "pod", name, "-n", ns_, "--wait=false"});
    return r.exitCode != 0;
  }));

  expect("CREATE pod", kubectl({"create", "-n", ns_, "-f", "-"}, pod("new").dump()),
         Want::kMatched);
  expect("UPDATE: unrelated label", kubectl({"label", "pod", "p", "-n", ns_, "team=a"}),
         Want::kNotMatched);
  expect("UPDATE: unrelated annotation", kubectl({"annotate", "pod", "p", "-n", ns_, "note=x"}),
         Want::kNotMatched);
  expect("UPDATE: add a finalizer",
         kubectl({"patch", "pod", "p", "-n", ns_, "--type=merge", "-p",
                  R"({"metadata":{"finalizers":["example.com/hold"]}})"}),
         Want::kNotMatched);
  expect("UPDATE: remove the finalizer",
         kubectl({"patch", "pod", "p", "-n", ns_, "--type=json", "-p",
                  R"([{"op":"remove","path":"/metadata/finalizers"}])"}),
         Want::kNotMatched);
  expect("UPDATE: runtime-env label changed",
         kubectl({"label", "pod", "p", "-n", ns_, "lockstep.dev/runtime-env=other", "--overwrite"}),
         Want::kMatched);
  expect("UPDATE: runtime-env label removed",
         kubectl({"label", "pod", "p", "-n", ns_, "lockstep.dev/runtime-env-"}), Want::kMatched);
  expect("UPDATE: serving label added",
         kubectl({"label", "pod", "p", "-n", ns_, "lockstep.dev/serving=true"}), Want::kMatched);
  expect("UPDATE: unrelated label of a pod with the serving label",
         kubectl({"label", "pod", "served", "-n", ns_, "team=a"}), Want::kNotMatched);
  expect("UPDATE: serving label removed",
         kubectl({"label", "pod", "served", "-n", ns_, "lockstep.dev/serving-"}),
         Want::kNotMatched);
  expect("UPDATE: closure-hash annotation changed",
         kubectl({"annotate", "pod", "p", "-n", ns_,
                  "lockstep.dev/closure-hash=sha256:" + std::string(64, 'b'), "--overwrite"}),
         Want::kMatched);
  expect("UPDATE: container image swapped",
         kubectl({"set", "image", "pod/p", "-n", ns_, "main=" + kOtherImage}), Want::kMatched);
  expect("UPDATE: init container image swapped",
         kubectl({"set", "image", "pod/p", "-n", ns_, "setup=" + kOtherImage}), Want::kMatched);
  json current = kubectlJson({"get", "pod", "p", "-n", ns_});
  current["metadata"]["labels"]["replaced"] = "yes";
  expect("UPDATE: kubectl replace with the images unchanged",
         kubectl({"replace", "-f", "-"}, current.dump()), Want::kNotMatched);
  expect("UPDATE pods/status",
         kubectl({"patch", "pod", "p", "-n", ns_, "--subresource=status", "--type=merge", "-p",
                  R"({"status":{"message":"from the test"}})"}),
         Want::kNotMatched);
  json debug = {
      {"spec",
       {{"ephemeralContainers",
         json::array({{{"name", "debug"}, {"image", kImage}, {"targetContainerName", "main"}}})}}}};
  expect("UPDATE pods/ephemeralcontainers",
         kubectl({"patch", "pod", "p", "-n", ns_, "--subresource=ephemeralcontainers",
                  "--type=strategic", "-p", debug.dump()}),
         Want::kMatched);
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", "unbound"}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "cpu-0"}}}};
  expect(
      "CREATE pods/binding",
      kubectl({"create", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/unbound/binding", "-f", "-"},
              binding.dump()),
      Want::kNotMatched);
  json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", "evicted"}, {"namespace", ns_}}}};
  expect("CREATE pods/eviction",
         kubectl(
             {"create", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/evicted/eviction", "-f", "-"},
             eviction.dump()),
         Want::kNotMatched);
  expect("DELETE pod", kubectl({"delete", "pod", "doomed", "-n", ns_, "--wait=false"}),
         Want::kNotMatched);
  // Remove the configuration before the namespace goes (its pods' deletion is not matched anyway).
  EXPECT_EQ(kubectl({"delete", "validatingwebhookconfiguration", config_}).exitCode, 0);
}

// The ModelRelease webhook's matchConditions, the same way: the chart's
// condition, every operation on modelreleases and modelreleases/*, a port where
// nothing listens. An UPDATE that changes only metadata.finalizers (the
// operator's own cleanup finalizer removed by hand with the operator down, or
// added) is not matched; any other change is; so are CREATE, while DELETE and
// the status subresource are not (the chart's rules leave them out as well).
class ReleaseMatchConditionsTest : public MatchConditionsTest {
 protected:
  static void SetUpTestSuite() { OperatorProcess::installCrdsAndRbac(); }
  void TearDown() override {
    // Even after a failure: no finalizer of the test's holds the namespace.
    kubectl({"delete", "validatingwebhookconfiguration", config_, "--ignore-not-found"});
    for (const char* name : {"r", "held"}) {
      kubectl({"patch", "mr", name, "-n", ns_, "--type=merge", "-p",
               R"({"metadata":{"finalizers":null}})"});
    }
    MatchConditionsTest::TearDown();
  }

  json widenedReleaseWebhook() {
    json releases;
    for (const json& vwc : renderChart("templates/webhooks.yaml")) {
      if (vwc["kind"] != "ValidatingWebhookConfiguration") continue;
      for (const json& w : vwc["webhooks"]) {
        if (w["name"] == "modelreleases.lockstep.dev") releases = w;
      }
    }
    EXPECT_TRUE(releases.contains("matchConditions")) << releases.dump();
    releases["name"] = "modelreleases.mc.lockstep.dev";
    releases["timeoutSeconds"] = 2;
    releases["rules"] = json::array({{{"apiGroups", {"lockstep.dev"}},
                                      {"apiVersions", {"v1alpha1"}},
                                      {"operations", {"*"}},
                                      {"resources", {"modelreleases", "modelreleases/*"}},
                                      {"scope", "Namespaced"}}});
    releases["namespaceSelector"] = {{"matchLabels", {{"kubernetes.io/metadata.name", ns_}}}};
    json admin = json::parse(kubectl({"config", "view", "--raw", "-o", "json"}).out);
    releases["clientConfig"] = {
        {"url", "https://127.0.0.1:" + std::to_string(freePort()) + "/validate/modelreleases"},
        {"caBundle", admin["clusters"][0]["cluster"]["certificate-authority-data"]}};
    return {{"apiVersion", "admissionregistration.k8s.io/v1"},
            {"kind", "ValidatingWebhookConfiguration"},
            {"metadata", {{"name", config_}}},
            {"webhooks", json::array({releases})}};
  }

  static json release(const std::string& name) {
    return {{"apiVersion", "lockstep.dev/v1alpha1"},
            {"kind", "ModelRelease"},
            {"metadata", {{"name", name}}},
            {"spec",
             {{"model", "gpt2"},
              {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
              {"runtimeEnvRef", {{"name", "torch"}}},
              {"closureHash", "sha256:" + std::string(64, 'a')},
              {"stages",
               json::array({{{"name", "eval"}, {"gate", {{"template", json::object()}}}}})}}}};
  }

  void expectRelease(const std::string& what, const CommandResult& r, Want want) {
    SCOPED_TRACE(what);
    EXPECT_EQ(r.err.find("resulted in error"), std::string::npos)
        << "a matchConditions expression errored: " << r.err;
    if (want == Want::kNotMatched) {
      EXPECT_EQ(r.exitCode, 0) << "the webhook was called (or the request failed): " << r.err;
    } else {
      EXPECT_NE(r.exitCode, 0) << "the webhook was not called";
      EXPECT_NE(r.err.find("failed calling webhook \"modelreleases.mc.lockstep.dev\""),
                std::string::npos)
          << r.err;
    }
  }
};

TEST_F(ReleaseMatchConditionsTest, OnlyFinalizerChangesSkipTheWebhook) {
  for (const char* name : {"r", "doomed", "held"}) {
    auto made = kubectl({"create", "-n", ns_, "-f", "-"}, release(name).dump());
    ASSERT_EQ(made.exitCode, 0) << made.err;
  }
  ASSERT_EQ(kubectl({"patch", "mr", "held", "-n", ns_, "--type=merge", "-p",
                     R"({"metadata":{"finalizers":["lockstep.dev/release-cleanup"]}})"})
                .exitCode,
            0);
  auto applied = kubectl({"apply", "-f", "-"}, widenedReleaseWebhook().dump());
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  int probes = 0;
  ASSERT_TRUE(eventually([&] {
    std::string name = "probe-" + std::to_string(probes++);
    auto r = kubectl({"create", "-n", ns_, "-f", "-"}, release(name).dump());
    if (r.exitCode == 0) kubectl({"delete", "mr", name, "-n", ns_, "--wait=false"});
    return r.exitCode != 0;
  }));

  expectRelease("CREATE", kubectl({"create", "-n", ns_, "-f", "-"}, release("new").dump()),
                Want::kMatched);
  expectRelease("UPDATE: add a finalizer",
                kubectl({"patch", "mr", "r", "-n", ns_, "--type=merge", "-p",
                         R"({"metadata":{"finalizers":["example.com/hold"]}})"}),
                Want::kNotMatched);
  expectRelease("UPDATE: remove the finalizers",
                kubectl({"patch", "mr", "r", "-n", ns_, "--type=json", "-p",
                         R"([{"op":"remove","path":"/metadata/finalizers"}])"}),
                Want::kNotMatched);
  expectRelease("UPDATE: a label", kubectl({"label", "mr", "r", "-n", ns_, "team=a"}),
                Want::kMatched);
  expectRelease("UPDATE: an annotation (an approval)",
                kubectl({"annotate", "mr", "r", "-n", ns_, "approve.lockstep.dev/eval=me"}),
                Want::kMatched);
  expectRelease("UPDATE: a finalizer and a label together",
                kubectl({"patch", "mr", "r", "-n", ns_, "--type=merge", "-p",
                         R"({"metadata":{"finalizers":["example.com/hold"],"labels":{"x":"y"}}})"}),
                Want::kMatched);
  expectRelease("UPDATE: the spec",
                kubectl({"patch", "mr", "r", "-n", ns_, "--type=merge", "-p",
                         R"({"spec":{"model":"gpt3"}})"}),
                Want::kMatched);
  json current = kubectlJson({"get", "mr", "r", "-n", ns_});
  current["metadata"]["finalizers"] = json::array({"example.com/other"});
  expectRelease("UPDATE: kubectl replace changing the finalizers only",
                kubectl({"replace", "-f", "-"}, current.dump()), Want::kNotMatched);
  expectRelease("UPDATE modelreleases/status (as the operator: the status policy)",
                patchStatusAsOperator("mr", ns_, "r", {{"phase", "Evaluating"}}),
                Want::kNotMatched);
  expectRelease("DELETE", kubectl({"delete", "mr", "doomed", "-n", ns_, "--wait=false"}),
                Want::kNotMatched);
  // The operator down, a release deleted while it holds its cleanup finalizer:
  // removing the finalizer by hand (docs/modelrelease.md) is admitted, and the object goes.
  expectRelease("DELETE with the cleanup finalizer",
                kubectl({"delete", "mr", "held", "-n", ns_, "--wait=false"}), Want::kNotMatched);
  expectRelease("UPDATE: the documented removal of the finalizer while deleting",
                kubectl({"patch", "mr", "held", "-n", ns_, "--type=merge", "-p",
                         R"({"metadata":{"finalizers":null}})"}),
                Want::kNotMatched);
  EXPECT_TRUE(eventually([&] {
    return kubectl({"get", "mr", "held", "-n", ns_}).err.find("NotFound") != std::string::npos;
  }));
  EXPECT_EQ(kubectl({"delete", "validatingwebhookconfiguration", config_}).exitCode, 0);
}

}  // namespace
}  // namespace lockstep::testing
