// `helm uninstall` with Lockstep's objects still in the cluster (issue 28,
// must-show 5) against the real control plane and the real helm:
//   - the chart is installed with `helm install` (taking over the pieces the
//     release world applied, so the operator that serves is the suite's);
//   - a runtime in use, a Promoted release and a release paused in its canary
//     carry Lockstep's finalizers when the operator stops and the chart goes;
//   - `helm uninstall` completes and leaves no admission (webhook
//     configurations, policies) that would refuse or hang a later write: a
//     plain pod is admitted in the tenant's namespace at once;
//   - the finalizers left are exactly the two that docs/install.md names, and
//     step 3 of its "Uninstalling" section, run as written, frees them: then
//     the tenant's namespace and the operator's own namespace are deleted.
// docs/install.md ("Uninstalling") is the contract; the snippet is read from it,
// so the page cannot drift from what was tested.
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

// The shell of step 3 in docs/install.md's "Uninstalling": from the line that
// starts the loop over the kinds to the end of that code block.
std::string documentedStepThree() {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/install.md");
  std::string line, out;
  bool inSection = false, inLoop = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) inSection = line == "## Uninstalling";
    if (!inSection) continue;
    if (line.rfind("for kind in ", 0) == 0) inLoop = true;
    if (!inLoop) continue;
    if (line.rfind("kubectl delete -f crds/", 0) == 0 || line.rfind("```", 0) == 0) break;
    out += line + "\n";
  }
  return out;
}

// Every object of the Lockstep kinds in `ns` that still has a finalizer, as
// "kind/name finalizer" lines.
std::set<std::string> finalizersIn(const std::string& ns) {
  std::set<std::string> out;
  for (const char* kind : {"runtimeenvs.lockstep.dev", "modelreleases.lockstep.dev",
                           "models.lockstep.dev", "runtimeadmissions.lockstep.dev"}) {
    json list = kubectlJson({"get", kind, "-n", ns});
    if (list.is_discarded()) continue;
    for (const json& o : list["items"])
      for (const json& f : o.value("/metadata/finalizers"_json_pointer, json::array()))
        out.insert(std::string(kind) + "/" + o["metadata"]["name"].get<std::string>() + " " +
                   f.get<std::string>());
  }
  return out;
}

bool namespaceGone(const std::string& ns) {
  return kubectl({"get", "namespace", ns}).err.find("NotFound") != std::string::npos;
}

class UninstallClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator(), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "uninst"}), "");
    ns_ = w_.ns();
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  CommandResult helm(std::vector<std::string> args) {
    args.insert(args.begin(), toolsBin() + "/helm");
    args.push_back("--kubeconfig=" + kubeconfigPath());
    return run(args);
  }

  ReleaseWorld w_;
  std::string ns_;
};

TEST_F(UninstallClusterTest, HelmUninstallLeavesNothingThatBlocksOrHangs) {
  // The chart as a platform installs it, its webhooks pointed at the suite's
  // operator (webhook.url, as tools/demo.sh runs it locally).
  auto installed =
      helm({"install", kReleaseName, std::string(LOCKSTEP_SOURCE_DIR) + "/helm/lockstep",
            "--namespace", kOperatorNamespace, "--take-ownership", "--set",
            "image.repository=registry.example/lockstep/operator", "--set",
            "image.digest=sha256:" + std::string(64, '0'), "--set", "admission.mode=webhook",
            "--set", "webhook.url=https://127.0.0.1:" + std::to_string(sharedWebhookPort()),
            "--set", "replicas=1"});
  ASSERT_EQ(installed.exitCode, 0) << installed.out << installed.err;

  // Prod on v1, v2 paused in its canary: the release-cleanup finalizer on v2,
  // the runtimeenv-in-use finalizer on the RuntimeEnv both pin.
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'),
                             json::array({ProdStageBuilder(oneStep).replicas(2).build()}))
                .exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  json paused = json::array({json{{"weight", 50}, {"pause", "Indefinite"}}});
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'),
                             json::array({ProdStageBuilder(paused).replicas(2).build()}))
                .exitCode,
            0);
  const std::set<std::string> expected = {
      "modelreleases.lockstep.dev/v2 lockstep.dev/release-cleanup",
      "runtimeenvs.lockstep.dev/torch lockstep.dev/runtimeenv-in-use"};
  std::set<std::string> left;
  ASSERT_TRUE(eventually(
      [&] {
        left = finalizersIn(ns_);
        return conditionField(w_.get("mr", "v2"), "Ready", "reason") == "CanaryPaused" &&
               left == expected;
      },
      std::chrono::seconds(120)))
      << ::testing::PrintToString(left) << w_.get("mr", "v2")["status"].dump(2);

  // The chart goes (its Deployment would take the operator with it; the
  // suite's operator is a process here, so it is stopped first).
  ASSERT_EQ(ReleaseWorld::op().stop(), "");
  auto uninstalled = helm(
      {"uninstall", kReleaseName, "--namespace", kOperatorNamespace, "--wait", "--timeout=120s"});
  ASSERT_EQ(uninstalled.exitCode, 0) << uninstalled.out << uninstalled.err;

  // No admission left behind that would refuse or hang a write.
  for (const char* kind : {"validatingwebhookconfiguration", "mutatingwebhookconfiguration"})
    EXPECT_NE(kubectl({"get", kind, kReleaseName}).err.find("NotFound"), std::string::npos) << kind;
  json policies = kubectlJson({"get", "validatingadmissionpolicies"});
  ASSERT_FALSE(policies.is_discarded());
  for (const json& p : policies["items"])
    EXPECT_NE(p["metadata"]["name"].get<std::string>().rfind(std::string(kReleaseName) + "-", 0),
              0u)
        << "policy left: " << p["metadata"]["name"];
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "after-uninstall"}, {"namespace", ns_}}},
      {"spec",
       {{"containers", json::array({{{"name", "c"}, {"image", "registry.example/app:1"}}})}}}};
  auto created = kubectl({"create", "-f", "-", "--request-timeout=10s"}, pod.dump());
  EXPECT_EQ(created.exitCode, 0) << "a pod without a runtime in a once-enforced namespace: "
                                 << created.err;

  // Exactly the finalizers the page names are left, and its step 3 frees them.
  EXPECT_EQ(finalizersIn(ns_), expected);
  const std::string step = documentedStepThree();
  ASSERT_NE(step.find("finalizers"), std::string::npos) << "docs/install.md step 3 not found";
  auto freed = run({"env", "KUBECONFIG=" + kubeconfigPath(),
                    "PATH=" + toolsBin() + ":/usr/local/bin:/usr/bin:/bin", "bash", "-euo",
                    "pipefail", "-c", step});
  EXPECT_EQ(freed.exitCode, 0) << step << freed.out << freed.err;
  EXPECT_EQ(finalizersIn(ns_), std::set<std::string>{});

  ASSERT_EQ(kubectl({"delete", "namespace", ns_, "--wait=false"}).exitCode, 0);
  EXPECT_TRUE(eventually([&] { return namespaceGone(ns_); }, std::chrono::seconds(120)))
      << kubectl({"get", "namespace", ns_, "-o", "yaml"}).out;
  // What the operator made in its own namespace (its certificate Secret, its
  // Lease) holds nothing up either.
  ASSERT_EQ(kubectl({"delete", "namespace", kOperatorNamespace, "--wait=false"}).exitCode, 0);
  EXPECT_TRUE(
      eventually([&] { return namespaceGone(kOperatorNamespace); }, std::chrono::seconds(120)))
      << kubectl({"get", "namespace", kOperatorNamespace, "-o", "yaml"}).out;
}

}  // namespace
}  // namespace lockstep::testing
