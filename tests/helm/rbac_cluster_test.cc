// The chart's RBAC against the code's permission table (rbac/permissions.cc),
// both ways, for a cluster install and namespaced installs; what the chart's
// ServiceAccount must not be able to do, asked of a real API server
// (`kubectl auth can-i --as`); and a namespaced install at work: the operator
// reconciles in its watched namespace and is denied outside it.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rbac/permissions.h"
#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kChart = std::string(LOCKSTEP_SOURCE_DIR) + "/helm/lockstep";
const std::string kOperatorUser =
    std::string("system:serviceaccount:") + kOperatorNamespace + ":" + kReleaseName;
const std::string kDigest =
    "sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kImage = "registry.example/runtimes/torch@" + kDigest;
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";

// templates/rbac.yaml rendered with `helmArgs`, as JSON objects (every
// namespaced object in it names its namespace).
std::vector<json> renderRbac(const std::vector<std::string>& helmArgs) {
  std::vector<std::string> args = {toolsBin() + "/helm", "template", kReleaseName, kChart,
                                   "--namespace", kOperatorNamespace, "--show-only",
                                   "templates/rbac.yaml",
                                   // The chart requires an image by digest; any one renders.
                                   "--set", "image.repository=registry.example/lockstep/operator",
                                   "--set", "image.digest=sha256:" + std::string(64, '0')};
  args.insert(args.end(), helmArgs.begin(), helmArgs.end());
  auto r = run(args);
  if (r.exitCode != 0) throw std::runtime_error("helm template: " + r.err);
  auto j = kubectl({"create", "--dry-run=client", "-o", "json", "-f", "-"}, r.out);
  if (j.exitCode != 0) throw std::runtime_error("kubectl convert: " + j.err);
  std::vector<json> out;
  std::istringstream in(j.out);
  while (in >> std::ws && in.peek() != EOF) {
    json parsed;
    in >> parsed;
    out.push_back(std::move(parsed));
  }
  return out;
}

std::vector<std::string> watchArgs(const std::vector<std::string>& namespaces) {
  if (namespaces.empty()) return {};
  std::string list;
  for (const auto& n : namespaces) list += (list.empty() ? "" : ",") + n;
  return {"--set", "watchNamespaces={" + list + "}"};
}

void applyAll(const std::vector<json>& objects) {
  for (const auto& o : objects) {
    auto r = kubectl({"apply", "-f", "-"}, o.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
}

// "yes"/"no" from `kubectl auth can-i ... --as=<the operator's ServiceAccount>`.
bool operatorCan(std::vector<std::string> args) {
  args.insert(args.begin(), {"auth", "can-i"});
  args.push_back("--as=" + kOperatorUser);
  auto r = kubectl(args);
  return r.out.rfind("yes", 0) == 0;
}

TEST(ChartRbac, GrantsExactlyThePermissionTableBothWays) {
  for (const std::vector<std::string>& watched :
       {std::vector<std::string>{}, std::vector<std::string>{"ml-a", "ml-b"},
        std::vector<std::string>{"ml-a", kOperatorNamespace}}) {
    rbac::Install install{kReleaseName, kOperatorNamespace, watched};
    auto want = rbac::expectedGrants(rbac::operatorPermissions(), install);
    auto have = rbac::grantedTo(renderRbac(watchArgs(watched)), kReleaseName, kOperatorNamespace);
    std::string label =
        watched.empty() ? "cluster install" : "watchNamespaces " + watched[0] + "," + watched[1];
    for (const auto& g : want) {
      EXPECT_TRUE(have.count(g)) << label
                                 << ": the code needs, the chart lacks: " << rbac::toString(g);
    }
    for (const auto& g : have) {
      EXPECT_TRUE(want.count(g)) << label
                                 << ": the chart grants, no code uses: " << rbac::toString(g);
    }
  }
}

class OperatorAccount : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { OperatorProcess::installClusterPieces(sharedWebhookPort()); }
  static void TearDownTestSuite() { OperatorProcess::uninstallWebhooks(); }
};

// Issue 12 item 6: what the operator must never be able to do (cluster install).
TEST_F(OperatorAccount, IsDeniedWhatTheCodeNeverDoes) {
  std::string other = uniqueName("other");
  // Lockstep's kinds: status only, never spec — but for two finalizers, each written
  // by a patch of metadata.finalizers alone: the RuntimeEnv in-use finalizer
  // (docs/contracts.md, "Runtime revisions") and the ModelRelease cleanup finalizer
  // (docs/modelrelease.md, "Deleting a release"); never update.
  EXPECT_FALSE(operatorCan({"update", "runtimeenvs.lockstep.dev", "-n", other}));
  EXPECT_TRUE(operatorCan({"patch", "runtimeenvs.lockstep.dev", "-n", other}));
  EXPECT_FALSE(operatorCan({"update", "modelreleases.lockstep.dev", "-n", other}));
  EXPECT_TRUE(operatorCan({"patch", "modelreleases.lockstep.dev", "-n", other}));
  EXPECT_FALSE(operatorCan({"delete", "runtimeenvs.lockstep.dev", "-n", other}));
  // Secrets: none in other namespaces, none listed or watched. In its own
  // namespace it may get one by name: the bearer-token Secrets AnalysisProviders
  // name live there and the chart cannot know their names (docs/security.md).
  EXPECT_FALSE(operatorCan({"get", "secrets", "-n", other}));
  EXPECT_FALSE(operatorCan({"list", "secrets", "-n", other}));
  EXPECT_FALSE(operatorCan({"get", "secrets", "-n", "kube-system"}));
  EXPECT_FALSE(operatorCan({"list", "secrets", "-n", kOperatorNamespace}));
  EXPECT_FALSE(operatorCan({"watch", "secrets", "-n", kOperatorNamespace}));
  EXPECT_TRUE(operatorCan({"get", "secrets/someone-else", "-n", kOperatorNamespace}));
  // Webhook configurations: its own only.
  EXPECT_FALSE(operatorCan({"patch", "validatingwebhookconfigurations/other-webhook"}));
  EXPECT_FALSE(operatorCan({"update", "validatingwebhookconfigurations/other-webhook"}));
  EXPECT_FALSE(operatorCan({"list", "validatingwebhookconfigurations"}));
  EXPECT_FALSE(operatorCan({"create", "mutatingwebhookconfigurations"}));
  EXPECT_FALSE(operatorCan({"patch", "mutatingwebhookconfigurations/other-webhook"}));
  EXPECT_FALSE(operatorCan({"update", "mutatingwebhookconfigurations/other-webhook"}));
  EXPECT_FALSE(operatorCan({"list", "mutatingwebhookconfigurations"}));
  // The caBundle upkeep reads and updates; it never patches or deletes.
  EXPECT_FALSE(operatorCan({"patch", "mutatingwebhookconfigurations/lockstep"}));
  EXPECT_FALSE(operatorCan({"delete", "mutatingwebhookconfigurations/lockstep"}));
  // Pods: read (gate Jobs' pods), never written directly.
  EXPECT_FALSE(operatorCan({"create", "pods", "-n", other}));
  EXPECT_FALSE(operatorCan({"create", "pods", "-n", "kube-system"}));
  EXPECT_FALSE(operatorCan({"create", "pods/exec", "-n", other}));
  // Leases: its own, in its namespace.
  EXPECT_FALSE(operatorCan({"update", "leases/kube-scheduler", "-n", "kube-system"}));
  EXPECT_FALSE(operatorCan({"update", "leases/other", "-n", kOperatorNamespace}));
  // RBAC itself, and escalation paths.
  EXPECT_FALSE(operatorCan({"create", "clusterrolebindings"}));
  EXPECT_FALSE(operatorCan({"create", "serviceaccounts/token", "-n", other}));
  // And the rows it needs are granted (the table's own test compares all of them).
  EXPECT_TRUE(
      operatorCan({"patch", "runtimeenvs.lockstep.dev", "--subresource=status", "-n", other}));
  EXPECT_TRUE(operatorCan({"get", "secrets/lockstep-webhook-tls", "-n", kOperatorNamespace}));
  EXPECT_TRUE(operatorCan({"update", "validatingwebhookconfigurations/lockstep"}));
  EXPECT_TRUE(operatorCan({"update", "mutatingwebhookconfigurations/lockstep"}));
  EXPECT_TRUE(operatorCan({"get", "mutatingwebhookconfigurations/lockstep"}));
  EXPECT_TRUE(operatorCan({"update", "leases/lockstep-operator", "-n", kOperatorNamespace}));
}

// Issue 13 item 8: a namespaced install reconciles in its namespace and holds
// nothing namespaced outside it.
TEST_F(OperatorAccount, NamespacedInstallWorksInItsNamespaceOnly) {
  std::string watched = uniqueName("ml");
  std::string outside = uniqueName("outside");
  ASSERT_EQ(kubectl({"create", "namespace", watched}).exitCode, 0);
  ASSERT_EQ(kubectl({"create", "namespace", outside}).exitCode, 0);
  auto namespaced = renderRbac(watchArgs({watched}));
  applyAll(namespaced);  // the ClusterRole loses its namespaced rules

  EXPECT_TRUE(operatorCan({"create", "deployments.apps", "-n", watched}));
  EXPECT_TRUE(operatorCan({"list", "configmaps", "-n", watched}));
  EXPECT_FALSE(operatorCan({"create", "deployments.apps", "-n", outside}));
  EXPECT_FALSE(operatorCan({"create", "deployments.apps", "-n", "kube-system"}));
  EXPECT_FALSE(operatorCan({"list", "configmaps", "-n", outside}));
  EXPECT_FALSE(operatorCan({"list", "configmaps", "--all-namespaces"}));
  EXPECT_FALSE(operatorCan({"create", "jobs.batch", "-n", outside}));
  EXPECT_FALSE(
      operatorCan({"patch", "runtimeenvs.lockstep.dev", "--subresource=status", "-n", outside}));

  {
    OperatorProcess op;
    std::string err = op.start({"--watch-namespaces=" + watched});
    EXPECT_EQ(err, "");
    if (err.empty()) {
      EXPECT_NE(applyReadyRuntimeEnv(watched, "torch", kImage, kLock), "") << op.log();
      // Outside: the operator never sees it, so it never gets a status.
      json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
                  {"kind", "RuntimeEnv"},
                  {"metadata", {{"name", "torch"}, {"namespace", outside}}},
                  {"spec", {{"image", kImage}, {"lock", {{"inline", kLock}}}}}};
      ASSERT_EQ(kubectl({"apply", "-f", "-"}, rte.dump()).exitCode, 0);
      // No sleep: a watched RuntimeEnv applied after it becoming Ready shows the
      // operator has had its chance at the outside one.
      EXPECT_NE(applyReadyRuntimeEnv(watched, "torch-2", kImage, kLock), "");
      json got = kubectlJson({"get", "rte", "torch", "-n", outside});
      EXPECT_FALSE(got.contains("status")) << got.dump();
      EXPECT_EQ(op.log().find("forbidden"), std::string::npos) << op.log();
    }
  }
  // Back to the cluster install for the next tests.
  applyAll(renderRbac({}));
  kubectl({"delete", "role,rolebinding", std::string(kReleaseName) + "-watched", "-n", watched,
           "--ignore-not-found"});
  kubectl({"delete", "namespace", watched, outside, "--wait=false"});
}

}  // namespace
}  // namespace lockstep::testing
