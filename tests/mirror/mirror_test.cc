// The mirror's pure part (mirror/mirror.h): the files of real lock fixtures, the source
// each is taken from, the manifest's layout read back, what a fetch writes.
#include "mirror/mirror.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "closure/closure.h"

namespace lockstep::mirror {
namespace {

std::string fixture(const std::string& rel) {
  std::ifstream in(std::string(LOCKSTEP_FIXTURES_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Plan planOf(const std::string& text, closure::ClosureOptions options = {}) {
  auto c = closure::computeClosure(text, options);
  EXPECT_TRUE(c.isOk()) << c.status().message();
  auto p = planMirror(*c);
  EXPECT_TRUE(p.isOk()) << p.status().message();
  return *p;
}

const Entry* find(const Plan& p, const std::string& fileName) {
  for (const Entry& e : p.entries) {
    if (e.fileName == fileName) return &e;
  }
  return nullptr;
}

const std::string kDigestA = "sha256:" + std::string(64, 'a');

TEST(PlanTest, UvFixtureListsEveryWheelAndSdistWithUrlSizeAndPurl) {
  const std::string text = fixture("uv/torch-cu121-yyhhenry-uv-torch-env.uv.lock");
  auto c = closure::computeClosure(text, {});
  ASSERT_TRUE(c.isOk()) << c.status().message();
  Plan p = planOf(text);
  // One entry per sha256 digest of the closure: every wheel and sdist the lock lists.
  size_t digests = 0;
  for (const auto& pkg : c->packages) {
    for (const auto& d : pkg.digests) digests += d.rfind("sha256:", 0) == 0;
  }
  EXPECT_EQ(p.entries.size(), digests);
  EXPECT_EQ(p.closureHash, c->closureHash);
  EXPECT_EQ(p.format, "uv");
  for (const Entry& e : p.entries) {
    EXPECT_FALSE(e.fileName.empty()) << e.digest;
    EXPECT_EQ(e.url.rfind("https://", 0), 0u) << e.fileName;
    std::string version = e.version;  // a purl percent-encodes the local version's '+'
    if (auto plus = version.find('+'); plus != std::string::npos) version.replace(plus, 1, "%2B");
    EXPECT_EQ(e.purl, "pkg:pypi/" + e.name + "@" + version);
    EXPECT_TRUE(e.mediaType == kWheelMediaType || e.mediaType == kSdistMediaType) << e.fileName;
  }
  // uv says the size of PyPI's files (not of the PyTorch index's).
  const Entry* sdist = find(p, "setuptools-69.5.1.tar.gz");
  ASSERT_NE(sdist, nullptr);
  EXPECT_EQ(sdist->size, 2291314);
  EXPECT_EQ(sdist->mediaType, kSdistMediaType);
  EXPECT_EQ(sdist->digest,
            "sha256:6c1fccdac05a97e598fb0ae3bbed5904ccb317337a51139dcd51453611bbb987");
  // The local version's "+" is %2B in the URL: the file name is decoded.
  bool localVersion = false;
  for (const Entry& e : p.entries) {
    if (e.name == "torch") {
      EXPECT_NE(e.fileName.find("+cu121"), std::string::npos) << e.fileName;
      localVersion = true;
    }
  }
  EXPECT_TRUE(localVersion);
}

TEST(PlanTest, CondaLockFixtureKeepsTheChannelSubdir) {
  closure::ClosureOptions o;
  o.platform = "linux-64";
  Plan p = planOf(fixture("conda-lock/pytorch-cu118-01ai-yi.conda-lock.yml"), o);
  ASSERT_FALSE(p.entries.empty());
  size_t conda = 0, noarch = 0;
  for (const Entry& e : p.entries) {
    if (e.ecosystem != "conda") continue;
    ++conda;
    EXPECT_EQ(e.mediaType, kCondaMediaType) << e.fileName;
    EXPECT_TRUE(e.subdir == "linux-64" || e.subdir == "noarch") << e.subdir;
    noarch += e.subdir == "noarch";
    EXPECT_EQ(e.url.substr(e.url.size() - e.fileName.size()), e.fileName);
    EXPECT_EQ(destPath(e), e.subdir + "/" + e.fileName);
  }
  EXPECT_GT(conda, 0u);
  EXPECT_GT(noarch, 0u);
  EXPECT_EQ(p.platform, "linux-64");
}

TEST(PlanTest, PipLockNamesNoFileUntilTheWheelhouseDoes) {
  const std::string lock = "alpha==1.0.0 \\\n    --hash=sha256:" + std::string(64, 'a') + "\n" +
                           "beta @ git+https://example.invalid/beta@" + std::string(40, 'c') + "\n";
  Plan p = planOf(lock);
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].fileName, "");
  EXPECT_EQ(p.entries[0].mediaType, "");
  ASSERT_EQ(p.notMirrored.size(), 1u);
  EXPECT_NE(p.notMirrored[0].find("a VCS source"), std::string::npos) << p.notMirrored[0];
  nameEntry(p.entries[0], "alpha-1.0.0-py3-none-any.whl");
  EXPECT_EQ(p.entries[0].mediaType, kWheelMediaType);
}

TEST(PlanTest, ALockFileNameThatIsAPathIsRefused) {
  const std::string lock =
      "version = 1\n[[package]]\nname = \"x\"\nversion = \"1\"\n"
      "source = { registry = \"https://example.invalid/simple\" }\n"
      "wheels = [{ url = \"https://example.invalid/a/..%2F..%2Fx.whl\", "
      "hash = \"sha256:" +
      std::string(64, 'b') + "\" }]\n";
  auto c = closure::computeClosure(lock, {});
  ASSERT_TRUE(c.isOk()) << c.status().message();
  auto p = planMirror(*c);
  ASSERT_FALSE(p.isOk());
  EXPECT_NE(p.status().message().find("pypi x 1"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("not a plain file name"), std::string::npos);
}

TEST(SourceTest, DirByNameThenByDigestThenHttpsUrl) {
  Entry e;
  e.fileName = "alpha-1.0.0-py3-none-any.whl";
  e.digest = kDigestA;
  e.url = "https://files.example.invalid/alpha-1.0.0-py3-none-any.whl";
  DirIndex none;
  EXPECT_EQ(pickSource(e, none).kind, Source::kUrl);
  DirIndex dir;
  dir.given = true;
  dir.dir = "wh";
  dir.byName["alpha-1.0.0-py3-none-any.whl"] = "wh/alpha-1.0.0-py3-none-any.whl";
  Source s = pickSource(e, dir);
  EXPECT_EQ(s.kind, Source::kDirFile);
  EXPECT_EQ(s.location, "wh/alpha-1.0.0-py3-none-any.whl");
  EXPECT_FALSE(needsDigestLookup(e, dir));
  // Renamed in the wheelhouse: found by its digest.
  dir.byName.clear();
  dir.byDigest[kDigestA] = "wh/renamed.whl";
  EXPECT_TRUE(needsDigestLookup(e, dir));
  EXPECT_EQ(pickSource(e, dir).location, "wh/renamed.whl");
  // Not there and no https URL: missing, with the reason.
  dir.byDigest.clear();
  e.url = "http://files.example.invalid/alpha.whl";
  s = pickSource(e, dir);
  EXPECT_EQ(s.kind, Source::kMissing);
  EXPECT_NE(s.location.find("not in --from-dir wh (no file alpha-1.0.0-py3-none-any.whl)"),
            std::string::npos)
      << s.location;
  EXPECT_NE(s.location.find("not https"), std::string::npos) << s.location;
}

Plan smallPlan() {
  Plan p;
  p.closureHash = "sha256:" + std::string(64, '1');
  p.format = "conda-lock";
  p.platform = "linux-64";
  Entry w;
  w.ecosystem = "pypi";
  w.name = "alpha";
  w.version = "1.0+cpu";
  w.purl = "pkg:pypi/alpha@1.0%2Bcpu";
  w.digest = kDigestA;
  w.size = 10;
  nameEntry(w, "alpha-1.0+cpu-py3-none-any.whl");
  Entry c;
  c.ecosystem = "conda";
  c.name = "zlib";
  c.version = "1.3";
  c.purl = "pkg:conda/zlib@1.3";
  c.digest = "sha256:" + std::string(64, 'b');
  c.size = 20;
  c.subdir = "linux-64";
  c.url = "https://conda.example.invalid/c/linux-64/zlib-1.3-h0_0.conda";
  nameEntry(c, "zlib-1.3-h0_0.conda");
  p.entries = {w, c};
  return p;
}

TEST(ManifestTest, LayoutIsAnOciArtifactManifestThatReadsBack) {
  Plan p = smallPlan();
  auto bytes = mirrorManifest(p);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().message();
  auto j = nlohmann::json::parse(*bytes);
  EXPECT_EQ(j["schemaVersion"], 2);
  EXPECT_EQ(j["mediaType"], "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(j["artifactType"], "application/vnd.lockstep.mirror.v1+json");
  EXPECT_EQ(j["config"]["mediaType"], "application/vnd.oci.empty.v1+json");
  EXPECT_EQ(j["config"]["digest"],
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
  ASSERT_EQ(j["layers"].size(), 2u);
  EXPECT_EQ(j["layers"][0]["mediaType"], "application/vnd.lockstep.mirror.pypi.wheel.v1");
  EXPECT_EQ(j["layers"][0]["digest"], kDigestA);
  EXPECT_EQ(j["layers"][0]["size"], 10);
  EXPECT_EQ(j["layers"][0]["annotations"]["org.opencontainers.image.title"],
            "alpha-1.0+cpu-py3-none-any.whl");
  EXPECT_EQ(j["layers"][0]["annotations"]["dev.lockstep.mirror.purl"], "pkg:pypi/alpha@1.0%2Bcpu");
  EXPECT_EQ(j["layers"][1]["mediaType"], "application/vnd.lockstep.mirror.conda.package.v1");
  EXPECT_EQ(j["layers"][1]["annotations"]["dev.lockstep.mirror.subdir"], "linux-64");
  EXPECT_EQ(j["layers"][1]["annotations"]["dev.lockstep.mirror.url"], p.entries[1].url);
  EXPECT_EQ(j["annotations"]["dev.lockstep.mirror.closure-hash"], p.closureHash);
  EXPECT_EQ(j["annotations"]["dev.lockstep.mirror.platform"], "linux-64");
  // Deterministic: the same plan, the same bytes (a second push writes nothing).
  EXPECT_EQ(*mirrorManifest(p), *bytes);

  auto back = parseMirrorManifest(*bytes, "m");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries[0], p.entries[0]);
  EXPECT_EQ(back->entries[1], p.entries[1]);
  EXPECT_EQ(back->annotations.at(kFormatAnnotation), "conda-lock");
}

TEST(ManifestTest, UnnamedUnsizedOrCollidingEntriesAreRefused) {
  Plan p = smallPlan();
  p.entries[0].size = -1;
  EXPECT_FALSE(mirrorManifest(p).isOk());
  p = smallPlan();
  p.entries[1].fileName = "";
  EXPECT_FALSE(mirrorManifest(p).isOk());
  p = smallPlan();
  p.entries[1].ecosystem = "pypi";
  p.entries[1].subdir = "";
  p.entries[1].fileName = p.entries[0].fileName;
  auto m = mirrorManifest(p);
  ASSERT_FALSE(m.isOk());
  EXPECT_NE(m.status().message().find("two files would both be alpha-1.0+cpu-py3-none-any.whl"),
            std::string::npos)
      << m.status().message();
}

TEST(ManifestTest, HostileManifestsAreRefusedNamingTheField) {
  auto bytes = *mirrorManifest(smallPlan());
  auto j = nlohmann::json::parse(bytes);
  auto refused = [](const nlohmann::json& m, const std::string& want) {
    auto r = parseMirrorManifest(m.dump(), "reg/mirror:t");
    ASSERT_FALSE(r.isOk()) << want;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  auto m = j;
  m["layers"][1]["annotations"]["org.opencontainers.image.title"] = "../../etc/passwd";
  refused(m, "layers[1].annotations[\"org.opencontainers.image.title\"]");
  m = j;
  m["layers"][1]["annotations"]["dev.lockstep.mirror.subdir"] = "../x";
  refused(m, "layers[1].annotations[\"dev.lockstep.mirror.subdir\"]");
  m = j;
  m["layers"][0]["digest"] = "sha256:ABC";
  refused(m, "layers[0].digest");
  m = j;
  m["layers"][0]["size"] = -1;
  refused(m, "layers[0].size");
  m = j;
  m["artifactType"] = "application/vnd.cncf.model.manifest.v1+json";
  refused(m, "is not a Lockstep mirror");
}

TEST(FetchTest, TheLocksFilesComeFromTheManifestAndMissingOnesAreNamed) {
  Plan p = smallPlan();
  MirrorManifest m = *parseMirrorManifest(*mirrorManifest(p), "m");
  // A pip lock's entry has no name: the manifest gives it.
  Plan lock = p;
  lock.entries[0].fileName.clear();
  FetchSet s = fetchSet(lock, m);
  EXPECT_TRUE(s.missing.empty());
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].fileName, "alpha-1.0+cpu-py3-none-any.whl");
  EXPECT_EQ(destPath(s.entries[0]), "alpha-1.0+cpu-py3-none-any.whl");
  EXPECT_EQ(destPath(s.entries[1]), "linux-64/zlib-1.3-h0_0.conda");
  // The manifest lacks one of the lock's files.
  m.entries.pop_back();
  s = fetchSet(lock, m);
  ASSERT_EQ(s.missing.size(), 1u);
  EXPECT_EQ(s.missing[0], "conda zlib 1.3 zlib-1.3-h0_0.conda sha256:" + std::string(64, 'b'));
}

TEST(FetchTest, RequirementsPinEveryPypiFileByHash) {
  Plan p = smallPlan();
  Entry sdist = p.entries[0];
  sdist.digest = "sha256:" + std::string(64, 'c');
  nameEntry(sdist, "alpha-1.0+cpu.tar.gz");
  EXPECT_EQ(sdist.mediaType, kSdistMediaType);
  p.entries.push_back(sdist);
  EXPECT_EQ(requirementsText(p.entries),
            "# written by lockstep mirror fetch: the lock's PyPI files, by hash\n"
            "alpha==1.0+cpu \\\n    --hash=sha256:" +
                std::string(64, 'a') + " \\\n    --hash=sha256:" + std::string(64, 'c') + "\n");
}

TEST(RepositoryTest, HostAndPathAreChecked) {
  auto r = parseRepository("127.0.0.1:5000/mirror/runtimes");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->registry, "127.0.0.1:5000");
  EXPECT_EQ(r->repository, "mirror/runtimes");
  EXPECT_TRUE(parseRepository("localhost/m").isOk());
  EXPECT_FALSE(parseRepository("mirror/runtimes").isOk());  // no host
  EXPECT_FALSE(parseRepository("reg.example/Mirror").isOk());
  EXPECT_FALSE(parseRepository("reg.example/m:tag").isOk());
  EXPECT_FALSE(parseRepository("reg.example/m//x").isOk());
  EXPECT_FALSE(parseRepository("reg.example/").isOk());
  EXPECT_EQ(mirrorTag("sha256:" + std::string(64, 'f')), "closure-" + std::string(64, 'f'));
}

TEST(ProgressTest, Line) {
  EXPECT_EQ(progressLine(3, 40, 2, 1, 3u << 20, "pushed"), "[ 3/40] 2 pushed, 1 present, 3.0 MiB");
  EXPECT_EQ(humanBytes(512), "512 B");
}

// ---- Nix NARs ---------------------------------------------------------------

// `nix path-info --json --recursive` (Nix 2.8) of two paths of a test store: "top" refers
// to "dep".
const char kNixLock[] =
    R"([{"path":"/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top","narHash":"sha256-9nIg+WAQEqHLTZpTWkskv/aRvzmN9iX8P/27mE5UXBA=","narSize":168,"references":["/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep"],"registrationTime":1796309723},{"path":"/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep","narHash":"sha256-FVcImz9sWhSb74L5u30+1KrcOHzTY1SsY5uBlqln5/M=","narSize":480,"references":[],"registrationTime":1796309723}])";
const std::string kTopDigest =
    "sha256:f67220f9601012a1cb4d9a535a4b24bff691bf398df625fc3ffdbb984e545c10";

TEST(NixTest, PathInfoFixtureIsOneNarPerStorePathNamedByIt) {
  Plan p = planOf(fixture("../nix/hello-closure.path-info.object.json"));
  EXPECT_EQ(p.format, "nix");
  ASSERT_EQ(p.entries.size(), 5u);
  EXPECT_TRUE(p.notMirrored.empty()) << p.notMirrored.front();  // every reference is listed
  const Entry* hello = find(p, "wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1.nar");
  ASSERT_NE(hello, nullptr);
  EXPECT_EQ(hello->ecosystem, "nix");
  EXPECT_EQ(hello->storePath, "/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello-2.12.1");
  EXPECT_EQ(hello->purl, "pkg:nix/hello-2.12.1");  // evidence/purl.cc's mapping for nix
  EXPECT_EQ(hello->mediaType, kNarMediaType);
  EXPECT_EQ(hello->size, 226560);
  EXPECT_EQ(hello->references.size(), 2u);
  // The NAR's digest spelled as Nix does: the cache file's name.
  EXPECT_EQ(destPath(*hello), "nar/1qv1n3k4m5j6h7g8f9d0s1a2z3x4c5v6b7n8m9l0k1j2h3g4f5d6.nar");
}

TEST(NixTest, AReferenceTheLockDoesNotListIsNamedAsNotMirrored) {
  // Without --recursive: "top" alone, its reference absent from the lock.
  std::string text = kNixLock;
  text = text.substr(0, text.find(",{\"path\":\"/nix/store/d15q")) + "]";
  Plan p = planOf(text);
  ASSERT_EQ(p.entries.size(), 1u);
  ASSERT_EQ(p.notMirrored.size(), 1u);
  EXPECT_NE(p.notMirrored[0].find("/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep: referred to"),
            std::string::npos)
      << p.notMirrored[0];
  // A store path without a narHash (a Flox lock names outputs only) is not a file.
  Plan flox = planOf(R"([{"path": "/nix/store/wv9sgsqvmn1kfa3jdj7xkz4k4dz0m0c1-hello"}])");
  EXPECT_TRUE(flox.entries.empty());
  ASSERT_EQ(flox.notMirrored.size(), 1u);
  EXPECT_NE(flox.notMirrored[0].find("without a narHash"), std::string::npos);
}

TEST(NixTest, ANarIsFoundByContentNeverTrustedByName) {
  Plan p = planOf(kNixLock);
  const Entry& top = p.entries[1];
  ASSERT_EQ(top.digest, kTopDigest);
  DirIndex dir;
  dir.given = true;
  dir.dir = "nars";
  EXPECT_TRUE(needsDigestLookup(top, dir));
  dir.byName["3v48v4c4czb950lyipir65701lisxkxg-top.nar"] =
      "nars/3v48v4c4czb950lyipir65701lisxkxg-top.nar";
  dir.byDigest[kTopDigest] = "nars/whatever.nar";
  // The file with the narHash, whatever its name.
  EXPECT_EQ(pickSource(top, dir).location, "nars/whatever.nar");
  EXPECT_TRUE(needsDigestLookup(top, dir));  // a file of its name does not spare the hashing
  // None with that content: the file of its name is read, and the push refuses it naming
  // both digests.
  dir.byDigest.clear();
  EXPECT_EQ(pickSource(top, dir).location, "nars/3v48v4c4czb950lyipir65701lisxkxg-top.nar");
  dir.byName.clear();
  Source s = pickSource(top, dir);
  EXPECT_EQ(s.kind, Source::kMissing);
  EXPECT_NE(s.location.find("no file with that digest"), std::string::npos) << s.location;
}

TEST(NixTest, ManifestAnnotatesTheStorePathAndReadsBack) {
  Plan p = planOf(kNixLock);
  auto bytes = mirrorManifest(p);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().message();
  auto m = nlohmann::json::parse(*bytes);
  ASSERT_EQ(m["layers"].size(), 2u);
  const auto& top = m["layers"][1];
  EXPECT_EQ(top["mediaType"], kNarMediaType);
  EXPECT_EQ(top["digest"], kTopDigest);
  EXPECT_EQ(top["size"], 168);
  EXPECT_EQ(top["annotations"][kTitleAnnotation], "3v48v4c4czb950lyipir65701lisxkxg-top.nar");
  EXPECT_EQ(top["annotations"][kStorePathAnnotation],
            "/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top");
  EXPECT_EQ(top["annotations"][kReferencesAnnotation], "d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep");
  EXPECT_EQ(top["annotations"][kPurlAnnotation], "pkg:nix/top");
  auto back = parseMirrorManifest(*bytes, "m");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->entries[1].storePath, "/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top");
  EXPECT_EQ(back->entries[1].ecosystem, "nix");
  FetchSet set = fetchSet(p, *back);
  EXPECT_TRUE(set.missing.empty());
  ASSERT_EQ(set.entries.size(), 2u);
  EXPECT_EQ(set.entries[1].references, p.entries[1].references);
  // A store path annotation that is not one is refused.
  std::string hostile = *bytes;
  hostile.replace(hostile.find("/nix/store/3v48"), 15, "/nix/store/../x");
  auto refused = parseMirrorManifest(hostile, "m");
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("is not a Nix store path"), std::string::npos)
      << refused.status().message();
}

TEST(NixTest, BinaryCacheIsWhatNixCopyToFileWrites) {
  Plan p = planOf(kNixLock);
  auto cache = nixBinaryCache(p.entries);
  ASSERT_TRUE(cache.isOk()) << cache.status().message();
  ASSERT_EQ(cache->size(), 3u);
  EXPECT_EQ((*cache)[0], (CacheFile{"nix-cache-info", "StoreDir: /nix/store\n"}));
  // `nix copy --to 'file://…?compression=none'` (Nix 2.8) wrote this narinfo for the same
  // path, and a "CA:" line (the lock's path-info has one, but a narinfo needs none).
  EXPECT_EQ((*cache)[1].path, "3v48v4c4czb950lyipir65701lisxkxg.narinfo");
  EXPECT_EQ((*cache)[1].text,
            "StorePath: /nix/store/3v48v4c4czb950lyipir65701lisxkxg-top\n"
            "URL: nar/042wai79ifzx7zy2bxld76zr3xmz4i5mllws9p5s24hhc3wj0wpn.nar\n"
            "Compression: none\n"
            "FileHash: sha256:042wai79ifzx7zy2bxld76zr3xmz4i5mllws9p5s24hhc3wj0wpn\n"
            "FileSize: 168\n"
            "NarHash: sha256:042wai79ifzx7zy2bxld76zr3xmz4i5mllws9p5s24hhc3wj0wpn\n"
            "NarSize: 168\n"
            "References: d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep\n");
  EXPECT_EQ((*cache)[2].path, "d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is.narinfo");
  EXPECT_NE((*cache)[2].text.find("\nReferences: \n"), std::string::npos) << (*cache)[2].text;
  EXPECT_EQ(destPath(p.entries[1]), "nar/042wai79ifzx7zy2bxld76zr3xmz4i5mllws9p5s24hhc3wj0wpn.nar");
  // No NARs, no cache; a NAR of another store directory is refused.
  EXPECT_TRUE(
      nixBinaryCache(
          planOf(fixture("pip/requests-only-mozilla-translations-splitter.requirements.txt"))
              .entries)
          ->empty());
  std::vector<Entry> mixed = p.entries;
  mixed[1].storePath = "/gnu/store/3v48v4c4czb950lyipir65701lisxkxg-top";
  EXPECT_FALSE(nixBinaryCache(mixed).isOk());
}

}  // namespace
}  // namespace lockstep::mirror
