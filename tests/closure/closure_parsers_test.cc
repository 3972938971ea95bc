// Parser behaviour on small inline inputs, one rule per test.
#include <gtest/gtest.h>

#include <map>

#include "closure/closure.h"
#include "tests/closure/testing_util.h"

namespace lockstep::closure {
namespace {

using testing::mustCompute;

const std::string kClosureParsersA(64, 'a');
const std::string kClosureParsersB(64, 'b');
const std::string kC(64, 'c');
const std::string kCommit = "0ed5d7f18fa3153834cbac0aa57e8092b217cc16";

ClosureOptions opts(LockFormat f = LockFormat::kAuto) {
  ClosureOptions o;
  o.format = f;
  o.sourceName = "lock";
  return o;
}

Status errorOfClosureParsers(const std::string& text, const ClosureOptions& o) {
  auto r = computeClosure(text, o);
  EXPECT_FALSE(r.isOk()) << "parsed: " << (r.isOk() ? r->canonicalText : "");
  return r.status();
}

// ---- canonical form -------------------------------------------------------

TEST(Canonical, LinesSortedDedupedTabSeparated) {
  std::vector<Package> ps = {
      {"pypi",
       "b",
       "1",
       {"sha256:" + kClosureParsersB, "sha256:" + kClosureParsersA, "sha256:" + kClosureParsersA}},
      {"conda", "a", "2", {"sha256:" + kC}},
      {"pypi", "b", "1", {"sha256:" + kClosureParsersA, "sha256:" + kClosureParsersB}},
  };
  EXPECT_EQ(canonicalText(ps), "conda\ta\t2\tsha256:" + kC + "\npypi\tb\t1\tsha256:" +
                                   kClosureParsersA + ",sha256:" + kClosureParsersB + "\n");
  EXPECT_EQ(closureHashOfCanonicalText(""), "sha256:" + sha256Hex("lockstep-closure-v1\n"));
}

TEST(Canonical, Pep503Names) {
  EXPECT_EQ(normalizePypiName("Typing_Extensions"), "typing-extensions");
  EXPECT_EQ(normalizePypiName("zope.interface"), "zope-interface");
  EXPECT_EQ(normalizePypiName("a-_.b"), "a-b");
}

// ---- pip ------------------------------------------------------------------

TEST(Pip, ContinuationsMarkersExtrasAndLocalVersions) {
  std::string t =
      "# header\n"
      "--index-url https://example.invalid/simple\n"
      "Torch==2.3.1+cu121 ; sys_platform == \"linux\" \\\n"
      "    --hash=sha256:" +
      kClosureParsersA +
      " \\\n"
      "    --hash=sha256:" +
      kClosureParsersB +
      "\n"
      "    # via -r requirements.in\n"
      "etils[epath,epy]==1.13.0 --hash sha256:" +
      kC +
      "\n"
      "-e ./local\n"
      "./some/dir\n";
  Closure c = mustCompute(t, opts());
  EXPECT_EQ(c.format, LockFormat::kPip);
  EXPECT_EQ(c.canonicalText, "pypi\tetils\t1.13.0\tsha256:" + kC +
                                 "\npypi\ttorch\t2.3.1+cu121\tsha256:" + kClosureParsersA +
                                 ",sha256:" + kClosureParsersB + "\n");
  EXPECT_EQ(c.cuda, "12.1");
}

TEST(Pip, IncludesResolveThroughTheReader) {
  MapIncludeReader reader(std::map<std::string, std::string>{
      {"base.txt", "numpy==1.26.4 --hash=sha256:" + kClosureParsersA + "\n"}});
  ClosureOptions o = opts(LockFormat::kPip);
  o.includes = &reader;
  Closure c = mustCompute("-r base.txt\nsix==1.16.0 --hash=sha256:" + kClosureParsersB + "\n", o);
  EXPECT_EQ(c.packageCount(), 2u);
  EXPECT_EQ(mustCompute("--requirement=./base.txt\n", o).packageCount(), 1u);
}

TEST(Pip, IncludeErrors) {
  MapIncludeReader reader(std::map<std::string, std::string>{{"self.txt", "-r self.txt\n"}});
  ClosureOptions o = opts(LockFormat::kPip);
  EXPECT_NE(errorOfClosureParsers("-r base.txt\n", o).message().find("needs a file reader"),
            std::string::npos);
  o.includes = &reader;
  EXPECT_NE(errorOfClosureParsers("-r ../x.txt\n", o).message().find("same directory"),
            std::string::npos);
  EXPECT_NE(errorOfClosureParsers("-r sub/x.txt\n", o).message().find("same directory"),
            std::string::npos);
  EXPECT_NE(errorOfClosureParsers("-r missing.txt\n", o).message().find("lock:1: -r: cannot read"),
            std::string::npos);
  EXPECT_NE(errorOfClosureParsers("-r self.txt\n", o).message().find("self.txt:1: -r:"),
            std::string::npos);
}

TEST(Pip, UnpinnedAndUnhashedAreErrorsWithLine) {
  Status s = errorOfClosureParsers(
      "six==1.16.0 --hash=sha256:" + kClosureParsersA + "\nrequests>=2\n", opts(LockFormat::kPip));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("lock:2: requirement: \"requests\" is not pinned"), std::string::npos)
      << s.message();
  s = errorOfClosureParsers("six==1.16.0\n", opts(LockFormat::kPip));
  EXPECT_NE(s.message().find("lock:1: digest: package \"six 1.16.0\""), std::string::npos)
      << s.message();
  s = errorOfClosureParsers("six==1.16.0 --hash=sha256:abc\n", opts(LockFormat::kPip));
  EXPECT_NE(s.message().find("lock:1: --hash: malformed sha256"), std::string::npos) << s.message();
  s = errorOfClosureParsers("six==1.16.0\n    --hash=sha256:" + kClosureParsersA + "\n",
                            opts(LockFormat::kPip));
  EXPECT_NE(s.message().find("lock:2: --hash: hash outside a requirement"), std::string::npos)
      << s.message();
}

TEST(Pip, AllowUnhashedIsWeak) {
  ClosureOptions o = opts(LockFormat::kPip);
  o.allowUnhashed = true;
  Closure c = mustCompute("six==1.16.0\n", o);
  EXPECT_TRUE(c.weak);
  EXPECT_EQ(c.canonicalText, "pypi\tsix\t1.16.0\t\n");
  EXPECT_EQ(c.unhashed, std::vector<std::string>{"six 1.16.0"});
}

TEST(Pip, OtherAlgorithmsAreNotDigestsAndVcsPinsAreCommits) {
  ClosureOptions o = opts(LockFormat::kPip);
  Closure c = mustCompute("six==1.16.0 --hash=sha512:00 --hash=sha256:" + kClosureParsersA +
                              "\n"
                              "tqdm @ git+https://git.example/tqdm/tqdm.git@" +
                              kCommit + "\n",
                          o);
  EXPECT_EQ(c.canonicalText, "pypi\tsix\t1.16.0\tsha256:" + kClosureParsersA +
                                 "\npypi\ttqdm\t\tgit:" + kCommit + "\n");
  EXPECT_NE(errorOfClosureParsers("tqdm @ git+https://git.example/tqdm/tqdm.git@v4.0\n", o)
                .message()
                .find("not pinned"),
            std::string::npos);
}

// ---- uv / poetry ----------------------------------------------------------

TEST(Uv, RootGitAndArtifacts) {
  std::string t =
      "version = 1\nrevision = 3\n\n"
      "[[package]]\nname = \"app\"\nversion = \"0.1.0\"\nsource = { editable = \".\" }\n\n"
      "[[package]]\nname = \"dep\"\nversion = \"1.0\"\n"
      "source = { git = \"https://git.example/x/dep?rev=main#" +
      kCommit +
      "\" }\n\n"
      "[[package]]\nname = \"Six\"\nversion = \"1.16.0\"\nsource = { registry = "
      "\"https://pypi.example/simple\" }\n"
      "sdist = { url = \"https://x/six.tar.gz\", hash = \"sha256:" +
      kClosureParsersA +
      "\" }\n"
      "wheels = [{ url = \"https://x/six.whl\", hash = \"SHA256:" +
      std::string(64, 'B') + "\" }]\n";
  Closure c = mustCompute(t, opts());
  EXPECT_EQ(c.format, LockFormat::kUv);
  EXPECT_EQ(c.canonicalText, "pypi\tdep\t1.0\tgit:" + kCommit + "\npypi\tsix\t1.16.0\tsha256:" +
                                 kClosureParsersA + ",sha256:" + kClosureParsersB + "\n");
}

TEST(Uv, TomlSyntaxErrorHasLine) {
  Status s = errorOfClosureParsers("version = 1\n\n[[package]]\nname = \"x\nversion = \"1\"\n",
                                   opts(LockFormat::kUv));
  EXPECT_NE(s.message().find("lock:4: toml: "), std::string::npos) << s.message();
}

TEST(Poetry, V1MetadataFilesAndV2FilesAndGit) {
  std::string v1 =
      "[[package]]\nname = \"Six\"\nversion = \"1.16.0\"\ndescription = \"\"\ncategory = \"main\"\n"
      "optional = false\npython-versions = \"*\"\n\n"
      "[[package]]\nname = \"tqdm\"\nversion = \"4.67.1\"\noptional = false\ndevelop = false\n\n"
      "[package.source]\ntype = \"git\"\nurl = \"https://git.example/tqdm/tqdm.git\"\nreference = "
      "\"HEAD\"\n"
      "resolved_reference = \"" +
      kCommit +
      "\"\n\n"
      "[[package]]\nname = \"mine\"\nversion = \"0.1\"\n\n[package.source]\ntype = "
      "\"directory\"\nurl = \"../mine\"\n\n"
      "[metadata]\nlock-version = \"1.1\"\ncontent-hash = \"x\"\n\n"
      "[metadata.files]\nsix = [\n    {file = \"six.whl\", hash = \"sha256:" +
      kClosureParsersA + "\"},\n]\ntqdm = []\n";
  Closure c = mustCompute(v1, opts());
  EXPECT_EQ(c.format, LockFormat::kPoetry);
  EXPECT_EQ(c.canonicalText, "pypi\tsix\t1.16.0\tsha256:" + kClosureParsersA +
                                 "\npypi\ttqdm\t4.67.1\tgit:" + kCommit + "\n");
  std::string v2 =
      "[[package]]\nname = \"six\"\nversion = \"1.16.0\"\nfiles = [\n"
      "    {file = \"six.whl\", hash = \"sha256:" +
      kClosureParsersA +
      "\"},\n]\n\n"
      "[metadata]\nlock-version = \"2.0\"\ncontent-hash = \"x\"\n";
  EXPECT_EQ(mustCompute(v2, opts()).canonicalText,
            "pypi\tsix\t1.16.0\tsha256:" + kClosureParsersA + "\n");
}

// ---- conda-lock -----------------------------------------------------------

std::string condaEntry(const std::string& name, const std::string& platform, const std::string& sha,
                       const std::string& extra = "  category: main\n") {
  return "- name: " + name + "\n  version: 1.0\n  manager: conda\n  platform: " + platform +
         "\n  url: https://x/" + platform + "/" + name +
         "-1.0-0.conda\n  hash:\n    md5: 00\n    sha256: " + sha + "\n" + extra;
}

TEST(CondaLock, PlatformSelectionAndAliases) {
  std::string t = "version: 1\nmetadata:\n  platforms: [linux-64, osx-arm64]\npackage:\n" +
                  condaEntry("Zlib", "linux-64", kClosureParsersA) +
                  condaEntry("zlib", "osx-arm64", kClosureParsersB);
  Closure c = mustCompute(t, opts());
  EXPECT_EQ(c.platform, "linux-64");
  EXPECT_EQ(c.canonicalText, "conda\tzlib\t1.0\tsha256:" + kClosureParsersA + "\n");
  ClosureOptions o = opts();
  o.platform = "aarch64-darwin";
  EXPECT_EQ(mustCompute(t, o).platform, "osx-arm64");
  o.platform = "win-64";
  Status s = errorOfClosureParsers(t, o);
  EXPECT_NE(
      s.message().find("platform \"win-64\" is not in the lock; available: linux-64, osx-arm64"),
      std::string::npos)
      << s.message();
}

TEST(CondaLock, V2LayoutWithCategories) {
  std::string t = "version: 2\nmetadata:\n  platforms: [linux-64]\npackage:\n" +
                  condaEntry("python", "linux-64", kClosureParsersA, "  categories:\n  - main\n");
  EXPECT_EQ(mustCompute(t, opts()).packageCount(), 1u);
}

TEST(CondaLock, Md5OnlyIsUnhashedAndBadShaIsAnError) {
  std::string md5only =
      "version: 1\npackage:\n- name: zlib\n  version: '1.0'\n  manager: conda\n  platform: "
      "linux-64\n"
      "  url: https://x/zlib-1.0-0.conda\n  hash:\n    md5: 0123\n";
  EXPECT_NE(
      errorOfClosureParsers(md5only, opts()).message().find("lock:3: digest: package \"zlib 1.0\""),
      std::string::npos);
  std::string bad = "version: 1\npackage:\n" + condaEntry("zlib", "osx-arm64", "abc");
  Status s = errorOfClosureParsers(bad, opts());
  EXPECT_NE(s.message().find("malformed sha256"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("lock:10: sha256: malformed"), std::string::npos) << s.message();
}

TEST(CondaLock, YamlSyntaxErrorHasLine) {
  Status s = errorOfClosureParsers("version: 1\npackage:\n- name: [unclosed\n",
                                   opts(LockFormat::kCondaLock));
  EXPECT_NE(s.message().find("lock:"), std::string::npos);
  EXPECT_NE(s.message().find(": yaml: "), std::string::npos) << s.message();
}

// YAML constructs where parsers differ (closure/yaml_tree.cc; yaml_tree_test.cc
// compares whole trees with yaml-cpp's).
TEST(CondaLock, QuotedNullIsTextPlainNullIsNoDigest) {
  ClosureOptions o = opts(LockFormat::kCondaLock);
  o.allowUnhashed = true;
  for (const char* plain : {"null", "~", "Null", "NULL", ""}) {
    Closure c = mustCompute("version: 1\npackage:\n" + condaEntry("zlib", "linux-64", plain), o);
    EXPECT_TRUE(c.weak) << plain;
  }
  for (const char* text : {"'null'", "\"~\"", "!!str null", "nULL"}) {
    Status s =
        errorOfClosureParsers("version: 1\npackage:\n" + condaEntry("zlib", "linux-64", text), o);
    EXPECT_NE(s.message().find("lock:10: sha256: malformed sha256"), std::string::npos)
        << text << ": " << s.message();
  }
}

TEST(CondaLock, InvalidUtf8IsRefusedWithItsLine) {
  // yaml-cpp passed bytes through; YAML text is Unicode, and libyaml refuses it.
  Status s = errorOfClosureParsers("version: 1\npackage:\n- name: zl\xFFib\n",
                                   opts(LockFormat::kCondaLock));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("lock:3: yaml: invalid leading UTF-8 octet"), std::string::npos)
      << s.message();
}

TEST(CondaLock, AnEmptyEntryIsNamedByItsOwnLine) {
  Status s = errorOfClosureParsers(
      "version: 1\npackage:\n-\n" + condaEntry("zlib", "linux-64", kClosureParsersA),
      opts(LockFormat::kCondaLock));
  EXPECT_NE(s.message().find("lock:3: package: expected a mapping"), std::string::npos)
      << s.message();
}

// ---- pixi -----------------------------------------------------------------

std::string pixiV6() {
  return "version: 6\nenvironments:\n  default:\n    packages:\n      linux-64:\n"
         "      - conda: https://x/linux-64/python-3.12.7-h1_0.conda\n"
         "      - pypi: git+https://git.example/tqdm/tqdm.git#" +
         kCommit +
         "\n"
         "  cuda:\n    packages:\n      linux-64:\n"
         "      - conda: https://x/noarch/cuda-version-12.4-h3_3.conda\n"
         "      - conda: https://x/linux-64/python-3.12.7-h1_0.conda\n"
         "      osx-arm64:\n      - conda: https://x/osx-arm64/python-3.12.7-h2_0.conda\n"
         "packages:\n"
         "- conda: https://x/linux-64/python-3.12.7-h1_0.conda\n  sha256: " +
         kClosureParsersA +
         "\n  md5: 00\n"
         "- conda: https://x/osx-arm64/python-3.12.7-h2_0.conda\n  sha256: " +
         kClosureParsersB +
         "\n"
         "- conda: https://x/noarch/cuda-version-12.4-h3_3.conda\n  sha256: " +
         kC +
         "\n"
         "- pypi: git+https://git.example/tqdm/tqdm.git#" +
         kCommit +
         "\n  name: tqdm\n  version: 4.67.1\n"
         "- pypi: ./\n  name: myproject\n  version: 0.1.0\n  editable: true\n";
}

TEST(Pixi, DefaultAndNamedEnvironments) {
  Closure c = mustCompute(pixiV6(), opts());
  EXPECT_EQ(c.format, LockFormat::kPixi);
  EXPECT_EQ(c.environment, "default");
  EXPECT_EQ(c.canonicalText, "conda\tpython\t3.12.7\tsha256:" + kClosureParsersA +
                                 "\npypi\ttqdm\t4.67.1\tgit:" + kCommit + "\n");
  ClosureOptions o = opts();
  o.environment = "cuda";  // two platforms, none requested: linux-64 is the default
  EXPECT_EQ(mustCompute(pixiV6(), o).platform, "linux-64");
  o.platform = "win-64";
  EXPECT_NE(errorOfClosureParsers(pixiV6(), o).message().find("available: linux-64, osx-arm64"),
            std::string::npos);
}

TEST(Pixi, NamedEnvironmentPlatformAndCuda) {
  ClosureOptions o = opts();
  o.environment = "cuda";
  o.platform = "linux-64";
  Closure c = mustCompute(pixiV6(), o);
  EXPECT_EQ(c.packageCount(), 2u);
  EXPECT_EQ(c.cuda, "12.4");
  EXPECT_EQ(c.minDriver, "550.54.14");
  o.environment = "gpu";
  EXPECT_NE(errorOfClosureParsers(pixiV6(), o)
                .message()
                .find("environment \"gpu\" is not in the lock; available: default, cuda"),
            std::string::npos);
}

TEST(Pixi, UnknownReferenceIsAnError) {
  std::string t = pixiV6();
  t.replace(t.find("- conda: https://x/linux-64/python-3.12.7-h1_0.conda\n  sha256"), 9,
            "- conda: https://y");
  Status s = errorOfClosureParsers(t, opts());
  EXPECT_NE(s.message().find("has no matching entry in packages"), std::string::npos)
      << s.message();
}

TEST(Pixi, V5KindEntriesMatchedByUrlAndBuild) {
  std::string t =
      "version: 5\nenvironments:\n  default:\n    packages:\n      linux-64:\n"
      "      - conda: https://x/linux-64/zlib-1.3-h1_0.conda\n"
      "packages:\n"
      "- kind: conda\n  name: zlib\n  version: '1.3'\n  build: h1_0\n  subdir: linux-64\n"
      "  url: https://x/linux-64/zlib-1.3-h1_0.conda\n  sha256: " +
      kClosureParsersA + "\n";
  EXPECT_EQ(mustCompute(t, opts()).canonicalText,
            "conda\tzlib\t1.3\tsha256:" + kClosureParsersA + "\n");
}

// pixi v6 writes one location per package: `conda:` or `pypi:`, each a URL, a
// path or a git URL pinned to a commit (`#<sha>`). One test per kind.
std::string pixiOne(const std::string& kind, const std::string& loc, const std::string& fields) {
  return "version: 6\nenvironments:\n  default:\n    packages:\n      linux-64:\n"
         "      - " +
         kind + ": " + loc + "\npackages:\n- " + kind + ": " + loc + "\n" + fields;
}

TEST(PixiSources, CondaUrlArchiveUsesItsSha256) {
  Closure c = mustCompute(pixiOne("conda", "https://x/linux-64/zlib-1.3-h1_0.conda",
                                  "  sha256: " + kClosureParsersA + "\n"),
                          opts());
  EXPECT_EQ(c.canonicalText, "conda\tzlib\t1.3\tsha256:" + kClosureParsersA + "\n");
}

TEST(PixiSources, CondaPathArchiveUsesItsSha256) {
  Closure c = mustCompute(pixiOne("conda", "./channel/linux-64/tool-1.0-h0_0.conda",
                                  "  sha256: " + kClosureParsersB + "\n"),
                          opts());
  EXPECT_EQ(c.canonicalText, "conda\ttool\t1.0\tsha256:" + kClosureParsersB + "\n");
}

TEST(PixiSources, CondaPathSourceIsTheProjectAndLeftOut) {
  Closure c = mustCompute(
      pixiOne("conda", ".", "  name: myproject\n  version: 0.1.0\n  build: h1_0\n"), opts());
  EXPECT_EQ(c.packageCount(), 0u);
  EXPECT_FALSE(c.weak);
}

TEST(PixiSources, CondaGitSourceUsesItsCommit) {
  // pixi-build: a conda package built from a git checkout has name/version/build
  // and no sha256; the commit pinned in the location is its digest (issue 13).
  const std::string loc = "git+https://git.example/org/pkg.git?subdirectory=recipe#" + kCommit;
  Closure c = mustCompute(
      pixiOne("conda", loc, "  name: Pkg\n  version: 0.2.0\n  build: h0_0\n  subdir: linux-64\n"),
      opts());
  EXPECT_EQ(c.canonicalText, "conda\tpkg\t0.2.0\tgit:" + kCommit + "\n");
  // Not pinned to a full commit: no digest, so unhashed.
  Status s =
      errorOfClosureParsers(pixiOne("conda", "git+https://git.example/org/pkg.git?branch=main",
                                    "  name: pkg\n  version: 0.2.0\n"),
                            opts());
  EXPECT_NE(s.message().find("\"pkg 0.2.0\" has no artifact digest"), std::string::npos)
      << s.message();
}

TEST(PixiSources, PypiUrlUsesItsSha256) {
  Closure c =
      mustCompute(pixiOne("pypi", "https://files.example/idna-3.7-py3-none-any.whl",
                          "  name: idna\n  version: '3.7'\n  sha256: " + kClosureParsersA + "\n"),
                  opts());
  EXPECT_EQ(c.canonicalText, "pypi\tidna\t3.7\tsha256:" + kClosureParsersA + "\n");
}

TEST(PixiSources, PypiPathArchiveUsesItsSha256) {
  Closure c =
      mustCompute(pixiOne("pypi", "./dist/my_lib-0.1-py3-none-any.whl",
                          "  name: my_lib\n  version: '0.1'\n  sha256: " + kClosureParsersB + "\n"),
                  opts());
  EXPECT_EQ(c.canonicalText, "pypi\tmy-lib\t0.1\tsha256:" + kClosureParsersB + "\n");
}

TEST(PixiSources, PypiPathDirectoryAndEditableAreLeftOut) {
  EXPECT_EQ(mustCompute(pixiOne("pypi", "./", "  name: myproject\n  version: 0.1.0\n"), opts())
                .packageCount(),
            0u);
  EXPECT_EQ(
      mustCompute(pixiOne("pypi", "./", "  name: myproject\n  version: 0.1.0\n  editable: true\n"),
                  opts())
          .packageCount(),
      0u);
}

TEST(PixiSources, PypiGitUsesItsCommit) {
  Closure c = mustCompute(pixiOne("pypi", "git+https://git.example/tqdm/tqdm.git#" + kCommit,
                                  "  name: tqdm\n  version: 4.67.1\n"),
                          opts());
  EXPECT_EQ(c.canonicalText, "pypi\ttqdm\t4.67.1\tgit:" + kCommit + "\n");
}

// ---- flox / nix -----------------------------------------------------------

TEST(Flox, SystemSelectionAndOutputs) {
  std::string t = R"({"lockfile-version": 1, "manifest": {"version": 1}, "packages": [
    {"install_id": "hello", "pname": "hello", "version": "2.12.1", "system": "aarch64-darwin",
     "outputs": {"out": "/nix/store/2qk0j5lbc3vn2q4zxn1kg5cjkpdxwxja-hello-2.12.1"}},
    {"install_id": "hello", "pname": "hello", "version": "2.12.1", "system": "x86_64-linux",
     "outputs": {"out": "/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1",
                 "man": "/nix/store/xv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1-man"}}]})";
  Closure c = mustCompute(t, opts());
  EXPECT_EQ(c.format, LockFormat::kFlox);
  EXPECT_EQ(c.platform, "x86_64-linux");
  EXPECT_EQ(c.canonicalText,
            "nix\thello\t2.12.1\t/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1,"
            "/nix/store/xv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1-man\n");
  ClosureOptions o = opts();
  o.platform = "osx-arm64";  // conda spelling of aarch64-darwin
  EXPECT_EQ(mustCompute(t, o).platform, "aarch64-darwin");
}

TEST(Nix, BadStorePathAndInvalidPathAreErrors) {
  EXPECT_NE(errorOfClosureParsers(R"([{"path": "/nix/store/short-x"}])", opts())
                .message()
                .find("is not a store path"),
            std::string::npos);
  EXPECT_NE(errorOfClosureParsers(
                R"({"/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1": null})", opts())
                .message()
                .find("not valid in the store"),
            std::string::npos);
  Status s =
      errorOfClosureParsers("[{\"path\":\n \"/nix/store/wv9sgsqvmn1kfa3", opts(LockFormat::kNix));
  EXPECT_NE(s.message().find("lock:2: json: "), std::string::npos) << s.message();
}

// ---- detection --------------------------------------------------------------

TEST(Detect, ByContent) {
  EXPECT_EQ(*detectFormat("version = 1\nrevision = 3\n[[package]]\nname = \"x\"\n"),
            LockFormat::kUv);
  EXPECT_EQ(*detectFormat("[[package]]\nname = \"x\"\n[metadata]\nlock-version = \"2.0\"\n"),
            LockFormat::kPoetry);
  EXPECT_EQ(*detectFormat("six==1.0 --hash=sha256:" + kClosureParsersA + "\n"), LockFormat::kPip);
  EXPECT_EQ(*detectFormat("# only comments\n--require-hashes\n"), LockFormat::kPip);
  EXPECT_EQ(*detectFormat("version: 1\nmetadata: {}\npackage: []\n"), LockFormat::kCondaLock);
  EXPECT_EQ(*detectFormat("version: 6\nenvironments: {}\npackages: []\n"), LockFormat::kPixi);
  EXPECT_EQ(*detectFormat("{\"lockfile-version\": 1}"), LockFormat::kFlox);
  EXPECT_EQ(*detectFormat("[{\"path\": \"/nix/store/x\"}]"), LockFormat::kNix);
  EXPECT_EQ(*detectFormat("{\"/nix/store/x\": {}}"), LockFormat::kNix);
  EXPECT_FALSE(detectFormat("   \n").isOk());
  EXPECT_FALSE(detectFormat("just some prose\n").isOk());
}

TEST(Detect, FormatNames) {
  EXPECT_EQ(*parseFormatName("conda-lock"), LockFormat::kCondaLock);
  EXPECT_EQ(*parseFormatName("Requirements"), LockFormat::kPip);
  EXPECT_FALSE(parseFormatName("npm").isOk());
  for (auto f : {LockFormat::kUv, LockFormat::kPip, LockFormat::kCondaLock, LockFormat::kPixi,
                 LockFormat::kPoetry, LockFormat::kFlox, LockFormat::kNix}) {
    EXPECT_EQ(*parseFormatName(formatName(f)), f);
  }
}

TEST(Options, EnvironmentOnlyForPixi) {
  ClosureOptions o = opts();
  o.environment = "cuda";
  EXPECT_NE(errorOfClosureParsers("six==1.0 --hash=sha256:" + kClosureParsersA + "\n", o)
                .message()
                .find("only pixi"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::closure
