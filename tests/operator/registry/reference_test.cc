#include "operator/registry/reference.h"

#include <gtest/gtest.h>

namespace lockstep::registry {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(PackageRefTest, SplitsHostRepositoryAndDigest) {
  auto r = parsePackageRef("registry.example:5000/models/gpt2@" + kDigest);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->registry, "registry.example:5000");
  EXPECT_EQ(r->repository, "models/gpt2");
  EXPECT_EQ(r->digest, kDigest);
  EXPECT_EQ(r->apiHost(), "registry.example:5000");
  EXPECT_EQ(r->name(), "registry.example:5000/models/gpt2");
}

TEST(PackageRefTest, TagBesideDigestIsIgnoredAndDockerHubIsNormalized) {
  auto r = parsePackageRef("models/gpt2:v7@" + kDigest);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->registry, "docker.io");
  EXPECT_EQ(r->repository, "models/gpt2");
  EXPECT_EQ(r->apiHost(), "registry-1.docker.io");
}

TEST(PackageRefTest, UnpinnedOrMalformedReferencesAreRefusedNamingThem) {
  auto tagOnly = parsePackageRef("registry.example/models/gpt2:v7");
  ASSERT_FALSE(tagOnly.isOk());
  EXPECT_EQ(tagOnly.status().code(), Code::kInvalidArgument);
  EXPECT_NE(tagOnly.status().message().find("registry.example/models/gpt2:v7"), std::string::npos);
  EXPECT_NE(tagOnly.status().message().find("not pinned by digest"), std::string::npos);
  auto bad = parsePackageRef("registry.example/Models@sha256:12");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("registry.example/Models@sha256:12"), std::string::npos);
}

TEST(TagTest, DistributionGrammar) {
  EXPECT_TRUE(isValidTag("prod"));
  EXPECT_TRUE(isValidTag("v1.2-rc_3"));
  EXPECT_TRUE(isValidTag("_x"));
  EXPECT_FALSE(isValidTag(""));
  EXPECT_FALSE(isValidTag("-prod"));
  EXPECT_FALSE(isValidTag(".prod"));
  EXPECT_FALSE(isValidTag("pr/od"));
  EXPECT_FALSE(isValidTag("pr:od"));
  EXPECT_FALSE(isValidTag(std::string(129, 'a')));
  EXPECT_TRUE(isValidTag(std::string(128, 'a')));
}

TEST(MediaTypeTest, AcceptNamesAllFourTypes) {
  std::string accept = manifestAccept();
  for (const char* t : {kOciManifest, kOciIndex, kDockerManifest, kDockerManifestList})
    EXPECT_NE(accept.find(t), std::string::npos) << t;
}

TEST(MediaTypeTest, ContentTypeWinsParametersDropped) {
  auto t = detectMediaType(std::string(kOciManifest) + "; charset=utf-8", "{}");
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(*t, kOciManifest);
  auto d = detectMediaType(kDockerManifestList, "not json");
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(*d, kDockerManifestList);
}

TEST(MediaTypeTest, FromTheDocumentWhenContentTypeIsGeneric) {
  auto field = detectMediaType("application/json", R"({"schemaVersion":2,"mediaType":")" +
                                                       std::string(kDockerManifest) +
                                                       R"(","config":{},"layers":[]})");
  ASSERT_TRUE(field.isOk());
  EXPECT_EQ(*field, kDockerManifest);
  auto index = detectMediaType("", R"({"schemaVersion":2,"manifests":[]})");
  ASSERT_TRUE(index.isOk());
  EXPECT_EQ(*index, kOciIndex);
  auto manifest = detectMediaType("", R"({"schemaVersion":2,"config":{},"layers":[]})");
  ASSERT_TRUE(manifest.isOk());
  EXPECT_EQ(*manifest, kOciManifest);
}

TEST(MediaTypeTest, UnknownTypesAreErrors) {
  auto v1 = detectMediaType(
      "application/json",
      R"({"mediaType":"application/vnd.docker.distribution.manifest.v1+prettyjws"})");
  ASSERT_FALSE(v1.isOk());
  EXPECT_NE(v1.status().message().find("v1+prettyjws"), std::string::npos);
  EXPECT_FALSE(detectMediaType("text/plain", "[]").isOk());
  EXPECT_FALSE(detectMediaType("", R"({"schemaVersion":2})").isOk());
}

TEST(DigestTest, Sha256OfBytes) {
  EXPECT_EQ(sha256Digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Digest("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RegistryErrorsTest, CodesAndMessages) {
  EXPECT_EQ(
      describeRegistryErrors(
          R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{}},)"
          R"({"code":"DENIED"}]})"),
      "MANIFEST_UNKNOWN: manifest unknown; DENIED");
  EXPECT_EQ(describeRegistryErrors("<html>bad gateway</html>"), "");
  EXPECT_EQ(describeRegistryErrors(R"({"errors":"x"})"), "");
}

TEST(RegistryErrorsTest, HttpStatusToCode) {
  EXPECT_EQ(codeForHttpStatus(401), Code::kUnauthorized);
  EXPECT_EQ(codeForHttpStatus(403), Code::kForbidden);
  EXPECT_EQ(codeForHttpStatus(404), Code::kNotFound);
  EXPECT_EQ(codeForHttpStatus(429), Code::kUnavailable);
  EXPECT_EQ(codeForHttpStatus(503), Code::kUnavailable);
  EXPECT_EQ(codeForHttpStatus(400), Code::kInvalidArgument);
}

}  // namespace
}  // namespace lockstep::registry
