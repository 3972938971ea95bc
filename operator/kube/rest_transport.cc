// The cpprestsdk adapter. Every exception cpprestsdk, Boost.Asio or OpenSSL
// can throw is caught here and returned as a Status.
#include "operator/kube/rest_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cpprest/http_client.h>
#include <cpprest/producerconsumerstream.h>
#include <pplx/threadpool.h>

#include <atomic>
#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "operator/kube/api_error.h"
#include "operator/kube/token_source.h"

namespace lockstep::kube {
namespace {

namespace http = web::http;
namespace client = web::http::client;
using Buffer = concurrency::streams::producer_consumer_buffer<uint8_t>;

// The address family of the server when its host is an IP literal; nullopt for a name.
std::optional<boost::asio::ip::tcp> literalFamily(const std::string& server) {
  std::size_t at = server.find("://");
  std::string host = server.substr(at == std::string::npos ? 0 : at + 3);
  if (!host.empty() && host.front() == '[') return boost::asio::ip::tcp::v6();
  host = host.substr(0, host.find_first_of(":/"));
  boost::system::error_code ec;
  boost::asio::ip::make_address_v4(host, ec);
  if (!ec) return boost::asio::ip::tcp::v4();
  return std::nullopt;
}

// cpprestsdk's per-request hook: keep-alive on the connection's socket. A new
// connection's socket is not open yet: open it (asio then connects it as is)
// when the family is known.
void keepAliveHook(boost::asio::ip::tcp::socket& sock,
                   const std::optional<boost::asio::ip::tcp>& family, const RestOptions& options) {
  boost::system::error_code ec;
  if (!sock.is_open()) {
    if (!family) return;
    sock.open(*family, ec);
    if (ec) return;  // cpprestsdk opens it itself when connecting
  }
  if (!enableTcpKeepAlive(sock.native_handle(), options)) {
    spdlog::debug("API client: cannot set TCP keep-alive on a connection");
  }
}

Status configureTls(boost::asio::ssl::context& ctx, const KubeConfig& cfg) {
  try {
    ctx.set_options(boost::asio::ssl::context::default_workarounds |
                    boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                    boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    if (!cfg.caPem.empty()) {
      // Trust only the kubeconfig's CA, as client-go does: cpprestsdk has pointed the
      // context's store at the system's default paths; a fresh store replaces it.
      X509_STORE* store = X509_STORE_new();
      if (store == nullptr) return internalError(cfg.origin + ": cannot allocate a TLS store");
      SSL_CTX_set_cert_store(ctx.native_handle(), store);  // takes ownership
      ctx.add_certificate_authority(boost::asio::buffer(cfg.caPem.data(), cfg.caPem.size()));
    }
    if (!cfg.clientCertPem.empty()) {
      ctx.use_certificate_chain(
          boost::asio::buffer(cfg.clientCertPem.data(), cfg.clientCertPem.size()));
      ctx.use_private_key(boost::asio::buffer(cfg.clientKeyPem.data(), cfg.clientKeyPem.size()),
                          boost::asio::ssl::context::pem);
    }
  } catch (const std::exception& e) {
    // The message names the OpenSSL failure, never the key material.
    return invalidArgument(cfg.origin + ": TLS material cannot be loaded: " + e.what());
  }
  return Status::ok();
}

Status mapException(const std::exception& e, const std::string& what, const KubeConfig& cfg) {
  if (std::string(e.what()).find("SSL handshake") != std::string::npos) {
    // Most often the API server's certificate is not signed by the kubeconfig's CA (the only
    // one trusted) or does not carry the expected name: say where both come from.
    std::string name =
        cfg.tlsServerName.empty() ? "its host name" : "\"" + cfg.tlsServerName + "\"";
    return unavailable(what + ": TLS handshake with " + cfg.server + " failed (" + e.what() +
                       "): is its certificate signed by the certificate-authority of " +
                       cfg.origin + ", and issued for " + name + "?");
  }
  if (auto* he = dynamic_cast<const http::http_exception*>(&e)) {
    if (he->error_code() == std::errc::timed_out) {
      return {Code::kDeadlineExceeded, what + ": " + he->what()};
    }
    if (he->error_code() == std::errc::operation_canceled) {
      return {Code::kCancelled, what + ": cancelled"};
    }
  }
  return unavailable(what + ": " + e.what());
}

void initThreadPool(size_t threads) {
  static std::once_flag once;
  std::call_once(once, [threads] {
    try {
      crossplat::threadpool::initialize_with_threads(threads);
    } catch (const std::exception&) {
      // Already initialised by an earlier user of cpprestsdk in this process.
    }
  });
}

// Reads a streamed body in lines. The HTTP client writes into `buf`; the write side is
// closed when the body completes, fails or is cancelled, which wakes a blocked reader.
class RestLineStream final : public LineStream {
 public:
  struct Shared {
    std::mutex mu;
    std::string error;  // set when the body failed
    std::atomic<bool> cancelled{false};
  };

  RestLineStream(Buffer buf, std::shared_ptr<pplx::cancellation_token_source> cts,
                 std::shared_ptr<Shared> shared)
      : buf_(std::move(buf)), cts_(std::move(cts)), shared_(std::move(shared)) {}
  ~RestLineStream() override { cancel(); }

  StatusOr<std::optional<std::string>> readLine() override {
    while (true) {
      if (shared_->cancelled.load()) return Status(Code::kCancelled, "watch cancelled");
      auto nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return std::optional<std::string>(std::move(line));
      }
      uint8_t chunk[65536];
      size_t n = 0;
      try {
        // Blocks this (caller's) thread until at least one byte or the end.
        n = buf_.getn(chunk, 1).get();
        if (n > 0) {
          size_t avail = buf_.in_avail();
          if (avail > 0) {
            // Already buffered: completes without waiting.
            n += buf_.getn(chunk + 1, std::min(avail, sizeof chunk - 1)).get();
          }
        }
      } catch (const std::exception& e) {
        if (shared_->cancelled.load()) return Status(Code::kCancelled, "watch cancelled");
        return unavailable(std::string("watch stream: ") + e.what());
      }
      if (n == 0) {
        if (shared_->cancelled.load()) return Status(Code::kCancelled, "watch cancelled");
        std::lock_guard<std::mutex> lock(shared_->mu);
        if (!shared_->error.empty()) return unavailable("watch stream: " + shared_->error);
        if (!pending_.empty()) {
          std::string last = std::move(pending_);
          pending_.clear();
          return std::optional<std::string>(std::move(last));
        }
        return std::optional<std::string>();
      }
      pending_.append(reinterpret_cast<const char*>(chunk), n);
    }
  }

  void cancel() override {
    if (shared_->cancelled.exchange(true)) return;
    try {
      cts_->cancel();
      buf_.close(std::ios_base::out);
    } catch (const std::exception&) {
    }
  }

 private:
  Buffer buf_;
  std::shared_ptr<pplx::cancellation_token_source> cts_;
  std::shared_ptr<Shared> shared_;
  std::string pending_;
};

}  // namespace

bool enableTcpKeepAlive(int fd, const RestOptions& options) {
  int on = 1;
  int idle = static_cast<int>(options.keepAliveIdle.count());
  int interval = static_cast<int>(options.keepAliveInterval.count());
  int probes = options.keepAliveProbes;
  return setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) == 0 &&
         setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) == 0;
}

struct RestTransport::Impl {
  KubeConfig config;
  RestOptions options;
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<client::http_client> requests;
  std::unique_ptr<client::http_client> watches;

  http::http_request build(const Request& r) {
    http::http_request req(utility::conversions::to_string_t(r.method));
    req.set_request_uri(web::uri(r.uri()));
    std::string contentType;
    for (const auto& [k, v] : r.headers) {
      if (k == "Content-Type") {
        contentType = v;
        continue;
      }
      req.headers().add(k, v);
    }
    req.headers().add("User-Agent", options.userAgent);
    // cpprestsdk takes the TLS name (SNI and certificate verification) from the Host header.
    if (!config.tlsServerName.empty()) req.headers().add("Host", config.tlsServerName);
    if (std::string auth = tokens->authorizationHeader(); !auth.empty()) {
      req.headers().add("Authorization", auth);
    }
    if (!r.body.empty() || !contentType.empty()) {
      req.set_body(std::vector<unsigned char>(r.body.begin(), r.body.end()));
      req.headers().set_content_type(contentType.empty() ? "application/json" : contentType);
    }
    return req;
  }
};

RestTransport::RestTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RestTransport::~RestTransport() = default;

StatusOr<std::shared_ptr<RestTransport>> RestTransport::create(const KubeConfig& config,
                                                               const RestOptions& options,
                                                               Clock& clock) {
  // Load the TLS material once up front so a bad PEM fails at startup, not per connection.
  try {
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    LOCKSTEP_RETURN_IF_ERROR(configureTls(probe, config));
  } catch (const std::exception& e) {
    return invalidArgument(config.origin + ": TLS setup failed: " + e.what());
  }
  if (config.insecureSkipTlsVerify) {
    spdlog::warn(
        "{}: insecure-skip-tls-verify is set: the API server's certificate is not "
        "verified, so anyone on the network path can impersonate it",
        config.origin);
  }
  initThreadPool(options.threads);
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->options = options;
  impl->tokens = std::make_unique<TokenSource>(config, clock);
  try {
    auto makeConfig = [&](std::chrono::seconds timeout) {
      client::http_client_config c;
      c.set_timeout(timeout);
      c.set_validate_certificates(!config.insecureSkipTlsVerify);
      KubeConfig tls = config;
      c.set_ssl_context_callback([tls](boost::asio::ssl::context& ctx) {
        Status st = configureTls(ctx, tls);
        (void)st;  // validated in create(); cannot fail here for the same material
      });
      if (options.keepAliveIdle > std::chrono::seconds::zero()) {
        const bool https = config.server.rfind("https://", 0) == 0;
        c.set_nativehandle_options([https, family = literalFamily(config.server),
                                    options](client::native_handle h) {
          if (h == nullptr) return;
          if (https) {
            auto* stream = static_cast<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>*>(h);
            keepAliveHook(stream->next_layer(), family, options);
          } else {
            keepAliveHook(*static_cast<boost::asio::ip::tcp::socket*>(h), family, options);
          }
        });
      }
      return c;
    };
    web::uri base(utility::conversions::to_string_t(config.server));
    impl->requests =
        std::make_unique<client::http_client>(base, makeConfig(options.requestTimeout));
    impl->watches =
        std::make_unique<client::http_client>(base, makeConfig(options.watchIdleTimeout));
  } catch (const std::exception& e) {
    return invalidArgument(config.origin + ": server \"" + config.server + "\": " + e.what());
  }
  return std::shared_ptr<RestTransport>(new RestTransport(std::move(impl)));
}

StatusOr<Response> RestTransport::send(const Request& request) {
  try {
    http::http_request req = impl_->build(request);
    // Blocks the caller's thread, never a cpprestsdk worker.
    http::http_response resp = impl_->requests->request(req).get();
    Response out;
    out.status = resp.status_code();
    out.contentType = resp.headers().content_type();
    auto bytes = resp.extract_vector().get();
    out.body.assign(bytes.begin(), bytes.end());
    return out;
  } catch (const std::exception& e) {
    return mapException(e, request.describe(), impl_->config);
  }
}

StatusOr<std::unique_ptr<LineStream>> RestTransport::openStream(const Request& request) {
  auto cts = std::make_shared<pplx::cancellation_token_source>();
  auto shared = std::make_shared<RestLineStream::Shared>();
  Buffer buf;
  try {
    http::http_request req = impl_->build(request);
    req.set_response_stream(buf.create_ostream());
    http::http_response resp = impl_->watches->request(req, cts->get_token()).get();
    // Close the write side when the body ends so the reader sees EOF. The continuation
    // only inspects an already-finished task: it never blocks.
    resp.content_ready().then([buf, shared](const pplx::task<http::http_response>& t) mutable {
      try {
        t.get();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->error = e.what();
      }
      try {
        buf.close(std::ios_base::out);
      } catch (const std::exception&) {
      }
    });
    auto stream = std::make_unique<RestLineStream>(buf, cts, shared);
    if (resp.status_code() != http::status_codes::OK) {
      std::string body;
      while (true) {
        auto line = stream->readLine();
        if (!line.isOk() || !line->has_value()) break;
        body += **line;
        body += '\n';
      }
      Status st = statusFromResponse(resp.status_code(), body);
      if (st.isOk())
        st = internalError("watch: unexpected status " + std::to_string(resp.status_code()));
      return st.withContext(request.describe());
    }
    return std::unique_ptr<LineStream>(std::move(stream));
  } catch (const std::exception& e) {
    return mapException(e, request.describe(), impl_->config);
  }
}

}  // namespace lockstep::kube
