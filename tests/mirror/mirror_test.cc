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

}  // namespace
}  // namespace lockstep::mirror
