// The Helm chart: lints, renders in both certificate modes, and every object it
// renders is accepted by the real API server (server-side dry run).
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kChart = std::string(LOCKSTEP_SOURCE_DIR) + "/helm/lockstep";

CommandResult helm(std::vector<std::string> args) {
  args.insert(args.begin(), toolsBin() + "/helm");
  return run(args);
}

TEST(HelmChart, Lints) {
  auto r = helm({"lint", kChart, "--strict"});
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
}

TEST(HelmChart, BothCertModesRenderObjectsTheApiServerAccepts) {
  std::string ns = uniqueName("chart");
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  struct Mode {
    std::vector<std::string> set;
    std::string mustContain;
    std::string mustNotContain;
  };
  for (const Mode& m :
       {Mode{{}, "--cert-secret=lockstep-webhook-tls"},
        Mode{{"--set", "webhook.certMode=file", "--set", "webhook.certSecretName=lockstep-tls"},
             "cert-manager.io/inject-ca-from: " + ns + "/lockstep-tls"},
        // Local runs (tools/demo.sh): a URL instead of the Service, never both.
        Mode{{"--set", "webhook.url=https://127.0.0.1:9443/"},
             "url: \"https://127.0.0.1:9443/validate/modelreleases\"",
             "path: /validate/"}}) {
    std::vector<std::string> args = {"template",    "lockstep", kChart,
                                     "--namespace", ns,         "--include-crds"};
    args.insert(args.end(), m.set.begin(), m.set.end());
    auto rendered = helm(args);
    ASSERT_EQ(rendered.exitCode, 0) << rendered.err;
    EXPECT_NE(rendered.out.find(m.mustContain), std::string::npos) << m.mustContain;
    if (!m.mustNotContain.empty()) {
      EXPECT_EQ(rendered.out.find(m.mustNotContain), std::string::npos) << m.mustNotContain;
    }
    // Hardened pod: non-root, no privilege escalation, read-only root, no capabilities.
    for (const char* needle : {"runAsNonRoot: true", "allowPrivilegeEscalation: false",
                               "readOnlyRootFilesystem: true", "drop: [ALL]", "RuntimeDefault"}) {
      EXPECT_NE(rendered.out.find(needle), std::string::npos) << needle;
    }
    auto applied = kubectl({"apply", "--dry-run=server", "-n", ns, "-f", "-"}, rendered.out);
    EXPECT_EQ(applied.exitCode, 0) << applied.err;
  }
  // A webhook URL the API server would not call is a clear error.
  auto http = helm({"template", "lockstep", kChart, "--set", "webhook.url=http://127.0.0.1:9443"});
  EXPECT_NE(http.exitCode, 0);
  EXPECT_NE(http.err.find("webhook.url must start with https://"), std::string::npos) << http.err;
  // file mode without a Secret name is a clear error, not a broken Deployment.
  auto bad = helm({"template", "lockstep", kChart, "--set", "webhook.certMode=file"});
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_NE(bad.err.find("webhook.certSecretName is required"), std::string::npos) << bad.err;
  kubectl({"delete", "namespace", ns, "--wait=false"});
}

// Issue 13 item 3: the optional NetworkPolicy admits only the API server to the
// webhook port. Checked here by structure and by the real API server's
// validation (--dry-run=server); the test cluster has no CNI, so no packet is
// filtered in these tests.
TEST(HelmChart, NetworkPolicyAdmitsOnlyTheApiServerToTheWebhookPort) {
  auto none = helm({"template", "lockstep", kChart});
  ASSERT_EQ(none.exitCode, 0) << none.err;
  EXPECT_EQ(none.out.find("kind: NetworkPolicy"), std::string::npos) << "off by default";

  std::string ns = uniqueName("chart-netpol");
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  const json peer = {
      {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", "kube-system"}}}}},
      {"podSelector", {{"matchLabels", {{"app", "konnectivity-agent"}}}}}};
  auto rendered = helm({"template", "lockstep", kChart, "--namespace", ns, "--set",
                        "networkPolicy.enabled=true", "--set",
                        "networkPolicy.apiServerCIDRs={10.0.0.0/28,192.168.1.10/32}", "--set-json",
                        "networkPolicy.apiServerPeers=[" + peer.dump() + "]"});
  ASSERT_EQ(rendered.exitCode, 0) << rendered.err;
  auto applied =
      kubectl({"apply", "--dry-run=server", "-n", ns, "-o", "json", "-f", "-"}, rendered.out);
  ASSERT_EQ(applied.exitCode, 0) << applied.err;
  json list = json::parse(applied.out);
  json policy, deployment;
  for (const json& o : list["items"]) {
    if (o["kind"] == "NetworkPolicy") policy = o;
    if (o["kind"] == "Deployment") deployment = o;
  }
  ASSERT_TRUE(policy.is_object()) << "no NetworkPolicy rendered";
  ASSERT_TRUE(deployment.is_object());
  const json& spec = policy["spec"];
  EXPECT_EQ(spec["podSelector"]["matchLabels"], deployment["spec"]["selector"]["matchLabels"])
      << "the policy selects the operator's pods";
  EXPECT_EQ(spec["policyTypes"], json::array({"Ingress"}));
  // The port names the policy uses exist on the operator's container.
  std::set<std::string> containerPorts;
  for (const json& p : deployment["spec"]["template"]["spec"]["containers"][0]["ports"]) {
    containerPorts.insert(p["name"].get<std::string>());
  }
  ASSERT_EQ(spec["ingress"].size(), 2u);
  // Rule 1: the webhook port, from the API server's addresses and peers only.
  const json& webhookRule = spec["ingress"][0];
  EXPECT_EQ(webhookRule["ports"], json::array({{{"protocol", "TCP"}, {"port", "webhook"}}}));
  EXPECT_EQ(webhookRule["from"], json::array({{{"ipBlock", {{"cidr", "10.0.0.0/28"}}}},
                                              {{"ipBlock", {{"cidr", "192.168.1.10/32"}}}},
                                              peer}));
  // Rule 2: metrics and health from anywhere, as without the policy; never the webhook.
  const json& openRule = spec["ingress"][1];
  EXPECT_FALSE(openRule.contains("from"));
  for (const json& p : openRule["ports"]) {
    EXPECT_NE(p["port"], "webhook");
    EXPECT_TRUE(containerPorts.count(p["port"].get<std::string>())) << p.dump();
  }
  EXPECT_TRUE(containerPorts.count("webhook"));
  EXPECT_EQ(openRule["ports"].size(), 2u);

  // Enabled without any API server source would cut the API server off.
  auto empty = helm({"template", "lockstep", kChart, "--set", "networkPolicy.enabled=true"});
  EXPECT_NE(empty.exitCode, 0);
  EXPECT_NE(empty.err.find("networkPolicy.enabled needs networkPolicy.apiServerCIDRs or "
                           "networkPolicy.apiServerPeers"),
            std::string::npos)
      << empty.err;
  kubectl({"delete", "namespace", ns, "--wait=false"});
}

}  // namespace
}  // namespace lockstep::testing
