#include "webhooks/server/tls_context.h"

#include <openssl/ssl.h>

#include <boost/asio/buffer.hpp>

namespace lockstep::webhooks {

namespace ssl = boost::asio::ssl;

namespace {
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
}  // namespace

StatusOr<std::shared_ptr<ssl::context>> makeServerTlsContext(const TlsCertificate& cert) {
  if (cert.certChainPem.empty() || cert.keyPem.empty()) {
    return invalidArgument("TLS certificate or key is empty");
  }
  try {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                     ssl::context::single_dh_use);
    SSL_CTX* native = ctx->native_handle();
    if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1 ||
        SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
      return internalError("configuring TLS protocol versions/ciphers failed");
    }
    // Renegotiation is a DoS vector and useless here.
    SSL_CTX_set_options(native, SSL_OP_NO_RENEGOTIATION);
    boost::system::error_code ec;
    ctx->use_certificate_chain(boost::asio::buffer(cert.certChainPem), ec);
    if (ec) return invalidArgument("TLS certificate chain: " + ec.message());
    ctx->use_private_key(boost::asio::buffer(cert.keyPem), ssl::context::pem, ec);
    if (ec) return invalidArgument("TLS private key: " + ec.message());
    if (SSL_CTX_check_private_key(native) != 1) {
      return invalidArgument("TLS private key does not match the certificate");
    }
    return ctx;
  } catch (const std::exception& e) {
    return internalError(std::string("TLS context: ") + e.what());
  }
}

}  // namespace lockstep::webhooks
