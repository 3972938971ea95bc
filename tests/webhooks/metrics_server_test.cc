// MetricsServer (webhooks/metrics/metrics_server.h) over real TLS on port 0,
// with fake reviewers: refusals and the scrape, a mounted certificate
// (verified against its CA), the self-signed one made at start-up, and no
// plain HTTP.
#include "webhooks/metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "tests/webhooks/tls_client.h"
#include "webhooks/certs/x509.h"

namespace lockstep::webhooks {
namespace {

using std::chrono::seconds;
using testing::TlsClient;

class OneTokenReviewer final : public TokenReviewer {
 public:
  StatusOr<TokenReviewResult> review(const std::string& token) const override {
    if (token == "scraper") return TokenReviewResult{true, {"scraper", "", {}, {}}, ""};
    if (token == "tenant") return TokenReviewResult{true, {"tenant", "", {}, {}}, ""};
    return TokenReviewResult{false, {}, "unknown token"};
  }
};
class ScraperOnly final : public NonResourceAuthorizer {
 public:
  StatusOr<AccessDecision> authorize(const UserInfo& u, const std::string& path,
                                     const std::string& verb) const override {
    return AccessDecision{u.username == "scraper" && path == "/metrics" && verb == "get", "", ""};
  }
};

class MetricsServerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Starts a server; returns its port (0 when it did not come up).
  uint16_t start(MetricsServerOptions o) {
    o.server.address = "127.0.0.1";
    o.server.port = 0;
    server_ = std::make_shared<MetricsServer>(
        o, [] { return std::string("lockstep_test_metric 42\n"); }, filter_);
    Status prepared = server_->prepare();
    EXPECT_TRUE(prepared.isOk()) << prepared.toString();
    thread_ = std::thread([this] { result_ = server_->start(); });
    return server_->waitForPort(std::chrono::seconds(30));
  }
  // A certificate pair for 127.0.0.1 in a fresh directory; returns the CA PEM.
  std::string mountedCertificate() {
    char tmpl[] = "metrics-cert-XXXXXX";
    std::string base = (std::filesystem::temp_directory_path() / tmpl).string();
    dir_ = mkdtemp(base.data());
    auto now = std::chrono::system_clock::now();
    CaOptions caOpts;
    caOpts.now = now;
    auto ca = generateCa(caOpts);
    EXPECT_TRUE(ca.isOk());
    ServingOptions so;
    so.now = now;
    so.ipAddresses = {"127.0.0.1"};
    auto serving = generateServingCert(*ca, so);
    EXPECT_TRUE(serving.isOk());
    std::ofstream(dir_ + "/tls.crt") << serving->certPem;
    std::ofstream(dir_ + "/tls.key") << serving->keyPem;
    return ca->certPem;
  }
  std::optional<testing::ClientReply> get(TlsClient& c, const std::string& token) {
    c.headers.clear();
    if (!token.empty()) c.headers["Authorization"] = "Bearer " + token;
    if (!c.connected()) {
      std::string err = c.connect();
      EXPECT_EQ(err, "");
      if (!err.empty()) return std::nullopt;
    }
    return c.request("GET", "/metrics", "", nullptr, "");
  }

  OneTokenReviewer tokens_;
  ScraperOnly authz_;
  MetricsAuthFilter filter_{tokens_, authz_};
  std::shared_ptr<MetricsServer> server_;
  std::thread thread_;
  Status result_;
  std::string dir_;
};

TEST_F(MetricsServerTest, RefusesWithoutTokenAndWithoutGrantAndServesTheAuthorizedScraper) {
  MetricsServerOptions o;
  std::string caPem = mountedCertificate();
  o.certDir = dir_;
  uint16_t port = start(o);
  ASSERT_NE(port, 0);
  TlsClient client(port, caPem);  // verifies the mounted certificate
  auto none = get(client, "");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->body.find("lockstep_test_metric"), std::string::npos);
  auto forged = get(client, "forged");
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 401);
  auto tenant = get(client, "tenant");
  ASSERT_TRUE(tenant);
  EXPECT_EQ(tenant->status, 403);
  EXPECT_NE(tenant->body.find("user \"tenant\" may not get path \"/metrics\""), std::string::npos)
      << tenant->body;
  auto scraper = get(client, "scraper");
  ASSERT_TRUE(scraper);
  EXPECT_EQ(scraper->status, 200);
  EXPECT_EQ(scraper->body, "lockstep_test_metric 42\n");
}

TEST_F(MetricsServerTest, SelfSignedAtStartUpNamesLocalhostAndTheService) {
  MetricsServerOptions o;
  o.service = "lockstep";
  o.ns = "lockstep-system";
  uint16_t port = start(o);
  ASSERT_NE(port, 0);
  TlsClient client(port, "");
  client.skipVerification();
  auto scraper = get(client, "scraper");
  ASSERT_TRUE(scraper);
  EXPECT_EQ(scraper->status, 200);
  auto info = parseCertificate(client.peerCertificatePem());
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  std::set<std::string> names(info->dnsNames.begin(), info->dnsNames.end());
  EXPECT_TRUE(names.count("localhost"));
  EXPECT_TRUE(names.count("lockstep.lockstep-system.svc"));
  EXPECT_EQ(info->ipAddresses, std::vector<std::string>{"127.0.0.1"});
}

TEST_F(MetricsServerTest, PlainHttpGetsNoMetrics) {
  MetricsServerOptions o;
  mountedCertificate();
  o.certDir = dir_;
  uint16_t port = start(o);
  ASSERT_NE(port, 0);
  namespace net = boost::asio;
  net::io_context ioc;
  net::ip::tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), port});
  std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer scraper\r\n\r\n";
  boost::system::error_code ec;
  net::write(sock, net::buffer(req), ec);
  std::string got;
  char buf[4096];
  for (;;) {
    std::size_t n = sock.read_some(net::buffer(buf), ec);
    got.append(buf, n);
    if (ec) break;
  }
  EXPECT_EQ(got.find("lockstep_test_metric"), std::string::npos) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), std::string::npos) << got;
}

TEST_F(MetricsServerTest, AMissingMountedCertificateIsASetupErrorNamingTheDirectory) {
  MetricsServerOptions o;
  o.certDir = "no-such-metrics-cert-dir";
  MetricsServer server(
      o, [] { return std::string(); }, filter_);
  Status s = server.prepare();
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.toString().find("no-such-metrics-cert-dir"), std::string::npos) << s.toString();
}

}  // namespace
}  // namespace lockstep::webhooks
