// Issue 13 item 12: the API client's connections carry TCP keep-alive, so a
// half-open watch fails within a minute instead of hanging. The client talks
// plain HTTP to a one-connection server on 127.0.0.1 here, and the kernel's
// own view of the client's socket (/proc/net/tcp: an idle established socket
// has a pending keep-alive timer only with SO_KEEPALIVE) is the assertion.
// The same check runs against the real API server over TLS in
// kube_integration_test (KeepAliveOnTheConnectionsToTheApiServer).
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <thread>

#include "operator/kube/rest_transport.h"
#include "tests/support/socket_keepalive.h"

namespace lockstep::kube {
namespace {

namespace net = boost::asio;
using net::ip::tcp;

// Accepts one connection, answers every request with 200 {} and keeps it open.
class OneConnectionServer {
 public:
  OneConnectionServer() : acceptor_(ioc_, {net::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] {
      boost::system::error_code ec;
      acceptor_.accept(socket_, ec);
      std::string buf;
      char chunk[4096];
      while (!ec) {
        std::size_t n = socket_.read_some(net::buffer(chunk), ec);
        buf.append(chunk, n);
        while (buf.find("\r\n\r\n") != std::string::npos) {
          buf.erase(0, buf.find("\r\n\r\n") + 4);
          std::string res =
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
              "2\r\n\r\n{}";
          net::write(socket_, net::buffer(res), ec);
        }
      }
    });
  }
  ~OneConnectionServer() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return acceptor_.local_endpoint().port(); }

 private:
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  tcp::socket socket_{ioc_};
  std::thread thread_;
};

std::string describe(const std::vector<testing::TcpConnection>& cs) {
  std::string s;
  for (const auto& c : cs) s += " [timer " + std::to_string(c.timer) + "]";
  return s.empty() ? " none" : s;
}

TEST(RestKeepAlive, EnableTcpKeepAliveSetsTheOptions) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  RestOptions o;
  ASSERT_TRUE(enableTcpKeepAlive(fd, o));
  int on = 0, idle = 0, interval = 0, probes = 0;
  socklen_t len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, &len);
  getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len);
  getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, &len);
  getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, &len);
  close(fd);
  EXPECT_EQ(on, 1);
  EXPECT_EQ(idle, 30);
  EXPECT_EQ(interval, 10);
  EXPECT_EQ(probes, 3);
}

TEST(RestKeepAlive, TheFirstConnectionToAnIpLiteralHasKeepAlive) {
  OneConnectionServer server;
  KubeConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(server.port());
  cfg.origin = "test";
  auto transport = RestTransport::create(cfg);
  ASSERT_TRUE(transport.isOk()) << transport.status().toString();
  Request req;
  req.method = "GET";
  req.path = "/api/v1/namespaces/default";
  auto res = (*transport)->send(req);
  ASSERT_TRUE(res.isOk()) << res.status().toString();
  auto conns = testing::ownConnectionsTo(server.port());
  ASSERT_EQ(conns.size(), 1u) << describe(conns);
  EXPECT_EQ(conns[0].timer, 2) << "no keep-alive timer on the client's idle connection:"
                               << describe(conns);
}

TEST(RestKeepAlive, OffWhenIdleIsZero) {
  OneConnectionServer server;
  KubeConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(server.port());
  cfg.origin = "test";
  RestOptions o;
  o.keepAliveIdle = std::chrono::seconds(0);
  auto transport = RestTransport::create(cfg, o);
  ASSERT_TRUE(transport.isOk()) << transport.status().toString();
  Request req;
  req.method = "GET";
  req.path = "/api/v1/namespaces/default";
  ASSERT_TRUE((*transport)->send(req).isOk());
  auto conns = testing::ownConnectionsTo(server.port());
  ASSERT_EQ(conns.size(), 1u) << describe(conns);
  EXPECT_EQ(conns[0].timer, 0) << describe(conns);
}

}  // namespace
}  // namespace lockstep::kube
