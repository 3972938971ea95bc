// Reflector: keeps a sink in step with the server by list-then-watch, with
// client-go's resourceVersion rules:
//  - the first list is a quorum read paged by pageSize (resourceVersion "",
//    `limit`): unlike client-go's unpaginated read from the watch cache
//    (resourceVersion "0"), memory stays bounded by one page while the cache
//    fills — 5,000 RuntimeEnvs with 26 KiB locks are a 130 MB response that
//    was held as text and as a DOM at once (docs/benchmarks.md, controller
//    scale). Later relists use the last synced resourceVersion ("not older
//    than"), unpaginated so the server answers from its watch cache;
//  - a list answered 410 Gone / Expired marks that version unavailable and is
//    retried at once as a quorum read (resourceVersion "", paged by pageSize);
//  - a watch resumes from the last resourceVersion seen (events and
//    BOOKMARKs advance it); a watch the server ends (timeoutSeconds) or a
//    dropped connection is re-opened from there, not relisted;
//  - a watch answered 410 Gone ends the cycle: relist (after backoff);
//  - connection refused / 429 / 5xx on opening a watch backs off (jittered,
//    800 ms doubling to 30 s) and retries the watch;
//  - each watch asks the server for a timeout in [minWatchTimeout, 2x);
//  - with watchStallSlack > 0, a watch still open past its timeoutSeconds plus
//    the slack is cancelled and re-opened from the last resourceVersion: the
//    server would have ended it, so the connection is half-open (the client's
//    idle timeout alone would leave the informer frozen for up to 11 minutes);
//  - syncing() tells readiness whether the collection is being followed: not
//    since a list or a watch failed (or a watch stalled) until a list
//    succeeds or a watch opens again.
// Thread-safety: run() on one thread; stop() and the accessors from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/backoff.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"

namespace lockstep::kube {

// Receives the reflector's view of the collection.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A complete list: the new content of the collection.
  virtual void replace(std::vector<Object> items, const std::string& resourceVersion) = 0;
  // One ADDED, MODIFIED or DELETED event.
  virtual void apply(const WatchEvent& event) = 0;
};

struct ReflectorOptions {
  Resource resource;
  std::string ns;  // "" = all namespaces
  std::string labelSelector;
  std::string fieldSelector;
  bool metadataOnly = false;  // list and watch the objects' metadata only (request.h)
  int64_t pageSize = 500;
  std::chrono::seconds minWatchTimeout{300};
  // > 0: cancel and re-open a watch open longer than its timeoutSeconds plus this (off by
  // default; the Manager turns it on for every informer).
  std::chrono::seconds watchStallSlack{0};
  BackoffOptions backoff;
  std::string name;  // for logs; defaults to the resource id
};

class Reflector {
 public:
  Reflector(Client& client, ReflectorOptions options, ReflectorSink& sink, Clock& clock);
  // Lists and watches until stop(); never returns early on errors.
  void run();
  void stop();
  std::string lastSyncResourceVersion() const;
  bool lastSyncResourceVersionUnavailable() const { return rvUnavailable_.load(); }
  // How many lists have completed (observability and tests).
  int listCount() const { return listCount_.load(); }
  // How many watches were cancelled for staying open past their timeout plus the slack.
  int stalledWatches() const { return stalledWatches_.load(); }
  // OK unless the reflector has been failing (lists, watch opens, stalled watches) for at
  // least `grace` at `now`; the error names the resource, how long, and the last failure.
  Status syncing(Clock::TimePoint now, Clock::Duration grace) const;

 private:
  Status listAndWatch();
  Status list();
  // Waits `d` unless stopped; returns false when stopped.
  bool sleep(Clock::Duration d);
  std::string relistResourceVersion() const;
  void setLastSync(const std::string& rv);
  // Bookkeeping for syncing(): a failure (kept from the first of a run) or a success.
  void markFailing(const Status& why);
  void markSyncing();

  Client& client_;
  ReflectorOptions options_;
  ReflectorSink& sink_;
  Clock& clock_;
  Backoff backoff_;
  std::mt19937_64 rng_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  Watcher* current_ = nullptr;  // the open watch, cancelled by stop()
  std::string lastSyncRv_;
  std::atomic<bool> rvUnavailable_{false};
  std::atomic<int> listCount_{0};
  std::atomic<int> stalledWatches_{0};
  bool stalled_ = false;  // guarded by mu_: the current watch was cancelled as stalled
  // Guarded by mu_: since when lists/watches fail (nullopt while syncing), and why.
  std::optional<Clock::TimePoint> failingSince_;
  std::string lastFailure_;
};

}  // namespace lockstep::kube
