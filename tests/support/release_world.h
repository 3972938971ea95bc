// ReleaseWorld: the shared world of the ModelRelease cluster tests. One
// operator process per test binary (the chart's pieces installed once), and
// per test a fresh enforcing namespace with RuntimeEnv "torch" Ready, on
// request a Prometheus whose exporter simulates that namespace's serving
// pods (model_server.h), a registry for the whole binary, and the
// invariant monitor (invariant_monitor.h) on the model's prod world. It
// also has the helpers every test used to copy: release builders with this
// namespace's hash, createRelease, get, waitPhase, readyPods.
//
//   class MyTest : public ::testing::Test {
//    protected:
//     static void SetUpTestSuite() { ReleaseWorld::startOperator(); }
//     static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
//     void SetUp() override { ASSERT_EQ(world_.setUp({.prometheus = true, .monitor = true}), ""); }
//     void TearDown() override { world_.tearDown(HasFailure()); }
//     ReleaseWorld world_;
//   };
//
// tearDown fails the test (EXPECT) with every invariant violation and its
// event trail. The serving pods run on the test world's defaults (warm-up and
// termination, tests/cluster/kwok/stages.yaml) unless a test's prod stage
// says noWarmup().
// Thread-safety: use from the test thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/prometheus/prometheus_world.h"
#include "tests/support/builders.h"
#include "tests/support/cluster_env.h"
#include "tests/support/invariant_monitor.h"
#include "tests/support/operator_process.h"
#include "tests/support/registry_world.h"

namespace lockstep::testing {

// The RuntimeEnv image and lock every release world uses.
extern const std::string kTestImage;
extern const std::string kTestLock;
extern const std::string kTestOtherLock;  // another closure hash
// registry.example/models/gpt2@sha256:<64 x c>
std::string testPackage(char c);

class ReleaseWorld {
 public:
  struct Options {
    std::string nsPrefix = "mr";
    bool enforce = true;  // label the namespace lockstep.dev/enforce=enforce
    bool prometheus = false;
    std::string scrapeInterval = "2s";  // "" = prometheus.sh's default (5s)
    bool monitor = false;
    std::string model = "gpt2";
  };

  // Suite: installs the chart's cluster pieces and starts the shared operator.
  // "" or what failed.
  // `prepare` runs after the pieces are installed, before the operator starts
  // (a test binary's own RBAC).
  static std::string startOperator(const std::vector<std::string>& args = {},
                                   const std::function<void()>& prepare = {});
  static void stopOperator();
  // The shared operator, restarted with the same arguments when it stopped.
  static OperatorProcess& op();
  static std::string ensureOperator();
  // A registry for the whole test binary (started on first use).
  static RegistryWorld* registry(std::string& error);

  std::string setUp(const Options& options);
  void tearDown(bool failed);

  const std::string& ns() const { return ns_; }
  const std::string& hash() const { return hash_; }
  const std::string& model() const { return options_.model; }
  PrometheusWorld& prom() { return *prom_; }
  InvariantMonitor* monitor() { return monitor_.get(); }
  // Starts the monitor now (setUp's `monitor` does it for the whole test).
  std::string startMonitor(MonitorOptions options = {});
  void stopMonitor() { monitor_.reset(); }

  // modelRelease(name) in this namespace: the model, `package`, RuntimeEnv torch, its hash.
  ModelReleaseBuilder release(const std::string& name, const std::string& package) const;
  CommandResult create(const ModelReleaseBuilder& release) const;
  CommandResult createRelease(const std::string& name, const std::string& package,
                              const nlohmann::json& stages) const;

  nlohmann::json get(const std::string& kind, const std::string& name) const;
  // Waits until the release's status.phase is `phase` (EXPECT on timeout); the release.
  nlohmann::json waitPhase(const std::string& name, const std::string& phase,
                           std::chrono::seconds timeout = std::chrono::seconds(150)) const;
  // Ready serving pods (not terminating) per "track/release" of the model.
  std::map<std::string, int> readyPods() const;
  // The release the model's stable Deployment runs.
  std::string stableRelease() const;

  // The error ratio of a track's pods ("canary") in this namespace, 0 while no
  // pod has failed a request (`or vector(0)`), over `window`.
  std::string trackErrorRatio(const std::string& track, const std::string& window = "10s") const;
  // The same over one release's pods.
  std::string releaseErrorRatio(const std::string& release,
                                const std::string& window = "10s") const;
  // The AnalysisProvider (cluster-scoped) of this world's Prometheus: named after
  // the namespace, http allowed (a local test Prometheus), open to this
  // namespace only (spec.namespaceSelector) with free-form queries allowed,
  // deleted at tearDown.
  const std::string& providerName() const { return provider_; }
  // Another provider for `address` (spec fields `extra` merged in), deleted at
  // tearDown; its name, or "" when it could not be created (EXPECT).
  std::string addProvider(const std::string& address, const nlohmann::json& extra = {}) const;
  // A canary step analysed by `query` (default: the canary track's error ratio) on
  // this world's provider (or one for `address`): max 0.1, `count` measurements `interval` apart,
  // the first `initialDelay` after the weight is Ready (default: the queries' 10 s window
  // plus one 2 s scrape, so that no measurement judges another release's pods).
  nlohmann::json analysedStep(int weight, int count, const std::string& query = "",
                              const std::string& address = "", const std::string& interval = "2s",
                              const std::string& initialDelay = "12s") const;

 private:
  Options options_;
  std::string ns_, hash_;
  std::unique_ptr<PrometheusWorld> prom_;
  std::unique_ptr<InvariantMonitor> monitor_;
  std::string provider_;
  mutable std::vector<std::string> providers_;  // every provider this world created
};

}  // namespace lockstep::testing
