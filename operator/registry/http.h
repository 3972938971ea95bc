// The registry client's HTTP seam: one request in, one response out, with
// every header (WWW-Authenticate, Location, Docker-Content-Digest) and the
// exact body bytes. BeastTransport (beast_transport.h) is the production
// adapter; unit tests answer with a fake. Thread-safety: values; transports
// say their own.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace lockstep::registry {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The first header of that name (case-insensitive); "" when absent.
std::string headerValue(const Headers& headers, std::string_view name);

struct HttpRequest {
  std::string method = "GET";
  std::string target;  // origin-form, already escaped: "/v2/models/gpt2/manifests/prod"
  Headers headers;
  std::string body;
  std::string header(std::string_view name) const { return headerValue(headers, name); }
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  std::string header(std::string_view name) const { return headerValue(headers, name); }
};

// Sends to one origin (https://host[:port]). Connection failures, TLS
// failures and timeouts are Unavailable/DeadlineExceeded Status values; any
// HTTP status is a response.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual StatusOr<HttpResponse> send(const HttpRequest& request) = 0;
};

// Escapes a query key or value (RFC 3986 unreserved kept, everything else %XX).
std::string queryEscape(std::string_view s);

}  // namespace lockstep::registry
