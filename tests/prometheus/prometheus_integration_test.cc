// The analysis provider against a real Prometheus (Debian's 2.42) scraping
// the test exporter every second (this test measures Prometheus itself; the
// cluster tests scrape on the world's slower default): real rates, real query
// errors, a stopped server, TLS with a test CA. Started by
// tests/cluster/prometheus.sh; the exporter simulates one always-Ready canary
// pod of release v2 and one stable pod of v1 (no cluster needed).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "operator/prometheus/client.h"
#include "tests/prometheus/print.h"
#include "tests/prometheus/prometheus_world.h"

namespace lockstep::prometheus {
namespace {

using lockstep::testing::PrometheusWorld;

// `or vector(0)`: a pod's code="500" series exists only after its first error.
const char* kCanaryErrorRatio =
    "(sum(rate(lockstep_test_requests_total{track=\"canary\",code=~\"5..\"}[5s])) or vector(0))"
    " / sum(rate(lockstep_test_requests_total{track=\"canary\"}[5s]))";
const char* kStableErrorRatio =
    "(sum(rate(lockstep_test_requests_total{track=\"stable\",code=~\"5..\"}[5s])) or vector(0))"
    " / sum(rate(lockstep_test_requests_total{track=\"stable\"}[5s]))";
// The same ratio without the idiom: empty until the canary's first error.
const char* kBareCanaryErrorRatio =
    "sum(rate(lockstep_test_requests_total{track=\"canary\",code=~\"5..\"}[5s])) / "
    "sum(rate(lockstep_test_requests_total{track=\"canary\"}[5s]))";

PrometheusWorld::Options simulatedPods() {
  PrometheusWorld::Options o;
  o.scrapeInterval = "1s";
  o.pods = {"ml/gpt2-canary-0/v2/canary", "ml/gpt2-stable-0/v1/stable"};
  return o;
}

// Polls every 250 ms until `probe` holds or `timeout` passes (a real server).
bool eventually(const std::function<bool()>& probe,
                std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return probe();
}

std::string describe(const QueryResult& r) {
  if (r.ok()) return "value " + std::to_string(*r.value);
  return std::string(errorKindName(r.kind)) + ": " + r.error;
}

class PrometheusIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    world_ = PrometheusWorld::start(simulatedPods(), error);
    ASSERT_NE(world_, nullptr) << error;
    ClientConfig config;
    config.address = world_->url();
    config.timeout = std::chrono::seconds(5);
    auto client = Client::connect(config);
    ASSERT_TRUE(client.isOk()) << client.status().toString();
    client_ = std::move(*client);
  }

  // The first value of `query` (rate() needs two scrapes in its window).
  QueryResult firstValue(const std::string& query) {
    QueryResult last;
    eventually([&] {
      last = client_->query(query);
      return last.ok();
    });
    return last;
  }

  std::unique_ptr<PrometheusWorld> world_;
  std::unique_ptr<Client> client_;
};

TEST_F(PrometheusIntegrationTest, ErrorRatioFollowsTheExporter) {
  QueryResult r = firstValue(kCanaryErrorRatio);
  ASSERT_TRUE(r.ok()) << describe(r);
  EXPECT_DOUBLE_EQ(*r.value, 0.0);

  // No error yet: the error series does not exist, so the bare ratio is empty.
  QueryResult bare = client_->query(kBareCanaryErrorRatio);
  EXPECT_EQ(bare.kind, ErrorKind::kEmpty) << describe(bare);

  ASSERT_TRUE(world_->setRate("v2", 0.5));
  QueryResult raised;
  bool reached = eventually([&] {
    raised = client_->query(kCanaryErrorRatio);
    return raised.ok() && std::abs(*raised.value - 0.5) < 1e-6;
  });
  EXPECT_TRUE(reached) << "last: " << describe(raised);
  std::cout << "canary error ratio after POST /rate errors=0.5: " << describe(raised) << "\n";

  QueryResult stable = client_->query(kStableErrorRatio);
  ASSERT_TRUE(stable.ok()) << describe(stable);
  EXPECT_DOUBLE_EQ(*stable.value, 0.0) << "only the canary's rate was raised";

  EXPECT_TRUE(eventually([&] { return client_->query(kBareCanaryErrorRatio).ok(); }))
      << "the error series exists after the first error";

  ASSERT_TRUE(world_->setRate("v2", 0.0));
  EXPECT_TRUE(eventually([&] {
    QueryResult back = client_->query(kCanaryErrorRatio);
    return back.ok() && *back.value == 0.0;
  }));
}

// Prometheus takes ~5-10 s to scrape for the first time (its discovery
// manager batches updates for 5 s), so the shapes share one server.
TEST_F(PrometheusIntegrationTest, EveryShapeOtherThanOneValueIsAnError) {
  (void)firstValue(kCanaryErrorRatio);  // scraped: the metric exists
  {
    SCOPED_TRACE("a syntax error");
    QueryResult r = client_->query("sum(rate(lockstep_test_requests_total[5s]");
    std::cout << describe(r) << "\n";
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind, ErrorKind::kQuery);
    EXPECT_EQ(r.errorType, "bad_data");
    EXPECT_EQ(r.httpStatus, 400);
    EXPECT_NE(r.error.find("parse error"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(world_->url()), std::string::npos) << "names the server: " << r.error;
  }
  {
    SCOPED_TRACE("no series match");
    QueryResult r = client_->query("sum(rate(lockstep_test_requests_total{track=\"blue\"}[5s]))");
    std::cout << describe(r) << "\n";
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind, ErrorKind::kEmpty);
    EXPECT_NE(r.error.find("empty vector"), std::string::npos) << r.error;
  }
  {
    SCOPED_TRACE("two series");
    QueryResult r = client_->query("lockstep_test_requests_total{code=\"200\"}");
    std::cout << describe(r) << "\n";
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.kind, ErrorKind::kMultipleSeries);
    EXPECT_NE(r.error.find("returned 2 series"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find("pod="), std::string::npos) << "never the series' labels: " << r.error;
    EXPECT_EQ(r.error.find("gpt2"), std::string::npos) << "never the series' labels: " << r.error;
  }
  {
    SCOPED_TRACE("a range vector");
    QueryResult r =
        client_->query("lockstep_test_requests_total{track=\"canary\",code=\"200\"}[5s]");
    std::cout << describe(r) << "\n";
    EXPECT_EQ(r.kind, ErrorKind::kUnsupportedType) << describe(r);
  }
  {
    SCOPED_TRACE("a scalar is a value");
    QueryResult r = client_->query("scalar(sum(up{job=\"lockstep-test-exporter\"})) * 2");
    ASSERT_TRUE(r.ok()) << describe(r);
    EXPECT_DOUBLE_EQ(*r.value, 2.0);
  }
  {
    SCOPED_TRACE("the time parameter");
    // An hour ago this Prometheus held no samples: the same query is empty then.
    QueryResult past = client_->query(kCanaryErrorRatio, std::time(nullptr) - 3600);
    EXPECT_EQ(past.kind, ErrorKind::kEmpty) << describe(past);
    QueryResult now;
    // Whole seconds: the first second after the first two scrapes may still hold one.
    EXPECT_TRUE(eventually([&] {
      now = client_->query(kCanaryErrorRatio, std::time(nullptr));
      return now.ok();
    })) << describe(now);
  }
}

TEST_F(PrometheusIntegrationTest, NoTrafficIsNaNWhichIsAnError) {
  (void)firstValue(kCanaryErrorRatio);
  ASSERT_TRUE(world_->setRate("v2", 0.0, /*rps=*/0));
  QueryResult r;
  bool nan = eventually([&] {
    r = client_->query(kCanaryErrorRatio);
    return r.kind == ErrorKind::kNotFinite;
  });
  std::cout << describe(r) << "\n";
  EXPECT_TRUE(nan) << "0/0 over a window without requests: " << describe(r);
  EXPECT_NE(r.error.find("NaN"), std::string::npos) << r.error;
}

TEST_F(PrometheusIntegrationTest, StoppedPrometheusIsUnreachableNeverAValue) {
  (void)firstValue(kCanaryErrorRatio);
  ASSERT_TRUE(world_->stopPrometheus());
  QueryResult r = client_->query(kCanaryErrorRatio);
  std::cout << describe(r) << "\n";
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.kind, ErrorKind::kUnreachable);
  EXPECT_NE(r.error.find("unreachable"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(world_->url()), std::string::npos) << r.error;

  ASSERT_TRUE(world_->startPrometheus());
  QueryResult back = firstValue(kCanaryErrorRatio);
  EXPECT_TRUE(back.ok()) << "answers again once restarted: " << describe(back);
}

// A server that accepts connections and never answers: the query gives up
// after its timeout (plus the transport's grace) with kTimeout.
TEST(PrometheusTimeoutTest, SilentServerTimesOut) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 16), 0);  // the kernel completes handshakes; nobody reads
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  ClientConfig config;
  config.address = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  config.timeout = std::chrono::seconds(1);
  auto client = Client::connect(config);
  ASSERT_TRUE(client.isOk()) << client.status().toString();
  auto t0 = std::chrono::steady_clock::now();
  QueryResult r = (*client)->query("up");
  auto took = std::chrono::steady_clock::now() - t0;
  close(fd);
  std::cout << describe(r) << "\n";
  EXPECT_EQ(r.kind, ErrorKind::kTimeout) << describe(r);
  EXPECT_NE(r.error.find("no answer within 3s"), std::string::npos) << r.error;
  EXPECT_LT(took, std::chrono::seconds(10));
}

class PrometheusTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    world_ = PrometheusWorld::start({.tls = true, .scrapeInterval = "1s"}, error);
    ASSERT_NE(world_, nullptr) << error;
    ASSERT_EQ(world_->url().rfind("https://", 0), 0u) << world_->url();
  }
  std::unique_ptr<PrometheusWorld> world_;
};

TEST_F(PrometheusTlsTest, VerifiesTheServerAgainstTheCaFile) {
  std::string tokenFile = world_->dir() + "/token";
  std::ofstream(tokenFile) << "not-checked-by-this-prometheus\n";
  ClientConfig config;
  config.address = world_->url();
  config.caFile = world_->caFile();
  config.bearerTokenFile = tokenFile;
  config.timeout = std::chrono::seconds(5);
  auto trusted = Client::connect(config);
  ASSERT_TRUE(trusted.isOk()) << trusted.status().toString();
  QueryResult ok;
  eventually([&] {
    ok = (*trusted)->query("scalar(sum(up{job=\"lockstep-test-exporter\"}))");
    return ok.ok();
  });
  ASSERT_TRUE(ok.ok()) << describe(ok);
  EXPECT_DOUBLE_EQ(*ok.value, 1.0);

  // The system roots do not know the test CA: the handshake fails, no value.
  config.caFile.clear();
  auto untrusted = Client::connect(config);
  ASSERT_TRUE(untrusted.isOk()) << untrusted.status().toString();
  QueryResult refused = (*untrusted)->query("up");
  std::cout << describe(refused) << "\n";
  EXPECT_EQ(refused.kind, ErrorKind::kUnreachable) << describe(refused);
  EXPECT_NE(refused.error.find("a CA of the system roots"), std::string::npos) << refused.error;
  EXPECT_EQ(refused.error.find("not-checked-by-this-prometheus"), std::string::npos)
      << "the token never appears in a message";

  // Plain http to the TLS port: an HTTP error, not a value.
  ClientConfig plain;
  plain.address = "http://" + world_->url().substr(std::string("https://").size());
  auto wrongScheme = Client::connect(plain);
  ASSERT_TRUE(wrongScheme.isOk());
  QueryResult http = (*wrongScheme)->query("up");
  std::cout << describe(http) << "\n";
  EXPECT_FALSE(http.ok());
}

}  // namespace
}  // namespace lockstep::prometheus
