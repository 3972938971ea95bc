// Health probes, metrics exposition and JSON logs.
#include <utility>  // before Boost 1.74 asio, which misses it under C++20

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "operator/runtime/health_server.h"
#include "operator/runtime/logging.h"
#include "operator/runtime/metrics.h"

namespace lockstep::runtime {
namespace {

std::pair<int, std::string> httpGet(int port, const std::string& target) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket socket(ioc);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "localhost");
  http::write(socket, req);
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(socket, buf, res);
  return {res.result_int(), res.body()};
}

TEST(HealthServerTest, ReportsChecks) {
  HealthServer s;
  bool ready = false;
  s.addHealthCheck("ping", [] { return Status::ok(); });
  s.addReadyCheck("cache", [&] { return ready ? Status::ok() : unavailable("not synced"); });
  EXPECT_EQ(s.handle("/healthz").first, 200);
  auto [code, body] = s.handle("/readyz");
  EXPECT_EQ(code, 500);
  EXPECT_NE(body.find("[-]cache failed"), std::string::npos);
  EXPECT_EQ(body.find("not synced"), std::string::npos);  // reasons stay in the log
  ready = true;
  EXPECT_EQ(s.handle("/readyz"), (std::pair<int, std::string>{200, "ok\n"}));
  EXPECT_EQ(s.handle("/readyz/cache").first, 200);
  EXPECT_EQ(s.handle("/readyz/nope").first, 404);
  EXPECT_EQ(s.handle("/other").first, 404);
  EXPECT_NE(s.handle("/readyz?verbose").second.find("[+]cache ok"), std::string::npos);
}

TEST(HealthServerTest, ServesOverHttpOnAnEphemeralPort) {
  HealthServer s;
  s.addHealthCheck("ping", [] { return Status::ok(); });
  ASSERT_TRUE(s.start("127.0.0.1:0").isOk());
  ASSERT_GT(s.port(), 0);
  EXPECT_EQ(httpGet(s.port(), "/healthz"), (std::pair<int, std::string>{200, "ok\n"}));
  EXPECT_EQ(httpGet(s.port(), "/missing").first, 404);
  s.stop();
}

TEST(MetricsTest, ExposesLockstepFamilies) {
  Metrics m;
  auto q = m.queueMetrics("modelrelease");
  q->added();
  q->depth(3);
  q->retried();
  auto r = m.reconcileMetrics("modelrelease");
  r->observe("success", 0.02);
  r->observe("error", 0.5);
  m.setLeader("ns/lock", true);
  std::string text = m.scrape();
  for (const char* want :
       {"lockstep_workqueue_depth{name=\"modelrelease\"} 3",
        "lockstep_workqueue_adds_total{name=\"modelrelease\"} 1",
        "lockstep_workqueue_retries_total{name=\"modelrelease\"} 1",
        "lockstep_reconcile_total{controller=\"modelrelease\",result=\"success\"} 1",
        "lockstep_reconcile_total{controller=\"modelrelease\",result=\"error\"} 1",
        "lockstep_reconcile_errors_total{controller=\"modelrelease\"} 1",
        "lockstep_reconcile_duration_seconds_count{controller=\"modelrelease\"} 2",
        "lockstep_leader_election_is_leader{lease=\"ns/lock\"} 1"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  ASSERT_TRUE(m.serve("127.0.0.1:0").isOk());
  ASSERT_GT(m.port(), 0);
  auto [code, body] = httpGet(m.port(), "/metrics");
  EXPECT_EQ(code, 200);
  EXPECT_NE(body.find("lockstep_workqueue_depth"), std::string::npos);
}

TEST(LoggingTest, JsonFormatterEscapes) {
  auto f = makeJsonFormatter();
  spdlog::details::log_msg msg("lockstep", spdlog::level::warn, "say \"hi\"\n\tnow");
  spdlog::memory_buf_t out;
  f->format(msg, out);
  std::string line(out.data(), out.size());
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["level"], "warning");
  EXPECT_EQ(j["logger"], "lockstep");
  EXPECT_EQ(j["msg"], "say \"hi\"\n\tnow");
  EXPECT_EQ(line.back(), '\n');
  EXPECT_TRUE(configureLogging({true, "debug"}).isOk());
  EXPECT_FALSE(configureLogging({false, "loud"}).isOk());
  EXPECT_TRUE(configureLogging({false, "info"}).isOk());
}

}  // namespace
}  // namespace lockstep::runtime
