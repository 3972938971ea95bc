// CVSS base scores (vectors and scores from the examples of FIRST's CVSS v3.1 and v2
// documents), severity words, and SemVer precedence (semver.org section 11).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "advisories/cvss.h"
#include "advisories/semver.h"
#include "advisories/severity.h"

namespace lockstep::advisories {
namespace {

TEST(Cvss3, BaseScoresOfTheSpecificationsExamples) {
  const std::vector<std::pair<std::string, double>> cases = {
      // CVE-2013-1937 (phpMyAdmin reflected XSS)
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N", 6.1},
      // CVE-2013-0375 (MySQL stored SQL injection)
      {"CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N", 6.4},
      // CVE-2014-3566 (SSLv3 POODLE)
      {"CVSS:3.1/AV:N/AC:H/PR:N/UI:R/S:U/C:L/I:N/A:N", 3.1},
      // CVE-2012-1516 (VMware guest to host escape)
      {"CVSS:3.1/AV:N/AC:L/PR:L/UI:N/S:C/C:H/I:H/A:H", 9.9},
      // CVE-2014-0160 (Heartbleed)
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N", 7.5},
      // CVE-2014-6271 (Shellshock)
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8},
      // CVE-2008-1447 (DNS cache poisoning)
      {"CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:C/C:N/I:H/A:N", 6.8},
      // CVE-2014-2005 (Sophos login screen bypass)
      {"CVSS:3.1/AV:P/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 6.8},
      // CVE-2010-0467 (Joomla directory traversal)
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:L/I:N/A:N", 5.8},
      // CVE-2016-1645 (Chrome PDFium)
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", 8.8},
      // No impact: 0.0 whatever the exploitability.
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0},
      // v3.0 prefix and temporal metrics: the base score is the same.
      {"CVSS:3.0/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H/E:P/RL:O/RC:C", 9.8},
  };
  for (const auto& [vector, score] : cases) {
    auto s = cvss3BaseScore(vector);
    ASSERT_TRUE(s.isOk()) << vector << ": " << s.status().message();
    EXPECT_DOUBLE_EQ(s->baseScore, score) << vector;
    EXPECT_EQ(s->rating, severityOfScore(score)) << vector;
  }
}

TEST(Cvss3, BadVectorsNameWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", "expected the prefix CVSS:3.0/ or CVSS:3.1/"},
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H", "base metric \"A\" missing"},
      {"CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", "AV value \"X\" is not defined"},
      {"CVSS:3.1/AV:N/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", "metric \"AV\" given twice"},
      {"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H/ZZ:1", "unknown metric \"ZZ\""},
      {"CVSS:3.1/AV:N//AC:L", "bad part \"\""},
  };
  for (const auto& [vector, want] : cases) {
    auto s = cvss3BaseScore(vector);
    ASSERT_FALSE(s.isOk()) << vector;
    EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();
  }
}

TEST(Cvss2, BaseScoresOfTheGuidesExamples) {
  const std::vector<std::tuple<std::string, double, Severity>> cases = {
      // CVE-2002-0392 (Apache chunked encoding)
      {"AV:N/AC:L/Au:N/C:N/I:N/A:C", 7.8, Severity::kHigh},
      // CVE-2003-0818 (Microsoft ASN.1)
      {"AV:N/AC:L/Au:N/C:C/I:C/A:C", 10.0, Severity::kHigh},
      // CVE-2003-0062 (NOD32 antivirus)
      {"(AV:L/AC:H/Au:N/C:C/I:C/A:C)", 6.2, Severity::kMedium},
      {"AV:N/AC:L/Au:N/C:N/I:N/A:N", 0.0, Severity::kNone},
  };
  for (const auto& [vector, score, rating] : cases) {
    auto s = cvss2BaseScore(vector);
    ASSERT_TRUE(s.isOk()) << vector << ": " << s.status().message();
    EXPECT_DOUBLE_EQ(s->baseScore, score) << vector;
    EXPECT_EQ(s->rating, rating) << vector;
  }
  EXPECT_FALSE(cvss2BaseScore("AV:N/AC:L/Au:N/C:N/I:N").isOk());
}

TEST(Severity, WordsRatingsAndThresholds) {
  EXPECT_EQ(*parseSeverity("MODERATE"), Severity::kMedium);
  EXPECT_EQ(*parseSeverity("medium"), Severity::kMedium);
  EXPECT_EQ(*parseSeverity("Critical"), Severity::kCritical);
  EXPECT_FALSE(parseSeverity("unknown").isOk());
  EXPECT_FALSE(parseSeverity("severe").isOk());
  EXPECT_EQ(severityOfScore(0.0), Severity::kNone);
  EXPECT_EQ(severityOfScore(0.1), Severity::kLow);
  EXPECT_EQ(severityOfScore(3.9), Severity::kLow);
  EXPECT_EQ(severityOfScore(4.0), Severity::kMedium);
  EXPECT_EQ(severityOfScore(6.9), Severity::kMedium);
  EXPECT_EQ(severityOfScore(7.0), Severity::kHigh);
  EXPECT_EQ(severityOfScore(8.9), Severity::kHigh);
  EXPECT_EQ(severityOfScore(9.0), Severity::kCritical);
  EXPECT_TRUE(exceeds(Severity::kHigh, Severity::kMedium));
  EXPECT_FALSE(exceeds(Severity::kMedium, Severity::kMedium));
  EXPECT_FALSE(exceeds(Severity::kLow, Severity::kMedium));
  // A severity nobody gave is over every bar.
  EXPECT_TRUE(exceeds(Severity::kUnknown, Severity::kCritical));
}

SemVer sv(const std::string& s) {
  auto r = SemVer::parse(s);
  EXPECT_TRUE(r.isOk()) << s << ": " << r.status().message();
  return r.isOk() ? *r : *SemVer::parse("0.0.0");
}

TEST(SemVer, PrecedenceOfTheSpecsExample) {
  // semver.org section 11: 1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0-beta <
  // 1.0.0-beta.2 < 1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0; 1.0.0 < 2.0.0 < 2.1.0 < 2.1.1.
  const std::vector<std::string> order = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                                          "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                                          "1.0.0-rc.1",  "1.0.0",         "2.0.0",
                                          "2.1.0",       "2.1.1"};
  for (size_t i = 0; i < order.size(); ++i) {
    for (size_t j = i + 1; j < order.size(); ++j) {
      EXPECT_TRUE(sv(order[i]) < sv(order[j])) << order[i] << " < " << order[j];
    }
  }
  EXPECT_TRUE(sv("1.0.0+build.1") == sv("1.0.0"));
  EXPECT_TRUE(sv("v1.2.3") == sv("1.2.3"));
  EXPECT_FALSE(SemVer::parse("1.2").isOk());
  EXPECT_FALSE(SemVer::parse("1.2.x").isOk());
  EXPECT_FALSE(SemVer::parse("1.2.3-").isOk());
}

}  // namespace
}  // namespace lockstep::advisories
