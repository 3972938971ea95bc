#include "tests/closure/testing_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lockstep::closure::testing {

std::string fixturesDir() { return LOCKSTEP_FIXTURES_DIR; }
std::string testdataDir() { return LOCKSTEP_TESTDATA_DIR; }
std::string docsDir() { return LOCKSTEP_DOCS_DIR; }

std::string readFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> listFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  auto it = std::filesystem::recursive_directory_iterator(dir, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(std::filesystem::relative(it->path(), dir).string());
  }
  // A listing that stopped early would make every "for each file" test pass vacuously.
  if (ec) ADD_FAILURE() << "cannot list " << dir << ": " << ec.message();
  std::sort(out.begin(), out.end());
  return out;
}

Closure mustCompute(const std::string& text, const ClosureOptions& options) {
  auto r = computeClosure(text, options);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? *r : Closure{};
}

}  // namespace lockstep::closure::testing
