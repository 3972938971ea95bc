#include "webhooks/server/beast_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "webhooks/server/tls_context.h"

namespace lockstep::webhooks {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

struct Route {
  std::string method;
  RequestHandler handler;
};

// What sessions share with the server; immutable after start() except `ready`.
struct Shared {
  ServerOptions options;
  std::map<std::string, Route, std::less<>> routes;
  std::atomic<bool> ready{true};
};

HttpResponse text(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body)};
}

HttpResponse dispatchRequest(const Shared& shared, const HttpRequest& req) {
  if (req.path == "/healthz") return text(200, "ok\n");
  if (req.path == "/readyz") {
    return shared.ready.load() ? text(200, "ok\n") : text(503, "not ready\n");
  }
  auto it = shared.routes.find(req.path);
  if (it == shared.routes.end()) return text(404, "not found\n");
  if (it->second.method != req.method) return text(405, "method not allowed\n");
  try {
    return it->second.handler(req);
  } catch (const std::exception& e) {
    spdlog::error("webhook handler for {} threw: {}", req.path, e.what());
    return text(500, "internal error\n");
  }
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> ctx,
          std::shared_ptr<const Shared> shared)
      : ctx_(std::move(ctx)), shared_(std::move(shared)), stream_(std::move(socket), *ctx_) {}

  void run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::onRun, shared_from_this()));
  }

 private:
  const ServerOptions& opts() const { return shared_->options; }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void onRun() {
    lowest().expires_after(opts().requestTimeout);
    stream_.async_handshake(ssl::stream_base::server,
                            beast::bind_front_handler(&Session::onHandshake, shared_from_this()));
  }

  void onHandshake(beast::error_code ec) {
    if (ec) {
      spdlog::debug("webhook TLS handshake failed: {}", ec.message());
      return;  // the socket closes with the session
    }
    readHeader();
  }

  void readHeader() {
    parser_.emplace();
    parser_->body_limit(opts().maxBodyBytes);
    parser_->header_limit(static_cast<std::uint32_t>(opts().maxHeaderBytes));
    lowest().expires_after(opts().idleTimeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::onHeader, shared_from_this()));
  }

  void onHeader(beast::error_code ec, std::size_t) {
    if (ec) return onReadError(ec);
    // The request has started: from now on the per-request budget applies.
    lowest().expires_after(opts().requestTimeout);
    if (auto len = parser_->content_length(); len && *len > opts().maxBodyBytes) {
      return fail(413,
                  "request body larger than " + std::to_string(opts().maxBodyBytes) + " bytes\n");
    }
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::onRead, shared_from_this()));
  }

  void onReadError(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::ssl::error::stream_truncated ||
        ec == net::error::eof || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted) {
      return shutdown();
    }
    if (ec == http::error::body_limit) return fail(413, "request body too large\n");
    if (ec == http::error::header_limit) return fail(431, "request header too large\n");
    if (ec.category() == http::make_error_code(http::error::bad_method).category())
      return fail(400, "bad request\n");
    spdlog::debug("webhook read failed: {}", ec.message());
    shutdown();
  }

  void onRead(beast::error_code ec, std::size_t) {
    if (ec) return onReadError(ec);
    http::request<http::string_body> req = parser_->release();
    HttpRequest in;
    in.method = std::string(req.method_string());
    std::string target(req.target().data(), req.target().size());
    in.path = target.substr(0, target.find('?'));
    auto ct = req[http::field::content_type];
    in.contentType.assign(ct.data(), ct.size());
    in.body = std::move(req.body());
    HttpResponse out = dispatchRequest(*shared_, in);
    write(out, req.version(), req.keep_alive());
  }

  // Answers an error and closes: the rest of the request is not read.
  void fail(int status, std::string body) { write(text(status, std::move(body)), 11, false); }

  void write(const HttpResponse& out, unsigned version, bool keepAlive) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(out.status), version);
    res->set(http::field::content_type, out.contentType);
    res->keep_alive(keepAlive);
    res->body() = out.body;
    res->prepare_payload();
    lowest().expires_after(opts().requestTimeout);
    http::async_write(
        stream_, *res,
        [self = shared_from_this(), res, keepAlive](beast::error_code ec, std::size_t) {
          if (ec) return;
          if (keepAlive) return self->readHeader();
          self->shutdown();
        });
  }

  void shutdown() {
    lowest().expires_after(std::chrono::seconds(1));
    stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
      beast::error_code ignored;
      self->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  std::shared_ptr<ssl::context> ctx_;  // outlives stream_: declared first
  std::shared_ptr<const Shared> shared_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

class BeastServer final : public Server {
 public:
  BeastServer(ServerOptions options, std::shared_ptr<ssl::context> ctx)
      : shared_(std::make_shared<Shared>()), ctx_(std::move(ctx)) {
    shared_->options = std::move(options);
    if (shared_->options.threads < 1) shared_->options.threads = 1;
  }
  ~BeastServer() override { stop(); }

  void route(std::string path, std::string method, RequestHandler handler) override {
    shared_->routes[std::move(path)] = Route{std::move(method), std::move(handler)};
  }

  Status start() override {
    if (started_) return Status(Code::kInternal, "server already started");
    const ServerOptions& o = shared_->options;
    try {
      tcp::endpoint endpoint(net::ip::make_address(o.address), o.port);
      acceptor_.emplace(net::make_strand(ioc_));
      acceptor_->open(endpoint.protocol());
      acceptor_->set_option(net::socket_base::reuse_address(true));
      acceptor_->bind(endpoint);
      acceptor_->listen(net::socket_base::max_listen_connections);
      port_ = acceptor_->local_endpoint().port();
    } catch (const boost::system::system_error& e) {
      acceptor_.reset();
      return unavailable("webhook server: listening on " + o.address + ":" +
                         std::to_string(o.port) + ": " + e.what());
    }
    started_ = true;
    doAccept();
    threads_.reserve(static_cast<std::size_t>(o.threads));
    for (int i = 0; i < o.threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    spdlog::info("webhook server listening on {}:{} ({} threads)", o.address, port_, o.threads);
    return Status::ok();
  }

  uint16_t port() const override { return port_; }

  Status setCertificate(const TlsCertificate& cert) override {
    StatusOr<std::shared_ptr<ssl::context>> ctx = makeServerTlsContext(cert);
    if (!ctx.isOk()) return ctx.status();
    std::lock_guard<std::mutex> lock(ctxMu_);
    ctx_ = std::move(ctx).value();
    return Status::ok();
  }

  void setReady(bool ready) override { shared_->ready.store(ready); }

  void stop() override {
    if (!started_ || stopped_.exchange(true)) return;
    ioc_.stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    // No thread runs the io_context any more: closing here races with nothing.
    beast::error_code ignored;
    acceptor_->close(ignored);
  }

 private:
  std::shared_ptr<ssl::context> currentContext() {
    std::lock_guard<std::mutex> lock(ctxMu_);
    return ctx_;
  }

  void doAccept() {
    acceptor_->async_accept(
        net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
          if (ec == net::error::operation_aborted || !acceptor_->is_open()) return;
          if (ec) {
            spdlog::warn("webhook accept failed: {}", ec.message());
          } else {
            beast::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            std::make_shared<Session>(std::move(socket), currentContext(), shared_)->run();
          }
          doAccept();
        });
  }

  std::shared_ptr<Shared> shared_;
  std::mutex ctxMu_;
  std::shared_ptr<ssl::context> ctx_;
  net::io_context ioc_;
  std::optional<tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool started_ = false;
  std::atomic<bool> stopped_{false};
};

}  // namespace

StatusOr<std::unique_ptr<Server>> makeBeastServer(ServerOptions options,
                                                  const TlsCertificate& cert) {
  StatusOr<std::shared_ptr<ssl::context>> ctx = makeServerTlsContext(cert);
  if (!ctx.isOk()) return ctx.status();
  return std::unique_ptr<Server>(
      std::make_unique<BeastServer>(std::move(options), std::move(ctx).value()));
}

}  // namespace lockstep::webhooks
