// Matching closure entries against OSV records: the name mapping, the schema's
// evaluation algorithm (its own examples), PEP 440 details, grouping by alias, and what
// is reported as not matched.
#include "advisories/match.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "advisories/name_mapping.h"

namespace lockstep::advisories {
namespace {

closure::Package pkg(const std::string& eco, const std::string& name, const std::string& version,
                     std::vector<std::string> digests = {"sha256:00"}) {
  return closure::Package{eco, name, version, std::move(digests)};
}

TEST(NameMapping, PypiEntriesAreLookedUpByTheirPep503Name) {
  PackageMapping m = osvPackageFor(pkg("pypi", "Jinja2", "3.1.2"));
  ASSERT_TRUE(m.matched);
  EXPECT_EQ(m.ref.ecosystem, "PyPI");
  EXPECT_EQ(m.ref.name, "jinja2");
  EXPECT_EQ(m.ref.version, "3.1.2");
  EXPECT_EQ(m.ref.via, "pypi");
  EXPECT_FALSE(osvPackageFor(pkg("pypi", "x", "")).matched);
}

TEST(NameMapping, CondaPackagesThatArePypiProjectsByTheTable) {
  const std::vector<std::pair<std::string, std::string>> mapped = {
      {"pytorch", "torch"},
      {"jinja2", "jinja2"},
      {"python-xxhash", "xxhash"},
      {"brotli-python", "brotli"},
      {"typing_extensions", "typing-extensions"},
      {"huggingface_hub", "huggingface-hub"},
      {"sentencepiece-python", "sentencepiece"},
      {"matplotlib-base", "matplotlib"}};
  for (const auto& [conda, pypi] : mapped) {
    PackageMapping m = osvPackageFor(pkg("conda", conda, "1.0"));
    ASSERT_TRUE(m.matched) << conda;
    EXPECT_EQ(m.ref.name, pypi) << conda;
    EXPECT_EQ(m.ref.via, "conda table");
  }
  // C libraries and tools that share a name with a PyPI project, and the interpreter.
  for (const std::string conda : {"xxhash", "zstd", "yaml", "tzdata", "openssl", "python",
                                  "libgcc-ng", "cudatoolkit", "sentencepiece", "ninja"}) {
    PackageMapping m = osvPackageFor(pkg("conda", conda, "1.0"));
    EXPECT_FALSE(m.matched) << conda;
    EXPECT_EQ(m.reason,
              "conda package not known to be a PyPI project (no OSV ecosystem for conda)");
  }
}

TEST(NameMapping, TheCondaTableIsSortedWithoutDuplicatesAndNormalised) {
  auto t = condaPypiTable();
  ASSERT_GT(t.size(), 100u);
  for (size_t i = 1; i < t.size(); ++i) {
    EXPECT_LT(t[i - 1].conda, t[i].conda) << "at " << t[i].conda;
  }
  for (const auto& row : t) {
    EXPECT_EQ(closure::normalizePypiName(row.conda), row.conda);
    EXPECT_EQ(closure::normalizePypiName(row.pypi), row.pypi);
  }
}

// docs/supply-chain.md prints the table; every row of the code is there.
TEST(NameMapping, TheDocsListTheWholeCondaTable) {
  std::ifstream in(std::string(LOCKSTEP_DOCS_DIR) + "/supply-chain.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t same = doc.find("Same name on conda and PyPI:");
  ASSERT_NE(same, std::string::npos);
  const std::string sameLine = doc.substr(same, doc.find('\n', same) - same);
  for (const auto& row : condaPypiTable()) {
    if (row.conda == row.pypi) {
      EXPECT_NE(sameLine.find("`" + std::string(row.conda) + "`"), std::string::npos) << row.conda;
    } else {
      EXPECT_NE(doc.find("| `" + std::string(row.conda) + "` | `" + std::string(row.pypi) + "` |"),
                std::string::npos)
          << row.conda;
    }
  }
}

TEST(NameMapping, NixStorePathsOfPythonPackagesByNixpkgsNamingRule) {
  const std::string h = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {h + "python3.11-requests-2.31.0", "requests", "2.31.0"},
      {h + "python3.12-Jinja2-3.1.4-dist", "jinja2", "3.1.4"},
      {h + "python3-typing_extensions-4.9.0", "typing-extensions", "4.9.0"},
      {h + "python311-huggingface-hub-0.20.1", "huggingface-hub", "0.20.1"},
  };
  for (const auto& [path, name, version] : cases) {
    // Nix path-info: the store name is the entry's name, the version empty.
    PackageMapping m = osvPackageFor(pkg("nix", path.substr(h.size()), "", {path}));
    ASSERT_TRUE(m.matched) << path;
    EXPECT_EQ(m.ref.name, name);
    EXPECT_EQ(m.ref.version, version);
    EXPECT_EQ(m.ref.via, "nix python store path");
  }
  for (const std::string& path : {h + "openssl-3.0.13", h + "python3-3.11.9", h + "glibc-2.39-52",
                                  h + "python3.11-env", std::string("/nix/store/short-x-1")}) {
    PackageMapping m = osvPackageFor(pkg("nix", "x", "", {path}));
    EXPECT_FALSE(m.matched) << path;
  }
  EXPECT_FALSE(osvPackageFor(pkg("npm", "left-pad", "1.0.0")).matched);
}

OsvRecord rec(const std::string& text) {
  auto r = parseOsvRecord(text, "t.json");
  EXPECT_TRUE(r.isOk()) << r.status().message();
  return r.isOk() ? *r : OsvRecord{};
}

// One PyPI package "p" affected as the ranges/versions JSON says.
OsvAffected affected(const std::string& rangesAndVersions) {
  OsvRecord r = rec(R"({"id": "T", "affected": [{"package": {"ecosystem": "PyPI", "name": "p"}, )" +
                    rangesAndVersions + "}]}");
  return r.affected.empty() ? OsvAffected{} : r.affected[0];
}

bool hit(const OsvAffected& a, const std::string& version) {
  return evaluateAffected(a, "PyPI", version).affected;
}

TEST(Evaluate, TheSchemasExamples) {
  // "Every possible version is affected."
  auto all = affected(R"("ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}]}])");
  EXPECT_TRUE(hit(all, "0.0.1"));
  EXPECT_TRUE(hit(all, "99.0.0"));
  // "Everything before 1.0.2."
  auto before = affected(
      R"("ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.2"}]}])");
  EXPECT_TRUE(hit(before, "1.0.1"));
  EXPECT_FALSE(hit(before, "1.0.2"));
  EXPECT_EQ(evaluateAffected(before, "PyPI", "1.0.0").fixed, "1.0.2");
  // "[1.0.0, 1.0.2) or [3.0.0, 3.2.5)."
  auto multi = affected(R"("ranges": [{"type": "SEMVER", "events": [{"introduced": "1.0.0"},
      {"fixed": "1.0.2"}, {"introduced": "3.0.0"}, {"fixed": "3.2.5"}]}])");
  EXPECT_FALSE(hit(multi, "0.9.0"));
  EXPECT_TRUE(hit(multi, "1.0.0"));
  EXPECT_FALSE(hit(multi, "1.0.2"));
  EXPECT_FALSE(hit(multi, "2.0.0"));
  EXPECT_TRUE(hit(multi, "3.2.4"));
  EXPECT_EQ(evaluateAffected(multi, "PyPI", "3.1.0").fixed, "3.2.5");
  EXPECT_FALSE(hit(multi, "3.2.5"));
  // last_affected is inclusive; above it, unaffected.
  auto last = affected(R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "2.0"},
      {"last_affected": "2.1.214"}]}])");
  EXPECT_TRUE(hit(last, "2.1.214"));
  EXPECT_FALSE(hit(last, "2.1.215"));
  EXPECT_FALSE(hit(last, "1.9"));
  EXPECT_EQ(evaluateAffected(last, "PyPI", "2.1").fixed, "");
}

TEST(Evaluate, EventsAreSortedBeforeTheWalkAndLimitsBoundTheRange) {
  // Written out of order, as osv.dev's PYSEC-2023-212 does.
  auto unsorted = affected(R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "2.0.0"},
      {"fixed": "2.0.7"}, {"introduced": "0"}, {"fixed": "1.26.18"}]}])");
  EXPECT_TRUE(hit(unsorted, "1.26.17"));
  EXPECT_FALSE(hit(unsorted, "1.26.18"));
  EXPECT_TRUE(hit(unsorted, "2.0.6"));
  EXPECT_FALSE(hit(unsorted, "2.0.7"));
  auto limited = affected(R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"},
      {"limit": "2.0"}, {"limit": "3.0"}]}])");
  EXPECT_TRUE(hit(limited, "2.5"));
  EXPECT_FALSE(hit(limited, "3.0"));
  auto star = affected(
      R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "1.0"}, {"limit": "*"}]}])");
  EXPECT_TRUE(hit(star, "5.0"));
}

TEST(Evaluate, Pep440OrderAndLocalVersions) {
  auto r = affected(R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"},
      {"fixed": "2.6.0"}]}], "versions": ["2.3.1"])");
  // A local build of an affected release is affected, below the fix or not.
  EXPECT_TRUE(hit(r, "2.3.1+cu121"));
  EXPECT_TRUE(hit(r, "2.6.0rc1"));
  EXPECT_FALSE(hit(r, "2.6.0+cpu"));
  EXPECT_FALSE(hit(r, "2.6.0"));
  // last_affected: 2.1.0+cu118 is a build of 2.1.0, so it is affected.
  auto last = affected(R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"},
      {"last_affected": "2.1.0"}]}])");
  EXPECT_TRUE(hit(last, "2.1.0+cu118"));
  // The versions list alone, by PEP 440 equality.
  auto listed = affected(R"("versions": ["1.0", "1.1.post1"])");
  EXPECT_TRUE(hit(listed, "1.0.0"));
  EXPECT_TRUE(hit(listed, "1.1-1"));
  EXPECT_FALSE(hit(listed, "1.1"));
  // GIT ranges are not evaluated against versions.
  auto git =
      affected(R"("ranges": [{"type": "GIT", "repo": "r", "events": [{"introduced": "0"}]}])");
  EXPECT_FALSE(hit(git, "1.0"));
}

TEST(Evaluate, ABoundThatCannotBeComparedCountsAsAffectingWithANote) {
  auto r = affected(R"("ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"},
      {"fixed": "not a version"}]}])");
  AffectedVerdict v = evaluateAffected(r, "PyPI", "1.0");
  EXPECT_TRUE(v.affected);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_EQ(v.notes[0], "ECOSYSTEM bound \"not a version\" not comparable with the version");
}

TEST(Match, FindingsNotMatchedAndCounts) {
  AdvisoryIndex index;
  index.add(rec(R"({"id": "GHSA-aaaa", "aliases": ["CVE-1"], "summary": "s1",
    "database_specific": {"severity": "MODERATE"},
    "affected": [{"package": {"ecosystem": "PyPI", "name": "Jinja2"},
      "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.1.3"}]}]}]})"));
  // The same vulnerability from another database, rated higher, fixed later.
  index.add(rec(R"({"id": "PYSEC-1", "aliases": ["CVE-1"],
    "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}],
    "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"},
      "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.1.4"}]}]}]})"));
  index.add(rec(R"({"id": "GHSA-bbbb", "withdrawn": "2024-01-01T00:00:00Z",
    "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"}, "versions": ["3.1.2"]}]})"));
  index.add(rec(R"({"id": "GHSA-cccc",
    "affected": [{"package": {"ecosystem": "npm", "name": "jinja2"}, "versions": ["3.1.2"]}]})"));
  index.add(rec(R"({"id": "GHSA-dddd", "database_specific": {"severity": "LOW"},
    "affected": [{"package": {"ecosystem": "PyPI", "name": "torch"},
      "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "2.6.0"}]}]}]})"));
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(index.withdrawn(), 1u);

  AdvisoryReport rep =
      index.match({pkg("pypi", "jinja2", "3.1.2"), pkg("conda", "pytorch", "2.1.0"),
                   pkg("conda", "openssl", "3.1.4"), pkg("pypi", "jinja2", "3.1.4"),
                   pkg("pypi", "weird", "not-a-version")});
  EXPECT_EQ(rep.records, 4u);
  EXPECT_EQ(rep.withdrawn, 1u);
  EXPECT_EQ(rep.packagesChecked, 3u);
  ASSERT_EQ(rep.findings.size(), 2u);
  const Finding& j = rep.findings[0];
  EXPECT_EQ(j.id, "GHSA-aaaa");
  EXPECT_EQ(j.ids, (std::vector<std::string>{"GHSA-aaaa", "PYSEC-1"}));
  EXPECT_EQ(j.aliases, std::vector<std::string>{"CVE-1"});
  EXPECT_EQ(j.summary, "s1");
  EXPECT_EQ(j.severity.severity, Severity::kHigh);
  EXPECT_DOUBLE_EQ(j.severity.score, 7.5);
  EXPECT_EQ(j.fixed, "3.1.4");
  EXPECT_EQ(j.package.version, "3.1.2");
  const Finding& t = rep.findings[1];
  EXPECT_EQ(t.id, "GHSA-dddd");
  EXPECT_EQ(t.package.name, "pytorch");
  EXPECT_EQ(t.osv.name, "torch");
  EXPECT_EQ(t.osv.via, "conda table");
  EXPECT_EQ(t.severity.severity, Severity::kLow);
  EXPECT_EQ(t.fixed, "2.6.0");
  ASSERT_EQ(rep.notMatched.size(), 2u);
  EXPECT_EQ(rep.notMatched[0].package.name, "openssl");
  EXPECT_EQ(rep.notMatched[1].package.name, "weird");
  EXPECT_EQ(rep.notMatched[1].reason, "version \"not-a-version\" is not a PEP 440 version");
}

TEST(Match, ARecordWithTwoEntriesForOnePackageGivesTheFixOfTheAffectingOne) {
  AdvisoryIndex index;
  index.add(rec(R"({"id": "GHSA-34jh", "affected": [
    {"package": {"ecosystem": "PyPI", "name": "urllib3"},
     "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.26.19"}]}]},
    {"package": {"ecosystem": "PyPI", "name": "urllib3"},
     "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "2.0.0"}, {"fixed": "2.2.2"}]}]}]})"));
  auto rep = index.match({pkg("pypi", "urllib3", "1.26.18"), pkg("pypi", "urllib3", "2.0.7"),
                          pkg("pypi", "urllib3", "2.2.2")});
  ASSERT_EQ(rep.findings.size(), 2u);
  EXPECT_EQ(rep.findings[0].package.version, "1.26.18");
  EXPECT_EQ(rep.findings[0].fixed, "1.26.19");
  EXPECT_EQ(rep.findings[1].package.version, "2.0.7");
  EXPECT_EQ(rep.findings[1].fixed, "2.2.2");
}

}  // namespace
}  // namespace lockstep::advisories
