// Health probes, metrics exposition and JSON logs.
#include <utility>  // before Boost 1.74 asio, which misses it under C++20

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <spdlog/spdlog.h>
#include <future>
#include <thread>

#include "operator/runtime/health_server.h"
#include "operator/runtime/logging.h"
#include "operator/runtime/metrics.h"
#include "tests/support/descriptor_limit.h"

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

// Issue 13: one accept error (here EMFILE) used to end the accept loop for
// good, leaving the kubelet's probes unanswered and the pod restarted.
TEST(HealthServerTest, KeepsAcceptingAfterAnAcceptError) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  using tcp = boost::asio::ip::tcp;
  HealthServer s;
  s.addHealthCheck("ping", [] { return Status::ok(); });
  ASSERT_TRUE(s.start("127.0.0.1:0").isOk());
  boost::asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.open(tcp::v4());  // its descriptor exists before the limit
  {
    testing::DescriptorLimit full;
    // The kernel completes the connection; the server's accept gets EMFILE.
    socket.connect(
        {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(s.port())});
    while (s.acceptFailures() == 0) std::this_thread::yield();
  }
  // Descriptors are available again: the connection waiting in the backlog is served.
  auto answer = std::async(std::launch::async, [&] {
    http::request<http::empty_body> req{http::verb::get, "/healthz", 11};
    req.set(http::field::host, "localhost");
    beast::error_code ec;
    http::write(socket, req, ec);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    if (!ec) http::read(socket, buf, res, ec);
    return ec ? -1 : static_cast<int>(res.result_int());
  });
  // A watchdog, not a speed requirement: without the fix no answer ever comes.
  const bool ready = answer.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!ready) s.stop();  // resets the connection waiting in the backlog
  EXPECT_TRUE(ready) << "no answer after an accept error";
  EXPECT_EQ(answer.get(), 200);
  EXPECT_GE(s.acceptFailures(), 1u);
  s.stop();
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
