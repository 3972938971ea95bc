// tests/cluster/cluster.sh itself: starting twice reuses the cluster, starting
// after a crash recovers, and `down` leaves no process and no directory behind.
// It starts a private cluster of its own beside the shared one.
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/support/cluster_env.h"

namespace lockstep::testing {
namespace {

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined"
#endif

const std::string kScript = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/cluster/cluster.sh";

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Processes whose command line names the directory.
int processesUsing(const std::string& dir) {
  auto r = run({"pgrep", "-f", "--", dir + "/"});
  int n = 0;
  for (char c : r.out) n += c == '\n';
  return n;
}

TEST(ClusterScript, UpTwiceReusesUpAfterCrashRecoversDownCleansUp) {
  const std::string dir = "/tmp/" + uniqueName("lockstep-script");
  auto up = run({kScript, "up", "--dir", dir});
  ASSERT_EQ(up.exitCode, 0) << up.err;
  EXPECT_NE(up.out.find("export LOCKSTEP_KUBECONFIG=" + dir + "/kubeconfig"), std::string::npos)
      << up.out;
  EXPECT_EQ(run({kScript, "status", "--dir", dir}).exitCode, 0);

  // Twice: the running cluster is reused, not restarted.
  auto again = run({kScript, "up", "--dir", dir});
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_NE(again.err.find("reusing the running cluster"), std::string::npos) << again.err;

  // Crash: every component killed at once; `up` starts a fresh, working cluster.
  run({"pkill", "-KILL", "-f", "--", dir + "/"});
  ASSERT_TRUE(eventually([&] { return processesUsing(dir) == 0; }, std::chrono::seconds(10)));
  auto recovered = run({kScript, "up", "--dir", dir});
  ASSERT_EQ(recovered.exitCode, 0) << recovered.err;
  EXPECT_EQ(recovered.err.find("reusing"), std::string::npos) << recovered.err;
  auto nodes = run({toolsBin() + "/kubectl", "--kubeconfig", dir + "/kubeconfig", "get", "nodes",
                    "--no-headers"});
  EXPECT_EQ(nodes.exitCode, 0) << nodes.err;
  int ready = 0;
  for (size_t p = nodes.out.find(" Ready "); p != std::string::npos;
       p = nodes.out.find(" Ready ", p + 1))
    ++ready;
  EXPECT_EQ(ready, 5) << nodes.out;

  // Down: nothing left.
  ASSERT_EQ(run({kScript, "down", "--dir", dir}).exitCode, 0);
  EXPECT_EQ(processesUsing(dir), 0);
  EXPECT_FALSE(exists(dir));
  // Down again is harmless.
  EXPECT_EQ(run({kScript, "down", "--dir", dir}).exitCode, 0);
}

}  // namespace
}  // namespace lockstep::testing
