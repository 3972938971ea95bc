// The /metrics filter (webhooks/metrics/metrics_auth.h) with fake reviewers:
// what each header and review answer gives, what is cached and for how long,
// and the review objects sent to the API server (golden JSON).
#include "webhooks/metrics/metrics_auth.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

// Knobs: tokens it knows (token -> user), a failure for every review.
class FakeTokenReviewer final : public TokenReviewer {
 public:
  std::map<std::string, UserInfo> known;
  std::optional<Status> failure;
  mutable int calls = 0;
  StatusOr<TokenReviewResult> review(const std::string& token) const override {
    ++calls;
    if (failure) return *failure;
    auto it = known.find(token);
    if (it == known.end()) return TokenReviewResult{false, {}, "invalid bearer token"};
    return TokenReviewResult{true, it->second, ""};
  }
};

// Knobs: the usernames allowed to get a path, a failure for every question.
class FakeNonResourceAuthorizer final : public NonResourceAuthorizer {
 public:
  std::set<std::pair<std::string, std::string>> allowed;  // (user, path)
  std::optional<Status> failure;
  mutable int calls = 0;
  mutable std::string lastVerb;
  StatusOr<AccessDecision> authorize(const UserInfo& user, const std::string& path,
                                     const std::string& verb) const override {
    ++calls;
    lastVerb = verb;
    if (failure) return *failure;
    return AccessDecision{allowed.count({user.username, path}) > 0, "", ""};
  }
};

class MetricsAuthTest : public ::testing::Test {
 protected:
  MetricsAuthTest() {
    tokens_.known["good"] = {"system:serviceaccount:monitoring:prometheus", "u1", {"g"}, {}};
    tokens_.known["other"] = {"system:serviceaccount:ml:intruder", "u2", {}, {}};
    authz_.allowed.insert({"system:serviceaccount:monitoring:prometheus", "/metrics"});
  }
  MetricsAuthVerdict check(const std::string& header, TimePoint at = TimePoint{}) {
    return filter_.check(header, "/metrics", at);
  }
  FakeTokenReviewer tokens_;
  FakeNonResourceAuthorizer authz_;
  MetricsAuthFilter filter_{tokens_, authz_, MetricsAuthOptions{seconds(60), seconds(10), 4}};
};

TEST(BearerToken, ParsesTheSchemeCaseInsensitivelyAndRefusesTheRest) {
  EXPECT_EQ(bearerToken("Bearer abc.def-_~+/="), "abc.def-_~+/=");
  EXPECT_EQ(bearerToken("bearer abc"), "abc");
  EXPECT_EQ(bearerToken("BEARER   abc  "), "abc");
  EXPECT_EQ(bearerToken(""), std::nullopt);
  EXPECT_EQ(bearerToken("Bearer"), std::nullopt);
  EXPECT_EQ(bearerToken("Bearer "), std::nullopt);
  EXPECT_EQ(bearerToken("Bearerabc"), std::nullopt);
  EXPECT_EQ(bearerToken("Basic dXNlcjpwYXNz"), std::nullopt);
  EXPECT_EQ(bearerToken("Bearer a b"), std::nullopt);
  EXPECT_EQ(bearerToken("Bearer a\r\nX-Evil: 1"), std::nullopt);
}

TEST_F(MetricsAuthTest, NoOrMalformedHeaderIs401WithoutAskingTheApiServer) {
  auto none = check("");
  EXPECT_EQ(none.status, 401);
  EXPECT_NE(none.message.find("Authorization: Bearer <token>"), std::string::npos) << none.message;
  EXPECT_EQ(check("Basic dXNlcjpwYXNz").status, 401);
  EXPECT_EQ(tokens_.calls, 0);
  EXPECT_EQ(authz_.calls, 0);
}

TEST_F(MetricsAuthTest, AnUnknownTokenIs401AndIsNeverAuthorized) {
  auto v = check("Bearer forged");
  EXPECT_EQ(v.status, 401);
  EXPECT_NE(v.message.find("invalid bearer token"), std::string::npos) << v.message;
  EXPECT_EQ(authz_.calls, 0);
}

TEST_F(MetricsAuthTest, AnAuthenticatedUserWithoutTheGrantIs403NamingTheUser) {
  auto v = check("Bearer other");
  EXPECT_EQ(v.status, 403);
  EXPECT_EQ(v.username, "system:serviceaccount:ml:intruder");
  EXPECT_NE(v.message.find("may not get path \"/metrics\""), std::string::npos) << v.message;
}

TEST_F(MetricsAuthTest, AnAuthorizedUserIsServedAndTheVerbAskedIsGet) {
  auto v = check("Bearer good");
  EXPECT_EQ(v.status, 200);
  EXPECT_EQ(v.username, "system:serviceaccount:monitoring:prometheus");
  EXPECT_EQ(authz_.lastVerb, "get");
  // Another path is another question: the grant is for /metrics only.
  EXPECT_EQ(filter_.check("Bearer good", "/debug/pprof", TimePoint{}).status, 403);
}

TEST_F(MetricsAuthTest, ReviewFailuresAre503AndFailClosed) {
  tokens_.failure = Status(Code::kDeadlineExceeded, "POST tokenreviews: timed out");
  auto v = check("Bearer good");
  EXPECT_EQ(v.status, 503);
  EXPECT_NE(v.message.find("TokenReview failed"), std::string::npos) << v.message;
  tokens_.failure.reset();
  authz_.failure = Status(Code::kForbidden, "cannot create subjectaccessreviews");
  auto w = check("Bearer good");
  EXPECT_EQ(w.status, 503);
  EXPECT_NE(w.message.find("SubjectAccessReview failed"), std::string::npos) << w.message;
}

TEST_F(MetricsAuthTest, AnswersAreCachedPerTokenForTheirTtlAndFailuresNever) {
  const TimePoint t0{};
  EXPECT_EQ(check("Bearer good", t0).status, 200);
  EXPECT_EQ(check("Bearer good", t0 + seconds(59)).status, 200);
  EXPECT_EQ(tokens_.calls, 1);
  EXPECT_EQ(authz_.calls, 1);
  // Past the allow TTL the reviews run again, and see a revoked grant.
  authz_.allowed.clear();
  EXPECT_EQ(check("Bearer good", t0 + seconds(60)).status, 403);
  EXPECT_EQ(tokens_.calls, 2);
  // A refusal is cached for the deny TTL only.
  authz_.allowed.insert({"system:serviceaccount:monitoring:prometheus", "/metrics"});
  EXPECT_EQ(check("Bearer good", t0 + seconds(69)).status, 403);
  EXPECT_EQ(check("Bearer good", t0 + seconds(70)).status, 200);
  EXPECT_EQ(tokens_.calls, 3);
  // Failures are not cached: the next request asks again.
  tokens_.failure = Status(Code::kUnavailable, "connection refused");
  EXPECT_EQ(check("Bearer other", t0).status, 503);
  tokens_.failure.reset();
  EXPECT_EQ(check("Bearer other", t0).status, 403);
}

TEST_F(MetricsAuthTest, TheCacheIsBounded) {
  for (int i = 0; i < 10; ++i) check("Bearer forged" + std::to_string(i));
  EXPECT_EQ(tokens_.calls, 10);
  // With at most 4 entries, the first forged token is no longer cached.
  check("Bearer forged0");
  EXPECT_EQ(tokens_.calls, 11);
}

TEST(MetricsReviews, TokenReviewAndNonResourceAccessReviewObjects) {
  EXPECT_EQ(tokenReviewFor("t0k"), (json{{"apiVersion", "authentication.k8s.io/v1"},
                                         {"kind", "TokenReview"},
                                         {"spec", {{"token", "t0k"}}}}));
  UserInfo u{"system:serviceaccount:monitoring:prometheus",
             "u1",
             {"system:serviceaccounts", "system:authenticated"},
             {{"authentication.kubernetes.io/pod-name", {"prom-0"}}}};
  EXPECT_EQ(nonResourceAccessReviewFor(u, "/metrics", "get"),
            (json{{"apiVersion", "authorization.k8s.io/v1"},
                  {"kind", "SubjectAccessReview"},
                  {"spec",
                   {{"user", "system:serviceaccount:monitoring:prometheus"},
                    {"uid", "u1"},
                    {"groups", {"system:serviceaccounts", "system:authenticated"}},
                    {"extra", {{"authentication.kubernetes.io/pod-name", {"prom-0"}}}},
                    {"nonResourceAttributes", {{"path", "/metrics"}, {"verb", "get"}}}}}}));
}

TEST(MetricsReviews, TokenReviewResultsAreReadStrictly) {
  auto ok = tokenReviewResultFrom(json::parse(R"({"status":{"authenticated":true,
      "user":{"username":"alice","uid":"u","groups":["a","b"],"extra":{"k":["v"]}}}})"));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_TRUE(ok->authenticated);
  EXPECT_EQ(ok->user.username, "alice");
  EXPECT_EQ(ok->user.groups, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ok->user.extra.at("k"), std::vector<std::string>{"v"});
  auto no = tokenReviewResultFrom(
      json::parse(R"({"status":{"authenticated":false,"error":"token expired"}})"));
  ASSERT_TRUE(no.isOk());
  EXPECT_FALSE(no->authenticated);
  EXPECT_EQ(no->error, "token expired");
  EXPECT_FALSE(tokenReviewResultFrom(json::parse(R"({"spec":{}})")).isOk());
  // Authenticated but nobody: an error, never an anonymous grant.
  EXPECT_FALSE(tokenReviewResultFrom(json::parse(R"({"status":{"authenticated":true}})")).isOk());
}

}  // namespace
}  // namespace lockstep::webhooks
