#include "webhooks/metrics/metrics_auth.h"

#include <cctype>

namespace lockstep::webhooks {
namespace {

using nlohmann::json;

bool isTokenChar(char c) {
  // RFC 6750 b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", then "=" padding.
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_' ||
         c == '~' || c == '+' || c == '/' || c == '=';
}

UserInfo userFrom(const json& user) {
  UserInfo u;
  if (!user.is_object()) return u;
  u.username = user.value("username", "");
  u.uid = user.value("uid", "");
  if (auto g = user.find("groups"); g != user.end() && g->is_array()) {
    for (const json& v : *g)
      if (v.is_string()) u.groups.push_back(v.get<std::string>());
  }
  if (auto e = user.find("extra"); e != user.end() && e->is_object()) {
    for (const auto& [k, values] : e->items()) {
      if (!values.is_array()) continue;
      for (const json& v : values)
        if (v.is_string()) u.extra[k].push_back(v.get<std::string>());
    }
  }
  return u;
}

}  // namespace

std::optional<std::string> bearerToken(std::string_view h) {
  constexpr std::string_view kScheme = "bearer";
  if (h.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(h[i])) != kScheme[i]) return std::nullopt;
  }
  std::size_t at = kScheme.size();
  if (h[at] != ' ') return std::nullopt;
  while (at < h.size() && h[at] == ' ') ++at;
  std::size_t end = h.size();
  while (end > at && h[end - 1] == ' ') --end;
  if (end == at) return std::nullopt;
  std::string_view token = h.substr(at, end - at);
  for (char c : token)
    if (!isTokenChar(c)) return std::nullopt;
  return std::string(token);
}

json tokenReviewFor(const std::string& token) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", token}}}};
}

StatusOr<TokenReviewResult> tokenReviewResultFrom(const json& review) {
  if (!review.is_object() || !review.contains("status") || !review["status"].is_object()) {
    return internalError("TokenReview answered without a status");
  }
  const json& st = review["status"];
  TokenReviewResult r;
  r.authenticated = st.value("authenticated", false);
  r.error = st.value("error", "");
  if (r.authenticated) {
    r.user = userFrom(st.value("user", json::object()));
    if (r.user.username.empty()) {
      return internalError("TokenReview authenticated the token but named no user");
    }
  }
  return r;
}

json nonResourceAccessReviewFor(const UserInfo& user, const std::string& path,
                                const std::string& verb) {
  json spec = {{"user", user.username},
               {"nonResourceAttributes", {{"path", path}, {"verb", verb}}}};
  if (!user.uid.empty()) spec["uid"] = user.uid;
  if (!user.groups.empty()) spec["groups"] = user.groups;
  if (!user.extra.empty()) spec["extra"] = user.extra;
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"spec", std::move(spec)}};
}

MetricsAuthVerdict MetricsAuthFilter::decide(const std::string& token,
                                             const std::string& path) const {
  auto reviewed = tokens_.review(token);
  if (!reviewed.isOk()) {
    return {503,
            "cannot authenticate the request: TokenReview failed: " + reviewed.status().toString() +
                "\n",
            ""};
  }
  if (!reviewed->authenticated) {
    return {401,
            "Unauthorized: the bearer token was not authenticated" +
                (reviewed->error.empty() ? std::string() : " (" + reviewed->error + ")") + "\n",
            ""};
  }
  const std::string& who = reviewed->user.username;
  auto decision = authorizer_.authorize(reviewed->user, path, "get");
  if (!decision.isOk()) {
    return {503,
            "cannot authorize " + who +
                ": SubjectAccessReview failed: " + decision.status().toString() + "\n",
            who};
  }
  if (!decision->allowed) {
    return {403,
            "Forbidden: user \"" + who + "\" may not get path \"" + path + "\"" +
                (decision->reason.empty() ? std::string() : " (" + decision->reason + ")") + "\n",
            who};
  }
  return {200, "", who};
}

MetricsAuthVerdict MetricsAuthFilter::check(std::string_view authorization, const std::string& path,
                                            std::chrono::steady_clock::time_point now) {
  std::optional<std::string> token = bearerToken(authorization);
  if (!token) {
    return {401,
            authorization.empty()
                ? "Unauthorized: send a ServiceAccount token as \"Authorization: Bearer <token>\"\n"
                : "Unauthorized: the Authorization header is not \"Bearer <token>\"\n",
            ""};
  }
  auto key = std::make_pair(*token, path);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      if (now < it->second.expires) return it->second.verdict;
      cache_.erase(it);
    }
  }
  MetricsAuthVerdict verdict = decide(*token, path);
  std::chrono::seconds ttl{0};
  if (verdict.status == 200) ttl = options_.allowTtl;
  if (verdict.status == 401 || verdict.status == 403) ttl = options_.denyTtl;
  if (ttl > std::chrono::seconds::zero()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() >= options_.maxCached) cache_.clear();
    cache_[key] = {verdict, now + ttl};
  }
  return verdict;
}

}  // namespace lockstep::webhooks
