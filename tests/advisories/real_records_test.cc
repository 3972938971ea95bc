// Real OSV records (testdata/osv: GitHub's and PyPA's advisory databases, provenance in
// PROVENANCE.tsv) against the real lock fixtures of tests/closure. The expectations are
// read off the records' ranges: each lock is checked for what affects it and for the
// records whose fix it already has (a fixed version is the first unaffected one).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "advisories/match.h"
#include "advisories/osv.h"

namespace lockstep::advisories {
namespace {

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<OsvRecord> records() {
  std::vector<OsvRecord> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(LOCKSTEP_OSV_TESTDATA_DIR)) {
    if (e.path().extension() != ".json") continue;
    auto r = parseOsvRecord(readFile(e.path()), e.path().filename().string());
    EXPECT_TRUE(r.isOk()) << r.status().message();
    if (r.isOk()) out.push_back(*r);
  }
  return out;
}

const AdvisoryIndex& index() {
  static const AdvisoryIndex kIndex = [] {
    AdvisoryIndex i;
    for (auto& r : records()) i.add(std::move(r));
    return i;
  }();
  return kIndex;
}

AdvisoryReport matchLock(const std::string& fixture) {
  closure::ClosureOptions o;
  o.allowUnhashed = true;
  o.sourceName = fixture;
  auto c = closure::computeClosure(readFile(std::string(LOCKSTEP_FIXTURES_DIR) + "/" + fixture), o);
  EXPECT_TRUE(c.isOk()) << c.status().message();
  return c.isOk() ? index().match(c->packages) : AdvisoryReport{};
}

// "package version id severity fixed" per finding, in report order.
std::vector<std::string> summary(const AdvisoryReport& r) {
  std::vector<std::string> out;
  for (const Finding& f : r.findings) {
    out.push_back(f.package.name + " " + f.package.version + " " + f.id + " " +
                  std::string(severityName(f.severity.severity)) + " " + f.fixed);
  }
  return out;
}

TEST(RealRecords, AllParseAndEveryGithubRecordsCvssAgreesWithItsWord) {
  auto all = records();
  ASSERT_EQ(all.size(), 13u);
  size_t checked = 0;
  for (const OsvRecord& r : all) {
    if (r.id.rfind("GHSA-", 0) != 0) continue;
    RatedSeverity computed = rateSeverity(r, nullptr);
    ASSERT_GT(computed.score, 0) << r.id << ": " << computed.basis;
    auto word = parseSeverity(r.databaseSeverity);
    ASSERT_TRUE(word.isOk()) << r.id;
    EXPECT_EQ(computed.severity, *word) << r.id << " " << computed.basis << " " << computed.score;
    ++checked;
  }
  EXPECT_EQ(checked, 4u);
  // Base scores worked out by hand from the vectors (v3.1 section 7).
  std::map<std::string, double> scores;
  for (const OsvRecord& r : all) scores[r.id] = rateSeverity(r, nullptr).score;
  EXPECT_DOUBLE_EQ(scores["GHSA-h5c8-rqwp-cp95"], 5.4);
  EXPECT_DOUBLE_EQ(scores["GHSA-34jh-p97f-mpxf"], 4.4);
  EXPECT_DOUBLE_EQ(scores["GHSA-jjg7-2v4v-x38h"], 6.2);
  EXPECT_DOUBLE_EQ(scores["PYSEC-2024-60"], 7.5);
}

TEST(RealRecords, PipLockWithTorch21) {
  AdvisoryReport r =
      matchLock("pip/torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt");
  // idna 3.4: PYSEC-2024-60 and GHSA-jjg7-2v4v-x38h are CVE-2024-3651, one finding, rated
  // by PyPA's vector (7.5) over GitHub's (6.2). urllib3 2.0.7 already has PYSEC-2023-212's
  // fix (2.0.7) but not GHSA-34jh-p97f-mpxf's (2.2.2). pillow 10.1.0 is past
  // PYSEC-2023-227 (fixed 10.0.0). certifi 2023.7.22, requests 2.31.0, setuptools 68.2.2
  // and torch 2.1.0 are the fixed versions (or later) of their records.
  EXPECT_EQ(summary(r), (std::vector<std::string>{
                            "idna 3.4 GHSA-jjg7-2v4v-x38h high 3.7",
                            "jinja2 3.1.2 GHSA-h5c8-rqwp-cp95 medium 3.1.3",
                            "pillow 10.1.0 GHSA-44wm-f244-xhp3 medium 10.3.0",
                            "urllib3 2.0.7 GHSA-34jh-p97f-mpxf medium 2.2.2",
                            "werkzeug 3.0.0 PYSEC-2023-221 high 3.0.1",
                        }));
  EXPECT_EQ(r.findings[0].ids, (std::vector<std::string>{"GHSA-jjg7-2v4v-x38h", "PYSEC-2024-60"}));
  EXPECT_EQ(r.findings[0].aliases, std::vector<std::string>{"CVE-2024-3651"});
  EXPECT_EQ(r.findings[4].aliases,
            (std::vector<std::string>{"CVE-2023-46136", "GHSA-hrfv-mqp8-q5rw"}));
  EXPECT_TRUE(r.notMatched.empty());
  EXPECT_EQ(r.packagesChecked, 78u);
}

TEST(RealRecords, PipLockWithEveryFixAlready) {
  // certifi 2024.7.4, idna 3.7, requests 2.31.0, urllib3 2.6.3: each at or past the fix.
  AdvisoryReport r = matchLock("pip/requests-only-mozilla-translations-splitter.requirements.txt");
  EXPECT_TRUE(r.findings.empty()) << ::testing::PrintToString(summary(r));
  EXPECT_EQ(r.packagesChecked, 5u);
}

TEST(RealRecords, PoetryLockWithTorch113) {
  // torch 1.13.1 is PYSEC-2022-43015's fix; urllib3 1.26.18 is PYSEC-2023-212's fix but
  // below GHSA-34jh-p97f-mpxf's 1.26.19 (its first affected entry).
  AdvisoryReport r =
      matchLock("poetry/torch-1.13.1-cu11-lockv2.0-poetry1.7-rreece-poetry-torch.poetry.lock");
  EXPECT_EQ(summary(r), (std::vector<std::string>{
                            "idna 3.4 GHSA-jjg7-2v4v-x38h high 3.7",
                            "urllib3 1.26.18 GHSA-34jh-p97f-mpxf medium 1.26.19",
                        }));
}

TEST(RealRecords, UvLockWithALocalTorchBuild) {
  // torch 2.3.1+cu121 is compared as 2.3.1; jinja2 3.1.3 is GHSA-h5c8-rqwp-cp95's fix.
  AdvisoryReport r = matchLock("uv/torch-cu121-yyhhenry-uv-torch-env.uv.lock");
  EXPECT_EQ(summary(r),
            (std::vector<std::string>{"pillow 10.2.0 GHSA-44wm-f244-xhp3 medium 10.3.0"}));
}

TEST(RealRecords, CondaLockThroughTheNameTable) {
  AdvisoryReport r = matchLock("conda-lock/pytorch-cu118-01ai-yi.conda-lock.yml");
  EXPECT_EQ(summary(r), (std::vector<std::string>{
                            "idna 3.4 GHSA-jjg7-2v4v-x38h high 3.7",
                            "jinja2 3.1.2 GHSA-h5c8-rqwp-cp95 medium 3.1.3",
                            "urllib3 2.0.7 GHSA-34jh-p97f-mpxf medium 2.2.2",
                        }));
  for (const Finding& f : r.findings) EXPECT_EQ(f.osv.via, "conda table") << f.package.name;
  auto notMatched = [&](const std::string& name) {
    return std::any_of(r.notMatched.begin(), r.notMatched.end(),
                       [&](const NotMatched& n) { return n.package.name == name; });
  };
  // The C library, the interpreter and CUDA are reported, never taken as clean; the
  // Python binding of xxhash is looked up.
  EXPECT_TRUE(notMatched("openssl"));
  EXPECT_TRUE(notMatched("xxhash"));
  EXPECT_TRUE(notMatched("python"));
  EXPECT_TRUE(notMatched("cudatoolkit"));
  EXPECT_FALSE(notMatched("python-xxhash"));
  EXPECT_FALSE(notMatched("pytorch"));
  EXPECT_EQ(r.packagesChecked + r.notMatched.size(), 195u);
}

}  // namespace
}  // namespace lockstep::advisories
