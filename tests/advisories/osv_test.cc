// OSV records: parsing, errors that name the source and the field, and severity rating.
#include "advisories/osv.h"

#include <gtest/gtest.h>

#include <string>

namespace lockstep::advisories {
namespace {

TEST(OsvParse, ReadsTheFieldsMatchingNeeds) {
  auto r = parseOsvRecord(R"({
    "id": "GHSA-xxxx-yyyy-zzzz", "modified": "2024-01-11T15:20:48Z",
    "aliases": ["CVE-2024-0001"], "summary": "a bug",
    "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N"}],
    "affected": [{
      "package": {"ecosystem": "PyPI", "name": "Jinja2", "purl": "pkg:pypi/jinja2"},
      "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "3.1.3"}]},
                 {"type": "GIT", "repo": "https://example.invalid/x", "events": [{"introduced": "0"}]}],
      "versions": ["3.1.2"],
      "ecosystem_specific": {"severity": "HIGH", "affects": ["x"]},
      "database_specific": {"source": "y"}
    }],
    "database_specific": {"severity": "MODERATE", "cwe_ids": ["CWE-79"]},
    "references": [{"type": "WEB", "url": "https://example.invalid"}],
    "x_unknown_field": {"kept": false}
  })",
                          "a.json");
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ(r->id, "GHSA-xxxx-yyyy-zzzz");
  EXPECT_EQ(r->aliases, std::vector<std::string>{"CVE-2024-0001"});
  EXPECT_EQ(r->summary, "a bug");
  EXPECT_FALSE(r->withdrawn);
  EXPECT_EQ(r->databaseSeverity, "MODERATE");
  ASSERT_EQ(r->affected.size(), 1u);
  const OsvAffected& a = r->affected[0];
  EXPECT_EQ(a.ecosystem, "PyPI");
  EXPECT_EQ(a.name, "Jinja2");
  EXPECT_EQ(a.purl, "pkg:pypi/jinja2");
  ASSERT_EQ(a.ranges.size(), 2u);
  EXPECT_EQ(a.ranges[0].type, RangeType::kEcosystem);
  EXPECT_EQ(a.ranges[1].type, RangeType::kGit);
  ASSERT_EQ(a.ranges[0].events.size(), 2u);
  EXPECT_EQ(a.ranges[0].events[1].kind, OsvEvent::Kind::kFixed);
  EXPECT_EQ(a.ranges[0].events[1].version, "3.1.3");
  EXPECT_EQ(a.versions, std::vector<std::string>{"3.1.2"});
  EXPECT_EQ(a.ecosystemSeverity, "HIGH");
  EXPECT_EQ(a.databaseSeverity, "");
}

TEST(OsvParse, ErrorsNameTheSourceAndTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"summary": "no id"})", "r.json: id: missing"},
      {R"({"id": 7})", "r.json: id: expected a string"},
      {R"({"id": "X", "aliases": "CVE-1"})", "r.json: aliases: expected an array of strings"},
      {R"({"id": "X", "affected": {}})", "r.json: affected: expected an array"},
      {R"({"id": "X", "affected": [{"ranges": [{"type": "ECOSYSTEM",
          "events": [{"introduced": "0", "fixed": "1.0"}]}]}]})",
       "r.json: affected[0].ranges[0].events[0]: expected exactly one of introduced, fixed, "
       "last_affected, limit"},
      {R"({"id": "X", "affected": [{"ranges": [{"type": "ECOSYSTEM", "events": [{}]}]}]})",
       "r.json: affected[0].ranges[0].events[0]: expected exactly one"},
      {R"({"id": "X", "affected": [{}, {"ranges": [{"events": []}]}]})",
       "r.json: affected[1].ranges[0].type: missing"},
      {R"({"id": "X", "affected": [{"ranges": [{"type": "SEMVER", "events": [{"fixed": 1}]}]}]})",
       "r.json: affected[0].ranges[0].events[0].fixed: expected a string"},
      {R"({"id": "X", "affected": [{"package": {"name": ["a"]}}]})",
       "r.json: affected[0].package.name: expected a string"},
      {R"({"id": "X", "affected": [{"versions": ["1", 2]}]})",
       "r.json: affected[0].versions[1]: expected a string"},
      {R"({"id": "X", "severity": [{"type": "CVSS_V3", "score": 9.8}]})",
       "r.json: severity[0].score: expected a string"},
      {"{\"id\": \"X\",\n \"summary\": \"a\"\n \"oops\"}", "r.json:3: not JSON"},
      {"[1, 2]", "r.json: (record): expected a JSON object"},
      // Found by fuzz_advisories_osv: a number no double holds is an error, not a throw.
      {R"({"id": "X", "database_specific": {"n": 1e7097}})", "r.json: not JSON: "},
  };
  for (const auto& [text, want] : cases) {
    auto r = parseOsvRecord(text, "r.json");
    ASSERT_FALSE(r.isOk()) << text;
    EXPECT_NE(r.status().message().find(want), std::string::npos)
        << "want \"" << want << "\" in: " << r.status().message();
  }
}

TEST(OsvParse, DeepNestingAndHugeRecordsAreRefusedBeforeParsing) {
  std::string deep = "{\"id\": \"X\", \"database_specific\": ";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  deep += "}";
  auto r = parseOsvRecord(deep, "deep.json");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  EXPECT_NE(r.status().message().find("deep.json: nested deeper than 64"), std::string::npos);
  // Brackets inside strings do not count.
  std::string quoted = "{\"id\": \"X\", \"summary\": \"" + std::string(200, '[') + "\"}";
  EXPECT_TRUE(parseOsvRecord(quoted, "q.json").isOk());
  std::string huge(kMaxRecordBytes + 1, ' ');
  EXPECT_EQ(parseOsvRecord(huge, "h.json").status().code(), Code::kResourceExhausted);
}

TEST(OsvParse, WithdrawnIsRecorded) {
  auto r = parseOsvRecord(R"({"id": "X", "withdrawn": "2024-01-01T00:00:00Z"})", "w.json");
  ASSERT_TRUE(r.isOk());
  EXPECT_TRUE(r->withdrawn);
}

OsvRecord recOsv(const std::string& text) {
  auto r = parseOsvRecord(text, "t.json");
  EXPECT_TRUE(r.isOk()) << r.status().message();
  return r.isOk() ? *r : OsvRecord{};
}

TEST(OsvSeverity, CvssV3FirstThenV2ThenTheDatabasesWord) {
  // v3 computed even when the database says otherwise.
  auto both = recOsv(R"({"id": "X",
    "severity": [{"type": "CVSS_V2", "score": "AV:N/AC:L/Au:N/C:N/I:N/A:P"},
                 {"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
    "database_specific": {"severity": "LOW"}})");
  RatedSeverity s = rateSeverity(both, nullptr);
  EXPECT_EQ(s.severity, Severity::kCritical);
  EXPECT_DOUBLE_EQ(s.score, 9.8);
  EXPECT_EQ(s.basis, "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H");

  auto v2 = recOsv(
      R"({"id": "X", "severity": [{"type": "CVSS_V2", "score": "AV:N/AC:L/Au:N/C:N/I:N/A:C"}]})");
  EXPECT_EQ(rateSeverity(v2, nullptr).severity, Severity::kHigh);
  EXPECT_DOUBLE_EQ(rateSeverity(v2, nullptr).score, 7.8);

  auto word = recOsv(R"({"id": "X", "database_specific": {"severity": "MODERATE"}})");
  EXPECT_EQ(rateSeverity(word, nullptr).severity, Severity::kMedium);
  EXPECT_EQ(rateSeverity(word, nullptr).basis, "database_specific.severity MODERATE");

  // A v4 vector alone is not scored: unknown, and the basis says why.
  auto v4 = recOsv(R"({"id": "X", "severity": [{"type": "CVSS_V4",
    "score": "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N"}]})");
  EXPECT_EQ(rateSeverity(v4, nullptr).severity, Severity::kUnknown);
  EXPECT_EQ(rateSeverity(v4, nullptr).basis, "only a CVSS v4 vector (not scored)");
  // ... but the database's word is used when there is one.
  auto v4word = recOsv(R"({"id": "X", "severity": [{"type": "CVSS_V4",
    "score": "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N"}],
    "database_specific": {"severity": "CRITICAL"}})");
  EXPECT_EQ(rateSeverity(v4word, nullptr).severity, Severity::kCritical);

  auto none = recOsv(R"({"id": "X"})");
  EXPECT_EQ(rateSeverity(none, nullptr).severity, Severity::kUnknown);
  EXPECT_EQ(rateSeverity(none, nullptr).basis, "no severity in the record");

  // A bad vector is skipped for the next source; alone it leaves the severity unknown
  // with the vector's error as the basis.
  auto bad = recOsv(R"({"id": "X", "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:Q"}]})");
  EXPECT_EQ(rateSeverity(bad, nullptr).severity, Severity::kUnknown);
  EXPECT_NE(rateSeverity(bad, nullptr).basis.find("CVSS vector"), std::string::npos);
}

TEST(OsvSeverity, AnAffectedEntrysOwnSeverityComesFirst) {
  auto r = recOsv(R"({"id": "X",
    "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"}],
    "affected": [
      {"package": {"ecosystem": "PyPI", "name": "a"},
       "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:H/PR:N/UI:R/S:U/C:L/I:N/A:N"}]},
      {"package": {"ecosystem": "PyPI", "name": "b"}, "ecosystem_specific": {"severity": "LOW"}}]})");
  EXPECT_EQ(rateSeverity(r, &r.affected[0]).severity, Severity::kLow);
  EXPECT_DOUBLE_EQ(rateSeverity(r, &r.affected[0]).score, 3.1);
  // The record's vector beats the entry's word.
  EXPECT_EQ(rateSeverity(r, &r.affected[1]).severity, Severity::kCritical);
}

}  // namespace
}  // namespace lockstep::advisories
