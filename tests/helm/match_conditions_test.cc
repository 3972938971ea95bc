// Evaluates the chart's pod-webhook matchConditions in the real API server for
// every kind of pod request: CREATE, UPDATE (label, annotation, finalizer,
// image), DELETE, and the status, ephemeralcontainers, eviction and binding
// subresources.
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

}  // namespace
}  // namespace lockstep::testing
