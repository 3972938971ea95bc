#include "operator/runtime/health_server.h"

#include <utility>  // before Boost 1.74 asio, which misses it under C++20

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>

#include "common/accept_backoff.h"

namespace lockstep::runtime {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HealthServer& server)
      : stream_(std::move(socket)), server_(server) {}
  void start() { read(); }

 private:
  void read() {
    req_ = {};
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, req_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return;
                       self->respond();
                     });
  }
  void respond() {
    auto [code, body] = server_.handle(std::string(req_.target()));
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(code),
                                                                   req_.version());
    res->set(http::field::content_type, "text/plain; charset=utf-8");
    res->set(http::field::cache_control, "no-store");
    res->keep_alive(req_.keep_alive());
    res->body() = req_.method() == http::verb::head ? "" : body;
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        if (ec || !res->keep_alive()) {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          return;
                        }
                        self->read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  const HealthServer& server_;
};

}  // namespace

struct HealthServer::Impl {
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer retry{ioc};
  AcceptBackoff backoff;
  std::thread thread;
  const HealthServer* server = nullptr;
  std::atomic<std::uint64_t>* failures = nullptr;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;  // stop()
      if (ec) {
        // EMFILE and friends: the listener is fine, the process is short of
        // something; wait and accept again (never give up, never spin).
        failures->fetch_add(1);
        auto wait = backoff.failed();
        spdlog::warn("health server: accept failed: {}; retrying in {} ms", ec.message(),
                     wait.count());
        retry.expires_after(wait);
        retry.async_wait([this](beast::error_code waitEc) {
          if (!waitEc) accept();
        });
        return;
      }
      backoff.succeeded();
      std::make_shared<Session>(std::move(socket), *server)->start();
      accept();
    });
  }
};

HealthServer::HealthServer() = default;
HealthServer::~HealthServer() { stop(); }

void HealthServer::addHealthCheck(const std::string& name, Check check) {
  std::lock_guard<std::mutex> lock(mu_);
  health_[name] = std::move(check);
}

void HealthServer::addReadyCheck(const std::string& name, Check check) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_[name] = std::move(check);
}

std::pair<int, std::string> HealthServer::handle(const std::string& target) const {
  std::string path = target.substr(0, target.find('?'));
  bool verbose = target.find("verbose") != std::string::npos;
  const std::map<std::string, Check>* checks = nullptr;
  std::string base, only;
  for (const char* prefix : {"/healthz", "/readyz", "/livez"}) {
    std::string p(prefix);
    if (path == p || path.rfind(p + "/", 0) == 0) {
      base = p;
      only = path.size() > p.size() ? path.substr(p.size() + 1) : "";
    }
  }
  if (base.empty()) return {404, "not found\n"};
  std::map<std::string, Check> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    checks = base == "/readyz" ? &ready_ : &health_;
    snapshot = *checks;
  }
  if (!only.empty() && !snapshot.count(only)) return {404, "no check named " + only + "\n"};
  bool ok = true;
  std::string report;
  for (const auto& [name, check] : snapshot) {
    if (!only.empty() && name != only) continue;
    Status st = check();
    if (st.isOk()) {
      report += "[+]" + name + " ok\n";
    } else {
      ok = false;
      // The reason stays in the log; the probe only names the failing check.
      spdlog::warn("{} check {} failed: {}", base, name, st.toString());
      report += "[-]" + name + " failed\n";
    }
  }
  if (ok && !verbose) return {200, "ok\n"};
  return {ok ? 200 : 500,
          report + (ok ? base.substr(1) + " check passed\n" : base.substr(1) + " check failed\n")};
}

Status HealthServer::start(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return invalidArgument("health address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  impl_ = std::make_unique<Impl>();
  impl_->server = this;
  impl_->failures = &acceptFailures_;
  try {
    auto port = static_cast<unsigned short>(std::stoi(address.substr(colon + 1)));
    tcp::endpoint ep(asio::ip::make_address(host), port);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    port_ = impl_->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    impl_.reset();
    return invalidArgument("health server on " + address + ": " + e.what());
  }
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
  return Status::ok();
}

void HealthServer::stop() {
  if (!impl_) return;
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->retry.cancel();
  });
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_.reset();
}

}  // namespace lockstep::runtime
