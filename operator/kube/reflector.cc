#include "operator/kube/reflector.h"

#include <spdlog/spdlog.h>

#include <thread>

namespace lockstep::kube {

Reflector::Reflector(Client& client, ReflectorOptions options, ReflectorSink& sink, Clock& clock)
    : client_(client),
      options_(std::move(options)),
      sink_(sink),
      clock_(clock),
      backoff_(options_.backoff, clock),
      rng_(std::random_device{}()) {
  if (options_.name.empty()) options_.name = options_.resource.id();
}

std::string Reflector::lastSyncResourceVersion() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lastSyncRv_;
}

void Reflector::setLastSync(const std::string& rv) {
  if (rv.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  lastSyncRv_ = rv;
}

std::string Reflector::relistResourceVersion() const {
  if (rvUnavailable_.load()) return "";  // quorum read: the last version is gone
  std::lock_guard<std::mutex> lock(mu_);
  return lastSyncRv_;  // empty before the first list: a paged quorum read
}

void Reflector::markFailing(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failingSince_) failingSince_ = clock_.now();
  lastFailure_ = why.toString();
}

void Reflector::markSyncing() {
  std::lock_guard<std::mutex> lock(mu_);
  failingSince_.reset();
}

Status Reflector::syncing(Clock::TimePoint now, Clock::Duration grace) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failingSince_ || now - *failingSince_ < grace) return Status::ok();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(now - *failingSince_).count();
  return unavailable(options_.name + " not syncing for " + std::to_string(secs) +
                     " s: " + lastFailure_);
}

void Reflector::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  if (current_) current_->cancel();
  cv_.notify_all();
}

bool Reflector::sleep(Clock::Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = clock_.now() + d;
  while (!stopped_ && clock_.now() < deadline) clock_.waitUntil(lock, cv_, deadline);
  return !stopped_;
}

void Reflector::run() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
    }
    Status st = listAndWatch();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
    }
    if (st.code() == Code::kNotFound) {
      // The collection itself is missing: a CRD not installed, or the wrong version.
      spdlog::warn(
          "reflector {}: the API server does not serve {} (is its CustomResourceDefinition "
          "installed?): {}",
          options_.name, options_.resource.id(), st.message());
    } else if (!st.isOk()) {
      spdlog::warn("reflector {}: {}", options_.name, st.toString());
    }
    if (!st.isOk()) markFailing(st);
    if (!sleep(backoff_.next())) return;
  }
}

Status Reflector::list() {
  std::string rv = relistResourceVersion();
  auto doList = [&](const std::string& version) -> StatusOr<ObjectList> {
    ListOptions o;
    o.labelSelector = options_.labelSelector;
    o.fieldSelector = options_.fieldSelector;
    o.metadataOnly = options_.metadataOnly;
    o.resourceVersion = version;
    if (!version.empty()) {
      // As client-go: a list at a resourceVersion goes unpaginated. With a limit the
      // server would answer at exactly that (possibly stale) version; without one it
      // answers from its watch cache with data at least that fresh ("0": anything cached).
      return client_.listPage(options_.resource, options_.ns, o, nullptr);
    }
    o.limit = options_.pageSize;  // a quorum read pages through etcd
    return client_.list(options_.resource, options_.ns, o);
  };
  auto result = doList(rv);
  if (!result.isOk() && result.status().code() == Code::kGone) {
    spdlog::info("reflector {}: resourceVersion {} is gone; relisting from a quorum read",
                 options_.name, rv);
    rvUnavailable_ = true;
    result = doList("");
  }
  if (!result.isOk()) return result.status().withContext("list");
  std::string listRv = result->resourceVersion;
  // Bookkeeping first, so whoever observes the sink's handlers also sees it.
  setLastSync(listRv);
  rvUnavailable_ = false;
  ++listCount_;
  markSyncing();
  sink_.replace(std::move(result->items), listRv);
  return Status::ok();
}

Status Reflector::listAndWatch() {
  LOCKSTEP_RETURN_IF_ERROR(list());
  std::uniform_real_distribution<double> spread(0.0, 1.0);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return Status::ok();
    }
    WatchOptions wo;
    wo.labelSelector = options_.labelSelector;
    wo.fieldSelector = options_.fieldSelector;
    wo.metadataOnly = options_.metadataOnly;
    wo.resourceVersion = lastSyncResourceVersion();
    wo.allowWatchBookmarks = true;
    wo.timeoutSeconds = static_cast<int>(static_cast<double>(options_.minWatchTimeout.count()) *
                                         (1.0 + spread(rng_)));
    auto start = clock_.now();
    auto opened = client_.watch(options_.resource, options_.ns, wo);
    if (!opened.isOk()) {
      const Status& st = opened.status();
      if (st.code() == Code::kUnavailable || st.code() == Code::kDeadlineExceeded) {
        // The server is unreachable or overloaded: keep our state, retry the watch.
        spdlog::warn("reflector {}: watch: {}; retrying", options_.name, st.toString());
        markFailing(st.withContext("watch"));
        if (!sleep(backoff_.next())) return Status::ok();
        continue;
      }
      return st.withContext("watch");  // Gone and the rest: relist
    }
    std::unique_ptr<Watcher> watcher = std::move(opened).value();
    markSyncing();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return Status::ok();
      current_ = watcher.get();
      stalled_ = false;
    }
    // The server ends the watch after timeoutSeconds; one still open well past that sits on
    // a half-open connection: cancel it (the read then fails) and re-open.
    std::thread stallGuard;
    if (options_.watchStallSlack > std::chrono::seconds::zero()) {
      auto deadline = start + std::chrono::seconds(wo.timeoutSeconds) + options_.watchStallSlack;
      stallGuard = std::thread([this, w = watcher.get(), deadline] {
        std::unique_lock<std::mutex> lock(mu_);
        while (!stopped_ && current_ == w && clock_.now() < deadline) {
          clock_.waitUntil(lock, cv_, deadline);
        }
        if (stopped_ || current_ != w) return;
        stalled_ = true;
        w->cancel();
      });
    }
    int events = 0;
    Status ended;
    while (true) {
      auto ev = watcher->next();
      if (!ev.isOk()) {
        ended = ev.status();
        break;
      }
      if (!ev->has_value()) break;  // the server closed the watch
      WatchEvent& e = **ev;
      ++events;
      setLastSync(resourceVersion(e.object));
      if (e.type != WatchEvent::Type::kBookmark) sink_.apply(e);
    }
    bool stalled = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_ = nullptr;
      stalled = stalled_;
      cv_.notify_all();  // the stall guard exits
    }
    if (stallGuard.joinable()) stallGuard.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return Status::ok();
    }
    if (stalled) {
      ++stalledWatches_;
      markFailing(unavailable("watch stalled past its timeout of " +
                              std::to_string(wo.timeoutSeconds) + " s plus the slack"));
      spdlog::warn(
          "reflector {}: watch open {} s past its timeout of {} s with no end from the server "
          "(half-open connection?); re-opening from resourceVersion {}",
          options_.name, options_.watchStallSlack.count(), wo.timeoutSeconds,
          lastSyncResourceVersion());
      continue;
    }
    if (ended.code() == Code::kGone) {
      // The watch fell behind compaction: relist from the last version (a list may still
      // serve it; if not, list() falls back to a quorum read).
      spdlog::info("reflector {}: watch expired ({}); relisting", options_.name, ended.message());
      return Status::ok();
    }
    if (!ended.isOk() && ended.code() != Code::kUnavailable) return ended.withContext("watch");
    if (events == 0 && clock_.now() - start < std::chrono::seconds(1)) {
      // A watch that closes at once with nothing in it would spin: back off and relist.
      return unavailable("very short watch with no events" +
                         (ended.isOk() ? std::string() : ": " + ended.message()));
    }
    // Ended by the server's timeout or a dropped connection: resume from the last version.
  }
}

}  // namespace lockstep::kube
