#include "evidence/purl.h"

#include <gtest/gtest.h>

namespace lockstep::evidence {
namespace {

closure::Package pkg(std::string eco, std::string name, std::string version) {
  return closure::Package{std::move(eco), std::move(name), std::move(version), {}};
}

TEST(Purl, PerEcosystem) {
  EXPECT_EQ(packageUrl(pkg("pypi", "huggingface-hub", "0.26.2")),
            "pkg:pypi/huggingface-hub@0.26.2");
  EXPECT_EQ(packageUrl(pkg("conda", "libcublas", "12.4.5.8")), "pkg:conda/libcublas@12.4.5.8");
  EXPECT_EQ(packageUrl(pkg("nix", "hello", "2.12.1")), "pkg:nix/hello@2.12.1");
  EXPECT_EQ(packageUrl(pkg("cargo", "serde", "1.0.0")), "pkg:generic/serde@1.0.0");
}

TEST(Purl, EncodesWhatThePurlGrammarReserves) {
  // A local version's '+' is a purl separator character: percent-encoded.
  EXPECT_EQ(packageUrl(pkg("pypi", "torch", "2.5.1+cu121")), "pkg:pypi/torch@2.5.1%2Bcu121");
  // A Nix path-info entry has no version: no '@'.
  EXPECT_EQ(packageUrl(pkg("nix", "glibc-2.40-66", "")), "pkg:nix/glibc-2.40-66");
  EXPECT_EQ(percentEncode("a b/c:d"), "a%20b%2Fc%3Ad");
  EXPECT_EQ(percentEncode("a b/c:d", /*keepSlash=*/true), "a%20b/c%3Ad");
}

TEST(Purl, OciByDigest) {
  auto ref = api::parseImageRef(
      "registry.example:5000/models/gpt2@sha256:"
      "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12");
  ASSERT_TRUE(ref.isOk());
  EXPECT_EQ(ociPackageUrl(*ref),
            "pkg:oci/gpt2@sha256%3Aab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12"
            "?repository_url=registry.example%3A5000/models/gpt2");
}

}  // namespace
}  // namespace lockstep::evidence
