#include "common/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep {
namespace {

TEST(Base64, RoundTripsEveryLengthModuloThree) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto d = base64Decode(base64Encode(s));
    ASSERT_TRUE(d.has_value()) << s;
    EXPECT_EQ(*d, s);
  }
}

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64Decode("Zm9vYg").value_or("x"), "foob");  // padding optional
}

TEST(Base64, UrlSafeOnlyWhereAsked) {
  // 0xfb 0xff encodes to "+/8=" (standard) and "-_8=" (URL-safe).
  EXPECT_EQ(base64Encode("\xfb\xff"), "+/8=");
  EXPECT_FALSE(base64Decode("-_8=").has_value());
  EXPECT_EQ(base64Decode("-_8=", Base64Alphabet::kStandardOrUrlSafe).value_or(""), "\xfb\xff");
  EXPECT_EQ(base64Decode("+/8=", Base64Alphabet::kStandardOrUrlSafe).value_or(""), "\xfb\xff");
}

TEST(Base64, RejectsGarbage) {
  EXPECT_FALSE(base64Decode("dXNl*jpz").has_value());
  EXPECT_FALSE(base64Decode("dXNlcg==cjpz").has_value());  // data after padding
  EXPECT_FALSE(base64Decode("Z").has_value());             // not a whole byte
  EXPECT_FALSE(base64Decode("Zg===").has_value());
}

}  // namespace
}  // namespace lockstep
