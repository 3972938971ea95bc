#include "operator/prometheus/client.h"

#include <utility>

#include "operator/kube/kube_config.h"
#include "operator/kube/rest_transport.h"

namespace lockstep::prometheus {
namespace {

std::string quote(const std::string& s) { return "\"" + s + "\""; }

bool hasControlOrSpace(const std::string& s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return true;
  }
  return false;
}

// "Bearer <token>" from the file; the token itself never enters a message.
StatusOr<std::string> authorization(const std::string& tokenFile) {
  auto text = kube::readFile(tokenFile);
  if (!text.isOk()) return invalidArgument("bearer token " + text.status().message());
  std::string token = *text;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) return invalidArgument("bearer token file " + quote(tokenFile) + " is empty");
  if (hasControlOrSpace(token)) {
    return invalidArgument("bearer token file " + quote(tokenFile) +
                           " holds more than one token (spaces or control characters inside)");
  }
  return "Bearer " + token;
}

}  // namespace

StatusOr<Endpoint> parseAddress(const std::string& address) {
  auto bad = [&](const std::string& why) {
    return invalidArgument("prometheus address " + quote(address) + ": " + why);
  };
  if (address.empty()) return invalidArgument("prometheus address is empty");
  if (hasControlOrSpace(address)) return bad("contains spaces or control characters");
  Endpoint e;
  std::string rest;
  if (address.rfind("https://", 0) == 0) {
    e.https = true;
    rest = address.substr(8);
  } else if (address.rfind("http://", 0) == 0) {
    rest = address.substr(7);
  } else {
    return bad("must start with http:// or https://");
  }
  if (rest.find_first_of("?#") != std::string::npos)
    return bad("must not have a query or fragment");
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (authority.empty()) return bad("has no host");
  if (authority.find('@') != std::string::npos) {
    return bad("must not carry credentials; use bearerTokenFile");
  }
  if (authority.front() == ':') return bad("has no host");
  e.origin = (e.https ? "https://" : "http://") + authority;
  if (slash != std::string::npos) {
    e.pathPrefix = rest.substr(slash);
    while (!e.pathPrefix.empty() && e.pathPrefix.back() == '/') e.pathPrefix.pop_back();
  }
  return e;
}

Status validateConfig(const ClientConfig& config) {
  auto endpoint = parseAddress(config.address);
  if (!endpoint.isOk()) return endpoint.status();
  if (config.timeout.count() < 1) {
    return invalidArgument("prometheus " + config.address + ": timeout must be at least 1s, got " +
                           std::to_string(config.timeout.count()) + "s");
  }
  if (!config.bearerTokenFile.empty() && config.bearerToken) {
    return invalidArgument("prometheus " + config.address +
                           ": give bearerTokenFile or a bearer token, not both");
  }
  if (!config.caFile.empty() && !config.caPem.empty()) {
    return invalidArgument("prometheus " + config.address + ": give caFile or caPem, not both");
  }
  if (!endpoint->https && (!config.bearerTokenFile.empty() || config.bearerToken)) {
    return invalidArgument("prometheus " + config.address +
                           ": a bearer token is only sent over https (it would cross the "
                           "network in clear text); use an https address");
  }
  if (!endpoint->https && (!config.caFile.empty() || !config.caPem.empty())) {
    return invalidArgument("prometheus " + config.address +
                           ": a CA is set but the address is http, not https");
  }
  return Status::ok();
}

kube::Request queryRequest(const Endpoint& endpoint, const std::string& promql,
                           std::optional<int64_t> atUnix, std::chrono::seconds timeout) {
  kube::Request r;
  r.method = "GET";
  r.path = endpoint.pathPrefix + "/api/v1/query";
  r.query.emplace_back("query", promql);
  if (atUnix) r.query.emplace_back("time", std::to_string(*atUnix));
  r.query.emplace_back("timeout", std::to_string(timeout.count()) + "s");
  r.headers.emplace_back("Accept", "application/json");
  return r;
}

Client::Client(ClientConfig config, Endpoint endpoint, std::shared_ptr<kube::Transport> transport)
    : config_(std::move(config)),
      endpoint_(std::move(endpoint)),
      transport_(std::move(transport)) {}

StatusOr<std::unique_ptr<Client>> Client::create(const ClientConfig& config,
                                                 std::shared_ptr<kube::Transport> transport) {
  LOCKSTEP_RETURN_IF_ERROR(validateConfig(config));
  auto endpoint = parseAddress(config.address);
  if (!endpoint.isOk()) return endpoint.status();
  return std::unique_ptr<Client>(new Client(config, *endpoint, std::move(transport)));
}

StatusOr<std::unique_ptr<Client>> Client::connect(const ClientConfig& config) {
  LOCKSTEP_RETURN_IF_ERROR(validateConfig(config));
  auto endpoint = parseAddress(config.address);
  if (!endpoint.isOk()) return endpoint.status();
  kube::KubeConfig tls;
  tls.server = endpoint->origin;
  tls.origin = "prometheus " + config.address;
  if (!config.caFile.empty()) {
    auto pem = kube::readFile(config.caFile);
    if (!pem.isOk()) {
      return invalidArgument("prometheus " + config.address + ": caFile " + pem.status().message());
    }
    if (pem->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      return invalidArgument("prometheus " + config.address + ": caFile " + quote(config.caFile) +
                             " holds no PEM certificate");
    }
    tls.caPem = *pem;
  }
  if (!config.caPem.empty()) {
    if (config.caPem.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      return invalidArgument("prometheus " + config.address +
                             ": the CA bundle holds no PEM "
                             "certificate");
    tls.caPem = config.caPem;
  }
  kube::RestOptions options;
  options.requestTimeout = config.timeout + kTransportGrace;
  options.userAgent = "lockstep-operator/0.1 (prometheus analysis)";
  auto transport = kube::RestTransport::create(tls, options);
  if (!transport.isOk()) return transport.status();
  return create(config, *transport);
}

QueryResult Client::query(const std::string& promql, std::optional<int64_t> atUnix) const {
  kube::Request request = queryRequest(endpoint_, promql, atUnix, config_.timeout);
  if (!config_.bearerTokenFile.empty()) {
    auto auth = authorization(config_.bearerTokenFile);
    if (!auth.isOk()) {
      return QueryResult::ofError(ErrorKind::kConfig,
                                  "prometheus " + config_.address + ": " + auth.status().message());
    }
    request.headers.emplace_back("Authorization", *auth);
  } else if (config_.bearerToken) {
    std::string token = config_.bearerToken();
    if (hasControlOrSpace(token)) {
      return QueryResult::ofError(ErrorKind::kConfig,
                                  "prometheus " + config_.address +
                                      ": the bearer token holds spaces or control characters");
    }
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);
  }
  auto response = transport_->send(request);
  if (!response.isOk()) {
    const Status& st = response.status();
    // The transport prefixes the request line; the address says enough.
    std::string why = st.message();
    if (std::string prefix = request.describe() + ": "; why.rfind(prefix, 0) == 0) {
      why.erase(0, prefix.size());
    }
    if (st.code() == Code::kDeadlineExceeded) {
      return QueryResult::ofError(ErrorKind::kTimeout,
                                  "prometheus " + config_.address + ": no answer within " +
                                      std::to_string((config_.timeout + kTransportGrace).count()) +
                                      "s (timeout " + std::to_string(config_.timeout.count()) +
                                      "s): " + why);
    }
    if (endpoint_.https &&
        (why.find("SSL") != std::string::npos || why.find("certificate") != std::string::npos)) {
      why += " (is the server's certificate for this host name, and signed by " +
             (!config_.caFile.empty()  ? "the CA in caFile \"" + config_.caFile + "\""
              : !config_.caPem.empty() ? std::string("the provider's CA bundle")
                                       : std::string("a CA of the system roots")) +
             "?)";
    }
    return QueryResult::ofError(ErrorKind::kUnreachable,
                                "prometheus " + config_.address + " unreachable: " + why);
  }
  QueryResult r = decodeQueryResponse(response->status, response->body);
  if (!r.ok()) r.error = "prometheus " + config_.address + ": " + r.error;
  return r;
}

}  // namespace lockstep::prometheus
