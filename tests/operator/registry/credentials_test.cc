#include "operator/registry/credentials.h"

#include <gtest/gtest.h>

#include <vector>

namespace lockstep::registry {
namespace {

TEST(Base64Test, RoundTripsAndRefusesGarbage) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "user:pa:ss", std::string("\0\xff", 2)}) {
    auto d = base64Decode(base64Encode(s));
    ASSERT_TRUE(d.has_value()) << s;
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(base64Encode("user:secret"), "dXNlcjpzZWNyZXQ=");
  EXPECT_FALSE(base64Decode("dXNl*jpz").has_value());
  EXPECT_FALSE(base64Decode("dXNlcg==cjpz").has_value());
}

TEST(DockerConfigTest, AuthFieldForTheHost) {
  std::string cfg = R"({"auths":{"other.example":{"auth":"b3RoZXI6eA=="},
    "registry.example:5000":{"auth":")" +
                    base64Encode("robot:s3cret:x") + R"("}}})";
  auto c = credentialsForHost(cfg, "registry.example:5000", "Secret ml/pull");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->username, "robot");
  EXPECT_EQ((*c)->password, "s3cret:x");  // only the first ':' separates
  EXPECT_EQ((*c)->basicAuthorization(), "Basic " + base64Encode("robot:s3cret:x"));
}

TEST(DockerConfigTest, UrlKeysAndUsernamePasswordFields) {
  std::string cfg = R"({"auths":{"https://Registry.Example/v2/":{"username":"u","password":"p"}}})";
  auto c = credentialsForHost(cfg, "registry.example", "Secret ml/pull");
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->username, "u");
  EXPECT_EQ((*c)->password, "p");
  // A port is part of the host: registry.example:5000 is another registry.
  auto other = credentialsForHost(cfg, "registry.example:5000", "Secret ml/pull");
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(other->has_value());
}

TEST(DockerConfigTest, DockerHubUnderItsV1Key) {
  std::string cfg = R"({"auths":{"https://index.docker.io/v1/":{"auth":"aHViOnB3"}}})";
  auto c = credentialsForHost(cfg, "docker.io", "Secret ml/pull");
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->username, "hub");
}

TEST(DockerConfigTest, NoEntryIsNotAnError) {
  auto none = credentialsForHost(R"({"auths":{}})", "registry.example", "Secret ml/pull");
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->has_value());
  auto noAuths = credentialsForHost(R"({"credsStore":"desktop"})", "r.example", "Secret ml/pull");
  ASSERT_TRUE(noAuths.isOk());
  EXPECT_FALSE(noAuths->has_value());
}

TEST(DockerConfigTest, BadInputNamesWhereButNeverTheSecret) {
  auto notJson = credentialsForHost("{", "r.example", "Secret ml/pull");
  ASSERT_FALSE(notJson.isOk());
  EXPECT_NE(notJson.status().message().find("Secret ml/pull"), std::string::npos);
  auto badAuth = credentialsForHost(R"({"auths":{"r.example":{"auth":"c2VjcmV0!!"}}})", "r.example",
                                    "Secret ml/pull");
  ASSERT_FALSE(badAuth.isOk());
  EXPECT_NE(badAuth.status().message().find("auths[\"r.example\"].auth"), std::string::npos);
  EXPECT_EQ(badAuth.status().message().find("c2VjcmV0"), std::string::npos);
  auto noColon = credentialsForHost(
      R"({"auths":{"r.example":{"auth":")" + base64Encode("tokenonly") + R"("}}})", "r.example",
      "Secret ml/pull");
  ASSERT_FALSE(noColon.isOk());
  EXPECT_EQ(noColon.status().message().find("tokenonly"), std::string::npos);
  auto empty = credentialsForHost(R"({"auths":{"r.example":{}}})", "r.example", "Secret ml/pull");
  ASSERT_FALSE(empty.isOk());
  auto auths = credentialsForHost(R"({"auths":[]})", "r.example", "Secret ml/pull");
  ASSERT_FALSE(auths.isOk());
}

TEST(ChallengeTest, BearerWithQuotedParamsContainingCommas) {
  auto c = parseChallenge(
      R"(Bearer realm="https://auth.example/token",service="registry.example",scope="repository:models/gpt2:pull,push")");
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->scheme, "bearer");
  EXPECT_EQ(c->param("realm"), "https://auth.example/token");
  EXPECT_EQ(c->param("service"), "registry.example");
  EXPECT_EQ(c->param("scope"), "repository:models/gpt2:pull,push");
}

TEST(ChallengeTest, BasicAndMalformed) {
  auto b = parseChallenge(R"(Basic realm="Registry Realm")");
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b->scheme, "basic");
  EXPECT_EQ(b->param("realm"), "Registry Realm");
  EXPECT_FALSE(parseChallenge("").isOk());
  EXPECT_FALSE(parseChallenge(R"(Bearer realm="https://a)").isOk());
}

TEST(TokenRequestTest, RealmServiceAndScope) {
  auto c = parseChallenge(R"(Bearer realm="https://auth.example:8443/v2/token?x=1",service="reg")");
  ASSERT_TRUE(c.isOk());
  auto r = tokenRequestFor(*c, "models/gpt2", "pull,push");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->origin, "https://auth.example:8443");
  EXPECT_EQ(r->path, "/v2/token");
  ASSERT_EQ(r->query.size(), 3u);
  EXPECT_EQ(r->query[0], (std::pair<std::string, std::string>{"x", "1"}));
  EXPECT_EQ(r->query[1], (std::pair<std::string, std::string>{"service", "reg"}));
  EXPECT_EQ(r->query[2],
            (std::pair<std::string, std::string>{"scope", "repository:models/gpt2:pull,push"}));
}

TEST(TokenRequestTest, ClearTextRealmIsRefused) {
  auto c = parseChallenge(R"(Bearer realm="http://auth.example/token")");
  ASSERT_TRUE(c.isOk());
  auto r = tokenRequestFor(*c, "m", "pull");
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("not https"), std::string::npos);
  EXPECT_FALSE(tokenRequestFor(*parseChallenge("Bearer service=x"), "m", "pull").isOk());
}

TEST(TokenResponseTest, TokenOrAccessToken) {
  EXPECT_EQ(*decodeTokenResponse(R"({"token":"t1","expires_in":60})"), "t1");
  EXPECT_EQ(*decodeTokenResponse(R"({"access_token":"t2"})"), "t2");
  EXPECT_FALSE(decodeTokenResponse(R"({"token":""})").isOk());
  EXPECT_FALSE(decodeTokenResponse("nope").isOk());
}

TEST(SplitUrlTest, OriginAndRest) {
  auto s = splitUrl("https://h:5000/v2/m/blobs/uploads/u?_state=a%3D");
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(s->first, "https://h:5000");
  EXPECT_EQ(s->second, "/v2/m/blobs/uploads/u?_state=a%3D");
  EXPECT_EQ(splitUrl("https://h")->second, "/");
  EXPECT_FALSE(splitUrl("/relative").isOk());
  EXPECT_FALSE(splitUrl("ftp://h/x").isOk());
}

}  // namespace
}  // namespace lockstep::registry
