// Test access to a real local Kubernetes control plane (tests/cluster/cluster.sh).
//
// Integration test binaries link `lockstep_cluster_env`, which provides main():
// under ctest with a resource spec (tools/test.sh) it uses the cluster ctest
// allocated (CTEST_RESOURCE_GROUP_0_CLUSTER=id:N: the Nth directory of
// LOCKSTEP_CLUSTER_DIRS); else it reuses the cluster named by
// LOCKSTEP_KUBECONFIG (and LOCKSTEP_TOOLS_BIN for kubectl/helm) when set, and
// otherwise starts a private cluster once for the binary and stops it at exit.
// Thread-safety: call from test bodies only.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace lockstep::testing {

// The runtime image, by digest, of the cluster tests' RuntimeEnvs (KWOK pulls nothing).
inline const std::string kClusterTestImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";

// Path of the admin kubeconfig of the running test cluster.
const std::string& kubeconfigPath();
// Directory holding kubectl, helm, kwok, ... built from tests/tools.
const std::string& toolsBin();
// The cluster's state directory (certs, logs); unique per cluster.
const std::string& clusterDir();

// Another local control plane for a multi-cluster test (the fleet suite):
// cluster.sh up in `dir` (cached tools, its own ports and certificates); the
// object stops it (cluster.sh down) when destroyed. `error` says why it did not start.
class ExtraCluster {
 public:
  explicit ExtraCluster(std::string dir);
  ~ExtraCluster();
  ExtraCluster(const ExtraCluster&) = delete;
  ExtraCluster& operator=(const ExtraCluster&) = delete;
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& tools() const { return tools_; }

 private:
  std::string dir_, kubeconfig_, tools_, error_;
};

// While it lives, kubectl(), kubeconfigPath(), toolsBin(), clusterDir() and
// everything built on them (OperatorProcess, ReleaseWorld) speak to `cluster`;
// the previous cluster comes back when it goes. Not for background threads
// (the invariant monitor): those keep the cluster they started on only if they
// copied its kubeconfig. Scopes nest.
class UseCluster {
 public:
  explicit UseCluster(const ExtraCluster& cluster);
  ~UseCluster();
  UseCluster(const UseCluster&) = delete;
  UseCluster& operator=(const UseCluster&) = delete;

 private:
  std::string kubeconfig_, tools_, dir_;  // the previous cluster's
};

// Runs kubectl against the test cluster: kubectl({"get", "nodes"}).
CommandResult kubectl(const std::vector<std::string>& args, const std::string& input = "");
// Runs the cluster script verb (e.g. "restart-apiserver", "compact-etcd").
CommandResult clusterScript(const std::vector<std::string>& args);

// kubectl ARGS -o json, parsed; a discarded (null) value when kubectl fails.
nlohmann::json kubectlJson(const std::vector<std::string>& args);
// A field ("status", "reason", "message") of the condition `type` in an
// object's status.conditions; "" when the object, its status or the condition
// is missing (never indexes a const object that lacks the key).
std::string conditionField(const nlohmann::json& object, const std::string& type,
                           const char* field = "status");

// A string field of an object's status ("phase"); "" when the object, its status or
// the field is missing, as it is between a create and the controller's first status write.
std::string statusField(const nlohmann::json& object, const char* field = "phase");

// Polls `probe` every 250 ms until it returns true or `timeout` passes. A probe that
// throws a json error (a field not there yet) counts as false for that poll.
// (Integration tests only: they wait on a real cluster. Unit tests never sleep.)
bool eventually(const std::function<bool()>& probe,
                std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The whole content of a file ("" when it cannot be read).
std::string readFile(const std::string& path);

// A free TCP port on 127.0.0.1 (bound, then released), outside the ephemeral range that
// outgoing connections take their ports from.
int freePort();

// A fresh namespace name for one test (lowercase, unique within the run).
std::string uniqueName(const std::string& prefix);

}  // namespace lockstep::testing
