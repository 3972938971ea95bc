#include "webhooks/server/beast_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/accept_backoff.h"
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

class Session;

// What sessions share with the server; immutable after start() except `ready`
// and the connection accounting below (under `mu`).
struct Shared {
  ServerOptions options;
  std::map<std::string, Route, std::less<>> routes;
  std::atomic<bool> ready{true};

  mutable std::mutex mu;
  std::condition_variable closed;  // a connection closed
  std::map<std::uint64_t, std::weak_ptr<Session>> sessions;
  std::uint64_t nextId = 0;
  bool draining = false;
  bool acceptPaused = false;           // at maxConnections: accept re-armed on the next close
  std::function<void()> resumeAccept;  // set by the server while it runs

  bool isDraining() const {
    std::lock_guard<std::mutex> lock(mu);
    return draining;
  }
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
  Session(tcp::socket&& socket, std::shared_ptr<ssl::context> ctx, std::shared_ptr<Shared> shared)
      : ctx_(std::move(ctx)), shared_(std::move(shared)), stream_(std::move(socket), *ctx_) {}

  // Unregisters: a slot under maxConnections is free again.
  ~Session() {
    std::function<void()> resume;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      if (registered_) shared_->sessions.erase(id_);
      if (shared_->acceptPaused && !shared_->draining) {
        shared_->acceptPaused = false;
        resume = shared_->resumeAccept;
      }
    }
    shared_->closed.notify_all();
    if (resume) resume();
  }

  // Registers the connection (the caller holds no lock) and starts it.
  void run() {
    bool draining = false;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      id_ = shared_->nextId++;
      shared_->sessions.emplace(id_, weak_from_this());
      registered_ = true;
      draining = shared_->draining;
    }
    if (draining) return;  // accepted as the server stopped: closes with the session
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&Session::onRun, shared_from_this()));
  }

  // Server stopping: a connection between requests closes now; one with a
  // request in flight finishes it (answered with Connection: close).
  void drain() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->inRequest_) self->closeNow();
    });
  }

 private:
  const ServerOptions& opts() const { return shared_->options; }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void closeNow() {
    beast::error_code ignored;
    lowest().socket().close(ignored);  // pending operations end with operation_aborted
  }

  void onRun() {
    // The handshake and the wait for the first request share the header budget.
    lowest().expires_after(opts().headerTimeout);
    stream_.async_handshake(ssl::stream_base::server,
                            beast::bind_front_handler(&Session::onHandshake, shared_from_this()));
  }

  void onHandshake(beast::error_code ec) {
    if (ec) {
      spdlog::debug("webhook TLS handshake failed: {}", ec.message());
      return;  // the socket closes with the session
    }
    awaitRequest(/*first=*/true);
  }

  // Waits for the first byte of the next request: up to the header budget on a
  // new connection, up to idleTimeout on a kept-alive one.
  void awaitRequest(bool first) {
    inRequest_ = false;
    if (shared_->isDraining()) return shutdown();
    if (buffer_.size() > 0) return readHeader();  // pipelined: already started
    if (!first) lowest().expires_after(opts().idleTimeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              if (ec) return self->onReadError(ec);
                              self->buffer_.commit(n);
                              self->readHeader();
                            });
  }

  void readHeader() {
    inRequest_ = true;
    parser_.emplace();
    parser_->body_limit(opts().maxBodyBytes);
    parser_->header_limit(static_cast<std::uint32_t>(opts().maxHeaderBytes));
    // From the first byte, the rest of the header must come within the header budget.
    lowest().expires_after(opts().headerTimeout);
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
    auto authz = req[http::field::authorization];
    in.authorization.assign(authz.data(), authz.size());
    in.body = std::move(req.body());
    HttpResponse out = dispatchRequest(*shared_, in);
    write(out, req.version(), req.keep_alive());
  }

  // Answers an error and closes: the rest of the request is not read.
  void fail(int status, std::string body) { write(text(status, std::move(body)), 11, false); }

  void write(const HttpResponse& out, unsigned version, bool keepAlive) {
    keepAlive = keepAlive && !shared_->isDraining();
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
          if (keepAlive) return self->awaitRequest(/*first=*/false);
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
  std::shared_ptr<Shared> shared_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::uint64_t id_ = 0;
  bool registered_ = false;
  bool inRequest_ = false;  // on the session's strand
};

class BeastServer final : public Server {
 public:
  BeastServer(ServerOptions options, std::shared_ptr<ssl::context> ctx)
      : shared_(std::make_shared<Shared>()), ctx_(std::move(ctx)) {
    shared_->options = std::move(options);
    if (shared_->options.threads < 1) shared_->options.threads = 1;
    if (shared_->options.maxConnections < 1) shared_->options.maxConnections = 1;
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
      acceptor_.emplace(acceptStrand_);
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
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->resumeAccept = [this] { net::post(acceptStrand_, [this] { doAccept(); }); };
    }
    net::post(acceptStrand_, [this] { doAccept(); });
    // The threads run until stop() is done draining, even when nothing is pending.
    work_.emplace(ioc_.get_executor());
    threads_.reserve(static_cast<std::size_t>(o.threads));
    for (int i = 0; i < o.threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    spdlog::info("webhook server listening on {}:{} ({} threads, at most {} connections)",
                 o.address, port_, o.threads, o.maxConnections);
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
    // 1. Draining: responses from now on close their connection, and a
    // connection accepted from now on closes at once.
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      shared_->draining = true;
      for (auto& [id, weak] : shared_->sessions) {
        if (auto s = weak.lock()) live.push_back(std::move(s));
      }
    }
    // 2. No new connections (the acceptor lives on its strand).
    net::post(acceptStrand_, [this] {
      beast::error_code ignored;
      acceptor_->close(ignored);
      retry_.cancel();
    });
    // 3. Idle connections close, requests in flight finish.
    if (!live.empty()) spdlog::info("webhook server: draining {} connections", live.size());
    for (auto& s : live) s->drain();
    live.clear();  // the sessions' own handlers keep them alive until they end
    {
      std::unique_lock<std::mutex> lock(shared_->mu);
      if (!shared_->closed.wait_for(lock, shared_->options.drainTimeout,
                                    [&] { return shared_->sessions.empty(); })) {
        spdlog::warn("webhook server: {} connections still open after {} ms; dropping them",
                     shared_->sessions.size(), shared_->options.drainTimeout.count());
      }
      shared_->resumeAccept = nullptr;
    }
    work_.reset();
    ioc_.stop();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    // No thread runs the io_context any more: closing here races with nothing.
    beast::error_code ignored;
    acceptor_->close(ignored);
  }

  std::size_t openConnections() const override {
    std::lock_guard<std::mutex> lock(shared_->mu);
    return shared_->sessions.size();
  }

  std::uint64_t acceptFailures() const override { return acceptFailures_.load(); }

 private:
  std::shared_ptr<ssl::context> currentContext() {
    std::lock_guard<std::mutex> lock(ctxMu_);
    return ctx_;
  }

  // On acceptStrand_.
  void doAccept() {
    if (!acceptor_->is_open()) return;
    acceptor_->async_accept(net::make_strand(ioc_), [this](beast::error_code ec,
                                                           tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor_->is_open()) return;
      if (ec) {
        // EMFILE and friends: back off (never spin, never give up).
        acceptFailures_.fetch_add(1);
        auto wait = backoff_.failed();
        spdlog::warn("webhook accept failed: {}; retrying in {} ms", ec.message(), wait.count());
        retry_.expires_after(wait);
        retry_.async_wait([this](beast::error_code waitEc) {
          if (!waitEc) doAccept();
        });
        return;
      }
      backoff_.succeeded();
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(socket), currentContext(), shared_)->run();
      {
        std::lock_guard<std::mutex> lock(shared_->mu);
        if (shared_->sessions.size() >= static_cast<std::size_t>(shared_->options.maxConnections)) {
          // Full: the next accept waits for a session to close (~Session).
          shared_->acceptPaused = true;
          return;
        }
      }
      doAccept();
    });
  }

  std::shared_ptr<Shared> shared_;
  std::mutex ctxMu_;
  std::shared_ptr<ssl::context> ctx_;
  net::io_context ioc_;
  net::strand<net::io_context::executor_type> acceptStrand_{net::make_strand(ioc_)};
  net::steady_timer retry_{acceptStrand_};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  AcceptBackoff backoff_;  // on acceptStrand_
  std::atomic<std::uint64_t> acceptFailures_{0};
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
