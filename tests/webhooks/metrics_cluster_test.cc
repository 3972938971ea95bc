// Issue 13 item 10 against the real API server: lockstep-operator serves
// /metrics over HTTPS, and every request is authenticated by a TokenReview and
// authorized by a SubjectAccessReview, made with the chart's RBAC (the
// operator runs as the chart's ServiceAccount): no token -> 401, a forged
// token -> 401, a real token without the grant -> 403, a token bound to the
// chart's metrics-reader ClusterRole -> 200 with the operator's metrics, and
// plain HTTP gets nothing. --metrics-secure=false is the explicit opt-out.
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"

namespace lockstep::testing {
namespace {

struct Reply {
  int status = 0;
  std::string body;
};

// GET url with curl; the status code is printed after the body.
Reply get(const std::string& url, const std::string& token) {
  std::vector<std::string> argv = {"curl", "-sk", "-w", "\n%{http_code}"};
  if (!token.empty()) {
    argv.push_back("-H");
    argv.push_back("Authorization: Bearer " + token);
  }
  argv.push_back(url);
  CommandResult r = run(argv);
  Reply out;
  std::size_t nl = r.out.rfind('\n');
  if (nl == std::string::npos) return out;
  out.body = r.out.substr(0, nl);
  out.status = std::atoi(r.out.c_str() + nl + 1);
  return out;
}

std::string tokenOf(const std::string& sa, const std::string& ns) {
  std::string t = kubectl({"create", "token", sa, "-n", ns, "--duration=1h"}).out;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

class MetricsClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { OperatorProcess::installClusterPieces(sharedWebhookPort()); }
  static void TearDownTestSuite() { OperatorProcess::uninstallWebhooks(); }
  void TearDown() override {
    if (HasFailure()) std::cerr << "operator log tail:\n" << op_.log() << std::endl;
    op_.stop();
    if (!ns_.empty()) kubectl({"delete", "namespace", ns_, "--wait=false"});
  }
  std::string url(const std::string& scheme = "https") const {
    return scheme + "://127.0.0.1:" + std::to_string(op_.metricsPort()) + "/metrics";
  }
  OperatorProcess op_;
  std::string ns_;
};

TEST_F(MetricsClusterTest, OnlyAnAuthorizedServiceAccountGetsMetrics) {
  ASSERT_EQ(op_.start(), "");
  ns_ = uniqueName("metrics");
  ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  ASSERT_EQ(kubectl({"create", "serviceaccount", "intruder", "-n", ns_}).exitCode, 0);

  // The server may take a moment after the webhook port to serve metrics (a Runnable).
  ASSERT_TRUE(eventually([&] { return get(url(), "").status != 0; }, std::chrono::seconds(30)));

  Reply anonymous = get(url(), "");
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  EXPECT_EQ(anonymous.body.find("lockstep_"), std::string::npos) << anonymous.body;

  Reply forged = get(url(), "not-a-real-token");
  EXPECT_EQ(forged.status, 401) << forged.body;

  Reply intruder = get(url(), tokenOf("intruder", ns_));
  EXPECT_EQ(intruder.status, 403) << intruder.body;
  EXPECT_NE(intruder.body.find("system:serviceaccount:" + ns_ + ":intruder"), std::string::npos)
      << intruder.body;
  EXPECT_EQ(intruder.body.find("lockstep_"), std::string::npos) << intruder.body;

  Reply scraper = get(url(), metricsScraperToken());
  EXPECT_EQ(scraper.status, 200) << scraper.body;
  EXPECT_NE(scraper.body.find("lockstep_workqueue_adds_total"), std::string::npos) << scraper.body;
  EXPECT_NE(scraper.body.find("lockstep_reconcile_total"), std::string::npos) << scraper.body;

  // No plain HTTP on the metrics port.
  Reply plain = get(url("http"), metricsScraperToken());
  EXPECT_NE(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.body.find("lockstep_"), std::string::npos) << plain.body;
}

TEST_F(MetricsClusterTest, PlainHttpOnlyWhenExplicitlyAskedFor) {
  ASSERT_EQ(op_.start({"--metrics-secure=false"}), "");
  ASSERT_TRUE(
      eventually([&] { return get(url("http"), "").status == 200; }, std::chrono::seconds(30)));
  EXPECT_NE(get(url("http"), "").body.find("lockstep_workqueue_adds_total"), std::string::npos);
  EXPECT_NE(op_.log().find("--metrics-secure=false"), std::string::npos) << op_.log();
}

}  // namespace
}  // namespace lockstep::testing
