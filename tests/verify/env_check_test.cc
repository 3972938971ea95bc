// compareEnv and the inventory parsers/collector over an in-memory tree.
#include "verify/env_check.h"

#include <gtest/gtest.h>

#include "tests/verify/fake_tree.h"
#include "verify/env_inventory.h"

namespace lockstep::verify {
namespace {

using closure::Package;
using testing::FakeTree;

const std::string kShaA = "sha256:" + std::string(64, 'a');
const std::string kShaB = "sha256:" + std::string(64, 'b');
const std::string kCommit = "0ed5d7f18fa3153834cbac0aa57e8092b217cc16";

std::string metadata(const std::string& name, const std::string& version) {
  return "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version +
         "\nSummary: x\n\nName: not-a-header\n";
}

// A venv at /v with Python 3.12 and the given dist-infos.
struct Venv {
  FakeTree tree;
  std::string site = "/v/lib/python3.12/site-packages";
  Venv& dist(const std::string& dirName, const std::string& name, const std::string& version,
             const std::string& installer = "pip") {
    tree.file(site + "/" + dirName + "-" + version + ".dist-info/METADATA",
              metadata(name, version));
    tree.file(site + "/" + dirName + "-" + version + ".dist-info/INSTALLER", installer + "\n");
    return *this;
  }
  Venv& directUrl(const std::string& dirName, const std::string& version, const std::string& json) {
    tree.file(site + "/" + dirName + "-" + version + ".dist-info/direct_url.json", json);
    return *this;
  }
  Inventory inventory() const {
    auto inv = collectEnvInventory(tree, "/v");
    EXPECT_TRUE(inv.isOk()) << inv.status().message();
    return inv.isOk() ? *inv : Inventory{};
  }
};

Package pypi(const std::string& name, const std::string& version,
             std::vector<std::string> digests = {}) {
  if (digests.empty()) digests = {kShaA};
  return {"pypi", name, version, std::move(digests)};
}

TEST(ParseDistMetadata, ReadsNameAndVersionFromTheHeadersOnly) {
  auto m = parseDistMetadata(metadata("Typing_Extensions", "4.15.0"), "x/METADATA");
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->name, "Typing_Extensions");
  EXPECT_EQ(m->version, "4.15.0");
}

TEST(ParseDistMetadata, MissingVersionNamesTheFileAndField) {
  auto m = parseDistMetadata("Metadata-Version: 2.1\nName: x\n", "/v/x.dist-info/METADATA");
  ASSERT_FALSE(m.isOk());
  EXPECT_EQ(m.status().message(), "/v/x.dist-info/METADATA: Version: missing");
}

TEST(ParseDirectUrl, VcsCommitArchiveHashAndEditable) {
  PythonDist d;
  ASSERT_TRUE(parseDirectUrl(R"({"url":"https://g.example/t.git","vcs_info":{"vcs":"git",
      "commit_id":")" + kCommit + R"("}})",
                             "du", d)
                  .isOk());
  EXPECT_EQ(d.commit, kCommit);
  PythonDist a;
  ASSERT_TRUE(parseDirectUrl(R"({"url":"file:///w/x.whl","archive_info":{"hash":"sha256=)" +
                                 std::string(64, 'B') + R"("}})",
                             "du", a)
                  .isOk());
  EXPECT_EQ(a.archiveSha256, kShaB);
  PythonDist e;
  ASSERT_TRUE(
      parseDirectUrl(R"({"url":"file:///src","dir_info":{"editable":true}})", "du", e).isOk());
  EXPECT_TRUE(e.editable);
  PythonDist bad;
  auto s = parseDirectUrl(R"({"url":"x","vcs_info":{"vcs":"git"}})", "/v/d/direct_url.json", bad);
  EXPECT_EQ(s.message(), "/v/d/direct_url.json: vcs_info.commit_id: missing");
}

TEST(ParseCondaRecord, NameVersionSha256AndTheDistInfosItInstalled) {
  auto r = parseCondaRecord(R"({"name":"NumPy","version":"1.26.4","build":"py312h_0",
      "sha256":")" + std::string(64, 'a') +
                                R"(","md5":"00",
      "files":["lib/python3.12/site-packages/numpy/__init__.py",
               "lib/python3.12/site-packages/numpy-1.26.4.dist-info/METADATA"]})",
                            "/p/conda-meta/numpy.json");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->name, "numpy");
  EXPECT_EQ(r->sha256, kShaA);
  ASSERT_EQ(r->distInfoDirs.size(), 1u);
  EXPECT_EQ(r->distInfoDirs[0], "lib/python3.12/site-packages/numpy-1.26.4.dist-info");
}

TEST(ParseCondaRecord, BadInputNamesFileAndField) {
  EXPECT_EQ(parseCondaRecord(R"({"version":"1"})", "/p/conda-meta/x.json").status().message(),
            "/p/conda-meta/x.json: name: missing");
  EXPECT_EQ(parseCondaRecord(R"({"name":"x","version":"1","sha256":"abc"})", "/p/conda-meta/x.json")
                .status()
                .message(),
            "/p/conda-meta/x.json: sha256: \"abc\" is not a sha256");
  EXPECT_EQ(parseCondaRecord("{", "/p/conda-meta/x.json").status().message(),
            "/p/conda-meta/x.json: not valid JSON");
}

TEST(CollectEnvInventory, AnUnreadablePrefixIsAnErrorNamingIt) {
  FakeTree tree;
  auto inv = collectEnvInventory(tree, "/nowhere");
  ASSERT_FALSE(inv.isOk());
  EXPECT_NE(inv.status().message().find("/nowhere"), std::string::npos) << inv.status().message();
}

TEST(CollectEnvInventory, AMalformedMetadataNamesTheFile) {
  Venv v;
  v.tree.file(v.site + "/x-1.dist-info/METADATA", "Metadata-Version: 2.1\nVersion: 1\n");
  auto inv = collectEnvInventory(v.tree, "/v");
  ASSERT_FALSE(inv.isOk());
  EXPECT_EQ(inv.status().message(), v.site + "/x-1.dist-info/METADATA: Name: missing");
}

TEST(CompareEnv, AMatchingVenvHasNoDifferenceAndSeededPipIsNotExtra) {
  Venv v;
  v.dist("idna", "idna", "3.11").dist("typing_extensions", "Typing_Extensions", "4.15.0");
  v.dist("pip", "pip", "24.0");
  EnvReport r =
      compareEnv({pypi("idna", "3.11"), pypi("typing-extensions", "4.15.0")}, v.inventory());
  EXPECT_TRUE(r.match()) << describe(r.differences.front());
  EXPECT_EQ(r.pypiChecked, 2u);
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_EQ(r.ignored[0], "pypi pip 24.0 (seeded installer)");
}

TEST(FindSitePackages, Lib64LinkedToLibIsReadOnce) {
  Venv v;
  v.dist("idna", "idna", "3.11");
  v.tree.link("/v/lib64", "/v/lib");
  auto sites = findSitePackages(v.tree, "/v");
  ASSERT_TRUE(sites.isOk());
  EXPECT_EQ(*sites, std::vector<std::string>{v.site});
  EXPECT_EQ(v.inventory().python.size(), 1u);
}

TEST(CompareEnv, StrictCountsSeededInstallersAsExtra) {
  Venv v;
  v.dist("pip", "pip", "24.0");
  EnvCheckOptions o;
  o.strict = true;
  EnvReport r = compareEnv({}, v.inventory(), o);
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].kind, DiffKind::kExtra);
  EXPECT_EQ(r.differences[0].package, "pip");
}

TEST(CompareEnv, VersionExtraAndMissingAreEachNamed) {
  Venv v;
  v.dist("idna", "idna", "3.10").dist("six", "six", "1.16.0");
  EnvReport r =
      compareEnv({pypi("idna", "3.11"), pypi("typing-extensions", "4.15.0")}, v.inventory());
  ASSERT_EQ(r.differences.size(), 3u);
  EXPECT_EQ(describe(r.differences[0]), "pypi idna: version: expected 3.11, found 3.10 (" + v.site +
                                            "/idna-3.10.dist-info/METADATA)");
  EXPECT_EQ(describe(r.differences[1]), "pypi six: extra: installed 1.16.0, not in the lock (" +
                                            v.site + "/six-1.16.0.dist-info/METADATA)");
  EXPECT_EQ(describe(r.differences[2]),
            "pypi typing-extensions: missing: expected 4.15.0, not installed (" + v.site + ")");
}

TEST(CompareEnv, IgnoredNamesAreNeitherMissingNorExtra) {
  Venv v;
  v.dist("six", "six", "1.16.0");
  EnvCheckOptions o;
  o.ignore = {"six", "colorama"};
  EXPECT_TRUE(compareEnv({pypi("colorama", "0.4.6")}, v.inventory(), o).match());
}

TEST(CompareEnv, GitPinnedDistributionMustCarryTheLockedCommit) {
  Venv v;
  v.dist("tqdm", "tqdm", "4.67.1")
      .directUrl("tqdm", "4.67.1",
                 R"({"url":"https://g.example/tqdm.git","vcs_info":{"vcs":"git","commit_id":")" +
                     std::string(40, 'f') + R"("}})");
  EnvReport r = compareEnv({pypi("tqdm", "4.67.1", {"git:" + kCommit})}, v.inventory());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].kind, DiffKind::kCommit);
  EXPECT_EQ(r.differences[0].expected, "git:" + kCommit);
  EXPECT_EQ(r.differences[0].found, "git:" + std::string(40, 'f'));

  Venv ok;
  ok.dist("tqdm", "tqdm", "4.67.1")
      .directUrl("tqdm", "4.67.1",
                 R"({"url":"https://g.example/tqdm.git","vcs_info":{"vcs":"git","commit_id":")" +
                     kCommit + R"("}})");
  EXPECT_TRUE(compareEnv({pypi("tqdm", "4.67.1", {"git:" + kCommit})}, ok.inventory()).match());
  // A lock's `name @ git+…` entry has no version: the commit decides.
  EXPECT_TRUE(compareEnv({pypi("tqdm", "", {"git:" + kCommit})}, ok.inventory()).match());

  Venv none;
  none.dist("tqdm", "tqdm", "4.67.1");
  EnvReport n = compareEnv({pypi("tqdm", "4.67.1", {"git:" + kCommit})}, none.inventory());
  ASSERT_EQ(n.differences.size(), 1u);
  EXPECT_EQ(n.differences[0].found, "no VCS commit recorded (direct_url.json)");
}

TEST(CompareEnv, ARecordedArchiveHashMustBeALockedDigest) {
  Venv v;
  v.dist("idna", "idna", "3.11")
      .directUrl(
          "idna", "3.11",
          R"({"url":"file:///w/idna-3.11-py3-none-any.whl","archive_info":{"hashes":{"sha256":")" +
              std::string(64, 'b') + R"("}}})");
  EnvReport r = compareEnv({pypi("idna", "3.11", {kShaA})}, v.inventory());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].kind, DiffKind::kDigest);
  EXPECT_EQ(r.differences[0].found, kShaB);
  EXPECT_TRUE(compareEnv({pypi("idna", "3.11", {kShaA, kShaB})}, v.inventory()).match());
}

TEST(CompareEnv, EditableProjectIsNotExtra) {
  Venv v;
  v.dist("demo", "demo", "0.1.0")
      .directUrl("demo", "0.1.0", R"({"url":"file:///src/demo","dir_info":{"editable":true}})");
  EnvReport r = compareEnv({}, v.inventory());
  EXPECT_TRUE(r.match());
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_EQ(r.ignored[0], "pypi demo 0.1.0 (editable: file:///src/demo)");
}

// A conda prefix: conda-meta records plus site-packages where conda installed a dist-info
// (conda's, not pip's) and pip installed another (the lock's pip entry).
struct CondaPrefix {
  FakeTree tree;
  CondaPrefix& record(const std::string& name, const std::string& version, const std::string& sha,
                      const std::string& files = "[]") {
    tree.file("/p/conda-meta/" + name + "-" + version + "-0.json",
              R"({"name":")" + name + R"(","version":")" + version + R"(","build":"0","sha256":")" +
                  sha.substr(7) + R"(","files":)" + files + "}");
    return *this;
  }
  Inventory inventory() const {
    auto inv = collectEnvInventory(tree, "/p");
    EXPECT_TRUE(inv.isOk()) << inv.status().message();
    return inv.isOk() ? *inv : Inventory{};
  }
};

TEST(CompareEnv, CondaPackagesNeedTheLockedDigestAndNothingUnlocked) {
  CondaPrefix p;
  p.record("python", "3.12.7", kShaA)
      .record("numpy", "1.26.4", kShaB,
              R"(["lib/python3.12/site-packages/numpy-1.26.4.dist-info/METADATA"])")
      .record("zlib", "1.3.1", kShaA);
  p.tree.file("/p/lib/python3.12/site-packages/numpy-1.26.4.dist-info/METADATA",
              metadata("numpy", "1.26.4"));
  p.tree.file("/p/lib/python3.12/site-packages/requests-2.32.3.dist-info/METADATA",
              metadata("requests", "2.32.3"));
  std::vector<Package> locked = {{"conda", "python", "3.12.7", {kShaA}},
                                 {"conda", "numpy", "1.26.4", {kShaA}},
                                 {"conda", "openssl", "3.3.2", {kShaA}},
                                 pypi("requests", "2.32.3")};
  EnvReport r = compareEnv(locked, p.inventory());
  ASSERT_EQ(r.differences.size(), 3u) << describe(r.differences[0]);
  EXPECT_EQ(describe(r.differences[0]), "conda numpy: digest: expected " + kShaA + ", found " +
                                            kShaB + " (/p/conda-meta/numpy-1.26.4-0.json)");
  EXPECT_EQ(r.differences[1].kind, DiffKind::kMissing);
  EXPECT_EQ(r.differences[1].package, "openssl");
  EXPECT_EQ(
      describe(r.differences[2]),
      "conda zlib: extra: installed 1.3.1 0, not in the lock (/p/conda-meta/zlib-1.3.1-0.json)");
  EXPECT_EQ(r.condaChecked, 3u);
  EXPECT_EQ(r.pypiChecked, 1u);
}

TEST(CompareEnv, NixStorePathsMustExist) {
  Inventory inv;
  inv.storePaths = {{"/nix/store/aaa-hello", true}, {"/nix/store/bbb-glibc", false}};
  EnvReport r = compareEnv({{"nix", "hello", "2.12.1", {"/nix/store/aaa-hello"}},
                            {"nix", "glibc", "", {"/nix/store/bbb-glibc"}}},
                           inv);
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(describe(r.differences[0]),
            "nix glibc: missing: expected /nix/store/bbb-glibc, store path does not exist");
  EXPECT_EQ(r.nixChecked, 2u);
}

TEST(CollectStorePaths, LooksUnderTheRoot) {
  FakeTree tree;
  tree.dir("/fx/nix/store/aaa-hello");
  auto m = collectStorePaths(tree, "/fx", {"/nix/store/aaa-hello", "/nix/store/bbb-glibc"});
  EXPECT_TRUE(m["/nix/store/aaa-hello"]);
  EXPECT_FALSE(m["/nix/store/bbb-glibc"]);
}

}  // namespace
}  // namespace lockstep::verify
