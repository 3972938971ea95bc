// The Prometheus client over a FakeTransport: the request it sends, how it
// authenticates, and how transport failures are classified. No socket.
#include "operator/prometheus/client.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/prometheus/print.h"
#include "tests/support/fake_transport.h"

namespace lockstep::prometheus {
namespace {

using lockstep::testing::FakeTransport;

const char* kValueBody =
    R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.125"]}]}})";

kube::Response answer(int status, const std::string& body) {
  kube::Response r;
  r.status = status;
  r.body = body;
  r.contentType = "application/json";
  return r;
}

std::string tempFile(const std::string& content) {
  char path[] = "/tmp/lockstep-prom-test-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << content;
  return path;
}

ClientConfig cfg(std::string address, std::string tokenFile = "", std::string caFile = "",
                 int timeoutSeconds = 30) {
  ClientConfig c;
  c.address = std::move(address);
  c.bearerTokenFile = std::move(tokenFile);
  c.caFile = std::move(caFile);
  c.timeout = std::chrono::seconds(timeoutSeconds);
  return c;
}

std::unique_ptr<Client> makeClient(std::shared_ptr<FakeTransport> t, ClientConfig config) {
  auto c = Client::create(config, std::move(t));
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return c.isOk() ? std::move(*c) : nullptr;
}

TEST(PrometheusClient, SendsAnInstantQuery) {
  auto t = std::make_shared<FakeTransport>();
  t->push(answer(200, kValueBody));
  auto c = makeClient(t, cfg("http://prom:9090", "", "", 7));
  QueryResult r = c->query("sum(rate(x{a=\"b\"}[5m])) / 2", 1700000000);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(*r.value, 0.125);
  auto requests = t->requests();
  ASSERT_EQ(requests.size(), 1u);
  const kube::Request& req = requests[0];
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.uri(),
            "/api/v1/query?query=sum%28rate%28x%7Ba%3D%22b%22%7D%5B5m%5D%29%29+%2F+2"
            "&time=1700000000&timeout=7s");
  EXPECT_EQ(req.header("Accept"), "application/json");
  EXPECT_EQ(req.header("Authorization"), "");
}

TEST(PrometheusClient, OmitsTimeForNowAndKeepsThePathPrefix) {
  auto t = std::make_shared<FakeTransport>();
  t->push(answer(200, kValueBody));
  auto c = makeClient(t, cfg("https://mon.example/prometheus/"));
  (void)c->query("up");
  ASSERT_EQ(t->requests().size(), 1u);
  EXPECT_EQ(t->requests()[0].uri(), "/prometheus/api/v1/query?query=up&timeout=30s");
}

TEST(PrometheusClient, SendsTheBearerTokenFromItsFileEachTime) {
  std::string file = tempFile("s3cr3t-token\n");
  auto t = std::make_shared<FakeTransport>();
  t->push(answer(200, kValueBody));
  t->push(answer(200, kValueBody));
  auto c = makeClient(t, cfg("https://prom:9091", file));
  ASSERT_TRUE(c->query("up").ok());
  std::ofstream(file) << "rotated-token";
  ASSERT_TRUE(c->query("up").ok());
  auto reqs = t->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].header("Authorization"), "Bearer s3cr3t-token");
  EXPECT_EQ(reqs[1].header("Authorization"), "Bearer rotated-token");
  EXPECT_EQ(reqs[0].describe().find("s3cr3t"), std::string::npos) << "logs never see it";
  std::remove(file.c_str());
}

TEST(PrometheusClient, AnUnusableTokenFileIsAnErrorThatNamesTheFileNotTheToken) {
  auto t = std::make_shared<FakeTransport>();
  auto missing = makeClient(t, cfg("https://prom:9091", "/nonexistent/lockstep/token"));
  QueryResult r = missing->query("up");
  EXPECT_EQ(r.kind, ErrorKind::kConfig);
  EXPECT_NE(r.error.find("/nonexistent/lockstep/token"), std::string::npos) << r.error;
  EXPECT_EQ(t->requestCount(), 0u) << "nothing sent without the token";

  std::string empty = tempFile("\n");
  QueryResult e = makeClient(t, cfg("https://prom:9091", empty))->query("up");
  EXPECT_EQ(e.kind, ErrorKind::kConfig);
  EXPECT_NE(e.error.find("is empty"), std::string::npos) << e.error;

  std::string two = tempFile("first-secret\nsecond-secret\n");
  QueryResult m = makeClient(t, cfg("https://prom:9091", two))->query("up");
  EXPECT_EQ(m.kind, ErrorKind::kConfig);
  EXPECT_EQ(m.error.find("secret"), std::string::npos) << "no token in messages: " << m.error;
  std::remove(empty.c_str());
  std::remove(two.c_str());
}

TEST(PrometheusClient, TransportFailuresAreClassified) {
  auto t = std::make_shared<FakeTransport>();
  t->push(unavailable(
      "GET /api/v1/query?query=up&timeout=4s: Failed to connect to any resolved endpoint"));
  t->push(Status(Code::kDeadlineExceeded,
                 "GET /api/v1/query?query=up&timeout=4s: Connection timed out"));
  t->push(Status(Code::kCancelled, "cancelled"));
  auto c = makeClient(t, cfg("http://prom:9090", "", "", 4));

  QueryResult refused = c->query("up");
  EXPECT_EQ(refused.kind, ErrorKind::kUnreachable);
  EXPECT_NE(refused.error.find("prometheus http://prom:9090 unreachable"), std::string::npos)
      << refused.error;
  EXPECT_NE(refused.error.find("unreachable: Failed to connect"), std::string::npos)
      << "the request line is dropped: " << refused.error;
  EXPECT_EQ(refused.httpStatus, 0);

  QueryResult slow = c->query("up");
  EXPECT_EQ(slow.kind, ErrorKind::kTimeout);
  EXPECT_NE(slow.error.find("no answer within 6s (timeout 4s): Connection timed out"),
            std::string::npos)
      << slow.error;

  EXPECT_EQ(c->query("up").kind, ErrorKind::kUnreachable);
}

TEST(PrometheusClient, DecodedErrorsNameTheServer) {
  auto t = std::make_shared<FakeTransport>();
  t->push(answer(400, R"({"status":"error","errorType":"bad_data","error":"parse error"})"));
  auto c = makeClient(t, cfg("http://prom:9090"));
  QueryResult r = c->query("sum(");
  EXPECT_EQ(r.kind, ErrorKind::kQuery);
  EXPECT_EQ(r.error.rfind("prometheus http://prom:9090: ", 0), 0u) << r.error;
}

TEST(PrometheusConfig, AddressesAreCheckedWithClearMessages) {
  struct Case {
    const char* address;
    const char* message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "prometheus address is empty"},
           {"prom:9090", "must start with http:// or https://"},
           {"ftp://prom", "must start with http:// or https://"},
           {"http://", "has no host"},
           {"http://:9090", "has no host"},
           {"http:///api", "has no host"},
           {"http://user:pw@prom:9090", "must not carry credentials"},
           {"http://prom:9090/?x=1", "must not have a query or fragment"},
           {"http://prom:9090/#top", "must not have a query or fragment"},
           {"http://prom 9090", "spaces or control characters"},
       }) {
    auto e = parseAddress(c.address);
    ASSERT_FALSE(e.isOk()) << c.address;
    EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
    EXPECT_NE(e.status().message().find(c.message), std::string::npos)
        << c.address << " -> " << e.status().message();
    if (*c.address != '\0') {
      EXPECT_NE(e.status().message().find(std::string("\"") + c.address + "\""), std::string::npos)
          << "names the address: " << e.status().message();
    }
  }
  auto ok = parseAddress("https://[::1]:9091/a/b//");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->origin, "https://[::1]:9091");
  EXPECT_EQ(ok->pathPrefix, "/a/b");
  EXPECT_TRUE(ok->https);
}

TEST(PrometheusConfig, TokensAndCasOnlyOverHttpsAndTimeoutsPositive) {
  Status token = validateConfig(cfg("http://prom:9090", "/t"));
  EXPECT_EQ(token.code(), Code::kInvalidArgument);
  EXPECT_NE(token.message().find("only sent over https"), std::string::npos) << token.message();
  Status ca = validateConfig(cfg("http://prom:9090", "", "/ca.pem"));
  EXPECT_NE(ca.message().find("a CA is set but the address is http"), std::string::npos);
  Status timeout = validateConfig(cfg("http://prom:9090", "", "", 0));
  EXPECT_NE(timeout.message().find("timeout must be at least 1s, got 0s"), std::string::npos);
  EXPECT_TRUE(validateConfig(cfg("https://prom:9091", "/t", "/ca.pem")).isOk());
  auto t = std::make_shared<FakeTransport>();
  EXPECT_FALSE(Client::create(cfg("prom"), t).isOk());
}

TEST(PrometheusConfig, ConnectRefusesAnUnusableCaFile) {
  auto missing = Client::connect(cfg("https://prom:9091", "", "/nonexistent/ca.pem"));
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("/nonexistent/ca.pem"), std::string::npos)
      << missing.status().message();
  std::string junk = tempFile("not a certificate\n");
  auto bad = Client::connect(cfg("https://prom:9091", "", junk));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("holds no PEM certificate"), std::string::npos)
      << bad.status().message();
  std::remove(junk.c_str());
}

}  // namespace
}  // namespace lockstep::prometheus
