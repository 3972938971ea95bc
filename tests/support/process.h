// Child processes for tests: run() a program without a shell and capture
// its output, and read the `export KEY=VALUE` lines the service scripts
// (tests/cluster/*.sh up) print. No cluster needed: the Prometheus client
// tests use it as well as the cluster tests.
// Thread-safety: reentrant.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace lockstep::testing {

struct CommandResult {
  int exitCode = -1;
  std::string out;
  std::string err;
};

// Runs a program with arguments (no shell), optional stdin, captures output.
CommandResult run(const std::vector<std::string>& argv, const std::string& input = "");

// The KEY=VALUE of every line "export KEY=VALUE" in `text`.
std::map<std::string, std::string> exportsOf(const std::string& text);

// Path of a file under the source tree (tests/cluster/prometheus.sh, ...).
std::string sourcePath(const std::string& relative);

}  // namespace lockstep::testing
