// RegistryClient against a fake registry with knobs (FakeHttp handlers):
// a manifest store behind Bearer or Basic auth, a token server on another
// origin, and a switch that tampers with the bytes it serves.
#include "operator/registry/distribution.h"

#include <gtest/gtest.h>

#include <map>

#include <functional>

namespace lockstep::registry {
namespace {

// An HttpTransport answering from a handler; records every request.
class FakeHttp final : public HttpTransport {
 public:
  using Handler = std::function<StatusOr<HttpResponse>(const HttpRequest&)>;
  void setHandler(Handler h) { handler_ = std::move(h); }
  StatusOr<HttpResponse> send(const HttpRequest& r) override {
    requests_.push_back(r);
    return handler_(r);
  }
  const std::vector<HttpRequest>& requests() const { return requests_; }
  size_t requestCount() const { return requests_.size(); }

 private:
  Handler handler_;
  std::vector<HttpRequest> requests_;
};

constexpr const char* kHost = "registry.example";
constexpr const char* kRepo = "models/gpt2";

HttpResponse reply(int status, std::string body = "", std::string contentType = "",
                   Headers headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  if (!contentType.empty()) headers.emplace_back("Content-Type", contentType);
  r.headers = std::move(headers);
  return r;
}

std::string queryParam(const std::string& target, const std::string& key) {
  size_t q = target.find('?');
  if (q == std::string::npos) return "";
  std::string rest = target.substr(q + 1);
  for (size_t at = 0; at <= rest.size();) {
    size_t amp = std::min(rest.find('&', at), rest.size());
    std::string kv = rest.substr(at, amp - at);
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    at = amp + 1;
  }
  return "";
}

struct FakeRegistry {
  enum class Auth { kNone, kBasic, kBearer } auth = Auth::kBearer;
  std::string basic = Credentials{"robot", "pw", ""}.basicAuthorization();
  bool tamper = false;
  int tokenRequests = 0;
  std::map<std::string, std::pair<std::string, std::string>> manifests;  // ref -> (type, bytes)
  std::map<std::string, std::string> blobs;                              // digest -> bytes
  std::shared_ptr<FakeHttp> registry = std::make_shared<FakeHttp>();
  std::shared_ptr<FakeHttp> tokens = std::make_shared<FakeHttp>();

  std::string add(const std::string& type, const std::string& bytes) {
    std::string d = sha256Digest(bytes);
    manifests[d] = {type, bytes};
    return d;
  }

  FakeRegistry() {
    registry->setHandler([this](const HttpRequest& r) -> StatusOr<HttpResponse> {
      std::string authz = r.header("Authorization");
      if (auth == Auth::kBearer && authz != "Bearer tok-pull" && authz != "Bearer tok-pull,push") {
        return reply(401,
                     R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})",
                     "application/json",
                     {{"Www-Authenticate",
                       R"(Bearer realm="https://auth.example/token",service="registry.example")"}});
      }
      if (auth == Auth::kBasic && authz != basic) {
        return reply(401, "", "", {{"WWW-Authenticate", R"(Basic realm="Registry Realm")"}});
      }
      const std::string blobPrefix = std::string("/v2/") + kRepo + "/blobs/";
      if (r.method == "HEAD" && r.target.rfind(blobPrefix, 0) == 0) {
        auto it = blobs.find(r.target.substr(blobPrefix.size()));
        if (it == blobs.end()) return reply(404);
        return reply(200, "", "", {{"Content-Length", std::to_string(it->second.size())}});
      }
      const std::string prefix = std::string("/v2/") + kRepo + "/manifests/";
      if (r.target.rfind(prefix, 0) != 0) return reply(404);
      std::string ref = r.target.substr(prefix.size());
      if (r.method == "GET") {
        if (r.header("Accept").find("application/vnd.oci.image.manifest.v1+json") ==
            std::string::npos)
          return reply(404);
        auto it = manifests.find(ref);
        if (it == manifests.end()) {
          return reply(404,
                       R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]})",
                       "application/json");
        }
        std::string bytes = it->second.second;
        if (tamper) bytes += " ";
        return reply(200, bytes, it->second.first);
      }
      if (r.method == "PUT") {
        if (authz != "Bearer tok-pull,push" && auth == Auth::kBearer) return reply(403);
        manifests[ref] = {r.header("Content-Type"), r.body};
        return reply(201, "", "", {{"Docker-Content-Digest", sha256Digest(r.body)}});
      }
      return reply(405);
    });
    tokens->setHandler([this](const HttpRequest& r) -> StatusOr<HttpResponse> {
      ++tokenRequests;
      if (r.header("Authorization") != basic) {
        return reply(401, R"({"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]})");
      }
      // scope=repository%3Amodels%2Fgpt2%3Apull%2Cpush
      std::string scope = queryParam(r.target, "scope");
      std::string actions = scope.substr(scope.rfind("%3A") + 3);
      if (actions == "pull%2Cpush") actions = "pull,push";
      return reply(200, R"({"token":"tok-)" + actions + R"("})", "application/json");
    });
  }

  RegistryClient client(std::optional<Credentials> creds = Credentials{"robot", "pw", ""}) {
    return RegistryClient(
        kHost, std::move(creds),
        [this](const std::string& origin) -> StatusOr<std::shared_ptr<HttpTransport>> {
          if (origin == "https://registry.example") return std::shared_ptr<HttpTransport>(registry);
          if (origin == "https://auth.example") return std::shared_ptr<HttpTransport>(tokens);
          return unavailable("no fake for " + origin);
        });
  }
};

const std::string kManifest =
    R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
    R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:c","size":2},)"
    R"("layers":[]})";

TEST(RegistryClientTest, TagPutsTheExactBytesWithTheirMediaType) {
  FakeRegistry reg;
  std::string digest = reg.add(kOciManifest, kManifest);
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, digest}, "prod");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_TRUE(out->moved);
  EXPECT_EQ(out->previousDigest, "");
  ASSERT_EQ(reg.manifests.count("prod"), 1u);
  EXPECT_EQ(reg.manifests["prod"].first, kOciManifest);
  EXPECT_EQ(reg.manifests["prod"].second, kManifest);
  auto resolved = c.resolveTag(kRepo, "prod");
  ASSERT_TRUE(resolved.isOk());
  EXPECT_EQ(*resolved, digest);
  // One token per scope: pull for the reads, pull,push for the write.
  EXPECT_EQ(reg.tokenRequests, 2);
}

// The mirror's resume check: a HEAD per blob, its size when there, nothing when not.
TEST(RegistryClientTest, BlobSizeIsTheHeadAnswerAndAbsentIsNotAnError) {
  FakeRegistry reg;
  reg.blobs[sha256Digest("wheel bytes")] = "wheel bytes";
  auto c = reg.client();
  auto there = c.blobSize(kRepo, sha256Digest("wheel bytes"));
  ASSERT_TRUE(there.isOk()) << there.status().message();
  ASSERT_TRUE(there->has_value());
  EXPECT_EQ(**there, 11);
  auto absent = c.blobSize(kRepo, sha256Digest("other"));
  ASSERT_TRUE(absent.isOk()) << absent.status().message();
  EXPECT_FALSE(absent->has_value());
  EXPECT_EQ(reg.registry->requests().back().method, "HEAD");
  EXPECT_EQ(reg.tokenRequests, 1);  // one pull token for both
  reg.auth = FakeRegistry::Auth::kBasic;
  reg.basic = "Basic wrong";
  auto refused = reg.client().blobSize(kRepo, sha256Digest("wheel bytes"));
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("HEAD blob"), std::string::npos)
      << refused.status().message();
}

TEST(RegistryClientTest, TagAlreadyThereWritesNothing) {
  FakeRegistry reg;
  std::string digest = reg.add(kOciManifest, kManifest);
  reg.manifests["prod"] = reg.manifests[digest];
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, digest}, "prod");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_FALSE(out->moved);
  EXPECT_EQ(out->previousDigest, digest);
  for (const auto& r : reg.registry->requests()) EXPECT_NE(r.method, "PUT") << r.target;
}

TEST(RegistryClientTest, MovesATagBackAndReportsWhereItWas) {
  FakeRegistry reg;
  std::string d1 = reg.add(kOciManifest, kManifest);
  std::string other = kManifest;
  other.insert(other.size() - 1, R"(,"annotations":{"v":"2"})");
  std::string d2 = reg.add(kOciManifest, other);
  reg.manifests["prod"] = reg.manifests[d2];
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, d1}, "prod");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_TRUE(out->moved);
  EXPECT_EQ(out->previousDigest, d2);
  EXPECT_EQ(*c.resolveTag(kRepo, "prod"), d1);
}

TEST(RegistryClientTest, BytesThatDoNotMatchTheDigestAreRefusedAndNothingIsPut) {
  FakeRegistry reg;
  std::string digest = reg.add(kOciManifest, kManifest);
  reg.tamper = true;
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, digest}, "prod");
  ASSERT_FALSE(out.isOk());
  EXPECT_NE(out.status().message().find("bytes whose digest is"), std::string::npos);
  EXPECT_EQ(reg.manifests.count("prod"), 0u);
}

TEST(RegistryClientTest, UnknownManifestErrorNamesRegistryRepositoryStatusAndCode) {
  FakeRegistry reg;
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, "sha256:" + std::string(64, 'b')}, "eval");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kNotFound);
  const std::string& m = out.status().message();
  EXPECT_NE(m.find("registry registry.example"), std::string::npos) << m;
  EXPECT_NE(m.find("repository models/gpt2"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 404"), std::string::npos) << m;
  EXPECT_NE(m.find("MANIFEST_UNKNOWN: manifest unknown"), std::string::npos) << m;
}

TEST(RegistryClientTest, BadCredentialsAtTheTokenServerAreUnauthorizedWithoutTheSecret) {
  FakeRegistry reg;
  std::string digest = reg.add(kOciManifest, kManifest);
  auto c = reg.client(Credentials{"robot", "wrong-password", ""});
  auto out = c.tag(PackageRef{kHost, kRepo, digest}, "prod");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kUnauthorized);
  EXPECT_NE(out.status().message().find("token realm https://auth.example/token"),
            std::string::npos)
      << out.status().message();
  EXPECT_EQ(out.status().message().find("wrong-password"), std::string::npos);
}

TEST(RegistryClientTest, BasicChallengeUsesTheCredentials) {
  FakeRegistry reg;
  reg.auth = FakeRegistry::Auth::kBasic;
  std::string digest = reg.add(kDockerManifest, R"({"schemaVersion":2,"config":{},"layers":[]})");
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, digest}, "ci");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  EXPECT_EQ(reg.manifests["ci"].first, kDockerManifest);
  EXPECT_EQ(reg.tokenRequests, 0);
}

TEST(RegistryClientTest, BasicChallengeWithoutCredentialsSaysSo) {
  FakeRegistry reg;
  reg.auth = FakeRegistry::Auth::kBasic;
  std::string digest = reg.add(kOciManifest, kManifest);
  auto c = reg.client(std::nullopt);
  auto out = c.tag(PackageRef{kHost, kRepo, digest}, "ci");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kUnauthorized);
  EXPECT_NE(out.status().message().find("none are configured for registry.example"),
            std::string::npos)
      << out.status().message();
}

TEST(RegistryClientTest, InvalidTagIsRefusedBeforeAnyRequest) {
  FakeRegistry reg;
  auto c = reg.client();
  auto out = c.tag(PackageRef{kHost, kRepo, "sha256:" + std::string(64, 'b')}, "-bad");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(reg.registry->requestCount(), 0u);
}

TEST(RegistryClientTest, TransportFailureNamesTheRegistry) {
  FakeRegistry reg;
  reg.registry->setHandler([](const HttpRequest&) -> StatusOr<HttpResponse> {
    return Status(Code::kUnavailable, "connection refused");
  });
  auto c = reg.client();
  auto out = c.resolveTag(kRepo, "prod");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kUnavailable);
  EXPECT_NE(out.status().message().find("registry registry.example, repository models/gpt2"),
            std::string::npos)
      << out.status().message();
}

}  // namespace
}  // namespace lockstep::registry
