// Registry credentials, pure: a `kubernetes.io/dockerconfigjson` Secret's
// `.dockerconfigjson` decoded to the entry for one registry host, and the
// WWW-Authenticate challenges of the distribution API's auth flow (Basic, or
// Bearer with a token from the realm). No I/O. Credentials never appear in a
// message. Thread-safety: pure functions and values.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base64.h"
#include "common/status.h"

namespace lockstep::registry {

struct Credentials {
  std::string username;
  std::string password;
  std::string identityToken;  // an OAuth2 refresh token, used instead of the password

  // "Basic base64(username:password)".
  std::string basicAuthorization() const;
};

// The `auths` entry for `host` ("registry.example:5000"). Keys match as
// Docker's resolver does: "host", "https://host", "http://host", with any path
// ("https://index.docker.io/v1/" is docker.io's key). An entry gives `auth`
// (base64 "user:password") or `username` + `password`. nullopt: no entry for
// the host. InvalidArgument (naming `origin` and the key, never the secret)
// for JSON that is not a docker config or an undecodable `auth`.
StatusOr<std::optional<Credentials>> credentialsForHost(std::string_view dockerConfigJson,
                                                        const std::string& host,
                                                        const std::string& origin);

// Base64 lives in common/ (DSSE envelopes use it too); the registry callers keep these names.
using ::lockstep::base64Decode;
using ::lockstep::base64Encode;

// One WWW-Authenticate challenge: `Bearer realm="…",service="…",scope="…"`.
struct Challenge {
  std::string scheme;                         // lowercased: "basic", "bearer"
  std::map<std::string, std::string> params;  // keys lowercased, values unquoted
  std::string param(const std::string& key) const;
};

// The first challenge of a WWW-Authenticate header; InvalidArgument for a
// header with no scheme.
StatusOr<Challenge> parseChallenge(std::string_view header);

// The token request of a Bearer challenge for `repository` and `actions`
// ("pull,push"): the realm URL split into origin and path, and its query
// (service, scope). InvalidArgument when the realm is not an https URL.
struct TokenRequest {
  std::string origin;  // "https://auth.example"
  std::string path;    // "/token"
  std::vector<std::pair<std::string, std::string>> query;
};
StatusOr<TokenRequest> tokenRequestFor(const Challenge& challenge, const std::string& repository,
                                       const std::string& actions);

// The token of a token server's answer ({"token": …} or {"access_token": …}).
StatusOr<std::string> decodeTokenResponse(std::string_view body);

// Splits "https://host:port/path?query" into origin ("https://host:port") and
// the rest ("/path?query"); InvalidArgument when it is not an absolute http(s) URL.
StatusOr<std::pair<std::string, std::string>> splitUrl(std::string_view url);

}  // namespace lockstep::registry
