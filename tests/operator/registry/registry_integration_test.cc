// The registry client against a real registry: Debian's docker-registry 2.8
// over TLS (a test CA) with Basic auth (htpasswd), started per test binary by
// tests/cluster/registry.sh. No Kubernetes cluster needed.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "operator/registry/beast_transport.h"
#include "operator/registry/connect.h"
#include "tests/support/registry_world.h"

namespace lockstep::registry {
namespace {

using testing::RegistryWorld;

class RealRegistry : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    world_ = RegistryWorld::start(error).release();
    ASSERT_NE(world_, nullptr) << error;
  }
  static void TearDownTestSuite() {
    delete world_;
    world_ = nullptr;
  }

  std::unique_ptr<RegistryClient> client(std::optional<Credentials> creds, bool trustCa = true) {
    ConnectOptions o;
    if (trustCa) o.caPem = world_->caPem();
    auto c = connectRegistry(world_->host(), std::move(creds), o);
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? std::move(*c) : nullptr;
  }
  std::unique_ptr<RegistryClient> client() {
    return client(Credentials{world_->username(), world_->password(), ""});
  }

  static RegistryWorld* world_;
};
RegistryWorld* RealRegistry::world_ = nullptr;

TEST_F(RealRegistry, TagsAnOciManifestByDigestAndMovesItBack) {
  auto c = client();
  ASSERT_TRUE(c);
  const std::string repo = "models/tag-move";
  auto d1 = testing::pushTestImage(*c, repo, "v1");
  ASSERT_TRUE(d1.isOk()) << d1.status().toString();
  auto d2 = testing::pushTestImage(*c, repo, "v2");
  ASSERT_TRUE(d2.isOk()) << d2.status().toString();
  ASSERT_NE(*d1, *d2);
  const std::string host = world_->host();

  auto first = c->tag(PackageRef{host, repo, *d1}, "prod");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_TRUE(first->moved);
  EXPECT_EQ(first->previousDigest, "");
  auto byTag = c->getManifest(repo, "prod");
  ASSERT_TRUE(byTag.isOk()) << byTag.status().toString();
  EXPECT_EQ(byTag->digest, *d1);  // the exact bytes, as pushed
  EXPECT_EQ(byTag->mediaType, kOciManifest);

  auto second = c->tag(PackageRef{host, repo, *d2}, "prod");
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  EXPECT_TRUE(second->moved);
  EXPECT_EQ(second->previousDigest, *d1);
  EXPECT_EQ(*c->resolveTag(repo, "prod"), *d2);

  auto back = c->tag(PackageRef{host, repo, *d1}, "prod");
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->previousDigest, *d2);
  EXPECT_EQ(*c->resolveTag(repo, "prod"), *d1);

  auto again = c->tag(PackageRef{host, repo, *d1}, "prod");
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_FALSE(again->moved);  // already there: nothing written
}

TEST_F(RealRegistry, KeepsADockerV2ManifestItsMediaType) {
  auto c = client();
  ASSERT_TRUE(c);
  const std::string repo = "models/docker-v2";
  auto d = testing::pushTestImage(*c, repo, "docker", kDockerManifest);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  auto out = c->tag(PackageRef{world_->host(), repo, *d}, "ci");
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  auto m = c->getManifest(repo, "ci");
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->mediaType, kDockerManifest);
  EXPECT_EQ(m->digest, *d);
}

TEST_F(RealRegistry, UnknownDigestIsNotFoundWithTheRegistryErrorCode) {
  auto c = client();
  ASSERT_TRUE(c);
  auto out =
      c->tag(PackageRef{world_->host(), "models/none", "sha256:" + std::string(64, 'e')}, "eval");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kNotFound);
  const std::string& m = out.status().message();
  EXPECT_NE(m.find("registry " + world_->host()), std::string::npos) << m;
  EXPECT_NE(m.find("repository models/none"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 404"), std::string::npos) << m;
  EXPECT_NE(m.find("MANIFEST_UNKNOWN"), std::string::npos) << m;
}

TEST_F(RealRegistry, WrongPasswordIsUnauthorizedAndNeverEchoed) {
  auto good = client();
  ASSERT_TRUE(good);
  auto d = testing::pushTestImage(*good, "models/auth", "auth");
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  auto c = client(Credentials{world_->username(), "not-the-password", ""});
  ASSERT_TRUE(c);
  auto out = c->tag(PackageRef{world_->host(), "models/auth", *d}, "eval");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kUnauthorized) << out.status().toString();
  EXPECT_NE(out.status().message().find("HTTP 401"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("UNAUTHORIZED"), std::string::npos)
      << out.status().message();
  EXPECT_EQ(out.status().message().find("not-the-password"), std::string::npos);

  auto anonymous = client(std::nullopt);
  ASSERT_TRUE(anonymous);
  auto none = anonymous->resolveTag("models/auth", "eval");
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("none are configured"), std::string::npos)
      << none.status().message();
}

TEST_F(RealRegistry, UntrustedCertificateIsRefused) {
  auto c = client(Credentials{world_->username(), world_->password(), ""}, /*trustCa=*/false);
  ASSERT_TRUE(c);
  auto out = c->resolveTag("models/tag-move", "prod");
  ASSERT_FALSE(out.isOk());
  EXPECT_EQ(out.status().code(), Code::kUnavailable);
  EXPECT_NE(out.status().message().find("TLS handshake"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("certificate"), std::string::npos)
      << out.status().message();
}

// The TLS context is built once per CA bundle and shared (parsing the system roots
// per request was a third of the operator's CPU reading 10,000 packages): requests
// through transports sharing it, at once from several threads, all verify the
// registry's certificate; the system roots are another context, still refused.
TEST_F(RealRegistry, TransportsWithOneCaBundleShareOneTlsContextAndStillVerify) {
  BeastTransportOptions trusted;
  trusted.caPem = world_->caPem();
  auto a = BeastTransport::create("https://" + world_->host(), trusted);
  auto b = BeastTransport::create("https://" + world_->host(), trusted);
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_EQ((*a)->tlsContext(), (*b)->tlsContext());
  auto system = BeastTransport::create("https://" + world_->host(), BeastTransportOptions{});
  ASSERT_TRUE(system.isOk()) << system.status().toString();
  EXPECT_NE((*system)->tlsContext(), (*a)->tlsContext());

  std::vector<int> statuses(8, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < statuses.size(); ++i) {
    threads.emplace_back([&, i] {
      HttpRequest req;
      req.target = "/v2/";
      auto res = (i % 2 == 0 ? *a : *b)->send(req);
      statuses[i] = res.isOk() ? res->status : -1;
    });
  }
  for (std::thread& t : threads) t.join();
  for (int status : statuses) EXPECT_EQ(status, 401) << "the registry asks for credentials";
  HttpRequest req;
  req.target = "/v2/";
  auto refused = (*system)->send(req);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("TLS handshake"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace lockstep::registry
