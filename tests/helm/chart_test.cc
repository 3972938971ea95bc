// The Helm chart: lints, renders in both certificate modes, and every object it
// renders is accepted by the real API server (server-side dry run). The
// optional ServiceMonitor and Grafana dashboard ConfigMap render only when
// enabled, and the ServiceMonitor scrapes the port the operator serves metrics on.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
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

// The chart needs an image by digest (it has no default); any well-formed one renders.
const std::vector<std::string> kImageValues = {
    "--set", "image.repository=registry.example/lockstep/lockstep-operator", "--set",
    "image.digest=sha256:" + std::string(64, '0')};

CommandResult helm(std::vector<std::string> args, bool withImage = true) {
  if (withImage) args.insert(args.begin() + 1, kImageValues.begin(), kImageValues.end());
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

// The ModelRelease creator webhook (docs/modelrelease.md "Approvals"): a
// MutatingWebhookConfiguration for CREATE and, to record approvers' groups
// (issue 29), the UPDATEs that write approvals; Fail, no side effects, never
// reinvoked, matching exactly the namespaces the validating ModelRelease
// webhook matches (cluster and namespaced install), certificate-managed alike.
std::string dumped(const YAML::Node& n) { return n ? YAML::Dump(n) : "<absent>"; }

TEST(HelmChart, MutatingCreatorWebhookIsScopedLikeTheValidatingOne) {
  for (const std::vector<std::string>& set :
       {std::vector<std::string>{},
        {"--set", "watchNamespaces={ml-a,ml-b}"},
        {"--set", "webhook.certMode=file", "--set", "webhook.certSecretName=lockstep-tls"}}) {
    std::vector<std::string> args = {"template",
                                     "lockstep",
                                     kChart,
                                     "--namespace",
                                     "lockstep-system",
                                     "--show-only",
                                     "templates/webhooks.yaml"};
    args.insert(args.end(), set.begin(), set.end());
    auto rendered = helm(args);
    ASSERT_EQ(rendered.exitCode, 0) << rendered.err;
    YAML::Node validating, mutating;
    for (const YAML::Node& doc : YAML::LoadAll(rendered.out)) {
      if (!doc["kind"]) continue;
      if (doc["kind"].as<std::string>() == "ValidatingWebhookConfiguration") validating = doc;
      if (doc["kind"].as<std::string>() == "MutatingWebhookConfiguration") mutating = doc;
    }
    ASSERT_TRUE(validating && mutating) << rendered.out;
    EXPECT_EQ(mutating["metadata"]["name"].as<std::string>(), "lockstep");
    ASSERT_EQ(mutating["webhooks"].size(), 1u);
    const YAML::Node w = mutating["webhooks"][0];
    EXPECT_EQ(w["name"].as<std::string>(), "creator.modelreleases.lockstep.dev");
    EXPECT_EQ(w["failurePolicy"].as<std::string>(), "Fail");
    EXPECT_EQ(w["sideEffects"].as<std::string>(), "None");
    EXPECT_EQ(w["reinvocationPolicy"].as<std::string>(), "Never");
    EXPECT_EQ(w["clientConfig"]["service"]["path"].as<std::string>(), "/mutate/modelreleases");
    ASSERT_EQ(w["rules"].size(), 1u);
    EXPECT_EQ(w["rules"][0]["operations"].as<std::vector<std::string>>(),
              (std::vector<std::string>{"CREATE", "UPDATE"}));
    EXPECT_EQ(w["rules"][0]["resources"].as<std::vector<std::string>>(),
              std::vector<std::string>{"modelreleases"});
    EXPECT_EQ(w["rules"][0]["apiGroups"][0].as<std::string>(), "lockstep.dev");
    YAML::Node releases;
    for (const YAML::Node& v : validating["webhooks"]) {
      if (v["name"].as<std::string>() == "modelreleases.lockstep.dev") releases = v;
    }
    ASSERT_TRUE(releases);
    EXPECT_EQ(dumped(w["namespaceSelector"]), dumped(releases["namespaceSelector"]));
    ASSERT_EQ(w["matchConditions"].size(), releases["matchConditions"].size() + 1);
    for (std::size_t i = 0; i < releases["matchConditions"].size(); ++i)
      EXPECT_EQ(dumped(w["matchConditions"][i]), dumped(releases["matchConditions"][i]));
    EXPECT_EQ(w["matchConditions"][releases["matchConditions"].size()]["name"].as<std::string>(),
              "approvals-written");
    EXPECT_EQ(dumped(mutating["metadata"]["annotations"]),
              dumped(validating["metadata"]["annotations"]));
  }
}

// Issue 22: the chart has no default image (none exists before a push): the repository and
// a well-formed digest are required, and the Deployment runs exactly repository@digest.
TEST(HelmChart, ImageIsRequiredAndPinnedByDigest) {
  auto none = helm({"template", "lockstep", kChart}, /*withImage=*/false);
  EXPECT_NE(none.exitCode, 0);
  EXPECT_NE(none.err.find("image.repository is required"), std::string::npos) << none.err;
  auto tagged = helm({"template", "lockstep", kChart, "--set", "image.repository=r.example/op",
                      "--set", "image.digest=0.1.0"},
                     /*withImage=*/false);
  EXPECT_NE(tagged.exitCode, 0);
  EXPECT_NE(tagged.err.find("is not sha256:<64 lowercase hex>"), std::string::npos) << tagged.err;
  auto pinned = helm({"template", "lockstep", kChart, "--show-only", "templates/deployment.yaml"});
  ASSERT_EQ(pinned.exitCode, 0) << pinned.err;
  EXPECT_NE(pinned.out.find("image: \"registry.example/lockstep/lockstep-operator@sha256:" +
                            std::string(64, '0') + "\""),
            std::string::npos)
      << pinned.out;
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

// ---- observability (docs/observability.md) -------------------------------------------------

// `helm template` of the chart in namespace "lockstep-system" with `set`, as YAML documents.
std::vector<YAML::Node> renderDocs(const std::vector<std::string>& set, CommandResult* result) {
  std::vector<std::string> args = {"template", "lockstep", kChart, "--namespace",
                                   "lockstep-system"};
  for (const std::string& kv : set) {
    args.emplace_back("--set");
    args.push_back(kv);
  }
  *result = helm(args);
  std::vector<YAML::Node> docs;
  if (result->exitCode != 0) return docs;
  for (const YAML::Node& d : YAML::LoadAll(result->out)) {
    if (d.IsMap()) docs.push_back(d);
  }
  return docs;
}

std::vector<YAML::Node> ofKind(const std::vector<YAML::Node>& docs, const std::string& kind) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& d : docs) {
    if (d["kind"] && d["kind"].as<std::string>() == kind) out.push_back(d);
  }
  return out;
}

// The object named `name` among `objects`; an undefined node (false) when none is.
YAML::Node named(const std::vector<YAML::Node>& objects, const std::string& name) {
  for (const YAML::Node& o : objects) {
    if (o["metadata"]["name"] && o["metadata"]["name"].as<std::string>() == name) return o;
  }
  YAML::Node none(YAML::NodeType::Map);
  return none["absent"];
}

bool hasLabel(const YAML::Node& o, const std::string& key) {
  return o["metadata"]["labels"] && o["metadata"]["labels"][key];
}

TEST(HelmChart, ObservabilityObjectsAreOffByDefault) {
  CommandResult r;
  auto docs = renderDocs({}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_FALSE(docs.empty());
  EXPECT_TRUE(ofKind(docs, "ServiceMonitor").empty());
  for (const YAML::Node& cm : ofKind(docs, "ConfigMap"))
    EXPECT_FALSE(hasLabel(cm, "grafana_dashboard")) << cm["metadata"]["name"];
  EXPECT_EQ(r.out.find("monitoring.coreos.com"), std::string::npos);
}

// The ServiceMonitor selects the chart's Service and scrapes the port that
// leads to the container port the operator's --metrics-port listens on.
TEST(HelmChart, ServiceMonitorScrapesTheOperatorsMetricsPort) {
  CommandResult r;
  auto docs = renderDocs({"serviceMonitor.enabled=true", "serviceMonitor.labels.release=kps",
                          "serviceMonitor.interval=15s", "metrics.port=9095"},
                         &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto monitors = ofKind(docs, "ServiceMonitor");
  ASSERT_EQ(monitors.size(), 1u) << r.out;
  const YAML::Node sm = monitors[0];
  EXPECT_EQ(sm["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  EXPECT_EQ(sm["metadata"]["namespace"].as<std::string>(), "lockstep-system");
  EXPECT_EQ(sm["metadata"]["labels"]["release"].as<std::string>(), "kps");
  ASSERT_EQ(sm["spec"]["namespaceSelector"]["matchNames"].size(), 1u);
  EXPECT_EQ(sm["spec"]["namespaceSelector"]["matchNames"][0].as<std::string>(), "lockstep-system");

  auto services = ofKind(docs, "Service");
  ASSERT_EQ(services.size(), 1u);
  const YAML::Node svc = services[0];
  // Every label the ServiceMonitor selects on is on the Service, with that value.
  const YAML::Node match = sm["spec"]["selector"]["matchLabels"];
  ASSERT_TRUE(match && match.IsMap() && match.size() > 0) << YAML::Dump(sm);
  for (const auto& kv : match) {
    const std::string key = kv.first.as<std::string>();
    ASSERT_TRUE(svc["metadata"]["labels"][key]) << "Service lacks label " << key;
    EXPECT_EQ(svc["metadata"]["labels"][key].as<std::string>(), kv.second.as<std::string>());
  }
  ASSERT_EQ(sm["spec"]["endpoints"].size(), 1u);
  const YAML::Node ep = sm["spec"]["endpoints"][0];
  EXPECT_EQ(ep["path"].as<std::string>(), "/metrics");
  // What the operator serves by default (metrics.secure): https, each scrape
  // authorised by the scraper's ServiceAccount token.
  EXPECT_EQ(ep["scheme"].as<std::string>(), "https");
  EXPECT_EQ(ep["interval"].as<std::string>(), "15s");
  EXPECT_TRUE(ep["tlsConfig"]["insecureSkipVerify"].as<bool>());
  EXPECT_EQ(ep["bearerTokenFile"].as<std::string>(),
            "/var/run/secrets/kubernetes.io/serviceaccount/token");
  // endpoint port -> Service port (by name) -> container port (by name) -> --metrics-port.
  std::string targetPort;
  for (const YAML::Node& p : svc["spec"]["ports"]) {
    if (p["name"].as<std::string>() == ep["port"].as<std::string>())
      targetPort = p["targetPort"].as<std::string>();
  }
  ASSERT_FALSE(targetPort.empty()) << "the Service has no port named " << ep["port"];
  auto deployments = ofKind(docs, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  const YAML::Node container = deployments[0]["spec"]["template"]["spec"]["containers"][0];
  int containerPort = 0;
  for (const YAML::Node& p : container["ports"]) {
    if (p["name"].as<std::string>() == targetPort) containerPort = p["containerPort"].as<int>();
  }
  EXPECT_EQ(containerPort, 9095) << "Service targetPort " << targetPort;
  bool flag = false;
  for (const YAML::Node& a : container["args"])
    flag = flag || a.as<std::string>() == "--metrics-port=9095";
  EXPECT_TRUE(flag) << YAML::Dump(container["args"]);
}

// Metrics over HTTPS with token authorisation: scheme, tlsConfig and
// bearerTokenFile come from values; a token is never sent over http.
TEST(HelmChart, ServiceMonitorSchemeTlsAndTokenAreValues) {
  CommandResult r;
  auto docs = renderDocs(
      {"serviceMonitor.enabled=true", "serviceMonitor.scheme=https",
       "serviceMonitor.tlsConfig.serverName=lockstep.lockstep-system.svc",
       "serviceMonitor.tlsConfig.ca.secret.name=lockstep-metrics-ca",
       "serviceMonitor.tlsConfig.ca.secret.key=ca.crt",
       "serviceMonitor.bearerTokenFile=/var/run/secrets/kubernetes.io/serviceaccount/token"},
      &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto monitors = ofKind(docs, "ServiceMonitor");
  ASSERT_EQ(monitors.size(), 1u);
  const YAML::Node ep = monitors[0]["spec"]["endpoints"][0];
  EXPECT_EQ(ep["scheme"].as<std::string>(), "https");
  EXPECT_EQ(ep["tlsConfig"]["serverName"].as<std::string>(), "lockstep.lockstep-system.svc");
  EXPECT_EQ(ep["tlsConfig"]["ca"]["secret"]["name"].as<std::string>(), "lockstep-metrics-ca");
  EXPECT_EQ(ep["bearerTokenFile"].as<std::string>(),
            "/var/run/secrets/kubernetes.io/serviceaccount/token");

  // metrics.secure=false: plain http, no token, no TLS settings.
  docs = renderDocs({"serviceMonitor.enabled=true", "metrics.secure=false"}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  monitors = ofKind(docs, "ServiceMonitor");
  ASSERT_EQ(monitors.size(), 1u);
  const YAML::Node plain = monitors[0]["spec"]["endpoints"][0];
  EXPECT_EQ(plain["scheme"].as<std::string>(), "http");
  EXPECT_FALSE(plain["tlsConfig"]);
  EXPECT_FALSE(plain["bearerTokenFile"]);
  // A scheme the operator does not serve is refused.
  renderDocs({"serviceMonitor.enabled=true", "serviceMonitor.scheme=http"}, &r);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("serviceMonitor.scheme http does not match what the operator serves"),
            std::string::npos)
      << r.err;

  renderDocs({"serviceMonitor.enabled=true", "serviceMonitor.scheme=ftp"}, &r);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("serviceMonitor.scheme must be http or https (got \"ftp\")"),
            std::string::npos)
      << r.err;
  renderDocs({"serviceMonitor.enabled=true", "metrics.secure=false",
              "serviceMonitor.bearerTokenFile=/token"},
             &r);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("serviceMonitor.bearerTokenFile needs serviceMonitor.scheme https"),
            std::string::npos)
      << r.err;
  renderDocs({"serviceMonitor.enabled=true", "metrics.secure=false",
              "serviceMonitor.tlsConfig.serverName=x"},
             &r);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("serviceMonitor.tlsConfig is set but serviceMonitor.scheme is not https"),
            std::string::npos)
      << r.err;
}

// The dashboard ConfigMap carries the sidecar label and the dashboard JSON of
// helm/lockstep/dashboards/lockstep.json unchanged; the API server accepts it.
TEST(HelmChart, DashboardConfigMapCarriesValidDashboardJson) {
  CommandResult r;
  auto docs = renderDocs(
      {"grafanaDashboard.enabled=true", "grafanaDashboard.annotations.grafana_folder=Lockstep"},
      &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<YAML::Node> dashboards;
  for (const YAML::Node& cm : ofKind(docs, "ConfigMap")) {
    if (hasLabel(cm, "grafana_dashboard")) dashboards.push_back(cm);
  }
  ASSERT_EQ(dashboards.size(), 1u) << r.out;
  const YAML::Node cm = dashboards[0];
  EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>(), "1");
  EXPECT_EQ(cm["metadata"]["annotations"]["grafana_folder"].as<std::string>(), "Lockstep");
  ASSERT_TRUE(cm["data"]["lockstep.json"]);
  auto rendered =
      nlohmann::json::parse(cm["data"]["lockstep.json"].as<std::string>(), nullptr, false);
  ASSERT_FALSE(rendered.is_discarded()) << "the dashboard in the ConfigMap is not valid JSON";
  auto source =
      nlohmann::json::parse(readFile(kChart + "/dashboards/lockstep.json"), nullptr, false);
  ASSERT_FALSE(source.is_discarded()) << "helm/lockstep/dashboards/lockstep.json is not valid JSON";
  EXPECT_EQ(rendered, source);
  // A Grafana dashboard: a uid, unique panel ids, and a Prometheus query on every panel.
  EXPECT_FALSE(rendered.value("uid", "").empty());
  std::set<int> ids;
  int queries = 0;
  for (const auto& p : rendered.at("panels")) {
    EXPECT_TRUE(ids.insert(p.at("id").get<int>()).second) << "duplicate panel id " << p["id"];
    if (p.value("type", "") == "row") continue;
    ASSERT_TRUE(p.contains("targets") && !p["targets"].empty()) << p.value("title", "");
    for (const auto& t : p["targets"]) {
      EXPECT_FALSE(t.value("expr", "").empty()) << p.value("title", "");
      ++queries;
    }
  }
  EXPECT_GT(queries, 0);
  // The real API server takes the rendered ConfigMap (size, label syntax).
  std::string ns = uniqueName("dash");
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  auto manifest = helm({"template", "lockstep", kChart, "--namespace", ns, "--show-only",
                        "templates/dashboard.yaml", "--set", "grafanaDashboard.enabled=true"});
  ASSERT_EQ(manifest.exitCode, 0) << manifest.err;
  auto applied = kubectl({"apply", "--dry-run=server", "-n", ns, "-f", "-"}, manifest.out);
  EXPECT_EQ(applied.exitCode, 0) << applied.err;
  kubectl({"delete", "namespace", ns, "--wait=false"});
}

// Canary analysis providers come from the platform's values (docs/rollouts.md
// "Analysis providers"): one AnalysisProvider per entry, its spec as written;
// releases' own addresses only with analysis.allowReleaseAddresses.
TEST(HelmChart, AnalysisProvidersAreTheValuesAndReleaseAddressesAreOff) {
  CommandResult r;
  auto none = renderDocs({}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(ofKind(none, "AnalysisProvider").empty());
  auto deployments = ofKind(none, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  const std::string args =
      YAML::Dump(deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"]);
  EXPECT_EQ(args.find("--allow-release-prometheus-address"), std::string::npos) << args;

  auto docs =
      renderDocs({"analysis.providers[0].name=prometheus-main",
                  "analysis.providers[0].address=https://prometheus.monitoring.svc:9091",
                  "analysis.providers[0].bearerTokenSecretRef.name=prometheus-token",
                  "analysis.providers[0].timeout=8s", "analysis.allowReleaseAddresses=true"},
                 &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto providers = ofKind(docs, "AnalysisProvider");
  ASSERT_EQ(providers.size(), 1u);
  EXPECT_EQ(providers[0]["metadata"]["name"].as<std::string>(), "prometheus-main");
  EXPECT_FALSE(providers[0]["metadata"]["namespace"]);  // cluster-scoped
  EXPECT_EQ(providers[0]["spec"]["address"].as<std::string>(),
            "https://prometheus.monitoring.svc:9091");
  EXPECT_EQ(providers[0]["spec"]["bearerTokenSecretRef"]["name"].as<std::string>(),
            "prometheus-token");
  EXPECT_EQ(providers[0]["spec"]["timeout"].as<std::string>(), "8s");
  EXPECT_FALSE(providers[0]["spec"]["name"]);
  const std::string allowed = YAML::Dump(
      ofKind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]);
  EXPECT_NE(allowed.find("--allow-release-prometheus-address"), std::string::npos) << allowed;

  renderDocs({"analysis.providers[0].name=p"}, &r);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("analysis.providers p: address is required"), std::string::npos) << r.err;
}

// The model anchors are the operator's alone (docs/rollouts.md "The anchor is
// Lockstep's alone"): a ValidatingAdmissionPolicy on ConfigMaps named
// lockstep-model-*, naming the chart's ServiceAccount, bound with Deny in the
// namespaces the controller reconciles; off only when asked.
TEST(HelmChart, AnchorPolicyNamesTheOperatorsServiceAccountAndItsNamespaces) {
  CommandResult r;
  auto docs = renderDocs({}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const YAML::Node policy =
      named(ofKind(docs, "ValidatingAdmissionPolicy"), "lockstep-model-anchors");
  ASSERT_TRUE(policy) << "no ValidatingAdmissionPolicy lockstep-model-anchors";
  EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Fail");
  const YAML::Node rule = policy["spec"]["matchConstraints"]["resourceRules"][0];
  using Names = std::vector<std::string>;
  EXPECT_EQ(rule["resources"].as<Names>(), Names{"configmaps"});
  EXPECT_EQ(rule["operations"].as<Names>(), (Names{"CREATE", "UPDATE", "DELETE"}));
  EXPECT_NE(dumped(policy["spec"]["matchConditions"]).find("startsWith('lockstep-model-')"),
            std::string::npos);
  // The ServiceAccount the Deployment runs as is the one the policy lets write.
  EXPECT_NE(
      dumped(policy["spec"]["variables"]).find("'system:serviceaccount:lockstep-system:lockstep'"),
      std::string::npos)
      << dumped(policy["spec"]["variables"]);
  auto deployment = ofKind(docs, "Deployment");
  ASSERT_EQ(deployment.size(), 1u);
  EXPECT_EQ(deployment[0]["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>(),
            "lockstep");
  const YAML::Node binding =
      named(ofKind(docs, "ValidatingAdmissionPolicyBinding"), "lockstep-model-anchors");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding["spec"]["policyName"].as<std::string>(), "lockstep-model-anchors");
  EXPECT_EQ(binding["spec"]["validationActions"].as<Names>(), Names{"Deny"});
  EXPECT_FALSE(binding["spec"]["matchResources"]) << "every namespace in a cluster install";

  auto scoped = renderDocs({"watchNamespaces={ml,team-b}"}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const YAML::Node sel = named(ofKind(scoped, "ValidatingAdmissionPolicyBinding"),
                               "lockstep-model-anchors")["spec"]["matchResources"];
  EXPECT_EQ(sel["namespaceSelector"]["matchExpressions"][0]["values"].as<Names>(),
            (Names{"ml", "team-b"}));

  auto off = renderDocs({"anchorPolicy.enabled=false"}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(named(ofKind(off, "ValidatingAdmissionPolicy"), "lockstep-model-anchors"));
  EXPECT_FALSE(named(ofKind(off, "ValidatingAdmissionPolicyBinding"), "lockstep-model-anchors"));
}

// Lockstep's status is the operator's alone (docs/security.md): a
// ValidatingAdmissionPolicy on every `*/status` of the group lockstep.dev (so a
// kind added later is covered unchanged), admitting the chart's ServiceAccount
// only, bound with Deny; scoped like the anchor policy; off only when asked.
// tests/helm/rbac_cluster_test.cc shows it at work in a real API server.
TEST(HelmChart, StatusPolicyCoversEveryLockstepStatusForTheOperatorOnly) {
  CommandResult r;
  auto docs = renderDocs({}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const YAML::Node policy = named(ofKind(docs, "ValidatingAdmissionPolicy"), "lockstep-status");
  ASSERT_TRUE(policy) << "no ValidatingAdmissionPolicy lockstep-status";
  EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Fail");
  using Names = std::vector<std::string>;
  const YAML::Node rules = policy["spec"]["matchConstraints"]["resourceRules"];
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]["apiGroups"].as<Names>(), Names{"lockstep.dev"});
  EXPECT_EQ(rules[0]["resources"].as<Names>(), Names{"*/status"});
  EXPECT_EQ(rules[0]["operations"].as<Names>(), Names{"*"});
  EXPECT_NE(
      dumped(policy["spec"]["validations"])
          .find("request.userInfo.username == 'system:serviceaccount:lockstep-system:lockstep'"),
      std::string::npos)
      << dumped(policy["spec"]["validations"]);
  const YAML::Node binding =
      named(ofKind(docs, "ValidatingAdmissionPolicyBinding"), "lockstep-status");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding["spec"]["policyName"].as<std::string>(), "lockstep-status");
  EXPECT_EQ(binding["spec"]["validationActions"].as<Names>(), Names{"Deny"});
  EXPECT_FALSE(binding["spec"]["matchResources"]) << "every namespace in a cluster install";

  auto scoped = renderDocs({"watchNamespaces={ml,team-b}"}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const YAML::Node sel = named(ofKind(scoped, "ValidatingAdmissionPolicyBinding"),
                               "lockstep-status")["spec"]["matchResources"];
  EXPECT_EQ(sel["namespaceSelector"]["matchExpressions"][0]["values"].as<Names>(),
            (Names{"ml", "team-b"}));

  auto off = renderDocs({"statusPolicy.enabled=false"}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(named(ofKind(off, "ValidatingAdmissionPolicy"), "lockstep-status"));
  EXPECT_TRUE(named(ofKind(off, "ValidatingAdmissionPolicy"), "lockstep-model-anchors"));
}

// A rollback asked on a Model (docs/rollouts.md "Manual rollback of a model"):
// the policy that checks it and the operator flag that acts on it come together,
// and the approver role holds verb rollback on models; off, neither is there.
TEST(HelmChart, TheModelRollbackPolicyAndTheOperatorFlagComeTogether) {
  CommandResult r;
  auto docs = renderDocs({}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const YAML::Node policy =
      named(ofKind(docs, "ValidatingAdmissionPolicy"), "lockstep-model-rollback");
  ASSERT_TRUE(policy) << "no ValidatingAdmissionPolicy lockstep-model-rollback";
  EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Fail");
  using Names = std::vector<std::string>;
  const YAML::Node rules = policy["spec"]["matchConstraints"]["resourceRules"];
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]["resources"].as<Names>(), Names{"models"});
  EXPECT_EQ(rules[0]["operations"].as<Names>(), (Names{"CREATE", "UPDATE"}));
  EXPECT_NE(dumped(policy["spec"]["validations"]).find("check('rollback').allowed()"),
            std::string::npos);
  EXPECT_TRUE(named(ofKind(docs, "ValidatingAdmissionPolicyBinding"), "lockstep-model-rollback"));
  EXPECT_NE(
      dumped(named(ofKind(docs, "Deployment"), "lockstep")).find("--model-rollback-requests=true"),
      std::string::npos);
  bool approverMayRollBackModels = false;
  for (const YAML::Node& rule :
       named(ofKind(docs, "ClusterRole"), "lockstep-release-approver")["rules"]) {
    const Names resources = rule["resources"].as<Names>();
    const Names verbs = rule["verbs"].as<Names>();
    if (std::find(resources.begin(), resources.end(), "models") != resources.end() &&
        std::find(verbs.begin(), verbs.end(), "rollback") != verbs.end())
      approverMayRollBackModels = true;
  }
  EXPECT_TRUE(approverMayRollBackModels);

  auto off = renderDocs({"modelRollbackPolicy.enabled=false"}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_FALSE(named(ofKind(off, "ValidatingAdmissionPolicy"), "lockstep-model-rollback"));
  EXPECT_NE(
      dumped(named(ofKind(off, "Deployment"), "lockstep")).find("--model-rollback-requests=false"),
      std::string::npos);
}

// admission.mode (docs/security.md "Admission inside the API server"): auto picks policy
// only where the API server serves ValidatingAdmissionPolicy v1; policy drops the pods
// webhook for the pod policies and tells the operator to keep the tables; the ModelRelease
// webhooks stay in both; anything else is a rendering error naming the value.
TEST(HelmChart, AdmissionModeChoosesThePodWebhookOrThePodPolicies) {
  auto render = [](std::vector<std::string> set) {
    std::vector<std::string> args = {"template",
                                     "lockstep",
                                     kChart,
                                     "--show-only",
                                     "templates/webhooks.yaml",
                                     "--show-only",
                                     "templates/deployment.yaml"};
    args.insert(args.end(), set.begin(), set.end());
    return helm(args);
  };
  auto offline = render({});  // no server: auto is webhook
  ASSERT_EQ(offline.exitCode, 0) << offline.err;
  EXPECT_NE(offline.out.find("name: pods.lockstep.dev"), std::string::npos) << offline.out;
  EXPECT_NE(offline.out.find("--admission-mode=webhook"), std::string::npos) << offline.out;

  auto served =
      render({"--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"});
  ASSERT_EQ(served.exitCode, 0) << served.err;
  EXPECT_EQ(served.out.find("name: pods.lockstep.dev"), std::string::npos) << served.out;
  EXPECT_NE(served.out.find("name: modelreleases.lockstep.dev"), std::string::npos) << served.out;
  EXPECT_NE(served.out.find("--admission-mode=policy"), std::string::npos) << served.out;
  auto policies = helm({"template", "lockstep", kChart, "--api-versions",
                        "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy", "--show-only",
                        "templates/pod-policy.yaml"});
  ASSERT_EQ(policies.exitCode, 0) << policies.err;
  for (const char* name :
       {"lockstep-pod-declaration", "lockstep-pod-runtime", "lockstep-runtime-admissions",
        "lockstep-pod-runtime-enforce", "lockstep-pod-declaration-warn",
        "lockstep-pod-runtime-audit", "lockstep-serving-pods", "lockstep-serving-replicasets"}) {
    EXPECT_NE(policies.out.find("name: " + std::string(name) + "\n"), std::string::npos) << name;
  }

  auto forced =
      render({"--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
              "--set", "admission.mode=webhook"});
  ASSERT_EQ(forced.exitCode, 0) << forced.err;
  EXPECT_NE(forced.out.find("name: pods.lockstep.dev"), std::string::npos) << forced.out;

  auto typo = render({"--set", "admission.mode=polcy"});
  EXPECT_NE(typo.exitCode, 0);
  EXPECT_NE(typo.err.find("admission.mode must be auto, policy or webhook, got \"polcy\""),
            std::string::npos)
      << typo.err;
}

// A fleet's hub (docs/fleet.md "Running the hub"): the ModelRollout controller
// only with hub.enabled, beside the controllers every cluster runs.
TEST(HelmChart, TheHubControllerIsOptIn) {
  CommandResult r;
  auto args = [&](const std::vector<std::string>& set) {
    auto docs = renderDocs(set, &r);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    auto deployments = ofKind(docs, "Deployment");
    return deployments.empty()
               ? std::string()
               : YAML::Dump(deployments[0]["spec"]["template"]["spec"]["containers"][0]["args"]);
  };
  const std::string off = args({});
  EXPECT_EQ(off.find("modelrollout"), std::string::npos) << off;
  EXPECT_EQ(off.find("--fleet-poll-interval"), std::string::npos) << off;
  const std::string on = args({"hub.enabled=true", "hub.pollInterval=30s"});
  EXPECT_NE(on.find("--controllers=runtimeenv,modelrelease,modelrollout"), std::string::npos) << on;
  EXPECT_NE(on.find("--fleet-poll-interval=30s"), std::string::npos) << on;
}

TEST(HelmChart, TheOsvEndpointIsAValueWithItsCaMounted) {
  CommandResult r;
  auto container = [&](const std::vector<std::string>& set) {
    auto docs = renderDocs(set, &r);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    auto deployments = ofKind(docs, "Deployment");
    return deployments.empty() ? std::string()
                               : YAML::Dump(deployments[0]["spec"]["template"]["spec"]);
  };
  const std::string off = container({"advisories.caBundleConfigMap=osv-ca"});
  EXPECT_EQ(off.find("osv"), std::string::npos) << "no URL, no source: " << off;
  const std::string on =
      container({"advisories.osvUrl=https://osv.internal", "advisories.caBundleConfigMap=osv-ca",
                 "advisories.refresh=10m"});
  EXPECT_NE(on.find("--osv-url=https://osv.internal"), std::string::npos) << on;
  EXPECT_NE(on.find("--osv-refresh=10m"), std::string::npos) << on;
  EXPECT_NE(on.find("--osv-ca-file=/etc/lockstep/osv-ca/ca.crt"), std::string::npos) << on;
  EXPECT_NE(on.find("mountPath: /etc/lockstep/osv-ca"), std::string::npos) << on;
  EXPECT_NE(on.find("name: osv-ca"), std::string::npos) << on;
  const std::string roots = container({"advisories.osvUrl=https://api.osv.dev"});
  EXPECT_NE(roots.find("--osv-url=https://api.osv.dev"), std::string::npos) << roots;
  EXPECT_EQ(roots.find("--osv-ca-file"), std::string::npos) << roots;
}

// ---- helm uninstall (docs/install.md "Uninstalling") ----------------------------------------

// The post-delete hook of templates/uninstall-cleanup.yaml: every object of it, by kind.
std::vector<YAML::Node> uninstallHook(const std::vector<YAML::Node>& docs) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& d : docs)
    if (d["metadata"]["name"] &&
        d["metadata"]["name"].as<std::string>().find("uninstall-cleanup") != std::string::npos)
      out.push_back(d);
  return out;
}

// "apiGroup resource verb" for every rule of `role`.
std::set<std::string> grants(const YAML::Node& role) {
  std::set<std::string> out;
  for (const YAML::Node& rule : role["rules"])
    for (const YAML::Node& g : rule["apiGroups"])
      for (const YAML::Node& r : rule["resources"])
        for (const YAML::Node& v : rule["verbs"])
          out.insert(g.as<std::string>() + " " + r.as<std::string>() + " " + v.as<std::string>());
  return out;
}

TEST(HelmChart, UninstallCleanupHookIsLeastPrivilegeLockedDownAndOrdered) {
  CommandResult r;
  auto docs = renderDocs({}, &r);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto hook = uninstallHook(docs);
  std::map<std::string, YAML::Node> byKind;
  for (const YAML::Node& o : hook) {
    const auto kind = o["kind"].as<std::string>();
    EXPECT_EQ(byKind.count(kind), 0u) << "two " << kind;
    byKind[kind] = o;
    EXPECT_EQ(o["metadata"]["name"].as<std::string>(), "lockstep-uninstall-cleanup");
    const YAML::Node a = o["metadata"]["annotations"];
    ASSERT_TRUE(a) << kind;
    EXPECT_EQ(a["helm.sh/hook"].as<std::string>(""), "post-delete") << kind;
    EXPECT_EQ(a["helm.sh/hook-delete-policy"].as<std::string>(""),
              "before-hook-creation,hook-succeeded")
        << kind;
  }
  ASSERT_EQ(byKind.size(), 6u) << r.out;
  auto weight = [&](const std::string& kind) {
    return std::stoi(
        byKind[kind]["metadata"]["annotations"]["helm.sh/hook-weight"].as<std::string>());
  };
  // The ServiceAccount, then what it may do, then the bindings, then the Job.
  EXPECT_LT(weight("ServiceAccount"), weight("ClusterRole"));
  EXPECT_LT(weight("ServiceAccount"), weight("Role"));
  EXPECT_LT(weight("ClusterRole"), weight("ClusterRoleBinding"));
  EXPECT_LT(weight("Role"), weight("RoleBinding"));
  EXPECT_LT(weight("ClusterRoleBinding"), weight("Job"));
  EXPECT_LT(weight("RoleBinding"), weight("Job"));

  // Least privilege: its finalizers on Lockstep's three kinds, and the operator's pods.
  EXPECT_EQ(
      grants(byKind["ClusterRole"]),
      (std::set<std::string>{"lockstep.dev runtimeenvs get", "lockstep.dev runtimeenvs list",
                             "lockstep.dev runtimeenvs patch", "lockstep.dev modelreleases get",
                             "lockstep.dev modelreleases list", "lockstep.dev modelreleases patch",
                             "lockstep.dev models get", "lockstep.dev models list",
                             "lockstep.dev models patch"}));
  EXPECT_EQ(grants(byKind["Role"]), std::set<std::string>{" pods list"});
  EXPECT_EQ(byKind["Role"]["metadata"]["namespace"].as<std::string>(), "lockstep-system");
  for (const char* binding : {"ClusterRoleBinding", "RoleBinding"}) {
    const YAML::Node b = byKind[binding];
    EXPECT_EQ(b["roleRef"]["name"].as<std::string>(), "lockstep-uninstall-cleanup") << binding;
    ASSERT_EQ(b["subjects"].size(), 1u) << binding;
    EXPECT_EQ(b["subjects"][0]["kind"].as<std::string>(), "ServiceAccount") << binding;
    EXPECT_EQ(b["subjects"][0]["name"].as<std::string>(), "lockstep-uninstall-cleanup") << binding;
    EXPECT_EQ(b["subjects"][0]["namespace"].as<std::string>(), "lockstep-system") << binding;
  }

  // The Job: the operator image, bounded, non-root, read-only, no capabilities.
  const YAML::Node job = byKind["Job"];
  EXPECT_GT(job["spec"]["activeDeadlineSeconds"].as<int>(0), 0);
  EXPECT_GE(job["spec"]["backoffLimit"].as<int>(-1), 0);
  const YAML::Node pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "lockstep-uninstall-cleanup");
  EXPECT_TRUE(pod["automountServiceAccountToken"].as<bool>(false));
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  EXPECT_TRUE(pod["securityContext"]["runAsNonRoot"].as<bool>(false));
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(""), "RuntimeDefault");
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node c = pod["containers"][0];
  EXPECT_EQ(c["image"].as<std::string>(),
            "registry.example/lockstep/lockstep-operator@sha256:" + std::string(64, '0'));
  EXPECT_FALSE(c["securityContext"]["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_TRUE(c["securityContext"]["readOnlyRootFilesystem"].as<bool>(false));
  ASSERT_EQ(c["securityContext"]["capabilities"]["drop"].size(), 1u);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0].as<std::string>(), "ALL");
  std::vector<std::string> args;
  for (const YAML::Node& a : c["args"]) args.push_back(a.as<std::string>());
  EXPECT_EQ(args, (std::vector<std::string>{
                      "uninstall-cleanup", "--operator-namespace=lockstep-system",
                      "--operator-selector=app.kubernetes.io/name=lockstep,app.kubernetes.io/"
                      "instance=lockstep",
                      "--wait-timeout=2m"}));
  // The selector is the Deployment's, and the hook's own pod is not under it.
  const YAML::Node deployment = ofKind(docs, "Deployment").at(0);
  std::string selector;
  for (const auto& kv : deployment["spec"]["selector"]["matchLabels"])
    selector += (selector.empty() ? "" : ",") + kv.first.as<std::string>() + "=" +
                kv.second.as<std::string>();
  EXPECT_EQ("--operator-selector=" + selector, args[2]);
  const YAML::Node labels = job["spec"]["template"]["metadata"]["labels"];
  bool matches = true;
  for (const auto& kv : deployment["spec"]["selector"]["matchLabels"])
    matches = matches && labels[kv.first.as<std::string>()] &&
              labels[kv.first.as<std::string>()].as<std::string>() == kv.second.as<std::string>();
  EXPECT_FALSE(matches) << "the hook would wait for its own pod: " << dumped(labels);
}

TEST(HelmChart, UninstallCleanupHookFollowsWatchNamespacesAndTurnsOff) {
  CommandResult r;
  auto hook = uninstallHook(renderDocs({"watchNamespaces={ml-a,ml-b}"}, &r));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::set<std::string> objects;
  for (const YAML::Node& o : hook)
    objects.insert(o["kind"].as<std::string>() + " " +
                   o["metadata"]["namespace"].as<std::string>("-"));
  // Nothing in the watched namespaces themselves: one deleted since the install would
  // make the hook, and the uninstall, fail. The command is what is scoped to them.
  EXPECT_EQ(objects,
            (std::set<std::string>{"ServiceAccount lockstep-system", "Role lockstep-system",
                                   "RoleBinding lockstep-system", "ClusterRole -",
                                   "ClusterRoleBinding -", "Job lockstep-system"}));
  for (const YAML::Node& o : hook) {
    if (o["kind"].as<std::string>() == "Job")
      EXPECT_NE(dumped(o).find("--namespaces=ml-a,ml-b"), std::string::npos) << dumped(o);
  }

  auto off = uninstallHook(renderDocs({"uninstallCleanup.enabled=false"}, &r));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(off.empty()) << r.out;
  EXPECT_EQ(r.out.find("post-delete"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::testing
