// Server implemented with Boost.Beast over asio + OpenSSL: asynchronous, one
// io_context run by a small fixed pool of threads, HTTP/1.1 keep-alive,
// per-connection strands. The TLS context is held in a shared_ptr and swapped
// under a mutex; each connection keeps the context it was accepted with.
// Thread-safety: see Server.
#pragma once

#include <memory>

#include "common/status.h"
#include "webhooks/server/server.h"

namespace lockstep::webhooks {

// Validates the certificate now, so a bad one fails at construction.
StatusOr<std::unique_ptr<Server>> makeBeastServer(ServerOptions options,
                                                  const TlsCertificate& cert);

}  // namespace lockstep::webhooks
