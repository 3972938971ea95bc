// run() from two threads at once (tests/support/process.h): the uninstall test
// runs helm in one thread while it polls with kubectl in another. A program one
// run() starts must not hold the pipes of another run() still in flight, or that
// run() reads until the other program ends (it did: the hook pod was missed
// while helm ran, CI of 5 December 2026).
#include "tests/support/process.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace lockstep::testing {
namespace process_test {

// What each open descriptor of this process points at ("pipe:[123]", a path...).
std::set<std::string> openTargets() {
  std::set<std::string> out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == std::to_string(own)) continue;
    char target[256];
    const std::string link = "/proc/self/fd/" + name;
    ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) out.insert(std::string(target, static_cast<size_t>(n)));
  }
  closedir(dir);
  return out;
}

TEST(RunTest, AProgramStartedMeanwhileDoesNotHoldAnotherRunsPipes) {
  const std::set<std::string> before = openTargets();
  // One run() in flight: its program sleeps while this thread starts another.
  auto slow = std::async(std::launch::async, [] { return run({"sleep", "2"}); });
  std::set<std::string> itsPipes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (itsPipes.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    itsPipes.clear();
    for (const std::string& t : openTargets())
      if (!before.contains(t) && t.rfind("pipe:", 0) == 0) itsPipes.insert(t);
    if (itsPipes.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(itsPipes.size(), 2u) << "the first run() never opened its pipes";

  // The second program lists what its own descriptors point at.
  auto listed = run({"sh", "-c", "for f in /proc/$$/fd/*; do readlink \"$f\"; done; true"});
  ASSERT_EQ(listed.exitCode, 0) << listed.err;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);)
    EXPECT_FALSE(itsPipes.contains(line))
        << "the second program holds the first run()'s pipe " << line << "\n"
        << listed.out;

  auto slept = slow.get();
  EXPECT_EQ(slept.exitCode, 0) << slept.err;
}

TEST(RunTest, OutputExitCodeAndInputOfOneProgram) {
  auto r = run({"sh", "-c", "cat; echo err >&2; exit 3"}, "in\n");
  EXPECT_EQ(r.exitCode, 3);
  EXPECT_EQ(r.out, "in\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(run({"/nonexistent/program"}).exitCode, 127);
}

}  // namespace process_test
}  // namespace lockstep::testing
