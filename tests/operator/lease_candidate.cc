// lease_candidate: one leader-election candidate as its own process, for the
// two-process Lease test. Prints "LEADING <identity>" when it acquires the
// Lease and "STOPPED <identity>" when it stops leading; SIGTERM releases the
// Lease and exits 0; a lost lease exits 1.
//
//   lease_candidate --kubeconfig PATH --namespace NS --name LEASE --identity ID
//                   [--lease-ms 15000 --renew-ms 10000 --retry-ms 2000]
//                   [--operator-work-ms MS]
//
// With --operator-work-ms it is a small operator instead: a Manager with leader election
// and one controller (one worker) over the namespace's ConfigMaps whose reconcile works for
// MS milliseconds (a stand-in for slow reconciles, so a backlog builds up), then
// merge-patches data.writer=ID through the Manager's client and prints
// "WROTE <identity> <name> <resourceVersion>" for each write the API server accepted.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "operator/kube/connect.h"
#include "operator/runtime/leader_election.h"
#include "operator/runtime/logging.h"
#include "operator/runtime/manager.h"

using namespace lockstep;

namespace {

class SlowWriter final : public runtime::Reconciler {
 public:
  SlowWriter(kube::Client& client, std::string identity, long workMs)
      : client_(client), identity_(std::move(identity)), workMs_(workMs) {}
  runtime::Result reconcile(const runtime::Request& r) override {
    // The work itself (not synchronisation): keeps a backlog queued behind this request.
    std::this_thread::sleep_for(std::chrono::milliseconds(workMs_));
    auto patched = client_.mergePatch(kube::resources::kConfigMaps, r.ns, r.name,
                                      {{"data", {{"writer", identity_}}}});
    if (!patched.isOk()) return runtime::Result::failed(patched.status());
    std::printf("WROTE %s %s %s\n", identity_.c_str(), r.name.c_str(),
                kube::resourceVersion(*patched).c_str());
    std::fflush(stdout);
    return runtime::Result::done();
  }

 private:
  kube::Client& client_;
  std::string identity_;
  long workMs_;
};

int runOperator(const std::shared_ptr<kube::Client>& client,
                const runtime::LeaderElectionConfig& cfg, long workMs) {
  runtime::ManagerOptions mo;
  mo.leaderElection = true;
  mo.leaderElectionConfig = cfg;
  mo.healthAddress = "";
  mo.metricsAddress = "";
  runtime::Manager manager(client, mo);
  auto& informer = manager.informer(kube::resources::kConfigMaps, cfg.ns);
  runtime::ControllerOptions co;
  co.name = "slow-writer";
  co.workers = 1;
  auto& controller = manager.addController(
      std::move(co), std::make_shared<SlowWriter>(manager.client(), cfg.identity, workMs));
  // Only the ConfigMaps the test made ("backlog-*", not kube-root-ca.crt), each once: our own
  // writes (updates) enqueue nothing.
  controller.watch(
      informer,
      [](const kube::Object& o) {
        std::vector<runtime::Request> out;
        if (kube::name(o).rfind("backlog-", 0) == 0)
          out.push_back({kube::namespaceOf(o), kube::name(o)});
        return out;
      },
      [](const kube::Object&, const kube::Object&) { return false; });
  manager.stopOnSignals();
  Status st = manager.run();
  if (!st.isOk()) {
    std::fprintf(stderr, "lease_candidate: %s\n", st.toString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  runtime::blockTerminationSignals();
  std::string kubeconfig, ns, name, identity;
  long leaseMs = 15000, renewMs = 10000, retryMs = 2000, workMs = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--kubeconfig")
      kubeconfig = value;
    else if (flag == "--namespace")
      ns = value;
    else if (flag == "--name")
      name = value;
    else if (flag == "--identity")
      identity = value;
    else if (flag == "--lease-ms")
      leaseMs = std::stol(value);
    else if (flag == "--renew-ms")
      renewMs = std::stol(value);
    else if (flag == "--retry-ms")
      retryMs = std::stol(value);
    else if (flag == "--operator-work-ms")
      workMs = std::stol(value);
    else {
      std::fprintf(stderr, "lease_candidate: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  (void)runtime::configureLogging({false, "info"});
  kube::ConnectOptions co;
  co.kubeconfigPath = kubeconfig;
  co.rest.requestTimeout = std::chrono::seconds(5);
  auto client = kube::connect(co);
  if (!client.isOk()) {
    std::fprintf(stderr, "lease_candidate: %s\n", client.status().toString().c_str());
    return 2;
  }
  runtime::LeaderElectionConfig cfg;
  cfg.ns = ns;
  cfg.name = name;
  cfg.identity = identity;
  cfg.leaseDuration = std::chrono::milliseconds(leaseMs);
  cfg.renewDeadline = std::chrono::milliseconds(renewMs);
  cfg.retryPeriod = std::chrono::milliseconds(retryMs);
  if (workMs >= 0) return runOperator(*client, cfg, workMs);
  runtime::LeaderCallbacks cb;
  cb.onStartedLeading = [&] {
    std::printf("LEADING %s\n", identity.c_str());
    std::fflush(stdout);
  };
  cb.onStoppedLeading = [&] {
    std::printf("STOPPED %s\n", identity.c_str());
    std::fflush(stdout);
  };
  runtime::LeaderElector elector(*client, cfg, cb);
  std::thread signals([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    sigwait(&set, &sig);
    elector.stop();
  });
  signals.detach();
  Status st = elector.run();
  if (!st.isOk()) {
    std::fprintf(stderr, "lease_candidate: %s\n", st.toString().c_str());
    return 1;
  }
  return 0;
}
