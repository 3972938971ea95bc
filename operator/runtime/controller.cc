#include "operator/runtime/controller.h"

#include <spdlog/spdlog.h>

namespace lockstep::runtime {

Result resultFor(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
    case Code::kNotFound:
      return Result::done();
    case Code::kInvalidArgument:
      return Result::terminalError(s);
    default:
      return Result::failed(s);
  }
}

MapFunc requestForObject() {
  return [](const kube::Object& o) {
    return std::vector<Request>{{kube::namespaceOf(o), kube::name(o)}};
  };
}

MapFunc requestForOwner(const std::string& ownerKind, const std::string& ownerGroup) {
  return [ownerKind, ownerGroup](const kube::Object& o) {
    std::vector<Request> out;
    auto ref = kube::controllerOf(o);
    if (!ref || ref->kind != ownerKind) return out;
    if (!ownerGroup.empty()) {
      auto slash = ref->apiVersion.find('/');
      std::string group = slash == std::string::npos ? "" : ref->apiVersion.substr(0, slash);
      if (group != ownerGroup) return out;
    }
    // Owners are in the object's namespace (cross-namespace ownership is not allowed).
    out.push_back({kube::namespaceOf(o), ref->name});
    return out;
  };
}

Controller::Controller(ControllerOptions options, std::shared_ptr<Reconciler> reconciler,
                       Clock& clock, std::shared_ptr<QueueMetrics> queueMetrics,
                       std::shared_ptr<ReconcileMetrics> reconcileMetrics)
    : name_(options.name),
      workers_(std::max(1, options.workers)),
      reconciler_(std::move(reconciler)),
      clock_(clock),
      queue_(options.name, clock, std::move(options.rateLimiter), std::move(queueMetrics)),
      metrics_(std::move(reconcileMetrics)) {}

Controller::~Controller() { stop(); }

void Controller::watch(
    kube::Informer& informer, const MapFunc& map,
    const std::function<bool(const kube::Object&, const kube::Object&)>& filter) {
  kube::EventHandler h;
  h.onAdd = [this, map](const kube::Object& o, bool) {
    for (const auto& r : map(o)) queue_.add(r.key());
  };
  h.onUpdate = [this, map, filter](const kube::Object& oldObj, const kube::Object& newObj) {
    if (filter && !filter(oldObj, newObj)) return;
    // An owner change moves the object: reconcile both the old and the new owner.
    for (const auto& r : map(oldObj)) queue_.add(r.key());
    for (const auto& r : map(newObj)) queue_.add(r.key());
  };
  h.onDelete = [this, map](const kube::Object& o) {
    for (const auto& r : map(o)) queue_.add(r.key());
  };
  informer.addEventHandler(std::move(h));
}

void Controller::start() {
  if (started_.exchange(true)) return;
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { worker(); });
  spdlog::info("controller {} started with {} workers", name_, workers_);
}

void Controller::stop() {
  if (stopped_.exchange(true)) return;
  size_t dropped = queue_.shutDownDiscarding();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  spdlog::info("controller {} stopped ({} queued requests left to the next leader)", name_,
               dropped);
}

void Controller::worker() {
  while (auto key = queue_.get()) {
    if (gate_ && !gate_()) {
      queue_.forget(*key);
      queue_.done(*key);
      continue;  // not the leader any more: the queue is being dropped
    }
    processOne(*key);
    queue_.done(*key);
  }
}

void Controller::processOne(const std::string& key) {
  Request req = Request::fromKey(key);
  auto start = clock_.now();
  Result result;
  try {
    result = reconciler_->reconcile(req);
  } catch (const std::exception& e) {
    result = Result::failed(internalError(std::string("reconciler threw: ") + e.what()));
  } catch (...) {
    // Anything else (a thrown int, a foreign exception) must not end the process: the
    // webhook serves from the same process.
    result = Result::failed(internalError("reconciler threw a non-standard exception"));
  }
  double seconds = std::chrono::duration<double>(clock_.now() - start).count();
  std::string label;
  if (!result.error.isOk() && result.terminal) {
    label = "error";
    spdlog::error("controller {}: reconcile {} failed (terminal, not requeued): {}", name_, key,
                  result.error.toString());
    queue_.forget(key);
  } else if (!result.error.isOk()) {
    label = "error";
    if (result.error.code() == Code::kConflict) {
      // A write planned from a cache that had not seen the latest version (often
      // this controller's own previous write): expected, re-planned at once.
      spdlog::debug("controller {}: reconcile {} re-queued: {}", name_, key,
                    result.error.toString());
    } else {
      spdlog::error("controller {}: reconcile {} failed: {}", name_, key, result.error.toString());
    }
    queue_.addRateLimited(key);
  } else if (result.requeueAfter > Clock::Duration::zero()) {
    label = "requeue_after";
    queue_.forget(key);
    queue_.addAfter(key, result.requeueAfter);
  } else if (result.requeue) {
    label = "requeue";
    queue_.addRateLimited(key);
  } else {
    label = "success";
    queue_.forget(key);
  }
  if (metrics_) metrics_->observe(label, seconds);
}

}  // namespace lockstep::runtime
