#include "tests/support/operator_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"

#ifndef LOCKSTEP_OPERATOR_BIN
#error "LOCKSTEP_OPERATOR_BIN must name the lockstep-operator binary"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

// useOperatorRelease's directory; "" = this build's.
std::string& releaseDir() {
  static std::string dir;
  return dir;
}
std::string sourceDir() {
  return releaseDir().empty() ? std::string(LOCKSTEP_SOURCE_DIR) : releaseDir() + "/src";
}
std::string operatorBinary() {
  return releaseDir().empty() ? std::string(LOCKSTEP_OPERATOR_BIN)
                              : releaseDir() + "/lockstep-operator";
}
std::string chartDir() { return sourceDir() + "/helm/lockstep"; }
bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

void mustKubectl(const std::vector<std::string>& args, const std::string& input = "") {
  auto r = kubectl(args, input);
  if (r.exitCode != 0) throw std::runtime_error("kubectl failed: " + r.err);
}

}  // namespace

std::vector<json> renderChart(const std::string& showOnly,
                              const std::vector<std::string>& setValues) {
  std::vector<std::string> argv{toolsBin() + "/helm", "template", kReleaseName, chartDir(),
                                "--namespace", kOperatorNamespace, "--show-only", showOnly,
                                // The chart requires an image by digest; any one renders.
                                "--set", "image.repository=registry.example/lockstep/operator",
                                "--set", "image.digest=sha256:" + std::string(64, '0')};
  for (const auto& v : setValues) {
    argv.emplace_back("--set");
    argv.push_back(v);
  }
  auto r = run(argv);
  if (r.exitCode != 0) throw std::runtime_error("helm template: " + r.err);
  auto j = kubectl(
      {"create", "--dry-run=client", "-n", kOperatorNamespace, "-o", "json", "-f", "-"}, r.out);
  if (j.exitCode != 0) throw std::runtime_error("kubectl convert: " + j.err);
  // One JSON document per object, concatenated.
  std::vector<json> out;
  std::istringstream in(j.out);
  while (in >> std::ws && in.peek() != EOF) {
    json parsed;
    in >> parsed;
    out.push_back(std::move(parsed));
  }
  return out;
}

std::string applyReadyRuntimeEnv(const std::string& ns, const std::string& name,
                                 const std::string& image, const std::string& lock) {
  json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
              {"kind", "RuntimeEnv"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"image", image}, {"lock", {{"inline", lock}}}}}};
  if (kubectl({"apply", "-f", "-"}, rte.dump()).exitCode != 0) return "";
  if (kubectl({"wait", "--for=condition=Ready", "rte/" + name, "-n", ns, "--timeout=60s"})
          .exitCode != 0)
    return "";
  json o = kubectlJson({"get", "rte", name, "-n", ns});
  return o.is_discarded() ? "" : o["status"].value("closureHash", "");
}

namespace {
int& sharedPort() {
  static int port = freePort();
  return port;
}

// Points every webhook of both configurations at https://127.0.0.1:<port>, keeping paths.
void repointWebhooks(int port) {
  for (const char* kind : {"validatingwebhookconfiguration", "mutatingwebhookconfiguration"}) {
    json config = kubectlJson({"get", kind, kReleaseName});
    if (config.is_discarded()) continue;
    for (auto& w : config["webhooks"]) {
      std::string url = w["clientConfig"].value("url", "");
      auto path = url.find('/', std::string("https://").size());
      if (path == std::string::npos) continue;
      w["clientConfig"]["url"] = "https://127.0.0.1:" + std::to_string(port) + url.substr(path);
    }
    mustKubectl({"replace", "-f", "-"}, config.dump());
  }
}
}  // namespace

int sharedWebhookPort() { return sharedPort(); }

void OperatorProcess::installClusterPieces(int webhookPort, const std::string& admissionMode) {
  installCrdsAndRbac();
  const std::vector<std::string> mode = {"admission.mode=" + admissionMode};
  // Policy mode: the pod ValidatingAdmissionPolicies and their bindings.
  if (admissionMode == "policy") {
    for (const auto& o : renderChart("templates/pod-policy.yaml", mode))
      mustKubectl({"apply", "-f", "-"}, o.dump());
  }
  // The Validating- and the MutatingWebhookConfiguration.
  for (auto config : renderChart("templates/webhooks.yaml", mode)) {
    for (auto& w : config["webhooks"]) {
      std::string path = w["clientConfig"]["service"]["path"];
      w["clientConfig"] = {{"url", "https://127.0.0.1:" + std::to_string(webhookPort) + path}};
    }
    mustKubectl({"apply", "-f", "-"}, config.dump());
  }
}

void useOperatorRelease(const std::string& dir) { releaseDir() = dir; }

void OperatorProcess::installCrdsAndRbac() {
  mustKubectl({"apply", "-f", sourceDir() + "/crds"});
  mustKubectl(
      {"wait", "--for", "condition=Established", "-f", sourceDir() + "/crds", "--timeout=60s"});
  kubectl({"create", "namespace", kOperatorNamespace});
  // The ServiceAccount, RBAC and the ValidatingAdmissionPolicies keeping the
  // model anchors and every Lockstep status the operator's alone (they name
  // the ServiceAccount the operator runs as here).
  for (const char* t :
       {"templates/serviceaccount.yaml", "templates/rbac.yaml", "templates/anchor-policy.yaml",
        "templates/status-policy.yaml", "templates/model-rollback-policy.yaml"}) {
    if (!exists(chartDir() + "/" + t)) continue;  // an earlier release's chart lacks it
    for (const auto& o : renderChart(t))
      mustKubectl({"apply", "-n", kOperatorNamespace, "-f", "-"}, o.dump());
  }
  // The API server authorizes from informers of the RBAC objects: under load a binding
  // just applied can be a second or more behind, and a test's first request (or its
  // `auth can-i`) would be denied. Wait until the ServiceAccount holds a grant of the chart.
  const std::string as =
      std::string("--as=system:serviceaccount:") + kOperatorNamespace + ":" + kReleaseName;
  // (The leader-election Lease: granted by every chart since the first, the upgrade test's too.)
  if (!eventually([&] {
        return kubectl({"auth", "can-i", "update", "leases/lockstep-operator", "-n",
                        kOperatorNamespace, as})
                   .out.rfind("yes", 0) == 0;
      })) {
    throw std::runtime_error(
        "the chart's RBAC was applied, but after 60 s its ServiceAccount "
        "still may not update leases/lockstep-operator");
  }
}

CommandResult patchStatusAsOperator(const std::string& resource, const std::string& ns,
                                    const std::string& name, const json& statusPatch) {
  json o = kubectlJson({"get", resource, name, "-n", ns});
  if (o.is_discarded()) return {1, "", "cannot read " + resource + " " + ns + "/" + name};
  json status = o.value("status", json::object());
  status.merge_patch(statusPatch);
  json body = {{"apiVersion", o["apiVersion"]},
               {"kind", o["kind"]},
               {"metadata", {{"name", name}, {"namespace", ns}}},
               {"status", status}};
  return kubectl(
      {"apply", "--server-side", "--subresource=status", "--field-manager=lockstep-test",
       "--force-conflicts", "-f", "-",
       "--as=system:serviceaccount:" + std::string(kOperatorNamespace) + ":" + kReleaseName},
      body.dump());
}

void OperatorProcess::uninstallWebhooks() {
  kubectl({"delete", "validatingwebhookconfiguration", kReleaseName, "--ignore-not-found"});
  kubectl({"delete", "mutatingwebhookconfiguration", kReleaseName, "--ignore-not-found"});
  const std::string name = kReleaseName;
  std::vector<std::string> policies = {"delete", "validatingadmissionpolicy", "--ignore-not-found"};
  std::vector<std::string> bindings = {"delete", "validatingadmissionpolicybinding",
                                       "--ignore-not-found"};
  for (const std::string policy : {"pod-declaration", "pod-runtime"}) {
    policies.push_back(name + "-" + policy);
    for (const std::string mode : {"enforce", "warn", "audit"})
      bindings.push_back(name + "-" + policy + "-" + mode);
  }
  for (const std::string policy : {"runtime-admissions", "serving-pods", "serving-replicasets"}) {
    policies.push_back(name + "-" + policy);
    bindings.push_back(name + "-" + policy);
  }
  kubectl(bindings);
  kubectl(policies);
}

std::string OperatorProcess::start(const std::vector<std::string>& extraArgs) {
  // A port picked free can still be taken before the operator binds it (by another test
  // binary's pick). The operator then exits naming the port: pick again, once.
  std::string failure = startOnce(extraArgs);
  if (failure.find("Address already in use") == std::string::npos) return failure;
  std::cerr << "operator start: a port was taken before the operator bound it; picking new "
               "ports and starting again\n";
  if (failure.find(":" + std::to_string(webhookPort_) + ": bind") != std::string::npos &&
      portOverride_ == 0) {
    sharedPort() = freePort();
    repointWebhooks(sharedPort());
  }
  run({"rm", "-rf", dir_});
  return startOnce(extraArgs);
}

std::string OperatorProcess::startOnce(const std::vector<std::string>& extraArgs) {
  char tmpl[] = "/tmp/lockstep-operator-XXXXXX";
  dir_ = mkdtemp(tmpl);
  webhookPort_ = portOverride_ != 0 ? portOverride_ : sharedWebhookPort();
  metricsPort_ = freePort();
  healthPort_ = freePort();

  // Authenticate as the chart's ServiceAccount.
  auto token =
      kubectl({"create", "token", kReleaseName, "-n", kOperatorNamespace, "--duration=2h"});
  if (token.exitCode != 0) return "create token: " + token.err;
  std::string tok = token.out;
  while (!tok.empty() && (tok.back() == '\n' || tok.back() == ' ')) tok.pop_back();
  json admin = json::parse(kubectl({"config", "view", "--raw", "-o", "json"}).out);
  const json& cluster = admin["clusters"][0]["cluster"];
  std::ofstream(dir_ + "/kubeconfig")
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
      << cluster["server"].get<std::string>() << "\n    certificate-authority-data: "
      << cluster["certificate-authority-data"].get<std::string>()
      << "\nusers:\n- name: lockstep\n  user:\n    token: " << tok
      << "\ncontexts:\n- name: c\n  context: {cluster: c, user: lockstep}\ncurrent-context: c\n";

  std::vector<std::string> args = {operatorBinary(),
                                   "--kubeconfig=" + dir_ + "/kubeconfig",
                                   "--namespace=" + std::string(kOperatorNamespace),
                                   "--bind-address=127.0.0.1",
                                   "--webhook-port=" + std::to_string(webhookPort_),
                                   "--metrics-port=" + std::to_string(metricsPort_),
                                   "--health-port=" + std::to_string(healthPort_),
                                   "--webhook-ip=127.0.0.1",
                                   "--webhook-service=" + std::string(kReleaseName),
                                   "--webhook-config=" + std::string(kReleaseName),
                                   "--mutating-webhook-config=" + std::string(kReleaseName),
                                   "--port-file=" + dir_ + "/port",
                                   "--leader-elect",
                                   "--log-format=json"};
  // Rollback requests on Models, as the chart sets it beside its model-rollback
  // policy (an earlier release's chart, and operator, have neither).
  if (exists(chartDir() + "/templates/model-rollback-policy.yaml"))
    args.emplace_back("--model-rollback-requests");
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  pid_ = fork();
  if (pid_ == 0) {
    std::string log = dir_ + "/operator.log";
    if (!freopen(log.c_str(), "w", stderr) || !freopen(log.c_str(), "a", stdout)) _exit(126);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  bool up = eventually(
      [&] {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          return true;
        }
        return !readFile(dir_ + "/port").empty();
      },
      std::chrono::seconds(60));
  if (pid_ < 0) return "operator exited:\n" + log();
  if (!up) return "operator did not start serving:\n" + log();
  // The API server must see the caBundle the operator patched in, in both configurations.
  bool patched = eventually(
      [&] {
        for (const char* kind :
             {"validatingwebhookconfiguration", "mutatingwebhookconfiguration"}) {
          json config = kubectlJson({"get", kind, kReleaseName});
          if (config.is_discarded() ||
              config["webhooks"][0]["clientConfig"].value("caBundle", "").empty())
            return false;
        }
        return true;
      },
      std::chrono::seconds(30));
  if (!patched) return "caBundle never patched:\n" + log();
  return "";
}

OperatorProcess::~OperatorProcess() {
  stop();
  if (!dir_.empty()) run({"rm", "-rf", dir_});
}

std::string OperatorProcess::stop(int sig) {
  if (pid_ <= 0) return "";
  kill(pid_, sig);
  int status = 0;
  bool exited = false;
  // Bounded by the configured leader-election durations: stopping finishes the reconciles in
  // flight and releases the lease with one API call; 10 s is far beyond either.
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!exited) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  std::remove((dir_ + "/port").c_str());
  if (sig != SIGTERM) return "";
  // Issue 12 item 5: a stopped operator exits 0 and leaves the Lease free for a successor.
  std::string problem;
  if (!exited) {
    problem = "operator did not exit within 10 s of SIGTERM";
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    problem = "operator exited with " +
              (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                 : "signal " + std::to_string(WTERMSIG(status))) +
              " on SIGTERM, want status 0";
  } else {
    json lease = kubectlJson({"get", "lease", "lockstep-operator", "-n", kOperatorNamespace});
    std::string holder =
        lease.is_discarded() ? "<no lease>" : lease["spec"].value("holderIdentity", "");
    // Held by this process still is the defect; a standby that took the lease
    // the moment it was released (a test's second replica) is the point.
    const std::string l = readFile(dir_ + "/operator.log");
    const size_t at = l.find(" campaigning for lease");
    const size_t from = at == std::string::npos ? at : l.rfind("leader election: ", at);
    const std::string self = from == std::string::npos ? "" : l.substr(from + 17, at - (from + 17));
    if (!holder.empty() && (self.empty() || holder == self))
      problem = "lease still held by \"" + holder + "\" after SIGTERM";
  }
  if (!problem.empty()) {
    problem += "\noperator log tail:\n" + log();
    ADD_FAILURE() << problem;
  }
  return problem;
}

bool OperatorProcess::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
  pid_ = -1;
  return false;
}

std::string metricsScraperToken() {
  // A ServiceAccount bound to the chart's metrics-reader ClusterRole, as Prometheus' would be.
  static const std::string token = [] {
    const std::string sa = "lockstep-test-scraper";
    kubectl({"create", "serviceaccount", sa, "-n", kOperatorNamespace});
    kubectl({"create", "clusterrolebinding", sa,
             "--clusterrole=" + std::string(kReleaseName) + "-metrics-reader",
             "--serviceaccount=" + std::string(kOperatorNamespace) + ":" + sa});
    std::string t = kubectl({"create", "token", sa, "-n", kOperatorNamespace, "--duration=2h"}).out;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }();
  return token;
}

std::string OperatorProcess::scrapeMetrics() const {
  // HTTPS with a self-signed certificate (-k: nobody holds its CA), a bearer token.
  return run({"curl", "-sk", "-H", "Authorization: Bearer " + metricsScraperToken(),
              "https://127.0.0.1:" + std::to_string(metricsPort_) + "/metrics"})
      .out;
}

std::string OperatorProcess::log() const {
  std::string l = readFile(dir_ + "/operator.log");
  return l.size() > 6000 ? l.substr(l.size() - 6000) : l;
}

}  // namespace lockstep::testing
