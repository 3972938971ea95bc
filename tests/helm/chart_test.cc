// The Helm chart: lints, renders in both certificate modes, and every object it
// renders is accepted by the real API server (server-side dry run).
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cluster_env.h"

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined"
#endif

namespace lockstep::testing {
namespace {

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

}  // namespace
}  // namespace lockstep::testing
