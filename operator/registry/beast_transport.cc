// Boost.Beast adapter. Every exception Beast, Asio or OpenSSL can throw is
// caught here and returned as a Status.
#include "operator/registry/beast_transport.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <map>
#include <mutex>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace lockstep::registry {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Status configure(asio::ssl::context& ctx, const BeastTransportOptions& o, const std::string& who) {
  try {
    ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1);
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    if (o.caPem.empty()) {
      ctx.set_default_verify_paths();
    } else {
      ctx.add_certificate_authority(asio::buffer(o.caPem.data(), o.caPem.size()));
    }
    ctx.set_verify_mode(asio::ssl::verify_peer);
  } catch (const std::exception& e) {
    return invalidArgument(who + ": the CA bundle cannot be loaded: " + e.what());
  }
  return Status::ok();
}

// One configured context per distinct CA bundle ("" for the system roots), kept
// for the process: a handful of bundles (the operator's flags, the SigningConfigs').
constexpr size_t kMaxSharedContexts = 32;
StatusOr<std::shared_ptr<asio::ssl::context>> sharedContext(const BeastTransportOptions& o,
                                                            const std::string& who) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<asio::ssl::context>> contexts;
  std::lock_guard<std::mutex> lock(mu);
  auto it = contexts.find(o.caPem);
  if (it != contexts.end()) return it->second;
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  LOCKSTEP_RETURN_IF_ERROR(configure(*ctx, o, who));
  // Bundles also come from objects (a SigningConfig's registry CA): a tenant editing
  // one again and again must not grow this without end. Transports keep their own.
  if (contexts.size() >= kMaxSharedContexts) contexts.clear();
  contexts.emplace(o.caPem, ctx);
  return ctx;
}

// Runs one asynchronous step to completion on `ioc`; the stream's timer bounds it.
template <typename Start>
boost::system::error_code step(asio::io_context& ioc, Start start) {
  boost::system::error_code result;
  start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace

StatusOr<std::shared_ptr<BeastTransport>> BeastTransport::create(
    const std::string& origin, const BeastTransportOptions& options) {
  const std::string scheme = "https://";
  if (origin.rfind(scheme, 0) != 0) {
    return invalidArgument("registry origin \"" + origin + "\" is not https");
  }
  std::string authority = origin.substr(scheme.size());
  std::string host = authority;
  std::string port = "443";
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return invalidArgument("bad registry origin " + origin);
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':')
      port = authority.substr(close + 2);
  } else if (size_t colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty() || port.empty()) return invalidArgument("bad registry origin " + origin);
  auto ctx = sharedContext(options, "registry " + authority);
  if (!ctx.isOk()) return ctx.status();
  return std::shared_ptr<BeastTransport>(new BeastTransport(host, port, options, *ctx));
}

StatusOr<HttpResponse> BeastTransport::send(const HttpRequest& request) {
  const std::string who = "registry " + host_ + ":" + port_;
  const std::string what =
      request.method + " " + request.target.substr(0, request.target.find('?'));
  try {
    asio::io_context ioc;
    beast::ssl_stream<beast::tcp_stream> stream(ioc, *ctx_);
    SSL* ssl = stream.native_handle();
    boost::system::error_code parseEc;
    (void)asio::ip::make_address(host_, parseEc);
    if (parseEc) {
      // A name: SNI, and the certificate must carry it.
      SSL_set_tlsext_host_name(ssl, host_.c_str());
      SSL_set1_host(ssl, host_.c_str());
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host_.c_str());
    }
    auto fail = [&](const char* stage, boost::system::error_code ec) -> Status {
      std::string msg = who + ": " + what + ": " + stage + ": " + ec.message();
      if (ec == beast::error::timeout)
        return {Code::kDeadlineExceeded,
                msg + " (timeout " + std::to_string(options_.timeout.count()) + "s)"};
      long verify = SSL_get_verify_result(ssl);
      if (std::string(stage) == "TLS handshake" && verify != X509_V_OK) {
        msg += " (certificate: " + std::string(X509_verify_cert_error_string(verify)) +
               "; is it signed by the registry CA bundle, and issued for " + host_ + "?)";
      }
      return unavailable(msg);
    };

    tcp::resolver resolver(ioc);
    tcp::resolver::results_type endpoints;
    boost::system::error_code ec;
    ioc.restart();
    resolver.async_resolve(host_, port_,
                           [&](boost::system::error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             endpoints = std::move(r);
                           });
    ioc.run_for(options_.timeout);
    if (ec) return fail("resolve", ec);
    if (endpoints.empty()) return unavailable(who + ": " + what + ": resolve: no address");

    auto& tcpStream = beast::get_lowest_layer(stream);
    tcpStream.expires_after(options_.timeout);
    if (auto e = step(ioc, [&](auto h) { tcpStream.async_connect(endpoints, h); }))
      return fail("connect", e);
    tcpStream.expires_after(options_.timeout);
    if (auto e =
            step(ioc, [&](auto h) { stream.async_handshake(asio::ssl::stream_base::client, h); }))
      return fail("TLS handshake", e);

    http::request<http::string_body> req;
    req.method_string(request.method);
    req.target(request.target);
    req.version(11);
    req.set(http::field::host, port_ == "443" ? host_ : host_ + ":" + port_);
    req.set(http::field::user_agent, "lockstep-operator/0.1 (registry stage tags)");
    req.set(http::field::connection, "close");
    for (const auto& [k, v] : request.headers) req.set(k, v);
    req.body() = request.body;
    req.prepare_payload();
    tcpStream.expires_after(options_.timeout);
    if (auto e = step(ioc, [&](auto h) { http::async_write(stream, req, h); }))
      return fail("write", e);

    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.maxResponseBytes);
    // A HEAD answer has a Content-Length and no body.
    if (request.method == "HEAD") parser.skip(true);
    tcpStream.expires_after(options_.timeout);
    if (auto e = step(ioc, [&](auto h) { http::async_read(stream, buffer, parser, h); }))
      return fail("read", e);

    HttpResponse out;
    auto& res = parser.get();
    out.status = static_cast<int>(res.result_int());
    for (const auto& field : res) {
      out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    out.body = std::move(res.body());
    // The answer is complete and the request said Connection: close: no TLS
    // close_notify round trip, just close.
    boost::system::error_code ignored;
    tcpStream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return out;
  } catch (const std::exception& e) {
    return unavailable(who + ": " + what + ": " + e.what());
  }
}

}  // namespace lockstep::registry
