// The real kube-apiserver calls a webhook registered by URL on 127.0.0.1 with
// a caBundle, and the webhook's denial message reaches kubectl.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/cluster_env.h"

#ifndef LOCKSTEP_WEBHOOK_DEV_BIN
#error "LOCKSTEP_WEBHOOK_DEV_BIN must name the lockstep-webhook-dev binary"
#endif

namespace lockstep::testing {
namespace {

std::string base64(const std::string& s) {
  auto r = run({"base64", "-w0"}, s);
  return r.out;
}

// Runs lockstep-webhook-dev on a free port for the test's lifetime.
class WebhookProcess {
 public:
  WebhookProcess(const std::string& dir, const std::string& config) {
    std::ofstream(dir + "/lookups.json") << config;
    portFile_ = dir + "/port";
    caFile_ = dir + "/ca.pem";
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = dir + "/webhook.log";
      freopen(log.c_str(), "w", stderr);
      freopen(log.c_str(), "a", stdout);
      std::string lookups = dir + "/lookups.json";
      execl(LOCKSTEP_WEBHOOK_DEV_BIN, LOCKSTEP_WEBHOOK_DEV_BIN, "--config", lookups.c_str(),
            "--port", "0", "--port-file", portFile_.c_str(), "--ca-out", caFile_.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 200 && port_.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::string p = readFile(portFile_);
      if (!p.empty() && p.back() == '\n') p.pop_back();
      if (!p.empty() && !readFile(caFile_).empty()) port_ = p;
    }
  }
  ~WebhookProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& port() const { return port_; }
  std::string caBundle() const { return base64(readFile(caFile_)); }

 private:
  pid_t pid_ = -1;
  std::string portFile_, caFile_, port_;
};

TEST(WebhookSmokeTest, ApiServerCallsUrlWebhookAndDenialReachesKubectl) {
  std::string ns = uniqueName("wh");
  char tmpl[] = "/tmp/lockstep-wh-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  // Namespace in enforce mode: a pod without a RuntimeEnv label is denied.
  WebhookProcess webhook(dir, R"({"runtimeEnvs": [], "namespaces": {")" + ns + R"(": "enforce"}})");
  ASSERT_FALSE(webhook.port().empty()) << readFile(dir + "/webhook.log");

  ASSERT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
  std::string config = uniqueName("lockstep-smoke");
  std::string vwc = R"(
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: )" +
                    config + R"(}
webhooks:
- name: pods.smoke.lockstep.dev
  admissionReviewVersions: [v1]
  sideEffects: None
  timeoutSeconds: 5
  failurePolicy: Fail
  clientConfig:
    url: https://127.0.0.1:)" +
                    webhook.port() + R"(/validate/pods
    caBundle: )" + webhook.caBundle() +
                    R"(
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: )" +
                    ns + R"(}
)";
  auto applied = kubectl({"apply", "-f", "-"}, vwc);
  ASSERT_EQ(applied.exitCode, 0) << applied.err;

  // The apiserver loads the new configuration asynchronously: poll until a create is
  // refused. Each attempt uses a fresh pod name, so an earlier probe that was admitted
  // (and may still exist) cannot turn the next attempt into an AlreadyExists error.
  CommandResult r;
  int attempt = 0;
  EXPECT_TRUE(eventually([&] {
    r = kubectl({"run", "probe-" + std::to_string(attempt++), "-n", ns,
                 "--image=registry.example/x:1", "--restart=Never"});
    return r.exitCode != 0;
  })) << "the webhook never refused a pod";
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("admission webhook \"pods.smoke.lockstep.dev\" denied the request"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("lockstep.dev/runtime-env"), std::string::npos) << r.err;

  kubectl({"delete", "validatingwebhookconfiguration", config});
  kubectl({"delete", "namespace", ns, "--wait=false"});
  run({"rm", "-rf", dir});
}

}  // namespace
}  // namespace lockstep::testing
