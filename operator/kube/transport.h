// Transport: the only way the client reaches the API server. One request in,
// one response out; or, for watches, a stream of newline-framed chunks. The
// production adapter is RestTransport (cpprestsdk); tests use FakeTransport.
// A transport never interprets Kubernetes semantics beyond framing: non-2xx
// responses of `send` come back as a Response, connection failures as
// Unavailable/DeadlineExceeded. `openStream` maps a non-2xx status with
// statusFromResponse (api_error.h).
// Thread-safety: implementations are safe for concurrent use; one LineStream
// is read by one thread, and `cancel()` may be called from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "operator/kube/request.h"

namespace lockstep::kube {

struct Response {
  int status = 0;
  std::string body;
  std::string contentType;
};

class LineStream {
 public:
  virtual ~LineStream() = default;
  // Blocks for the next line (without the newline). nullopt: the server ended the
  // body cleanly. An error status: the connection failed or the stream was cancelled.
  virtual StatusOr<std::optional<std::string>> readLine() = 0;
  // Unblocks readLine (which then returns Cancelled) and closes the connection.
  virtual void cancel() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual StatusOr<Response> send(const Request& request) = 0;
  virtual StatusOr<std::unique_ptr<LineStream>> openStream(const Request& request) = 0;
};

}  // namespace lockstep::kube
