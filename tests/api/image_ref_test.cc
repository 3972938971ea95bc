#include "api/image_ref.h"

#include <gtest/gtest.h>

namespace lockstep::api {
namespace {

std::string sha(char c) { return "sha256:" + std::string(64, c); }

struct Case {
  std::string in;
  bool ok;
  std::string repository = "";
  std::string tag = "";
  std::string digest = "";
};

TEST(ImageRef, ParsesAndNormalizes) {
  const std::string d = sha('a');
  const Case cases[] = {
      {"busybox", true, "docker.io/library/busybox"},
      {"busybox:1.36", true, "docker.io/library/busybox", "1.36"},
      {"library/busybox@" + d, true, "docker.io/library/busybox", "", d},
      {"docker.io/library/busybox@" + d, true, "docker.io/library/busybox", "", d},
      {"index.docker.io/library/busybox@" + d, true, "docker.io/library/busybox", "", d},
      {"myorg/app:v1", true, "docker.io/myorg/app", "v1"},
      {"registry.example:5000/a/b:c@" + d, true, "registry.example:5000/a/b", "c", d},
      {"localhost/app@" + d, true, "localhost/app", "", d},
      {"REGISTRY.example/app", true, "registry.example/app"},
      {"", false},
      {"@" + d, false},
      {"app@sha256:abc", false},
      {"app@sha256:" + std::string(64, 'A'), false},
      {"app@md5:" + std::string(64, 'a'), false},
      {"Upper/app", false},
      {"app:", false},
      {"app:bad/tag", false},
      {"registry.example//app", false},
      {"registry.example/", false},
      {"a b", false},
  };
  for (const Case& c : cases) {
    StatusOr<ImageRef> r = parseImageRef(c.in);
    ASSERT_EQ(r.isOk(), c.ok) << c.in << ": " << r.status().toString();
    if (!c.ok) continue;
    EXPECT_EQ(r->repository(), c.repository) << c.in;
    EXPECT_EQ(r->tag, c.tag) << c.in;
    EXPECT_EQ(r->digest, c.digest) << c.in;
  }
}

TEST(ImageRef, Sha256DigestForm) {
  EXPECT_TRUE(isSha256Digest(sha('0')));
  EXPECT_FALSE(isSha256Digest("sha256:" + std::string(63, '0')));
  EXPECT_FALSE(isSha256Digest("sha256:" + std::string(65, '0')));
  EXPECT_FALSE(isSha256Digest("sha512:" + std::string(64, '0')));
  EXPECT_FALSE(isSha256Digest("sha256:" + std::string(63, '0') + "g"));
}

// Issue 28: the controller compared images as text while admission normalised
// them. One comparison for both.
TEST(ImageRef, SameImageComparesNormalizedRepositoryAndDigest) {
  const std::string d = sha('a');
  struct Same {
    std::string a, b;
    bool same;
  };
  const Same cases[] = {
      {"foo@" + d, "docker.io/library/foo@" + d, true},
      {"foo@" + d, "index.docker.io/library/foo@" + d, true},
      {"team/foo@" + d, "docker.io/team/foo@" + d, true},
      {"registry.example/runtimes/torch:2.5@" + d, "registry.example/runtimes/torch@" + d, true},
      {"Registry.Example/runtimes/torch@" + d, "registry.example/runtimes/torch@" + d, true},
      {"foo@" + d, "foo@" + sha('b'), false},
      {"foo@" + d, "bar@" + d, false},
      {"registry.example/foo@" + d, "docker.io/library/foo@" + d, false},
      {"foo:1.0", "foo:1.0", false},    // not pinned: never the same image
      {"foo@" + d, "FOO@" + d, false},  // invalid
      {"", "", false},
  };
  for (const Same& c : cases) {
    EXPECT_EQ(sameImage(c.a, c.b), c.same) << c.a << " vs " << c.b;
    EXPECT_EQ(sameImage(c.b, c.a), c.same) << c.b << " vs " << c.a;
  }
}

}  // namespace
}  // namespace lockstep::api
