// Server-side TLS context from in-memory PEM: TLS 1.2+ only, forward-secret
// AEAD cipher suites for TLS 1.2 (TLS 1.3 suites are OpenSSL's defaults).
// Thread-safety: the function is; a built context is immutable after return.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "common/status.h"
#include "webhooks/server/server.h"

namespace lockstep::webhooks {

StatusOr<std::shared_ptr<boost::asio::ssl::context>> makeServerTlsContext(
    const TlsCertificate& cert);

}  // namespace lockstep::webhooks
