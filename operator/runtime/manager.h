// Manager: owns what a controller process shares — the client, one informer
// per watched collection, the controllers, leader election, the event
// recorder, metrics (/metrics) and health probes (/healthz, /readyz).
//
// run(): starts the servers and informers, waits for the caches to sync
// (readyz fails until then, and again while an informer cannot list or watch
// for informerFailureGrace), starts the Runnables that run on every replica
// (the webhook server), then — once elected, when leader election is on —
// starts the controllers and the Runnables that need leadership. A Runnable
// that fails stops the manager, and run() returns its error. It returns when stop() is called
// (controllers drained, lease released) or with an error when the caches do not sync or the lease
// is lost (the process should exit non-zero, as controller-runtime does). On stop() the
// controllers stop first (queued requests dropped, in-flight reconciles finished) while the lease
// is still held and renewed, and only then is the lease released; on a lost lease every write
// through client() is refused at once and the controllers stop without draining. Thread-safety:
// register informers/controllers before run(); stop() from any thread (stopOnSignals() wires
// SIGINT/SIGTERM to it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "operator/kube/async_event_sink.h"
#include "operator/kube/client.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/informer.h"
#include "operator/runtime/controller.h"
#include "operator/runtime/health_server.h"
#include "operator/runtime/leader_election.h"
#include "operator/runtime/metrics.h"
#include "operator/runtime/runnable.h"

namespace lockstep::runtime {

struct ManagerOptions {
  std::string name = "lockstep-operator";  // event source, leader-election identity prefix
  bool leaderElection = false;
  LeaderElectionConfig leaderElectionConfig;    // identity defaults to defaultIdentity()
  std::string healthAddress = "0.0.0.0:8081";   // "" disables; port 0 picks one
  std::string metricsAddress = "0.0.0.0:8080";  // "" disables; port 0 picks one
  Clock::Duration cacheSyncTimeout = std::chrono::minutes(2);
  // Namespaced install: informers of namespaced resources asked for all
  // namespaces watch only these (empty: all namespaces).
  std::vector<std::string> watchNamespaces;
  // Every informer re-opens a watch still open this long past its timeoutSeconds.
  std::chrono::seconds watchStallSlack{30};
  // /readyz fails while an informer has been failing to list or watch this long (a
  // replica that no longer follows the cluster stops taking admission traffic).
  Clock::Duration informerFailureGrace = std::chrono::seconds(30);
  Clock* clock = nullptr;  // SystemClock when null
};

class Manager {
 public:
  Manager(std::shared_ptr<kube::Client> client, ManagerOptions options);
  ~Manager();

  // The client of the controllers and the event recorder: the same transport, but every
  // write (anything not a GET) is refused with Cancelled unless this replica is acting as
  // the leader — checked per write, so a reconcile in flight when the lease is lost cannot
  // write after it. Reads (informers) are never refused.
  kube::Client& client() { return *leaderClient_; }
  std::shared_ptr<kube::Client> sharedClient() { return leaderClient_; }
  // OK while the controllers run and (with leader election) the lease is held.
  Status writesAllowed() const;
  // The shared informer for a collection; the same options give the same informer.
  // All namespaces of a namespaced resource means options().watchNamespaces.
  kube::Informer& informer(const kube::InformerOptions& options);
  kube::Informer& informer(const kube::Resource& resource, const std::string& ns = "");
  Controller& addController(ControllerOptions options, std::shared_ptr<Reconciler> reconciler);
  // Adds a Runnable: started once the caches synced, on every replica, or only
  // on the leader when `needsLeaderElection` (stopped when leadership is lost).
  void add(std::shared_ptr<Runnable> runnable, bool needsLeaderElection);
  // Events of the controllers: queued, written by one sender thread
  // (kube::AsyncEventSink) so a slow Events API never slows a reconcile.
  kube::EventSink& events() { return *events_; }
  // Events written before the call returns, for a controller whose Events are
  // its audit trail and must not be lost to a crash between the Event and the
  // status write that follows it (the ModelRelease controller).
  kube::EventSink& syncEvents() { return *recorder_; }
  // The namespaces of a namespaced install (empty: all namespaces).
  const std::vector<std::string>& watchNamespaces() const { return options_.watchNamespaces; }
  // The one clock of the process: controllers, informers and Runnables take it from here.
  Clock& clock() { return clock_; }
  Metrics& metrics() { return metrics_; }
  HealthServer& health() { return health_; }
  bool isLeader() const;

  Status run();
  void stop();
  // Blocks SIGINT/SIGTERM in this thread (call first thing in main, before any thread
  // starts) and starts a thread that calls stop() when one arrives.
  void stopOnSignals();
  int healthPort() const { return health_.port(); }
  int metricsPort() const { return metrics_.port(); }

 private:
  void startControllers();
  void stopControllers();
  void startRunnables(bool leaderOnly);
  void stopRunnables(bool leaderOnly);
  struct RunnableEntry {
    std::shared_ptr<Runnable> runnable;
    bool needsLeaderElection = false;
    std::thread thread;
  };

  std::shared_ptr<kube::Client> client_;  // unguarded: informers, the elector
  ManagerOptions options_;
  Clock& clock_;
  std::atomic<bool> acting_{false};  // controllers started and not yet stopped or lost
  std::shared_ptr<kube::Client> leaderClient_;
  Metrics metrics_;
  HealthServer health_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<kube::AsyncEventSink> events_;  // in front of recorder_
  std::vector<std::unique_ptr<kube::Informer>> informers_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  std::vector<std::unique_ptr<RunnableEntry>> runnables_;
  Status runnableError_;
  std::unique_ptr<LeaderElector> elector_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopRequested_ = false;
  bool controllersRunning_ = false;
  std::atomic<bool> synced_{false};
  std::thread signalThread_;
};

// Blocks SIGINT and SIGTERM for the calling thread and the threads it creates later.
void blockTerminationSignals();
// For binaries without a Manager: blocks SIGINT/SIGTERM, runs `runnable` on the
// calling thread and stops it on the first signal; returns what start() returned.
Status runUntilSignal(const std::shared_ptr<Runnable>& runnable);
// The same for several: started together (the first on the calling thread); a
// signal or the first start() to fail stops them all; returns the first error.
Status runUntilSignal(const std::vector<std::shared_ptr<Runnable>>& runnables);

}  // namespace lockstep::runtime
