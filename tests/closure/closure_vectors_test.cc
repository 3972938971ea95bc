// Test vectors of docs/closure-hash.md are asserted here, so the document and the
// code cannot drift; and inputs the fuzzers once crashed on stay harmless.
#include <gtest/gtest.h>

#include <regex>

#include "closure/closure.h"
#include "tests/closure/testing_util.h"

namespace lockstep::closure {
namespace {

using testing::readFileOrDie;

struct DocVector {
  std::string file, options, canonical, hash;
};

// <!-- vector file="vectors/x" options="--platform linux-64" -->
// ```canonical
// ...lines...
// ```
// closureHash: `sha256:...`
std::vector<DocVector> docVectors() {
  std::string doc = readFileOrDie(testing::docsDir() + "/closure-hash.md");
  std::vector<DocVector> out;
  std::regex marker(R"re(<!-- vector file="([^"]+)" options="([^"]*)" -->)re");
  for (std::sregex_iterator it(doc.begin(), doc.end(), marker), end; it != end; ++it) {
    DocVector v{(*it)[1], (*it)[2], "", ""};
    size_t pos = static_cast<size_t>(it->position() + it->length());
    size_t open = doc.find("```canonical\n", pos);
    size_t close = doc.find("```\n", open + 13);
    size_t h = doc.find("closureHash: `", close);
    if (open == std::string::npos || close == std::string::npos || h == std::string::npos) {
      ADD_FAILURE() << "malformed vector for " << v.file;
      continue;
    }
    v.canonical = doc.substr(open + 13, close - open - 13);
    v.hash = doc.substr(h + 14, doc.find('`', h + 14) - h - 14);
    out.push_back(v);
  }
  return out;
}

TEST(DocVectors, DocumentedCanonicalTextAndHashAreWhatTheCodeComputes) {
  auto vectors = docVectors();
  // Every vector of the document is found (a marker the regex misses would be skipped).
  ASSERT_EQ(vectors.size(), 8u) << "vectors in docs/closure-hash.md: update this count with it";
  for (const auto& v : vectors) {
    ClosureOptions o;
    std::istringstream flags(v.options);
    std::string flag;
    while (flags >> flag) {
      if (flag == "--allow-unhashed")
        o.allowUnhashed = true;
      else if (flag == "--platform")
        flags >> o.platform;
      else if (flag == "--environment")
        flags >> o.environment;
      else
        ADD_FAILURE() << "unknown option in doc vector: " << flag;
    }
    auto r = computeClosure(readFileOrDie(testing::testdataDir() + "/" + v.file), o);
    ASSERT_TRUE(r.isOk()) << v.file << ": " << r.status().toString();
    EXPECT_EQ(r->canonicalText, v.canonical) << v.file;
    EXPECT_EQ(r->closureHash, v.hash) << v.file;
    EXPECT_EQ(closureHashOfCanonicalText(v.canonical), v.hash) << v.file;
  }
}

TEST(DocVectors, PipAndUvOfTheSameClosureHashTheSame) {
  const std::string dir = testing::testdataDir() + "/vectors/";
  auto pip = computeClosure(readFileOrDie(dir + "same-closure.requirements.txt"), {});
  auto uv = computeClosure(readFileOrDie(dir + "same-closure.uv.lock"), {});
  ASSERT_TRUE(pip.isOk() && uv.isOk());
  EXPECT_EQ(pip->format, LockFormat::kPip);
  EXPECT_EQ(uv->format, LockFormat::kUv);
  EXPECT_EQ(pip->closureHash, uv->closureHash);
}

TEST(FuzzRegressions, KeptCrashersAreHandled) {
  const std::string dir = testing::testdataDir() + "/crashers";
  size_t n = 0;
  for (const auto& file : testing::listFiles(dir)) {
    if (file == "README.md") continue;
    const std::string text = readFileOrDie(dir + "/" + file);
    for (auto f : {LockFormat::kAuto, LockFormat::kUv, LockFormat::kPip, LockFormat::kCondaLock,
                   LockFormat::kPixi, LockFormat::kPoetry, LockFormat::kFlox, LockFormat::kNix}) {
      ClosureOptions o;
      o.format = f;
      auto r = computeClosure(text, o);
      if (!r.isOk()) {
        EXPECT_EQ(r.status().code(), Code::kInvalidArgument)
            << file << ": " << r.status().toString();
      }
    }
    ++n;
  }
  // The kept crashers of testdata/crashers/README.md; zero would mean nothing was run.
  EXPECT_EQ(n, 10u) << "crashers found under " << dir << ": update this count when adding one";
  RecordProperty("crashers", static_cast<int>(n));
}

}  // namespace
}  // namespace lockstep::closure
