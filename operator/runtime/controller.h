// Controller: a work queue of Requests fed by informer event handlers and
// drained by N workers calling a Reconciler, with controller-runtime's
// result handling:
//   error           -> addRateLimited (per-item backoff, overall bucket)
//   requeueAfter>0  -> forget, addAfter(requeueAfter)
//   requeue         -> addRateLimited
//   otherwise       -> forget
// A Request is never reconciled by two workers at once (the queue's
// processing set). Thread-safety: watch() before start(); the rest from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/informer.h"
#include "operator/runtime/reconciler.h"
#include "operator/runtime/work_queue.h"

namespace lockstep::runtime {

// Observes reconciles (Prometheus in production).
class ReconcileMetrics {
 public:
  virtual ~ReconcileMetrics() = default;
  // result: "success", "error", "requeue", "requeue_after"
  virtual void observe(const std::string& result, double seconds) = 0;
};

// Maps an object from an informer to the Requests to reconcile.
using MapFunc = std::function<std::vector<Request>(const kube::Object&)>;
// The object itself.
MapFunc requestForObject();
// The controlling owner of the object when it has the given kind (and API group,
// if not empty): how a ModelRelease controller hears about its Jobs.
MapFunc requestForOwner(const std::string& ownerKind, const std::string& ownerGroup = "");

struct ControllerOptions {
  std::string name;  // metric label and log name: "modelrelease"
  int workers = 1;
  std::unique_ptr<RateLimiter> rateLimiter;  // default: defaultControllerRateLimiter
};

class Controller {
 public:
  Controller(ControllerOptions options, std::shared_ptr<Reconciler> reconciler,
             Clock& clock = kube::SystemClock::instance(),
             std::shared_ptr<QueueMetrics> queueMetrics = nullptr,
             std::shared_ptr<ReconcileMetrics> reconcileMetrics = nullptr);
  ~Controller();

  // Enqueues map(obj) on every add/update/delete the informer reports.
  // `filter`, when set, drops updates it returns false for (e.g. status-only changes).
  void watch(kube::Informer& informer, const MapFunc& map = requestForObject(),
             const std::function<bool(const kube::Object& oldObj, const kube::Object& newObj)>&
                 filter = nullptr);
  void enqueue(const Request& r) { queue_.add(r.key()); }

  void start();  // spawns the workers
  // Stops taking new work and drops the queued requests (the next leader relists every
  // object; the controller is level-based), waits for in-flight reconciles, joins the workers.
  void stop();
  WorkQueue& queue() { return queue_; }
  const std::string& name() const { return name_; }
  // Checked before each request is taken: false (leadership lost) drops the
  // request instead of reconciling it. Set before start().
  void setGate(std::function<bool()> gate) { gate_ = std::move(gate); }

 private:
  void worker();
  std::function<bool()> gate_;
  void processOne(const std::string& key);

  std::string name_;
  int workers_;
  std::shared_ptr<Reconciler> reconciler_;
  Clock& clock_;
  WorkQueue queue_;
  std::shared_ptr<ReconcileMetrics> metrics_;
  std::vector<std::thread> threads_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace lockstep::runtime
