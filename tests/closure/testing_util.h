// Test helpers for the closure tests: fixture paths and file reading.
#pragma once

#include <string>
#include <vector>

#include "closure/closure.h"

namespace lockstep::closure::testing {

std::string fixturesDir();  // the shared real lock files
std::string testdataDir();  // tests/closure/testdata
std::string docsDir();
std::string readFileOrDie(const std::string& path);
// Files under `dir` (recursive), relative to it, sorted; a directory that cannot be
// listed fails the test.
std::vector<std::string> listFiles(const std::string& dir);

// computeClosure() that fails the test (and returns an empty Closure) on error.
Closure mustCompute(const std::string& text, const ClosureOptions& options);

}  // namespace lockstep::closure::testing
