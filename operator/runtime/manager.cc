#include "operator/runtime/manager.h"

#include <csignal>

#include <spdlog/spdlog.h>

#include "operator/runtime/write_guard.h"

namespace lockstep::runtime {

// How long a stopping manager waits for its queued Events to be written.
constexpr std::chrono::seconds kEventFlushOnStop{2};

void blockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Status runUntilSignal(const std::shared_ptr<Runnable>& runnable) {
  return runUntilSignal(std::vector<std::shared_ptr<Runnable>>{runnable});
}

Status runUntilSignal(const std::vector<std::shared_ptr<Runnable>>& runnables) {
  blockTerminationSignals();
  auto stopAll = [runnables] {
    for (const auto& r : runnables) r->stop();
  };
  // Detached: it holds the runnables alive and exits with the process.
  std::thread([stopAll] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    spdlog::info("received signal {}; shutting down", sig);
    stopAll();
  }).detach();
  // The first runs on this thread, the others on their own; the first to fail stops them all.
  std::vector<Status> results(runnables.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < runnables.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = runnables[i]->start();
      if (!results[i].isOk()) stopAll();
    });
  }
  if (!runnables.empty()) {
    results[0] = runnables[0]->start();
    if (!results[0].isOk()) stopAll();
  }
  for (auto& t : threads) t.join();
  for (const Status& s : results)
    if (!s.isOk()) return s;
  return Status::ok();
}

Manager::Manager(std::shared_ptr<kube::Client> client, ManagerOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : kube::SystemClock::instance()),
      leaderClient_(withWriteGuard(client_, [this] { return writesAllowed(); })),
      recorder_(std::make_unique<kube::EventRecorder>(leaderClient_, options_.name, clock_)),
      events_(std::make_unique<kube::AsyncEventSink>(*recorder_)) {
  health_.addHealthCheck("ping", [] { return Status::ok(); });
  health_.addReadyCheck("informers-synced", [this] {
    return synced_.load() ? Status::ok() : unavailable("informer caches not synced");
  });
  // Informers are only added before run(), and this check runs once the servers are up.
  health_.addReadyCheck("informers-syncing", [this] {
    for (const auto& i : informers_) {
      if (Status s = i->syncing(options_.informerFailureGrace); !s.isOk()) return s;
    }
    return Status::ok();
  });
}

Manager::~Manager() {
  stop();
  if (signalThread_.joinable()) signalThread_.join();
  stopControllers();
  stopRunnables(false);
  for (auto& i : informers_) i->stop();
  health_.stop();
}

kube::Informer& Manager::informer(const kube::InformerOptions& options) {
  kube::InformerOptions o = options;
  if (o.resource.namespaced && o.ns.empty() && o.namespaces.empty())
    o.namespaces = options_.watchNamespaces;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& i : informers_) {
    const auto& e = i->options();
    if (e.resource == o.resource && e.ns == o.ns && e.namespaces == o.namespaces &&
        e.labelSelector == o.labelSelector && e.fieldSelector == o.fieldSelector &&
        e.metadataOnly == o.metadataOnly) {
      return *i;
    }
  }
  kube::InformerOptions withSlack = o;
  if (withSlack.watchStallSlack == std::chrono::seconds::zero())
    withSlack.watchStallSlack = options_.watchStallSlack;
  informers_.push_back(std::make_unique<kube::Informer>(client_, withSlack, clock_));
  return *informers_.back();
}

kube::Informer& Manager::informer(const kube::Resource& resource, const std::string& ns) {
  kube::InformerOptions o;
  o.resource = resource;
  o.ns = ns;
  return informer(o);
}

Controller& Manager::addController(ControllerOptions options,
                                   std::shared_ptr<Reconciler> reconciler) {
  std::string name = options.name;
  auto c =
      std::make_unique<Controller>(std::move(options), std::move(reconciler), clock_,
                                   metrics_.queueMetrics(name), metrics_.reconcileMetrics(name));
  c->setGate([this] { return writesAllowed().isOk(); });
  std::lock_guard<std::mutex> lock(mu_);
  controllers_.push_back(std::move(c));
  return *controllers_.back();
}

void Manager::add(std::shared_ptr<Runnable> runnable, bool needsLeaderElection) {
  std::lock_guard<std::mutex> lock(mu_);
  auto e = std::make_unique<RunnableEntry>();
  e->runnable = std::move(runnable);
  e->needsLeaderElection = needsLeaderElection;
  runnables_.push_back(std::move(e));
}

void Manager::startRunnables(bool leaderOnly) {
  // With mu_ held.
  for (auto& e : runnables_) {
    if (e->needsLeaderElection != leaderOnly || e->thread.joinable()) continue;
    Runnable* r = e->runnable.get();
    e->thread = std::thread([this, r] {
      Status s = r->start();
      if (s.isOk()) return;
      spdlog::critical("manager: runnable failed: {}", s.toString());
      std::lock_guard<std::mutex> lock(mu_);
      if (runnableError_.isOk()) runnableError_ = s;
      stopRequested_ = true;
      cv_.notify_all();
    });
  }
}

void Manager::stopRunnables(bool leaderOnly) {
  std::vector<RunnableEntry*> stopping;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : runnables_) {
      // Stopping every Runnable (leaderOnly false) includes the leader's.
      if (leaderOnly && !e->needsLeaderElection) continue;
      if (e->thread.joinable()) stopping.push_back(e.get());
    }
  }
  // Joined without mu_: a failing Runnable takes it to report.
  for (auto* e : stopping) e->runnable->stop();
  for (auto* e : stopping) e->thread.join();
}

bool Manager::isLeader() const {
  if (!options_.leaderElection) return true;
  return elector_ && elector_->isLeader();
}

Status Manager::writesAllowed() const {
  if (!acting_.load()) {
    return Status(Code::kCancelled, "not acting as the leader: controllers are stopped");
  }
  // Checked on every write, not only at the start of a reconcile: the lease can be lost
  // (renew deadline passed) while a reconcile is in flight.
  if (options_.leaderElection && !(elector_ && elector_->isLeader())) {
    return Status(Code::kCancelled, "not the leader of lease " + options_.leaderElectionConfig.ns +
                                        "/" + options_.leaderElectionConfig.name);
  }
  return Status::ok();
}

void Manager::startControllers() {
  std::lock_guard<std::mutex> lock(mu_);
  if (controllersRunning_ || stopRequested_) return;
  controllersRunning_ = true;
  acting_ = true;
  for (auto& c : controllers_) c->start();
  startRunnables(true);
}

void Manager::stopControllers() {
  stopRunnables(true);
  std::lock_guard<std::mutex> lock(mu_);
  if (!controllersRunning_) return;
  for (auto& c : controllers_) c->stop();
  controllersRunning_ = false;
  acting_ = false;
}

void Manager::stop() {
  // The elector is stopped (and the lease released) by run(), after the controllers.
  std::lock_guard<std::mutex> lock(mu_);
  stopRequested_ = true;
  cv_.notify_all();
}

void Manager::stopOnSignals() {
  blockTerminationSignals();
  signalThread_ = std::thread([this] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    while (true) {
      if (sigwait(&set, &sig) != 0) continue;
      spdlog::info("received signal {}; shutting down", sig);
      stop();
      return;
    }
  });
  signalThread_.detach();
}

Status Manager::run() {
  if (!options_.metricsAddress.empty())
    LOCKSTEP_RETURN_IF_ERROR(metrics_.serve(options_.metricsAddress));
  if (!options_.healthAddress.empty())
    LOCKSTEP_RETURN_IF_ERROR(health_.start(options_.healthAddress));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& i : informers_) i->start();
  }
  auto deadline = clock_.now() + options_.cacheSyncTimeout;
  for (auto& i : informers_) {
    auto left = deadline - clock_.now();
    if (!i->waitForSync(left)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopRequested_) return Status::ok();
      }
      return Status(Code::kDeadlineExceeded,
                    "informer cache for " + i->options().resource.id() + " did not sync");
    }
  }
  synced_ = true;
  spdlog::info("manager: {} informer caches synced", informers_.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopRequested_) startRunnables(false);
  }

  Status result;
  if (options_.leaderElection) {
    auto cfg = options_.leaderElectionConfig;
    if (cfg.identity.empty()) cfg.identity = defaultIdentity();
    std::string lease = cfg.ns + "/" + cfg.name;
    LeaderCallbacks cb;
    cb.onStartedLeading = [this, lease] {
      metrics_.setLeader(lease, true);
      startControllers();
    };
    cb.onStoppedLeading = [this, lease] {
      // Lost (or released after the controllers stopped): refuse every further write at
      // once, before run() stops the controllers; run() then returns the loss.
      acting_ = false;
      metrics_.setLeader(lease, false);
      // No worker takes another request: the queues are dropped now, not when
      // run() gets to stopping the controllers (the next leader relists).
      for (auto& c : controllers_) c->queue().shutDownDiscarding();
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    };
    bool stoppedEarly = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stoppedEarly = stopRequested_;
      if (!stoppedEarly) elector_ = std::make_unique<LeaderElector>(client_, cfg, cb, clock_);
    }
    if (!stoppedEarly) {
      metrics_.setLeader(lease, false);
      // Hand-over: the controllers stop (queued requests dropped, in-flight reconciles
      // finished) while this replica still holds and renews the lease; only then is the
      // elector stopped, which releases it. On a lost lease writes are already refused
      // (onStoppedLeading) and the same stop drops the queue without draining it.
      bool electorDone = false;
      std::thread electorThread([this, &result, &electorDone] {
        Status st = elector_->run();
        std::lock_guard<std::mutex> lock(mu_);
        result = st;
        electorDone = true;
        cv_.notify_all();
      });
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] {
          return stopRequested_ || electorDone ||
                 (elector_ && !elector_->isLeader() && controllersRunning_);
        });
      }
      stopControllers();
      // The controllers' last Events go out while the lease is still held.
      events_->flush(kEventFlushOnStop);
      elector_->stop();
      electorThread.join();
    }
  } else {
    startControllers();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopRequested_; });
    lock.unlock();
    stopControllers();
    events_->flush(kEventFlushOnStop);
  }
  stopRunnables(false);
  for (auto& i : informers_) i->stop();
  health_.stop();
  std::lock_guard<std::mutex> lock(mu_);
  return result.isOk() ? runnableError_ : result;
}

}  // namespace lockstep::runtime
