// A blocking HTTPS/1.1 test client over Boost.Beast that verifies the server
// against a CA and the IP SAN, keeps the connection alive, and can pin the
// TLS protocol range (to prove old versions are refused).
// Thread-safety: one client per thread.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace lockstep::webhooks::testing {

struct ClientReply {
  int status = 0;
  std::string body;
  bool keepAlive = false;
};

class TlsClient {
 public:
  TlsClient(uint16_t port, const std::string& caPem, int minVersion = TLS1_2_VERSION,
            int maxVersion = 0)
      : port_(port), ctx_(boost::asio::ssl::context::tls_client) {
    SSL_CTX* c = ctx_.native_handle();
    SSL_CTX_set_security_level(c, 0);  // let the client *offer* legacy versions
    SSL_CTX_set_min_proto_version(c, minVersion);
    SSL_CTX_set_max_proto_version(c, maxVersion);
    if (maxVersion != 0 && maxVersion < TLS1_2_VERSION)
      SSL_CTX_set_cipher_list(c, "DEFAULT:@SECLEVEL=0");
    if (!caPem.empty()) ctx_.add_certificate_authority(boost::asio::buffer(caPem));
    ctx_.set_verify_mode(boost::asio::ssl::verify_peer);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(c), "127.0.0.1");
  }

  // Opens the socket now (its descriptor exists from here on), to connect()
  // later — e.g. once the process is at its descriptor limit.
  std::string prepare() {
    close();
    stream_ = std::make_unique<Stream>(ioc_, ctx_);
    boost::system::error_code ec;
    stream_->next_layer().open(boost::asio::ip::tcp::v4(), ec);
    prepared_ = !ec;
    return ec ? "socket: " + ec.message() : "";
  }

  // Connects and handshakes; returns the error message or empty on success.
  std::string connect() {
    if (!prepared_) {
      close();
      stream_ = std::make_unique<Stream>(ioc_, ctx_);
    }
    prepared_ = false;
    boost::system::error_code ec;
    boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), port_);
    stream_->next_layer().connect(ep, ec);
    if (ec) return "connect: " + ec.message();
    stream_->handshake(boost::asio::ssl::stream_base::client, ec);
    if (ec) return "handshake: " + ec.message();
    return "";
  }

  bool connected() const { return stream_ != nullptr; }

  // Sent with every request (e.g. Authorization).
  std::map<std::string, std::string> headers;
  // Accepts any server certificate (a self-signed one nobody holds the CA of).
  void skipVerification() { ctx_.set_verify_mode(boost::asio::ssl::verify_none); }

  // Sends one request; on any error returns nullopt (and the error in *err).
  std::optional<ClientReply> request(const std::string& method, const std::string& target,
                                     const std::string& body, std::string* err = nullptr,
                                     const std::string& contentType = "application/json") {
    namespace http = boost::beast::http;
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!contentType.empty()) req.set(http::field::content_type, contentType);
    for (const auto& [k, v] : headers) req.set(k, v);
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    boost::system::error_code ec;
    http::write(*stream_, req, ec);
    if (!ec) {
      http::response_parser<http::string_body> parser;
      parser.body_limit(64 * 1024 * 1024);
      http::read(*stream_, buffer_, parser, ec);
      if (!ec) {
        auto res = parser.release();
        ClientReply r{static_cast<int>(res.result_int()), res.body(), res.keep_alive()};
        if (!r.keepAlive) close();
        return r;
      }
    }
    if (err != nullptr) *err = ec.message();
    close();
    return std::nullopt;
  }

  // Writes raw bytes over TLS and reads whatever comes back until EOF.
  std::string raw(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(*stream_, boost::asio::buffer(bytes), ec);
    std::string out;
    char buf[4096];
    for (;;) {
      std::size_t n = stream_->read_some(boost::asio::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    close();
    return out;
  }

  // PEM of the certificate the server presented on this connection.
  std::string peerCertificatePem() {
    X509* x = SSL_get1_peer_certificate(stream_->native_handle());
    if (x == nullptr) return "";
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, x);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    std::string pem(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    X509_free(x);
    return pem;
  }

  // Writes raw bytes over TLS and returns without reading (a slow client).
  bool send(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(*stream_, boost::asio::buffer(bytes), ec);
    return !ec;
  }

  void close() {
    prepared_ = false;
    if (!stream_) return;
    boost::system::error_code ec;
    stream_->next_layer().close(ec);
    stream_.reset();
    buffer_.clear();
  }

 private:
  using Stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  uint16_t port_;
  boost::asio::io_context ioc_;
  boost::asio::ssl::context ctx_;
  std::unique_ptr<Stream> stream_;
  boost::beast::flat_buffer buffer_;
  bool prepared_ = false;
};

}  // namespace lockstep::webhooks::testing
