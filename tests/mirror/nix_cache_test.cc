// A Nix binary cache as a source of NARs (mirror/narinfo.h): narinfos as Nix 2.8 writes
// them read back and checked against the lock, the NAR file's URL kept inside the cache;
// and the xz adapter (mirror/xz.h) on bytes written by xz-utils' `xz`.
#include <gtest/gtest.h>

#include "closure/closure.h"
#include "mirror/mirror.h"
#include "mirror/narinfo.h"
#include "mirror/xz.h"

namespace lockstep::mirror {
namespace {

// `nix copy --to file://…` (Nix 2.8, default compression xz) wrote this narinfo.
const char kNarInfo[] =
    "StorePath: /nix/store/3v48v4c4czb950lyipir65701lisxkxg-top\n"
    "URL: nar/11lnwzmrjijmfz33jvkv236ym28m451r8db3h46bvyn2g78kcv4h.nar.xz\n"
    "Compression: xz\n"
    "FileHash: sha256:11lnwzmrjijmfz33jvkv236ym28m451r8db3h46bvyn2g78kcv4h\n"
    "FileSize: 176\n"
    "NarHash: sha256:042wai79ifzx7zy2bxld76zr3xmz4i5mllws9p5s24hhc3wj0wpn\n"
    "NarSize: 168\n"
    "References: d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep\n"
    "CA: text:sha256:1zzf024xqargyp0524njydcgkx0fkw7hn7znhxhsgzrnd68i66pl\n";
const std::string kTopDigest =
    "sha256:f67220f9601012a1cb4d9a535a4b24bff691bf398df625fc3ffdbb984e545c10";

Entry top() {
  Entry e;
  e.ecosystem = "nix";
  e.storePath = "/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top";
  e.digest = kTopDigest;
  e.size = 168;
  e.fileName = "3v48v4c4czb950lyipir65701lisxkxg-top.nar";
  return e;
}

TEST(NarInfoTest, ReadsWhatNixWritesAndChecksItAgainstTheLock) {
  auto info = parseNarInfo(kNarInfo, "cache/3v48.narinfo");
  ASSERT_TRUE(info.isOk()) << info.status().message();
  EXPECT_EQ(info->storePath, "/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top");
  EXPECT_EQ(info->compression, "xz");
  EXPECT_EQ(info->narHash, kTopDigest);
  EXPECT_EQ(info->narSize, 168);
  EXPECT_EQ(info->fileSize, 176);
  EXPECT_EQ(info->references, std::vector<std::string>{"d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep"});
  EXPECT_TRUE(checkNarInfo(*info, top(), "o").isOk());
  EXPECT_EQ(
      *narFileUrl("https://cache.example/c", *info, "o"),
      "https://cache.example/c/nar/11lnwzmrjijmfz33jvkv236ym28m451r8db3h46bvyn2g78kcv4h.nar.xz");
  // Where push looks for it: by the store path's hash part, after --from-dir.
  DirIndex dir;
  Source s0 = pickSource(top(), dir, "file:///srv/cache");
  EXPECT_EQ(s0.kind, Source::kNixCache);
  EXPECT_EQ(s0.location, "file:///srv/cache/3v48v4c4czb950lyipir65701lisxkxg.narinfo");
  dir.given = true;
  dir.byDigest[kTopDigest] = "nars/n1.nar";
  EXPECT_EQ(pickSource(top(), dir, "file:///srv/cache").kind, Source::kDirFile);
  EXPECT_NE(pickSource(top(), DirIndex{}).location.find("no --nix-cache given"), std::string::npos);

  // Another NAR than the lock's: refused naming both hashes.
  Entry other = top();
  other.digest = "sha256:" + std::string(64, 'a');
  Status s = checkNarInfo(*info, other, "o");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(
                "the cache's NarHash of /nix/store/3v48v4c4czb950lyipir65701lisxkxg-top is " +
                kTopDigest + ", the lock's sha256:aaaa"),
            std::string::npos)
      << s.message();
  Entry bigger = top();
  bigger.size = 169;
  EXPECT_NE(checkNarInfo(*info, bigger, "o").message().find("NarSize"), std::string::npos);
  Entry elsewhere = top();
  elsewhere.storePath = "/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep";
  EXPECT_FALSE(checkNarInfo(*info, elsewhere, "o").isOk());
}

TEST(NarInfoTest, CompressionDefaultsToBzip2WhichIsNotRead) {
  std::string text = kNarInfo;
  text.erase(text.find("Compression: xz\n"), 16);
  auto info = parseNarInfo(text, "o");
  ASSERT_TRUE(info.isOk()) << info.status().message();
  EXPECT_EQ(info->compression, "bzip2");
  Status s = checkNarInfo(*info, top(), "o");
  EXPECT_NE(s.message().find("Compression: bzip2 is not read (none, xz)"), std::string::npos)
      << s.message();
}

TEST(NarInfoTest, MissingOrMalformedFieldsAreNamed) {
  for (const char* key : {"StorePath", "URL", "NarHash", "NarSize"}) {
    std::string text = kNarInfo;
    const size_t at = text.find(std::string(key) + ": ");
    text.erase(at, text.find('\n', at) + 1 - at);
    auto info = parseNarInfo(text, "c/x.narinfo");
    ASSERT_FALSE(info.isOk()) << key;
    EXPECT_EQ(info.status().message(), std::string("c/x.narinfo: ") + key + ": missing");
  }
  EXPECT_NE(parseNarInfo("StorePath /nix/store/x\n", "o").status().message().find("o:1: "),
            std::string::npos);
  std::string badHash = kNarInfo;
  badHash.replace(badHash.find("NarHash: sha256:0"), 17, "NarHash: sha256:e");
  EXPECT_NE(parseNarInfo(badHash, "o").status().message().find("NarHash: "), std::string::npos);
}

TEST(NarInfoTest, TheNarFileStaysInsideTheCacheOrIsHttps) {
  NarInfo info;
  for (const char* url : {"../etc/passwd", "nar/../../x", "/etc/passwd", "nar/..",
                          "file:///etc/passwd", "http://cache.example/x.nar"}) {
    info.url = url;
    EXPECT_FALSE(narFileUrl("file:///srv/cache", info, "o").isOk()) << url;
  }
  info.url = "https://mirror.example/nar/x.nar.xz";
  EXPECT_EQ(*narFileUrl("file:///srv/cache", info, "o"), info.url);
  EXPECT_TRUE(parseNixCacheUrl("https://cache.example/").isOk());
  EXPECT_EQ(*parseNixCacheUrl("https://cache.example/"), "https://cache.example");
  EXPECT_TRUE(parseNixCacheUrl("file:///srv/cache").isOk());
  EXPECT_FALSE(parseNixCacheUrl("http://cache.example").isOk());
  EXPECT_FALSE(parseNixCacheUrl("/srv/cache").isOk());
}

// `xz -c` (xz-utils 5.4) of 24 times "nix archive bytes, repeated: " (696 bytes).
const char kXzHex[] =
    "fd377a585a000004e6d6b4460200210116000000742fe5a3e002b700275d00371a4b72214d196d2e27c1b5"
    "6b6079119f716b9103f47fa33001b52ee22f16a197351304f7bc000000bdb6c1694b1c2854000143b80500"
    "0000f81ff05db1c467fb020000000004595a";

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  return out;
}

std::string plain() {
  std::string out;
  for (int i = 0; i < 24; ++i) out += "nix archive bytes, repeated: ";
  return out;
}

TEST(XzTest, DecompressesWhatXzWrote) {
  const std::string xz = unhex(kXzHex);
  auto out = xzDecompress(xz, 1 << 20);
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(*out, plain());
  auto twice = xzDecompress(xz + xz, 1 << 20);  // concatenated streams, as `xz` reads them
  ASSERT_TRUE(twice.isOk()) << twice.status().message();
  EXPECT_EQ(*twice, plain() + plain());
}

TEST(XzTest, CutShortCorruptOrTooLargeIsAnError) {
  const std::string xz = unhex(kXzHex);
  auto cut = xzDecompress(xz.substr(0, xz.size() - 10), 1 << 20);
  ASSERT_FALSE(cut.isOk());
  EXPECT_EQ(cut.status().code(), Code::kInvalidArgument);
  std::string corrupt = xz;
  corrupt[40] = static_cast<char>(corrupt[40] ^ 0x55);
  auto bad = xzDecompress(corrupt, 1 << 20);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(xzDecompress("not xz at all", 1 << 20).isOk());
  auto big = xzDecompress(xz, 100);
  ASSERT_FALSE(big.isOk());
  EXPECT_EQ(big.status().code(), Code::kResourceExhausted);
}

}  // namespace
}  // namespace lockstep::mirror
