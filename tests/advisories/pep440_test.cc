// PEP 440 versions: vectors taken as facts from the PEP's text and from packaging's
// test suite (pypa/packaging tests/test_version.py: VERSIONS, the normalisation and
// invalid-version tables).
#include "advisories/pep440.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep::advisories {
namespace {

Pep440Version v(const std::string& s) {
  auto r = Pep440Version::parse(s);
  EXPECT_TRUE(r.isOk()) << s << ": " << r.status().message();
  return r.isOk() ? *r : Pep440Version();
}

void expectAscending(const std::vector<std::string>& versions) {
  for (size_t i = 0; i < versions.size(); ++i) {
    Pep440Version a = v(versions[i]);
    EXPECT_TRUE(a == a) << versions[i];
    for (size_t j = i + 1; j < versions.size(); ++j) {
      Pep440Version b = v(versions[j]);
      EXPECT_TRUE(a < b) << versions[i] << " < " << versions[j];
      EXPECT_TRUE(b > a) << versions[j] << " > " << versions[i];
      EXPECT_FALSE(a == b) << versions[i] << " != " << versions[j];
    }
  }
}

// PEP 440, "Summary of permitted suffixes and relative ordering": the example list.
TEST(Pep440, OrderingOfThePepsExample) {
  expectAscending({"1.dev0",
                   "1.0.dev456",
                   "1.0a1",
                   "1.0a2.dev456",
                   "1.0a12.dev456",
                   "1.0a12",
                   "1.0b1.dev456",
                   "1.0b2",
                   "1.0b2.post345.dev456",
                   "1.0b2.post345",
                   "1.0rc1.dev456",
                   "1.0rc1",
                   "1.0",
                   "1.0+abc.5",
                   "1.0+abc.7",
                   "1.0+5",
                   "1.0.post456.dev34",
                   "1.0.post456",
                   "1.0.15",
                   "1.1.dev1"});
}

// packaging's VERSIONS, in ascending order, with an implicit and an explicit epoch.
TEST(Pep440, OrderingOfPackagingsVersions) {
  const std::vector<std::string> base = {"1.0.dev0",
                                         "1.0.dev456",
                                         "1.0.dev456+local",
                                         "1.0a0",
                                         "1.0a0.post0.dev0",
                                         "1.0a0.post0",
                                         "1.0a1.dev1",
                                         "1.0a1.dev1+local",
                                         "1.0a1",
                                         "1.0a1+local",
                                         "1.0b0",
                                         "1.0b1.dev456",
                                         "1.0b2",
                                         "1.0b2.post345.dev456",
                                         "1.0b2.post345",
                                         "1.0b2-346",
                                         "1.0rc0",
                                         "1.0rc1.dev1",
                                         "1.0c1",
                                         "1.0rc2",
                                         "1.0",
                                         "1.0.post0.dev0",
                                         "1.0.post0",
                                         "1.0.post456.dev34",
                                         "1.0.post456",
                                         "1.0.post456+local",
                                         "1.0.1.dev1",
                                         "1.0.1a1",
                                         "1.0.1",
                                         "1.0.1+local",
                                         "1.0.1.post1",
                                         "1.1.dev1",
                                         "1.2+a",
                                         "1.2+abc",
                                         "1.2+abcdef",
                                         "1.2+def",
                                         "1.2+0",
                                         "1.2+1",
                                         "1.2+1.abc",
                                         "1.2+1.1",
                                         "1.2+1.1.0",
                                         "1.2+2",
                                         "1.2+123",
                                         "1.2+123456",
                                         "1.2.r32+123456",
                                         "1.2.rev33+123456"};
  std::vector<std::string> all = base;
  for (const auto& s : base) all.push_back("1!" + s);
  expectAscending(all);
}

TEST(Pep440, NormalisedSpellings) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1.0dev", "1.0.dev0"},
      {"1.0.dev", "1.0.dev0"},
      {"1.0-dev1", "1.0.dev1"},
      {"1.0DEV", "1.0.dev0"},
      {"1.0.DEV1", "1.0.dev1"},
      {"1.0a", "1.0a0"},
      {"1.0.a1", "1.0a1"},
      {"1.0-a", "1.0a0"},
      {"1.0alpha", "1.0a0"},
      {"1.0.alpha1", "1.0a1"},
      {"1.0-ALPHA1", "1.0a1"},
      {"1.0b", "1.0b0"},
      {"1.0-beta1", "1.0b1"},
      {"1.0.BETA", "1.0b0"},
      {"1.0c", "1.0rc0"},
      {"1.0.c1", "1.0rc1"},
      {"1.0rc", "1.0rc0"},
      {"1.0-RC1", "1.0rc1"},
      {"1.0post", "1.0.post0"},
      {"1.0.post", "1.0.post0"},
      {"1.0-post1", "1.0.post1"},
      {"1.0POST1", "1.0.post1"},
      {"1.0r", "1.0.post0"},
      {"1.0rev", "1.0.post0"},
      {"1.0.r1", "1.0.post1"},
      {"1.0.rev1", "1.0.post1"},
      {"1.0-5", "1.0.post5"},
      {"1.0-r5", "1.0.post5"},
      {"1.0-rev5", "1.0.post5"},
      {"1.0+AbC", "1.0+abc"},
      {"1.01", "1.1"},
      {"1.0a05", "1.0a5"},
      {"1.0b07", "1.0b7"},
      {"1.0c056", "1.0rc56"},
      {"1.0rc09", "1.0rc9"},
      {"1.0.post000", "1.0.post0"},
      {"1.1.dev09000", "1.1.dev9000"},
      {"00!1.2", "1.2"},
      {"0100!0.0", "100!0.0"},
      {"v1.0", "1.0"},
      {"   v1.0\t\n", "1.0"},
      {"7!1.0b2.post345.dev456", "7!1.0b2.post345.dev456"},
      {"0!1.0.4+8.0", "1.0.4+8.0"},
      {"1.2+123abc456", "1.2+123abc456"},
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(v(in).normalized(), want) << in;
  }
}

TEST(Pep440, InvalidVersionsAreRefusedWithTheText) {
  for (const std::string s : {"french toast",
                              "1.0+a+",
                              "1.0++",
                              "1.0+_foobar",
                              "1.0+foo&asd",
                              "1.0+1+1",
                              "1. 0",
                              "1 .0",
                              "1. 0a1",
                              "1 .0a1",
                              "1.0 a1",
                              "1.0a 1",
                              "\xd9\xa0\xd9\xa1\xd9\xa2.\xd9\xa3",
                              ".",
                              "..",
                              "1..0",
                              "1.0.",
                              ".1.0",
                              "1..2.3",
                              "1.0+\xc4\xb0",
                              "",
                              "1.0apple",
                              "1!",
                              "!1.0"}) {
    auto r = Pep440Version::parse(s);
    EXPECT_FALSE(r.isOk()) << s;
    if (!r.isOk()) {
      EXPECT_NE(r.status().message().find("\"" + s + "\" is not a PEP 440 version"),
                std::string::npos)
          << r.status().message();
    }
  }
}

TEST(Pep440, EqualityIgnoresTrailingZerosAndSpelling) {
  EXPECT_TRUE(v("1.0") == v("1.0.0"));
  EXPECT_TRUE(v("1.0rc1") == v("1.0c1"));
  EXPECT_TRUE(v("1.0.post0") == v("1.0-0"));
  EXPECT_FALSE(v("1.0") == v("1.0+local"));
  EXPECT_TRUE(v("2.3.1+cu121").publicVersion() == v("2.3.1"));
}

TEST(Pep440, NumbersOfAnyLengthCompareByValue) {
  EXPECT_TRUE(v("99999999999999999999999999.1") < v("100000000000000000000000000.0"));
  EXPECT_TRUE(v("1.0007") == v("1.7"));
  EXPECT_TRUE(v("2024.7.4") > v("2023.7.22"));
}

}  // namespace
}  // namespace lockstep::advisories
