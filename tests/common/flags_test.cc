#include "common/flags.h"

#include <sstream>

#include <gtest/gtest.h>

namespace lockstep {
namespace {

std::vector<FlagSpec> specs() {
  return {
      {"name", "x", "a string"},
      {"verbose", "false", "a bool", FlagType::kBool},
      {"workers", "2", "an int", FlagType::kInt},
      {"timeout", "15s", "a duration", FlagType::kDuration},
      {"mode", "self", "a choice", FlagType::kChoice, {"self", "file"}},
  };
}

Status parse(Flags& f, std::vector<const char*> args) {
  args.insert(args.begin(), "prog");
  return f.parse(static_cast<int>(args.size()), args.data());
}

TEST(Flags, DefaultsAndBothSpellings) {
  Flags f(specs());
  ASSERT_TRUE(parse(f, {"--name=y", "--workers", "8", "--verbose", "--timeout=1h30m"}).isOk());
  EXPECT_EQ(f.get("name"), "y");
  EXPECT_EQ(f.getInt("workers"), 8);
  EXPECT_TRUE(f.getBool("verbose"));
  EXPECT_EQ(f.getDuration("timeout"), std::chrono::minutes(90));
  EXPECT_EQ(f.get("mode"), "self");
  Flags g(specs());
  ASSERT_TRUE(parse(g, {"--verbose=false"}).isOk());
  EXPECT_FALSE(g.getBool("verbose"));
  EXPECT_EQ(g.getDuration("timeout"), std::chrono::seconds(15));
}

TEST(Flags, BadValuesNameTheFlag) {
  struct Case {
    std::vector<const char*> args;
    std::string inMessage;
  };
  for (const Case& c : std::vector<Case>{
           {{"--workers=two"}, "flag --workers: want a non-negative integer, got \"two\""},
           {{"--workers=-1"}, "flag --workers"},
           {{"--workers=99999999999"}, "flag --workers"},
           {{"--timeout=soon"}, "flag --timeout"},
           {{"--timeout=5d"}, "unit \"d\""},
           {{"--verbose=yes"}, "flag --verbose: want true or false"},
           {{"--mode=both"}, "flag --mode: want one of self, file, got \"both\""},
           {{"--unknown=1"}, "unknown flag --unknown"},
           {{"--name"}, "flag --name needs a value"},
           {{"positional"}, "unexpected argument \"positional\""},
       }) {
    Flags f(specs());
    Status s = parse(f, c.args);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.args[0];
    EXPECT_NE(s.message().find(c.inMessage), std::string::npos) << s.message();
  }
}

TEST(Flags, ParseCommandLineExitsTwoOnABadValueAndZeroOnHelp) {
  std::ostringstream out, err;
  Flags bad(specs());
  const char* badArgs[] = {"prog", "--workers=many"};
  EXPECT_EQ(bad.parseCommandLine(2, badArgs, "prog", out, err), std::optional<int>(2));
  EXPECT_NE(err.str().find("prog: flag --workers"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("usage: prog"), std::string::npos);

  Flags help(specs());
  const char* helpArgs[] = {"prog", "--help"};
  EXPECT_EQ(help.parseCommandLine(2, helpArgs, "prog", out, err), std::optional<int>(0));
  EXPECT_NE(out.str().find("--timeout VALUE"), std::string::npos);

  Flags good(specs());
  const char* goodArgs[] = {"prog", "--workers=3"};
  EXPECT_EQ(good.parseCommandLine(2, goodArgs, "prog", out, err), std::nullopt);
}

TEST(Flags, ABadDefaultIsAnErrorToo) {
  Flags f({{"workers", "lots", "", FlagType::kInt}});
  EXPECT_FALSE(parse(f, {}).isOk());
}

TEST(ParseDuration, GoForms) {
  EXPECT_EQ(*parseDuration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(*parseDuration("2m"), std::chrono::minutes(2));
  EXPECT_EQ(*parseDuration("1.5h"), std::chrono::minutes(90));
  EXPECT_EQ(*parseDuration("1h2m3s"), std::chrono::seconds(3723));
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(*parseDuration("1ms"), std::chrono::milliseconds(1));
  EXPECT_EQ(*parseDuration("1s"), std::chrono::seconds(1));
  EXPECT_EQ(*parseDuration("1m"), std::chrono::minutes(1));
  EXPECT_EQ(*parseDuration("1h"), std::chrono::hours(1));
  EXPECT_EQ(*parseDuration("1m1ms"), std::chrono::milliseconds(60001));  // m then ms
  EXPECT_EQ(*parseDuration(".5s"), std::chrono::milliseconds(500));
  EXPECT_EQ(*parseDuration("0s"), std::chrono::milliseconds(0));
  // Units finer than the millisecond (Go's ns, us) and coarser than the hour are refused
  // with the unit and the ones accepted, never truncated to zero.
  for (const std::string unit : {"ns", "us", "d", "S", "sec"}) {
    auto d = parseDuration("500" + unit);
    ASSERT_FALSE(d.isOk()) << unit;
    EXPECT_NE(d.status().message().find("unit \"" + unit + "\" (want ms, s, m, h)"),
              std::string::npos)
        << d.status().message();
  }
}

TEST(ParseDuration, NeverThrows) {
  for (const std::string& bad :
       std::vector<std::string>{"", ".", ".s", "..s", "s", "1", "1x", "-1s", "1e9s", "1.5.s",
                                std::string(400, '9') + "s", "99999999999999999h", "1.2.3s"}) {
    StatusOr<std::chrono::milliseconds> d =
        StatusOr<std::chrono::milliseconds>(invalidArgument("not parsed"));
    EXPECT_NO_THROW(d = parseDuration(bad)) << bad;
    EXPECT_FALSE(d.isOk()) << bad;
  }
}

TEST(ParseNonNegativeInt, Bounds) {
  EXPECT_EQ(*parseNonNegativeInt("0"), 0);
  EXPECT_EQ(*parseNonNegativeInt("2147483647"), 2147483647);
  EXPECT_FALSE(parseNonNegativeInt("2147483648").isOk());
  EXPECT_FALSE(parseNonNegativeInt("").isOk());
  EXPECT_FALSE(parseNonNegativeInt("+1").isOk());
  EXPECT_FALSE(parseNonNegativeInt("1 ").isOk());
}

}  // namespace
}  // namespace lockstep
