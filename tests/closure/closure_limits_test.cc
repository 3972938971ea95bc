// Hostile locks (issue 13, items 4 and 6): amplification, over-limit input and
// quadratic shapes finish quickly, and an over-limit lock is a ResourceExhausted
// error naming what is over (docs/limits.md).
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "closure/closure.h"
#include "tests/closure/testing_util.h"

namespace lockstep::closure {
namespace {

using testing::mustCompute;

const std::string kA(64, 'a');
const std::string kB(64, 'b');

// An IncludeReader over a map that counts reads and refuses after `maxReads` in
// total, so a parser that re-reads includes fails fast instead of running away.
class CountingReader : public IncludeReader {
 public:
  CountingReader(std::map<std::string, std::string> files, int maxReads)
      : inner_(std::move(files)), maxReads_(maxReads) {}
  StatusOr<std::string> read(const std::string& name, size_t maxBytes) const override {
    if (++total_ > maxReads_) {
      return invalidArgument("read " + std::to_string(total_) + " times: includes are re-read");
    }
    ++reads_[name];
    return inner_.read(name, maxBytes);
  }
  int reads(const std::string& name) const {
    auto it = reads_.find(name);
    return it == reads_.end() ? 0 : it->second;
  }

 private:
  MapIncludeReader inner_;
  int maxReads_;
  mutable int total_ = 0;
  mutable std::map<std::string, int> reads_;
};

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

ClosureOptions pipOptions(const IncludeReader* reader) {
  ClosureOptions o;
  o.format = LockFormat::kPip;
  o.sourceName = "r.txt";
  o.includes = reader;
  return o;
}

Status errorOf(const std::string& text, const ClosureOptions& o) {
  auto r = computeClosure(text, o);
  EXPECT_FALSE(r.isOk()) << "parsed: " << (r.isOk() ? r->canonicalText : "");
  return r.status();
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- pip includes (item 4) -------------------------------------------------

// The report's reproduction: a 27 KB ConfigMap that parsed b.txt nine million
// times (3.5 GB RSS and still running after a minute).
TEST(PipIncludes, RepeatedIncludesAreReadAndParsedOnce) {
  CountingReader reader(
      {{"a.txt", repeat("-r b.txt\n", 3000)}, {"b.txt", "six==1.16.0 --hash=sha256:" + kA + "\n"}},
      /*maxReads=*/100);
  const std::string r = repeat("-r a.txt\n", 3000);
  Closure c = mustCompute(r, pipOptions(&reader));
  // Counted, not timed: a file is parsed right after it is read, so one read each is one
  // parse each (the defect read b.txt nine million times).
  EXPECT_EQ(c.packageCount(), 1u);
  EXPECT_EQ(reader.reads("a.txt"), 1);
  EXPECT_EQ(reader.reads("b.txt"), 1);
  // The same closure as including b.txt once: repeats change nothing.
  MapIncludeReader once(
      std::map<std::string, std::string>{{"b.txt", "six==1.16.0 --hash=sha256:" + kA + "\n"}});
  EXPECT_EQ(c.closureHash, mustCompute("-r b.txt\n", pipOptions(&once)).closureHash);
}

TEST(PipIncludes, DiamondIncludesGiveTheSameClosureAsBefore) {
  MapIncludeReader reader(std::map<std::string, std::string>{
      {"left.txt", "-r shared.txt\nidna==3.7 --hash=sha256:" + kB + "\n"},
      {"right.txt", "-r ./shared.txt\n"},
      {"shared.txt", "requests==2.32.3 --hash=sha256:" + kA + "\n"}});
  Closure c = mustCompute("-r left.txt\n-r right.txt\n", pipOptions(&reader));
  EXPECT_EQ(c.canonicalText,
            "pypi\tidna\t3.7\tsha256:" + kB + "\npypi\trequests\t2.32.3\tsha256:" + kA + "\n");
}

TEST(PipIncludes, CyclesAndDepthAreStillErrors) {
  MapIncludeReader reader(
      std::map<std::string, std::string>{{"a.txt", "-r b.txt\n"},
                                         {"b.txt", "-r a.txt\n"},
                                         {"1.txt", "-r 2.txt\n"},
                                         {"2.txt", "-r 3.txt\n"},
                                         {"3.txt", "-r 4.txt\n"},
                                         {"4.txt", "-r 5.txt\n"},
                                         {"5.txt", "-r 6.txt\n"},
                                         {"6.txt", "-r 7.txt\n"},
                                         {"7.txt", "-r 8.txt\n"},
                                         {"8.txt", "-r 9.txt\n"},
                                         {"9.txt", "six==1.16.0 --hash=sha256:" + kA + "\n"}});
  Status cycle = errorOf("-r a.txt\n", pipOptions(&reader));
  EXPECT_EQ(cycle.code(), Code::kInvalidArgument);
  EXPECT_NE(cycle.message().find("b.txt:1: -r: include \"a.txt\" is recursive"), std::string::npos)
      << cycle.message();
  Status deep = errorOf("-r 1.txt\n", pipOptions(&reader));
  EXPECT_EQ(deep.code(), Code::kInvalidArgument);
  EXPECT_NE(deep.message().find("nested too deeply"), std::string::npos) << deep.message();
}

TEST(PipIncludes, TotalIncludedBytesAreCapped) {
  MapIncludeReader reader(std::map<std::string, std::string>{{"a.txt", repeat("# padding\n", 50)},
                                                             {"b.txt", repeat("# padding\n", 50)}});
  ClosureOptions o = pipOptions(&reader);
  o.limits.maxBytes = 900;  // r.txt + a.txt fit; b.txt does not
  EXPECT_TRUE(computeClosure("-r a.txt\n", o).isOk());
  Status s = errorOf("-r a.txt\n-r b.txt\n", o);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("r.txt:2: -r: include \"b.txt\" takes the lock and its includes over "
                             "900 bytes"),
            std::string::npos)
      << s.message();
}

TEST(PipIncludes, TotalLinesAreCapped) {
  MapIncludeReader reader(std::map<std::string, std::string>{{"a.txt", repeat("\n", 100)}});
  ClosureOptions o = pipOptions(&reader);
  o.limits.maxLines = 100;
  Status s = errorOf("-r a.txt\n", o);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("over 100 lines"), std::string::npos) << s.message();
}

TEST(PipIncludes, DistinctIncludedFilesAreCapped) {
  std::map<std::string, std::string> files;
  std::string r;
  for (size_t i = 0; i <= kMaxIncludeFiles; ++i) {
    files["f" + std::to_string(i) + ".txt"] = "# empty\n";
    r += "-r f" + std::to_string(i) + ".txt\n";
  }
  MapIncludeReader reader(files);
  Status s = errorOf(r, pipOptions(&reader));
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("the limit is 256 included files"), std::string::npos) << s.message();
}

TEST(PipIncludes, PackagesAreCapped) {
  std::string r;
  for (int i = 0; i < 11; ++i) {
    r += "p" + std::to_string(i) + "==1 --hash=sha256:" + kA + "\n";
  }
  ClosureOptions o = pipOptions(nullptr);
  o.limits.maxEntries = 10;
  Status s = errorOf(r, o);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("r.txt:11: requirement: more than 10 requirements"), std::string::npos)
      << s.message();
}

TEST(IncludeReader, MapReaderRefusesTextOverTheBudget) {
  MapIncludeReader reader(std::map<std::string, std::string>{{"a.txt", "12345"}});
  EXPECT_TRUE(reader.read("a.txt", 5).isOk());
  EXPECT_EQ(reader.read("a.txt", 4).status().code(), Code::kResourceExhausted);
}

// ---- every format (item 6) -------------------------------------------------

TEST(Limits, LockOverTheByteLimitIsRefusedBeforeParsing) {
  std::string big(kMaxLockBytes + 1, '#');
  ClosureOptions o;
  o.sourceName = "uv.lock";
  Status s = errorOf(big, o);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.message(), "uv.lock: size: the lock is 16777217 bytes; the limit is 16777216");
}

TEST(Limits, LockOverTheLineLimitIsRefused) {
  ClosureOptions o;
  o.format = LockFormat::kUv;
  o.limits.maxLines = 1000;
  Status s = errorOf(repeat("\n", 1001), o);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("1001 lines; the limit is 1000"), std::string::npos) << s.message();
}

TEST(Limits, EntriesAreCappedInEveryFormat) {
  ClosureOptions o;
  o.limits.maxEntries = 2;
  o.allowUnhashed = true;
  const std::string uv = repeat("[[package]]\nname = \"a\"\nversion = \"1\"\n", 3);
  const std::string conda =
      "version: 1\npackage:\n" +
      repeat("- {name: a, version: '1', manager: conda, platform: linux-64}\n", 3);
  const std::string pixi =
      "version: 6\nenvironments:\n  default:\n    packages:\n      linux-64:\n" +
      repeat("      - conda: https://x/a-1-0.conda\n", 3) + "packages:\n" +
      "- conda: https://x/a-1-0.conda\n";
  const std::string flox = R"({"lockfile-version": 1, "packages": [)" +
                           repeat(R"({"install_id": "a", "system": "x86_64-linux"},)", 2) +
                           R"({"install_id": "a", "system": "x86_64-linux"}]})";
  const std::string nix =
      "[" + repeat(R"({"path": "/nix/store/2qk0j5lbc3vn2q4zxn1kg5cjkpdxwxja-a"},)", 2) +
      R"({"path": "/nix/store/2qk0j5lbc3vn2q4zxn1kg5cjkpdxwxja-a"}])";
  for (const std::string& text : {uv, conda, pixi, flox, nix}) {
    auto r = computeClosure(text, o);
    ASSERT_FALSE(r.isOk()) << text;
    EXPECT_EQ(r.status().code(), Code::kResourceExhausted) << r.status().toString();
    EXPECT_NE(r.status().message().find("the limit is 2"), std::string::npos)
        << r.status().message();
  }
}

TEST(Limits, ErrorMessagesAreBounded) {
  // An unpinned requirement quotes its text; 100 KB of it must not reach a status condition.
  ClosureOptions o;
  o.format = LockFormat::kPip;
  Status s = errorOf("x" + std::string(100000, 'y') + ">=1\n", o);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_LT(s.message().size(), 1100u);
  EXPECT_NE(s.message().find("... (1000"), std::string::npos) << s.message().substr(1000);
}

// ---- YAML (item 6) ---------------------------------------------------------

// Nine levels of nine aliases stand for 9^9 (387 million) nodes in 400 bytes.
std::string billionLaughs(const std::string& prefix) {
  std::string t = prefix + "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string p = "*l" + std::to_string(i - 1);
    t += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + p;
    for (int k = 1; k < 9; ++k) t += ", " + p;
    t += "]\n";
  }
  return t;
}

TEST(Yaml, BillionLaughsIsRefusedAtTheNodeCap) {
  for (LockFormat f : {LockFormat::kCondaLock, LockFormat::kPixi}) {
    ClosureOptions o;
    o.format = f;
    o.sourceName = "lock.yml";
    // The node cap bounds the work (no wall-clock limit): refused at the cap, not expanded.
    Status s = errorOf(billionLaughs("version: 1\npackage: []\n"), o);
    EXPECT_EQ(s.code(), Code::kResourceExhausted);
    EXPECT_NE(s.message().find("lock.yml:9: yaml: more than 2000000 nodes"), std::string::npos)
        << s.message();
  }
}

TEST(Yaml, AliasesWithinTheLimitStillParse) {
  // PyYAML writes anchors for shared objects; a lock that uses a few is read as
  // if they were written out.
  const std::string t =
      "version: 1\nmetadata:\n  platforms: &p [linux-64]\npackage:\n"
      "- &e {name: zlib, version: '1.3', manager: conda, platform: linux-64,"
      " hash: {sha256: " +
      kA + "}}\n- *e\n";
  Closure c = mustCompute(t, {});
  EXPECT_EQ(c.canonicalText, "conda\tzlib\t1.3\tsha256:" + kA + "\n");
}

TEST(Yaml, AliasToAnEnclosingNodeIsAnError) {
  Status s = errorOf("version: 1\npackage: &p [*p]\n", {});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("cycle"), std::string::npos) << s.message();
}

// The nesting check on the text before parsing (closure/yaml_locks.cc), at its
// boundaries: 64 flow levels, 50 "- "/"? " entries or 401 indentation bytes on a line.
TEST(Yaml, NestingLimitsAtTheBoundary) {
  ClosureOptions o;
  o.format = LockFormat::kCondaLock;
  auto nestingError = [&](const std::string& t) {
    const std::string m = errorOf(t, o).message();
    return m.find("nesting too deep") == std::string::npos ? std::string() : m;
  };
  const std::string head = "version: 1\n# x [ { ] }\n";
  auto flow = [](int n) { return repeat("[", n) + "a" + repeat("]", n); };
  EXPECT_EQ(nestingError(head + "package: " + flow(64) + "\n"), "");
  EXPECT_EQ(nestingError(head + "package: [" + flow(63) + ", " + flow(63) + "]\n"), "");
  EXPECT_EQ(nestingError(head + "package: " + flow(65) + "\n"), "lock:3: yaml: nesting too deep");
  EXPECT_EQ(nestingError(head + "package:\n" + repeat("- ", 50) + "a\n"), "");
  EXPECT_EQ(nestingError(head + "package:\n" + repeat("- ", 51) + "a\n"),
            "lock:4: yaml: nesting too deep");
  EXPECT_EQ(nestingError(head + repeat(" ", 401) + "# indented\npackage: []\n"), "");
  EXPECT_EQ(nestingError(head + repeat(" ", 402) + "# indented\npackage: []\n"),
            "lock:3: yaml: nesting too deep");
}

TEST(Yaml, NodeCountIsCapped) {
  ClosureOptions o;
  o.format = LockFormat::kCondaLock;
  o.limits.maxYamlNodes = 100;
  Status s = errorOf("version: 1\npackage: [" + repeat("1, ", 200) + "1]\n", o);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
}

// Platforms were collected with a linear search per entry: quadratic in the
// number of distinct platforms (100,000 took 40 s; now about a second).
TEST(Yaml, ManyPlatformsStayLinear) {
  const size_t n = 100000;
  std::string t = "version: 1\nmetadata:\n  platforms:\n";
  for (size_t i = 0; i < n; ++i) t += "  - p" + std::to_string(i) + "\n";
  t += "package:\n- {name: a, version: '1', manager: conda, platform: p7, hash: {sha256: " + kA +
       "}}\n";
  ClosureOptions o;
  o.platform = "p7";
  auto start = std::chrono::steady_clock::now();
  Closure c = mustCompute(t, o);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(c.packageCount(), 1u);
}

// ---- TOML (item 6) ---------------------------------------------------------

// A uv.lock named "uv.lock" in messages.
ClosureOptions uvLock() {
  ClosureOptions o;
  o.format = LockFormat::kUv;
  o.sourceName = "uv.lock";
  return o;
}

// A kept crasher of tests/closure/testdata/crashers/.
std::string crasherFile(const std::string& name) {
  return testing::readFileOrDie(testing::testdataDir() + "/crashers/" + name);
}

// toml++ 3.3 reaches __builtin_unreachable() classifying U+FEBF (and other
// non-ASCII characters) as whitespace; found by fuzz_closure_toml.
// The text check skips runs of plain bytes (closure/toml_locks.cc): what
// follows a run is still seen, on the right line.
TEST(Toml, TextCheckSeesWhatFollowsPlainRuns) {
  ClosureOptions o = uvLock();
  const std::string ok = "version = 1 # caf\xC3\xA9\n[[package]]\nname = \"caf\xC3\xA9\"\n";
  EXPECT_EQ(errorOf(ok + "version = 1\xC3\xA9\n", o).message(),
            "uv.lock:4: toml: non-ASCII character outside a string or comment (TOML allows none "
            "there)");
  EXPECT_EQ(errorOf(ok + "version = \"1\x7F\"\n", o).message(),
            "uv.lock:4: toml: control character U+007F (TOML allows none)");
  EXPECT_EQ(errorOf(ok + "version = 1 # \x01\n", o).message(),
            "uv.lock:4: toml: control character U+0001 (TOML allows none)");
}

TEST(Toml, NonAsciiOutsideStringsIsRefusedBeforeTomlpp) {
  ClosureOptions o = uvLock();
  const std::string crasher = crasherFile("toml-unicode-whitespace.lock");
  EXPECT_EQ(errorOf(crasher, o).message(),
            "uv.lock:1: toml: non-ASCII character outside a string or comment (TOML allows none "
            "there)");
  EXPECT_NE(errorOf(R"(a = "x\é")"
                    "\n",
                    o)
                .message()
                .find("after a backslash"),
            std::string::npos);
  EXPECT_NE(
      errorOf("a = \"\"\"x \\\n  \xc3\xa9\"\"\"\n", o).message().find("line-ending backslash"),
      std::string::npos);
  // A backslash and blanks before a non-ASCII character: toml++ asks about it
  // while it looks for the line end (crashers/toml-backslash-blanks-unicode.lock).
  for (const char* text :
       {"a = \"\"\"x\\\t\xc3\xa9\"\"\"\n", "a = \"\"\"x\\ \t \xc3\xa9\"\"\"\n"}) {
    EXPECT_EQ(errorOf(text, o).message(),
              "uv.lock:1: toml: non-ASCII character after a backslash (TOML allows none there)");
  }
  const std::string kept = crasherFile("toml-backslash-blanks-unicode.lock");
  EXPECT_EQ(errorOf(kept, o).message(),
            "uv.lock:1: toml: non-ASCII character after a backslash (TOML allows none there)");
}

// A bare value runs to its terminator, quotes included: toml++ classifies every
// byte of `2x"é"` as it reads the number, so the quotes open no string (found by
// fuzz_closure_toml in CI: crashers/toml-quote-in-bare-value.lock).
TEST(Toml, QuotesInsideABareValueOpenNoString) {
  ClosureOptions o = uvLock();
  const std::string refused =
      "uv.lock:2: toml: non-ASCII character outside a string or comment (TOML allows none there)";
  const std::string crasher = crasherFile("toml-quote-in-bare-value.lock");
  EXPECT_EQ(errorOf("# lock\n" + crasher, o).message(), refused);
  for (const char* value :
       {"1\"\xC3\xA9\"", "1'\xC3\xA9'", "1.5\"\xC3\xA9\"", "0x1\"\xC3\xA9\"",
        "1979-05-27\"\xC3\xA9\"", "1979-05-27 07:32:00\"\xC3\xA9\"",
        "1979-05-27 07:32:00.\"\xC3\xA9\"", "[1\"\xC3\xA9\"]", "[[1], 2\"\xC3\xA9\"]",
        "{a = 1\"\xC3\xA9\"}", "[{a = 1}, 2\"\xC3\xA9\"]"}) {
    SCOPED_TRACE(value);
    EXPECT_EQ(errorOf(std::string("# lock\nversion = ") + value + "\n", o).message(), refused);
  }
  EXPECT_EQ(errorOf("version = [\n  1, # x\n  2\"\xC3\xA9\"]\n", o).message(),
            "uv.lock:3: toml: non-ASCII character outside a string or comment (TOML allows none "
            "there)");
  // Where a string can open (a value, an array element, a key, a dotted key, a
  // table header), its non-ASCII characters are kept.
  o.format = LockFormat::kPoetry;
  const std::string ok =
      std::string("[[package]]\nname = \"caf\xC3\xA9\"\n") +
      "version = \"1\"\nfiles = [{file = \"x.whl\", hash = \"sha256:" + kA +
      "\"}]\n\"k\xC3\xA9y\".\"d\xC3\xA9\" = [\"\xC3\xA9\", '\xC3\xA9', {x = "
      "\"\xC3\xA9\"}]\n[\"t\xC3\xA9\".'u\xC3\xA9']\nwhen = 1979-05-27 07:32:00\n";
  Closure c = mustCompute(ok, o);
  EXPECT_EQ(c.packageCount(), 1u);
}

TEST(Toml, NonAsciiInStringsAndCommentsStillParses) {
  ClosureOptions o;
  o.format = LockFormat::kPoetry;
  const std::string t = R"(# café ﺿ
[[package]]
name = "naïve"
version = "1"
description = "ﺿ \" é"
notes = '''é
ﺿ'''
more = """é \
  x ﺿ"""""
files = [{file = "x.whl", hash = "sha256:)" +
                        kA + R"("}]
)";
  Closure c = mustCompute(t, o);
  EXPECT_EQ(c.canonicalText, "pypi\tnaïve\t1\tsha256:" + kA + "\n");
}

TEST(Pixi, EntriesSharingOneLocationAreCapped) {
  std::string t =
      "version: 6\nenvironments:\n  default:\n    packages:\n      linux-64:\n"
      "      - conda: .\n        build: b0\npackages:\n";
  for (int i = 0; i < 65; ++i) {
    t += "- conda: .\n  name: p\n  version: '1'\n  build: b" + std::to_string(i) + "\n";
  }
  Status s = errorOf(t, {});
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("more than 64 entries share the location \".\""), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace lockstep::closure
