// Nix's hash spellings (closure/nix_hash.h) against values printed by real Nix 2.8 tools
// (`nix-hash --to-base16/--to-base32`, `nix hash to-sri`, `nix path-info --json`), and the
// NARs a path-info lock lists as files (narHash, narSize, references).
#include <gtest/gtest.h>

#include "closure/closure.h"
#include "closure/nix_hash.h"
#include "tests/closure/testing_util.h"

namespace lockstep::closure {
namespace {

using testing::mustCompute;
using testing::readFileOrDie;

struct Vector {
  const char* base32;
  const char* hex;
};
// Printed by `nix-hash --type sha256 --to-base16 <base32>` (and --to-base32 back).
constexpr Vector kVectors[] = {
    {"04zwf782yjwnh3q6hz5izfd6jyip8kgw6g6yj43fiqhbyhdd0dqw",
     "1c37d01af40be2e80691de3cc3df44377a699afbb17c68f080964b2fd071fc13"},
    {"1wz7cylrd0cvcfn58qykghwdranl7ryvpyc2xydi8nkc7ydhhmqm",
     "1557089b3f6c5a149bef82f9bb7d3ed4aadc387cd36354ac639b8196a967e7f3"},
    {"042wai79ifzx7zy2bxld76zr3xmz4i5mllws9p5s24hhc3wj0wpn",
     "f67220f9601012a1cb4d9a535a4b24bff691bf398df625fc3ffdbb984e545c10"},
    {"0000000000000000000000000000000000000000000000000000",
     "0000000000000000000000000000000000000000000000000000000000000000"},
    {"1zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"},
    {"080z3qfiq6qs34c1f5hm2h9i448h1w70s30b184hh1q60l2060h1",
     "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"},
    // The fixture's glibc (tests/closure/testdata/nix).
    {"1m5kx6w8k7n2yh4bjc7cqf2dzhw1rj3mf0zj1ibzw7yxbqh4mf1b",
     "2bb84a205edd1ffe570cf2035787cc81c3df84c3ec30b908f4c29e89b8e9b3d4"},
};

TEST(NixHash, Base32BothWaysAsNixHashPrintsThem) {
  for (const Vector& v : kVectors) {
    auto digest = narHashToDigest(std::string("sha256:") + v.base32);
    ASSERT_TRUE(digest.has_value()) << v.base32;
    EXPECT_EQ(*digest, std::string("sha256:") + v.hex) << v.base32;
    EXPECT_EQ(digestToNixHash(std::string("sha256:") + v.hex), std::string("sha256:") + v.base32);
  }
}

TEST(NixHash, SriAndHexSpellingsGiveTheSameDigest) {
  // `nix hash to-sri --type sha256 04zwf…` and `nix path-info --json` (Nix 2.8) print these.
  EXPECT_EQ(narHashToDigest("sha256-HDfQGvQL4ugGkd48w99EN3ppmvuxfGjwgJZLL9Bx/BM="),
            "sha256:1c37d01af40be2e80691de3cc3df44377a699afbb17c68f080964b2fd071fc13");
  EXPECT_EQ(narHashToDigest("sha256-FVcImz9sWhSb74L5u30+1KrcOHzTY1SsY5uBlqln5/M="),
            "sha256:1557089b3f6c5a149bef82f9bb7d3ed4aadc387cd36354ac639b8196a967e7f3");
  EXPECT_EQ(
      narHashToDigest("sha256:1C37D01AF40BE2E80691DE3CC3DF44377A699AFBB17C68F080964B2FD071FC13"),
      "sha256:1c37d01af40be2e80691de3cc3df44377a699afbb17c68f080964b2fd071fc13");
}

TEST(NixHash, MalformedSpellingsAreRefused) {
  // `nix-hash --to-base16 2m5k…` says "invalid base-32 hash": 260 bits, the top ones set.
  EXPECT_FALSE(narHashToDigest("sha256:2m5kx6w8k7n2yh4bjc7cqf2dzhw1rj3mf0zj1ibzw7yxbqh4mf1b"));
  // 'e', 'o', 'u' and 't' are not in Nix's alphabet.
  EXPECT_FALSE(narHashToDigest("sha256:1m5kx6w8k7n2yh4bjc7cqf2dzhw1rj3mf0zj1ibzw7yxbqh4mf1e"));
  EXPECT_FALSE(narHashToDigest("sha256:1m5kx6w8k7n2yh4bjc7cqf2dzhw1rj3mf0zj1ibzw7yxbqh4mf1"));
  EXPECT_FALSE(narHashToDigest("sha512:1m5kx6w8k7n2yh4bjc7cqf2dzhw1rj3mf0zj1ibzw7yxbqh4mf1b"));
  EXPECT_FALSE(narHashToDigest("sha256-HDfQGvQL4ugGkd48w99EN3ppmvuxfGjwgJZLL9Bx"));  // 24 bytes
  EXPECT_FALSE(narHashToDigest("1m5kx6w8k7n2yh4bjc7cqf2dzhw1rj3mf0zj1ibzw7yxbqh4mf1b"));
  EXPECT_FALSE(digestToNixHash("sha256:abc"));
  EXPECT_FALSE(digestToNixHash(std::string("md5:") + std::string(64, 'a')));
}

TEST(NixHash, StorePathParts) {
  auto p = splitStorePath("/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->storeDir, "/nix/store");
  EXPECT_EQ(p->hashPart, "wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1");
  EXPECT_EQ(p->name, "hello-2.12.1");
  EXPECT_FALSE(splitStorePath("/nix/store/short-x"));
  EXPECT_FALSE(splitStorePath("nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello"));
  EXPECT_FALSE(splitStorePath("/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-../etc"));
  EXPECT_FALSE(splitStorePath("/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-.hidden"));
  EXPECT_FALSE(splitStorePath("/nix/store/ev9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello"));  // 'e'
}

const LockedFile* fileOf(const Closure& c, const std::string& storePath) {
  for (const LockedFile& f : c.files) {
    if (f.storePath == storePath) return &f;
  }
  return nullptr;
}

TEST(NixFiles, PathInfoFixtureListsEveryNarWithSizeAndReferences) {
  const std::string dir = testing::testdataDir() + "/nix/";
  for (const char* file :
       {"hello-closure.path-info.array.json", "hello-closure.path-info.object.json"}) {
    Closure c = mustCompute(readFileOrDie(dir + file), {});
    ASSERT_EQ(c.files.size(), 5u) << file;
    const LockedFile* glibc =
        fileOf(c, "/nix/store/0c5vgj5lbc3vn2q4zxn1kg5cjkpdxwxj-glibc-2.39-52");
    ASSERT_NE(glibc, nullptr) << file;
    EXPECT_EQ(glibc->ecosystem, "nix");
    EXPECT_EQ(glibc->name, "glibc-2.39-52");
    EXPECT_EQ(glibc->digest,
              "sha256:2bb84a205edd1ffe570cf2035787cc81c3df84c3ec30b908f4c29e89b8e9b3d4");
    EXPECT_EQ(glibc->size, 30129448);
    EXPECT_EQ(
        glibc->references,
        (std::vector<std::string>{"/nix/store/0c5vgj5lbc3vn2q4zxn1kg5cjkpdxwxj-glibc-2.39-52",
                                  "/nix/store/9wz8v7q3g2n8y2x0p4i5m4d3a0s8f7c1-xgcc-13.3.0-libgcc",
                                  "/nix/store/ar0mzr7rn7gyqbjl3ybspw1rc7d2a2d3-libidn2-2.3.7"}));
    const LockedFile* libgcc =
        fileOf(c, "/nix/store/9wz8v7q3g2n8y2x0p4i5m4d3a0s8f7c1-xgcc-13.3.0-libgcc");
    ASSERT_NE(libgcc, nullptr);
    EXPECT_TRUE(libgcc->references.empty());
    EXPECT_EQ(libgcc->size, 139080);
  }
  // The two forms list the same files; the NARs are not part of the hash.
  const std::string array = readFileOrDie(dir + "hello-closure.path-info.array.json");
  EXPECT_EQ(mustCompute(array, {}).files,
            mustCompute(readFileOrDie(dir + "hello-closure.path-info.object.json"), {}).files);
}

// `nix path-info --json --recursive` as Nix 2.8 printed it for two paths of a test store.
const char kNix28PathInfo[] =
    R"([{"path":"/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top","narHash":"sha256-9nIg+WAQEqHLTZpTWkskv/aRvzmN9iX8P/27mE5UXBA=","narSize":168,"references":["/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep"],"ca":"text:sha256:1zzf024xqargyp0524njydcgkx0fkw7hn7znhxhsgzrnd68i66pl","registrationTime":1796309723},{"path":"/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep","narHash":"sha256-FVcImz9sWhSb74L5u30+1KrcOHzTY1SsY5uBlqln5/M=","narSize":480,"references":[],"ca":"fixed:r:sha256:1wz7cylrd0cvcfn58qykghwdranl7ryvpyc2xydi8nkc7ydhhmqm","registrationTime":1796309723}])";

TEST(NixFiles, SriNarHashesOfNix28) {
  Closure c = mustCompute(kNix28PathInfo, {});
  ASSERT_EQ(c.files.size(), 2u);
  // Sorted by name: "dep" first. The digest is the one `nix copy --to file://` names the
  // uncompressed NAR by (nar/1wz7….nar, NarHash sha256:1wz7…).
  EXPECT_EQ(c.files[0].storePath, "/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep");
  EXPECT_EQ(c.files[0].digest, "sha256:" + std::string(kVectors[1].hex));
  EXPECT_EQ(c.files[0].size, 480);
  EXPECT_EQ(c.files[1].digest, "sha256:" + std::string(kVectors[2].hex));
  EXPECT_EQ(c.files[1].references,
            std::vector<std::string>{"/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep"});
}

TEST(NixFiles, TwoStorePathsOfTheSameContentKeepOneNarEach) {
  const std::string hash = "sha256:04zwf782yjwnh3q6hz5izfd6jyip8kgw6g6yj43fiqhbyhdd0dqw";
  Closure c =
      mustCompute(R"({"/nix/store/6h9lcbx523532ax1c5g2351w9bm8ykhy-a.txt": {"narHash": ")" + hash +
                      R"(", "narSize": 120},
          "/nix/store/7h9lcbx523532ax1c5g2351w9bm8ykhy-b.txt": {"narHash": ")" +
                      hash + R"(", "narSize": 120}})",
                  {});
  ASSERT_EQ(c.files.size(), 2u);
  EXPECT_EQ(c.files[0].digest, c.files[1].digest);
  EXPECT_NE(c.files[0].storePath, c.files[1].storePath);
}

TEST(NixFiles, WithoutNarHashNoFileAndAMalformedOneIsAnErrorNamingTheField) {
  Closure c = mustCompute(R"([{"path": "/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello"}])", {});
  EXPECT_TRUE(c.files.empty());
  ClosureOptions o;
  o.sourceName = "lock";
  auto bad = computeClosure(
      R"([{"path": "/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello", "narHash": "sha256:xyz"}])",
      o);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("lock: [0].narHash: not a sha256 NAR hash"),
            std::string::npos)
      << bad.status().message();
  auto size = computeClosure(
      R"({"/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello": {"narHash": "sha256:04zwf782yjwnh3q6hz5izfd6jyip8kgw6g6yj43fiqhbyhdd0dqw", "narSize": -1}})",
      o);
  ASSERT_FALSE(size.isOk());
  EXPECT_NE(size.status().message().find(".narSize: not a non-negative integer"), std::string::npos)
      << size.status().message();
  auto refs = computeClosure(
      R"([{"path": "/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello", "narHash": "sha256:04zwf782yjwnh3q6hz5izfd6jyip8kgw6g6yj43fiqhbyhdd0dqw", "references": ["/etc/passwd"]}])",
      o);
  ASSERT_FALSE(refs.isOk());
  EXPECT_NE(refs.status().message().find("[0].references[0]: expected a store path"),
            std::string::npos)
      << refs.status().message();
}

}  // namespace
}  // namespace lockstep::closure
