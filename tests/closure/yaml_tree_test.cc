// YamlTree (closure/yaml_tree.h) against yaml-cpp's YAML::Load, the parser it
// replaced for lock files: the same documents must give the same tree (node
// types, scalar text, lines), since conda-lock and pixi closure hashes are
// built from it and v1 never changes. yaml-cpp stays the reference here.
#include "closure/yaml_tree.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "tests/closure/testing_util.h"

namespace lockstep::closure {
namespace {

using internal::YamlNode;
using internal::YamlTree;
using testing::listFiles;
using testing::readFileOrDie;

// Why the two trees differ at `path`, or "" when they are the same. Null
// nodes' lines are compared only when asked: for an empty value ("key:" then a
// new line) yaml-cpp gives the line of the next token, libyaml the line of the
// empty value itself, which is what an error about it should name
// (CondaLock.AnEmptyEntryIsNamedByItsOwnLine).
std::string diff(const YAML::Node& want, const YamlNode& got, const std::string& path,
                 bool compareNullLines) {
  auto at = [&](const std::string& why) { return path + ": " + why; };
  const int wantLine = want.Mark().line + 1;
  switch (want.Type()) {
    case YAML::NodeType::Undefined:
      return at("undefined reference node");
    case YAML::NodeType::Null:
      if (!got.IsNull()) return at("want null");
      if (compareNullLines && got.line() != wantLine)
        return at("null line " + std::to_string(got.line()) + ", want " + std::to_string(wantLine));
      return "";
    case YAML::NodeType::Scalar:
      if (!got.IsScalar()) return at("want scalar \"" + want.Scalar() + "\"");
      if (std::string(got.Scalar()) != want.Scalar())
        return at("scalar \"" + std::string(got.Scalar()) + "\", want \"" + want.Scalar() + "\"");
      break;
    case YAML::NodeType::Sequence:
      if (!got.IsSequence()) return at("want sequence");
      if (got.childCount() != want.size()) return at("sequence size");
      for (size_t i = 0; i < want.size(); ++i) {
        std::string d =
            diff(want[i], got.child(i), path + "/" + std::to_string(i), compareNullLines);
        if (!d.empty()) return d;
      }
      break;
    case YAML::NodeType::Map: {
      if (!got.IsMap()) return at("want map");
      if (got.childCount() != 2 * want.size()) return at("map size");
      size_t i = 0;
      for (auto it = want.begin(); it != want.end(); ++it, i += 2) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
        std::string d = diff(it->first, got.child(i), path + "/key:" + key, compareNullLines);
        if (d.empty()) d = diff(it->second, got.child(i + 1), path + "/" + key, compareNullLines);
        if (!d.empty()) return d;
      }
      break;
    }
  }
  if (got.line() != wantLine)
    return at("line " + std::to_string(got.line()) + ", want " + std::to_string(wantLine));
  return "";
}

// "" when YamlTree and YAML::Load agree on `text` (both parse to the same
// tree, or both refuse it); else what differs.
std::string compare(const std::string& text, bool compareNullLines = false) {
  auto tree = YamlTree::parse(text, "doc", 2'000'000);
  YAML::Node want;
  try {
    want = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return tree.isOk() ? "yaml-cpp refuses (" + e.msg + "), YamlTree parses" : "";
  }
  if (!tree.isOk()) return "YamlTree refuses: " + tree.status().message();
  const YamlNode root = tree->root();
  if (!want.IsDefined() || (want.IsNull() && !root)) return root ? "want no document" : "";
  if (!root) return "no document";
  // The one known difference: a document that is only a tagged empty node
  // ("!x" and nothing after it) is null for yaml-cpp (its scanner ran out of
  // tokens) and a tagged empty scalar for libyaml. Both are refused by every
  // lock parser alike ("a conda-lock file is a YAML mapping").
  if (want.IsNull() && root.IsScalar() && root.Scalar().empty() && root.childCount() == 0 &&
      text.find('!') != std::string::npos) {
    return "";
  }
  return diff(want, root, "", compareNullLines);
}

// Constructs where YAML libraries are known to differ.
TEST(YamlTree, SameTreeAsYamlCppForTrickyConstructs) {
  const std::vector<std::string> docs = {
      // null forms, plain vs quoted vs tagged
      std::string("a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: 'null'\ng: \"~\"\nh: !!str null\n") +
          "i: !!str\nj: ! null\nk: nULL\nl: ''\nm: \"\"\nn: !!null null\n",
      // anchors, aliases, an anchor defined twice (the later one wins)
      "x: &a {k: v}\ny: *a\nz: &a [1]\nw: *a\n",
      // merge keys are ordinary keys at this level
      "base: &b {name: zlib}\npkg:\n  <<: *b\n  version: '1'\n",
      // only the first document
      "a: 1\n---\nb: 2\n",
      "--- \nfoo\n...\n",
      "%YAML 1.1\n---\na: 1\n",
      // a UTF-8 byte order mark
      std::string("\xEF\xBB\xBF") + "a: 1\n",
      // duplicate keys are both kept
      "a: 1\na: 2\n",
      // block scalars, multi-line plain and quoted scalars, escapes
      "a: |\n  x\n  y\nb: >-\n  folded\n  text\nc: |+\n  keep\n\nd: x\n",
      "a: one\n  two\n\n  three\nb: 'multi\n  line'\n",
      "a: \"\\u00e9\\t\\x41\\\"\"\nb: 'it''s'\nc: caf\xC3\xA9\n",
      // flow collections
      "a: [1, {b: c}, ~, '', [x]]\nb: {}\nc: []\nd: {e, f: }\n",
      // tabs inside values, CRLF line ends, trailing spaces
      "a: x\ty\nb: z  \n",
      "a: 1\r\nb:\r\n  - x\r\n",
      // sequences of nulls, complex and null keys
      "- \n- ~\n-\n- - a\n  - b\n",
      "? [a, b]\n: c\n~: d\n",
      // tags on collections; numbers and booleans stay text
      "a: !!map {b: c}\nc: !!seq [d]\nd: 0x1F\ne: true\nf: 1.0e3\n",
      // comments everywhere
      "# head\na: 1 # tail\n# between\nb: [1, # in flow\n  2]\n",
      // nothing but comments / empty
      "",
      "# only a comment\n",
      // a sequence of maps as locks write them
      "package:\n- name: a\n  hash:\n    md5: 1\n    sha256: 2\n- name: b\n",
  };
  for (const std::string& d : docs) EXPECT_EQ(compare(d), "") << d;
}

// Every YAML lock the tests and fuzzers use as input.
TEST(YamlTree, SameTreeAsYamlCppForEveryYamlFixtureAndSeed) {
  std::vector<std::string> paths;
  for (const char* sub : {"conda-lock", "pixi"}) {
    for (const auto& f : listFiles(testing::fixturesDir() + "/" + sub))
      paths.push_back(testing::fixturesDir() + "/" + sub + "/" + f);
  }
  paths.push_back(testing::testdataDir() + "/vectors/cuda-conda.conda-lock.yml");
  for (const auto& f : listFiles(testing::testdataDir() + "/../fuzz/seeds")) {
    if (f.ends_with(".yml")) paths.push_back(testing::testdataDir() + "/../fuzz/seeds/" + f);
  }
  ASSERT_GE(paths.size(), 8u);
  for (const auto& p : paths) EXPECT_EQ(compare(readFileOrDie(p), true), "") << p;
}

// The committed fuzz corpus: mostly damaged locks. Wherever both libraries
// read a document, the trees are the same.
TEST(YamlTree, SameTreeAsYamlCppWhereBothParseTheFuzzCorpus) {
  const std::string dir = testing::testdataDir() + "/../fuzz/corpus/fuzz_closure_yaml";
  size_t both = 0, files = 0, onlyYamlCpp = 0, onlyLibyaml = 0;
  for (const auto& f : listFiles(dir)) {
    const std::string text = readFileOrDie(dir + "/" + f);
    ++files;
    auto tree = YamlTree::parse(text, "doc", 2'000'000);
    YAML::Node want;
    try {
      want = YAML::Load(text);
    } catch (const YAML::Exception&) {
      if (tree.isOk()) ++onlyLibyaml;
      continue;
    }
    if (!tree.isOk()) {
      ++onlyYamlCpp;
      continue;
    }
    ++both;
    EXPECT_EQ(compare(text), "") << f;
  }
  std::printf("%zu files: both read %zu, only yaml-cpp %zu, only libyaml %zu\n", files, both,
              onlyYamlCpp, onlyLibyaml);
  EXPECT_GE(both, 40u) << "the corpus should hold documents both libraries read";
}

}  // namespace
}  // namespace lockstep::closure
