#include "operator/registry/credentials.h"

#include <cctype>

#include <nlohmann/json.hpp>

namespace lockstep::registry {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "https://host/v1/" -> "host"; "host" -> "host".
std::string keyHost(std::string_view key) {
  for (std::string_view scheme : {"https://", "http://"}) {
    if (key.substr(0, scheme.size()) == scheme) {
      key.remove_prefix(scheme.size());
      break;
    }
  }
  return lower(key.substr(0, key.find('/')));
}

// docker.io's credentials live under index.docker.io (the v1 URL) in every docker config.
bool sameRegistry(const std::string& keyHostName, const std::string& host) {
  auto hub = [](const std::string& h) {
    return h == "docker.io" || h == "index.docker.io" || h == "registry-1.docker.io";
  };
  return keyHostName == host || (hub(keyHostName) && hub(host));
}

}  // namespace

std::string Credentials::basicAuthorization() const {
  return "Basic " + base64Encode(username + ":" + password);
}

StatusOr<std::optional<Credentials>> credentialsForHost(std::string_view dockerConfigJson,
                                                        const std::string& host,
                                                        const std::string& origin) {
  nlohmann::json doc = nlohmann::json::parse(dockerConfigJson, nullptr, false);
  if (!doc.is_object()) return invalidArgument(origin + ": .dockerconfigjson is not a JSON object");
  if (!doc.contains("auths")) return std::optional<Credentials>();
  const nlohmann::json& auths = doc["auths"];
  if (!auths.is_object())
    return invalidArgument(origin + ": .dockerconfigjson `auths` is not an object");
  const std::string want = lower(host);
  for (const auto& item : auths.items()) {
    const std::string& key = item.key();
    const nlohmann::json& entry = item.value();
    if (!sameRegistry(keyHost(key), want)) continue;
    const std::string where = origin + ": auths[\"" + key + "\"]";
    if (!entry.is_object()) return invalidArgument(where + " is not an object");
    auto str = [&](const char* k) {
      return entry.contains(k) && entry[k].is_string() ? entry[k].get<std::string>()
                                                       : std::string();
    };
    Credentials c;
    c.username = str("username");
    c.password = str("password");
    c.identityToken = str("identitytoken");
    if (std::string auth = str("auth"); !auth.empty()) {
      auto decoded = base64Decode(auth);
      if (!decoded) return invalidArgument(where + ".auth is not base64");
      size_t colon = decoded->find(':');
      if (colon == std::string::npos) {
        return invalidArgument(where + ".auth does not decode to \"username:password\"");
      }
      c.username = decoded->substr(0, colon);
      c.password = decoded->substr(colon + 1);
    }
    if (c.username.empty() && c.identityToken.empty()) {
      return invalidArgument(where + " has neither auth, username nor identitytoken");
    }
    return std::optional<Credentials>(c);
  }
  return std::optional<Credentials>();
}

std::string Challenge::param(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

StatusOr<Challenge> parseChallenge(std::string_view h) {
  size_t i = 0;
  auto skipSpace = [&] {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
  };
  skipSpace();
  size_t start = i;
  while (i < h.size() && h[i] != ' ' && h[i] != '\t') ++i;
  Challenge c;
  c.scheme = lower(h.substr(start, i - start));
  if (c.scheme.empty() || c.scheme.find('=') != std::string::npos) {
    return invalidArgument("WWW-Authenticate \"" + std::string(h) + "\" names no scheme");
  }
  while (i < h.size()) {
    skipSpace();
    size_t k = i;
    while (i < h.size() && h[i] != '=' && h[i] != ',' && h[i] != ' ') ++i;
    std::string key = lower(h.substr(k, i - k));
    skipSpace();
    if (i >= h.size() || h[i] != '=') {
      // A bare token: the start of a second challenge (or a token68); stop at the first one.
      break;
    }
    ++i;
    skipSpace();
    std::string value;
    if (i < h.size() && h[i] == '"') {
      ++i;
      while (i < h.size() && h[i] != '"') {
        if (h[i] == '\\' && i + 1 < h.size()) ++i;
        value += h[i++];
      }
      if (i >= h.size()) {
        return invalidArgument("WWW-Authenticate \"" + std::string(h) +
                               "\": unterminated quoted value of " + key);
      }
      ++i;  // closing quote
    } else {
      size_t v = i;
      while (i < h.size() && h[i] != ',') ++i;
      value = std::string(h.substr(v, i - v));
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    }
    if (!key.empty()) c.params[key] = value;
    skipSpace();
    if (i < h.size() && h[i] == ',') ++i;
  }
  return c;
}

StatusOr<std::pair<std::string, std::string>> splitUrl(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos ||
      (url.substr(0, scheme) != "https" && url.substr(0, scheme) != "http")) {
    return invalidArgument("\"" + std::string(url) + "\" is not an absolute http(s) URL");
  }
  size_t path = url.find_first_of("/?", scheme + 3);
  if (path == scheme + 3) return invalidArgument("\"" + std::string(url) + "\" names no host");
  std::string origin(url.substr(0, path));
  std::string rest = path == std::string_view::npos ? "/" : std::string(url.substr(path));
  if (rest.front() == '?') rest.insert(rest.begin(), '/');
  return std::make_pair(origin, rest);
}

StatusOr<TokenRequest> tokenRequestFor(const Challenge& challenge, const std::string& repository,
                                       const std::string& actions) {
  std::string realm = challenge.param("realm");
  if (realm.empty()) return invalidArgument("the Bearer challenge names no realm");
  if (realm.rfind("https://", 0) != 0) {
    // The token request carries the credentials: never in clear text.
    return invalidArgument("the Bearer challenge's realm \"" + realm + "\" is not https");
  }
  auto split = splitUrl(realm);
  if (!split.isOk()) return split.status().withContext("Bearer realm");
  TokenRequest r;
  r.origin = split->first;
  std::string rest = split->second;
  size_t q = rest.find('?');
  r.path = rest.substr(0, q);
  if (q != std::string::npos) {
    // A realm with its own query keeps it (decoded pairs; uri() encodes them again).
    std::string_view query = std::string_view(rest).substr(q + 1);
    while (!query.empty()) {
      size_t amp = query.find('&');
      std::string_view kv = query.substr(0, amp);
      size_t eq = kv.find('=');
      r.query.emplace_back(std::string(kv.substr(0, eq)),
                           eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1)));
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  if (std::string service = challenge.param("service"); !service.empty())
    r.query.emplace_back("service", service);
  r.query.emplace_back("scope", "repository:" + repository + ":" + actions);
  return r;
}

StatusOr<std::string> decodeTokenResponse(std::string_view body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object()) return invalidArgument("the token server's answer is not a JSON object");
  for (const char* k : {"token", "access_token"}) {
    if (doc.contains(k) && doc[k].is_string() && !doc[k].get<std::string>().empty())
      return doc[k].get<std::string>();
  }
  return invalidArgument("the token server's answer has no token or access_token");
}

}  // namespace lockstep::registry
