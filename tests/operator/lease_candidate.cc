// lease_candidate: one leader-election candidate as its own process, for the
// two-process Lease test. Prints "LEADING <identity>" when it acquires the
// Lease and "STOPPED <identity>" when it stops leading; SIGTERM releases the
// Lease and exits 0; a lost lease exits 1.
//
//   lease_candidate --kubeconfig PATH --namespace NS --name LEASE --identity ID
//                   [--lease-ms 15000 --renew-ms 10000 --retry-ms 2000]
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

int main(int argc, char** argv) {
  runtime::blockTerminationSignals();
  std::string kubeconfig, ns, name, identity;
  long leaseMs = 15000, renewMs = 10000, retryMs = 2000;
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
