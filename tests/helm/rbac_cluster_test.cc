// The chart's RBAC against the code's permission table (rbac/permissions.cc),
// both ways, for a cluster install and namespaced installs; what the chart's
// ServiceAccount must not be able to do, asked of a real API server
// (`kubectl auth can-i --as`); a namespaced install at work: the operator
// reconciles in its watched namespace and is denied outside it; and the status
// of Lockstep's objects, which only the operator may write whatever RBAC says.
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
  // The API server authorizes from informers: the rules just removed can hold a moment
  // longer under load, the Role just made can lag. Wait for both before asking.
  ASSERT_TRUE(eventually([&] {
    return operatorCan({"create", "deployments.apps", "-n", watched}) &&
           !operatorCan({"create", "deployments.apps", "-n", outside});
  })) << "the namespaced RBAC did not take effect within 60 s";

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
  EXPECT_TRUE(eventually([&] {
    return operatorCan({"list", "configmaps", "--all-namespaces"});
  })) << "the cluster install's RBAC did not come back within 60 s";
  kubectl({"delete", "role,rolebinding", std::string(kReleaseName) + "-watched", "-n", watched,
           "--ignore-not-found"});
  kubectl({"delete", "namespace", watched, outside, "--wait=false"});
}

// Issue 28 ("manual rollback is a Model action, verb-checked"): a rollback is
// asked on the Model (rollback.lockstep.dev/<revision>: <user>, optionally
// rollback-to.lockstep.dev/<revision>: <release>), and the chart's policy
// (templates/model-rollback-policy.yaml) admits such a write only from a user
// with verb rollback on that Model, as their own name, at the Model's current
// revision. "eve" may edit Models (get, update, patch) but not roll them back;
// "alice" may also roll back (the chart's release-approver ClusterRole).
TEST_F(OperatorAccount, OnlyAUserWhoMayRollBackAsksAModelToRollBack) {
  const std::string ns = uniqueName("mrb");
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  json editor = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", {{"name", "lockstep-test-model-editor"}}},
      {"rules", json::array({{{"apiGroups", {"lockstep.dev"}},
                              {"resources", {"models"}},
                              {"verbs", {"get", "list", "create", "update", "patch"}}}})}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, editor.dump()).exitCode, 0);
  ASSERT_EQ(kubectl({"create", "rolebinding", "model-editor", "-n", ns,
                     "--clusterrole=lockstep-test-model-editor", "--user=eve", "--user=alice"})
                .exitCode,
            0);
  ASSERT_EQ(
      kubectl({"create", "rolebinding", "approver", "-n", ns,
               std::string("--clusterrole=") + kReleaseName + "-release-approver", "--user=alice"})
          .exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return kubectl(
               {"auth", "can-i", "rollback", "models.lockstep.dev/gpt2", "-n", ns, "--as=alice"})
                   .out.rfind("yes", 0) == 0 &&
           kubectl({"auth", "can-i", "patch", "models.lockstep.dev/gpt2", "-n", ns, "--as=eve"})
                   .out.rfind("yes", 0) == 0;
  }));
  EXPECT_EQ(kubectl({"auth", "can-i", "rollback", "models.lockstep.dev/gpt2", "-n", ns, "--as=eve"})
                .out.rfind("no", 0),
            0u);
  // The Model, its prod at revision 2 (the status as the operator writes it).
  json model = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "Model"},
                {"metadata", {{"name", "gpt2"}, {"namespace", ns}}},
                {"spec", json::object()}};
  ASSERT_EQ(kubectl({"create", "-f", "-"}, model.dump()).exitCode, 0);
  // (The operator may update models/status, never patch it.)
  json stored = kubectlJson({"get", "models.lockstep.dev", "gpt2", "-n", ns});
  stored["status"] = {{"revision", 2}, {"prod", {{"release", "v2"}}}};
  auto status = kubectl({"replace", "--subresource=status", "-f", "-", "--as=" + kOperatorUser},
                        stored.dump());
  ASSERT_EQ(status.exitCode, 0) << status.err;

  auto annotate = [&](const std::string& as, const std::vector<std::string>& kv) {
    std::vector<std::string> args = {"annotate", "--overwrite", "models.lockstep.dev/gpt2", "-n",
                                     ns,         "--as=" + as};
    args.insert(args.end(), kv.begin(), kv.end());
    return kubectl(args);
  };
  auto refused = [&](const std::string& what, const CommandResult& r, const std::string& says) {
    SCOPED_TRACE(what);
    EXPECT_NE(r.exitCode, 0) << "admitted";
    EXPECT_NE(
        r.err.find("ValidatingAdmissionPolicy '" + std::string(kReleaseName) + "-model-rollback'"),
        std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  };
  // The binding reaches the API server asynchronously.
  ASSERT_TRUE(
      eventually([&] { return annotate("eve", {"rollback.lockstep.dev/2=eve"}).exitCode != 0; }));
  refused("eve may edit the Model but not roll it back",
          annotate("eve", {"rollback.lockstep.dev/2=eve"}),
          "user eve may not rollback this Model: RBAC verb \"rollback\" on resource \"models\"");
  // An edit that is no request is hers to make.
  auto plain = annotate("eve", {"team=search"});
  EXPECT_EQ(plain.exitCode, 0) << plain.err;
  refused("alice, in someone else's name", annotate("alice", {"rollback.lockstep.dev/2=bob"}),
          "must hold your own user name \"alice\"");
  refused("alice, against prod as it was", annotate("alice", {"rollback.lockstep.dev/1=alice"}),
          "the model's prod is at revision 2");
  refused("alice, a target with no request of hers",
          annotate("alice", {"rollback-to.lockstep.dev/2=v1"}), "must hold your own user name");
  refused("alice, a target that is no release name",
          annotate("alice", {"rollback.lockstep.dev/2=alice", "rollback-to.lockstep.dev/2=V1!"}),
          "names the release to go back to");
  auto asked =
      annotate("alice", {"rollback.lockstep.dev/2=alice", "rollback-to.lockstep.dev/2=v1"});
  EXPECT_EQ(asked.exitCode, 0) << asked.err;
  // Eve can neither redirect nor withdraw alice's request.
  refused("eve redirects the request", annotate("eve", {"rollback-to.lockstep.dev/2=v0"}),
          "user eve may not rollback this Model");
  refused("eve withdraws the request", annotate("eve", {"rollback.lockstep.dev/2-"}),
          "user eve may not rollback this Model");
  json now = kubectlJson({"get", "models.lockstep.dev", "gpt2", "-n", ns});
  EXPECT_EQ(now["metadata"]["annotations"].value("rollback.lockstep.dev/2", ""), "alice");
  EXPECT_EQ(now["metadata"]["annotations"].value("rollback-to.lockstep.dev/2", ""), "v1");
  // A Model created with a request: there is no prod to roll back.
  json made = model;
  made["metadata"]["name"] = "bert";
  made["metadata"]["annotations"] = {{"rollback.lockstep.dev/0", "alice"}};
  refused("a created Model asking for a rollback",
          kubectl({"create", "-f", "-", "--as=alice"}, made.dump()),
          "the model's prod is at revision 0 (no prod yet)");
  kubectl({"delete", "namespace", ns, "--wait=false"});
  kubectl({"delete", "clusterrole", "lockstep-test-model-editor"});
}

// Issue 28 (must-show 6): the status of every Lockstep kind is the operator's
// alone. RBAC lets user "mallory" write `*/status` in lockstep.dev (a wildcard
// tenant role, plus update/patch on modelreleases/status and runtimeenvs/status
// by name); the chart's status policy (templates/status-policy.yaml) refuses
// each of her writes, by merge patch, JSON patch and update, on a RuntimeEnv, a
// ModelRelease, an AnalysisProvider and a kind the chart has never heard of; the
// cluster's admin is refused too. The operator, as its ServiceAccount, keeps
// writing them.
TEST_F(OperatorAccount, OnlyTheOperatorWritesLockstepStatus) {
  const std::string ns = uniqueName("status");
  const std::string mallory = "--as=mallory";
  const std::string provider = uniqueName("prom");
  const std::string probeCrd = "statusprobes.lockstep.dev";
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  json role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", {{"name", "lockstep-test-status-writer"}}},
      {"rules",
       json::array({{{"apiGroups", {"lockstep.dev"}},
                     {"resources", {"*/status"}},
                     {"verbs", {"get", "update", "patch"}}},
                    {{"apiGroups", {"lockstep.dev"}},
                     {"resources", {"modelreleases/status", "runtimeenvs/status"}},
                     {"verbs", {"update", "patch"}}},
                    {{"apiGroups", {"lockstep.dev"}}, {"resources", {"*"}}, {"verbs", {"get"}}}})}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, role.dump()).exitCode, 0);
  // A Role's worth in the namespace; the cluster-scoped AnalysisProviders need a cluster binding.
  ASSERT_EQ(kubectl({"create", "rolebinding", "status-writer", "-n", ns,
                     "--clusterrole=lockstep-test-status-writer", "--user=mallory"})
                .exitCode,
            0);
  ASSERT_EQ(kubectl({"create", "clusterrolebinding", "lockstep-test-status-writer",
                     "--clusterrole=lockstep-test-status-writer", "--user=mallory"})
                .exitCode,
            0);
  // So every refusal below is the policy's, not RBAC's.
  EXPECT_TRUE(eventually([&] {
    return kubectl({"auth", "can-i", "patch", "modelreleases.lockstep.dev", "--subresource=status",
                    "-n", ns, mallory})
               .out.rfind("yes", 0) == 0;
  }));

  OperatorProcess op;
  ASSERT_EQ(op.start(), "");
  const std::string hash = applyReadyRuntimeEnv(ns, "torch", kImage, kLock);
  ASSERT_NE(hash, "") << op.log();
  json mr = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "v1"}, {"namespace", ns}}},
      {"spec",
       {{"model", "gpt2"},
        {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
        {"runtimeEnvRef", {{"name", "torch"}}},
        {"closureHash", hash},
        {"stages", json::array({{{"name", "eval"}, {"gate", {{"template", json::object()}}}}})}}}};
  auto created = kubectl({"create", "-f", "-"}, mr.dump());
  ASSERT_EQ(created.exitCode, 0) << created.err;
  std::string phase;
  ASSERT_TRUE(eventually([&] {
    phase = statusField(kubectlJson({"get", "mr", "v1", "-n", ns}));
    return !phase.empty();
  })) << op.log();
  json ap = {{"apiVersion", "lockstep.dev/v1alpha1"},
             {"kind", "AnalysisProvider"},
             {"metadata", {{"name", provider}}},
             {"spec", {{"address", "https://prometheus.invalid:9090"}}}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, ap.dump()).exitCode, 0);
  // A kind added to the group later is covered without a change to the policy.
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "statusprobes.lockstep.dev"},
    "spec": {"group": "lockstep.dev", "scope": "Namespaced",
      "names": {"plural": "statusprobes", "singular": "statusprobe", "kind": "StatusProbe"},
      "versions": [{"name": "v1alpha1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object",
          "x-kubernetes-preserve-unknown-fields": true}}}]}})");
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, crd.dump()).exitCode, 0);
  ASSERT_EQ(
      kubectl({"wait", "--for=condition=Established", "crd/" + probeCrd, "--timeout=60s"}).exitCode,
      0);
  ASSERT_TRUE(eventually([&] {
    return kubectl({"create", "-n", ns, "-f", "-"},
                   R"({"apiVersion":"lockstep.dev/v1alpha1","kind":"StatusProbe",)"
                   R"("metadata":{"name":"p"}})")
               .exitCode == 0;
  }));

  const std::string forged = R"({"status":{"phase":"Promoted","closureHash":"sha256:)" +
                             std::string(64, 'f') + R"(","observedGeneration":99}})";
  auto refused = [&](const std::string& what, const CommandResult& r) {
    SCOPED_TRACE(what);
    EXPECT_NE(r.exitCode, 0) << "the status write was admitted";
    EXPECT_NE(r.err.find("is written by the Lockstep operator alone"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("ValidatingAdmissionPolicy 'lockstep-status'"), std::string::npos)
        << r.err;
  };
  auto patchStatus = [&](const std::vector<std::string>& target, const std::string& type,
                         const std::string& body, const std::string& as) {
    std::vector<std::string> args = {"patch"};
    args.insert(args.end(), target.begin(), target.end());
    args.insert(args.end(), {"--subresource=status", "--type=" + type, "-p", body});
    if (!as.empty()) args.push_back(as);
    return kubectl(args);
  };
  // The policy's binding reaches the API server asynchronously.
  ASSERT_TRUE(eventually([&] {
    return patchStatus({"mr", "v1", "-n", ns}, "merge", forged, mallory).exitCode != 0;
  }));
  refused("mallory: merge patch of a ModelRelease's status",
          patchStatus({"mr", "v1", "-n", ns}, "merge", forged, mallory));
  refused("mallory: JSON patch of a ModelRelease's phase",
          patchStatus({"mr", "v1", "-n", ns}, "json",
                      R"([{"op":"add","path":"/status/phase","value":"Promoted"}])", mallory));
  json replaced = kubectlJson({"get", "mr", "v1", "-n", ns});
  replaced["status"]["phase"] = "Promoted";
  refused("mallory: update of a ModelRelease's status",
          kubectl({"replace", "--subresource=status", "-f", "-", mallory}, replaced.dump()));
  refused("mallory: merge patch of a RuntimeEnv's status",
          patchStatus({"rte", "torch", "-n", ns}, "merge", forged, mallory));
  refused("mallory: merge patch of an AnalysisProvider's status",
          patchStatus({"analysisprovider", provider}, "merge", forged, mallory));
  // The Model: its status is the record of what prod runs (issue 28: "status is the trust root").
  json model = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "Model"},
                {"metadata", {{"name", "gpt2"}, {"namespace", ns}}}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, model.dump()).exitCode, 0);
  refused(
      "mallory: merge patch of a Model's status",
      patchStatus({"models.lockstep.dev", "gpt2", "-n", ns}, "merge",
                  R"({"status":{"revision":99,"prod":{"release":"forged","uid":"u"}}})", mallory));
  refused("mallory: merge patch of a new kind's status",
          patchStatus({"statusprobe", "p", "-n", ns}, "merge", forged, mallory));
  refused("the cluster's admin: merge patch of a RuntimeEnv's status",
          patchStatus({"rte", "torch", "-n", ns}, "merge", forged, ""));
  // Nothing was written.
  EXPECT_EQ(kubectlJson({"get", "rte", "torch", "-n", ns})["status"].value("closureHash", ""),
            hash);
  EXPECT_NE(statusField(kubectlJson({"get", "mr", "v1", "-n", ns})), "Promoted");
  EXPECT_NE(kubectlJson({"get", "models.lockstep.dev", "gpt2", "-n", ns})
                .value("/status/prod/release"_json_pointer, std::string()),
            "forged");

  // The operator still writes: a changed lock is a new closure hash in status.
  json rte = kubectlJson({"get", "rte", "torch", "-n", ns});
  rte["spec"]["lock"]["inline"] = "numpy==1.26.3 --hash=sha256:" + std::string(64, 'b') + "\n";
  ASSERT_EQ(kubectl({"replace", "-f", "-"}, rte.dump()).exitCode, 0);
  std::string now;
  EXPECT_TRUE(eventually([&] {
    json o = kubectlJson({"get", "rte", "torch", "-n", ns});
    now = o["status"].value("closureHash", "");
    return now != hash && !now.empty() &&
           o["status"].value("observedGeneration", 0) == o["metadata"].value("generation", -1);
  })) << now
      << "\n"
      << op.log();
  EXPECT_EQ(op.log().find("ValidatingAdmissionPolicy"), std::string::npos) << op.log();

  kubectl({"delete", "crd", probeCrd, "--wait=false"});
  kubectl({"delete", "analysisprovider", provider, "--wait=false"});
  kubectl({"delete", "clusterrolebinding,clusterrole", "lockstep-test-status-writer"});
  kubectl({"delete", "namespace", ns, "--wait=false"});
}

}  // namespace
}  // namespace lockstep::testing
