// The measurement queue of one analysis provider (pure: no threads, no clock;
// times are milliseconds of a monotonic clock the caller passes in).
//
// A release's reconcile asks for a measurement by key (release uid, canary
// step, measurement index); the first ask queues a query, later asks of the
// same key find it queued, in flight or answered. At most `maxInFlight`
// queries run at once; the rest wait in one FIFO queue per tenant (the
// release's namespace), at most `maxQueued` each (one more is refused: an
// error answer at once, for that tenant only). A free slot goes to the next
// tenant in round-robin order that has a query waiting, so a query waits for
// at most one query of each other tenant ahead of it: one tenant's many
// queries never starve another's (docs/rollouts.md "Providers scoped to
// tenants"). Every ask has a deadline,
// `timeoutMs` after it was first made, queue wait included: past it the
// answer is a timeout error, never a pass, and a late answer of the query is
// dropped (its slot is freed only when the query returns, so no more than
// `maxInFlight` ever run). An answer is taken once; answers nobody takes (the
// release was deleted or moved on) are dropped after `answerTtlMs`.
// The executor (measurement_executor.h) runs the jobs on its own threads.
// Thread-safety: none; the executor serialises calls.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace lockstep::controllers {

struct QueryKey {
  std::string releaseUid;
  int step = 0;
  int index = 0;
  auto tie() const { return std::tie(releaseUid, step, index); }
  bool operator<(const QueryKey& o) const { return tie() < o.tie(); }
  bool operator==(const QueryKey& o) const { return tie() == o.tie(); }
};

struct QueryAnswer {
  int64_t atUnix = 0;  // the evaluation time the query was asked for
  std::optional<double> value;
  std::string error;  // "" with a value
  bool timedOut = false;
};

struct QueryJob {
  uint64_t id = 0;
  QueryKey key;
  std::string promql;
  int64_t atUnix = 0;
};

struct QuerySchedulerOptions {
  int maxInFlight = 4;
  int maxQueued = 256;
  int64_t timeoutMs = 12000;
  int64_t answerTtlMs = 10 * 60 * 1000;
  std::string provider;  // for messages: "AnalysisProvider prometheus-main"
  // A release's own address (--allow-release-prometheus-address): a timeout
  // says "analysis provider unreachable" and nothing about where it waited
  // (no port-scan oracle).
  bool opaqueTimeouts = false;
};

struct QueryStats {
  int inFlight = 0;
  int queued = 0;
  int64_t succeeded = 0;
  int64_t failed = 0;
  int64_t timedOut = 0;
  int64_t refused = 0;
  int answered = 0;  // answers not taken yet
};

class QueryScheduler {
 public:
  explicit QueryScheduler(QuerySchedulerOptions options);

  struct Ask {
    std::optional<QueryAnswer> answer;  // landed (taken now) or refused
    bool pending = false;               // queued or in flight
  };
  // `waker` is told (finish/expire return it) when the key's answer lands.
  // `tenant`: whose queue the query waits in (the release's namespace).
  Ask ask(const QueryKey& key, const std::string& promql, int64_t atUnix, const std::string& waker,
          int64_t nowMs, const std::string& tenant = "");
  // Moves queued queries in flight, up to maxInFlight (and at most `max` now);
  // the caller runs them.
  std::vector<QueryJob> start(int64_t nowMs, int max = 1 << 30);
  // The answer of a started job: kept for its key unless the key's deadline
  // already passed. The job's slot is freed. The waker to tell, or "".
  std::string finish(uint64_t jobId, const QueryAnswer& answer, int64_t nowMs);
  // Asks past their deadline are answered with a timeout error; old untaken
  // answers are dropped. The wakers to tell.
  std::vector<std::string> expire(int64_t nowMs);
  // The earliest deadline of an unanswered ask.
  std::optional<int64_t> nextDeadlineMs() const;
  QueryStats stats() const;
  // Queries waiting in `tenant`'s queue.
  int queuedOf(const std::string& tenant) const;
  const QuerySchedulerOptions& options() const { return options_; }

 private:
  enum class State { kQueued, kInFlight, kAnswered };
  struct Entry {
    State state = State::kQueued;
    std::string promql;
    std::string tenant;
    int64_t atUnix = 0;
    std::string waker;
    int64_t askedMs = 0;
    int64_t deadlineMs = 0;
    uint64_t jobId = 0;
    int64_t answeredMs = 0;
    QueryAnswer answer;
  };
  void answer(Entry& e, QueryAnswer a, int64_t nowMs);

  QuerySchedulerOptions options_;
  std::map<QueryKey, Entry> entries_;
  std::map<std::string, std::deque<QueryKey>> queues_;  // by tenant; keys may be answered already
  std::map<std::string, int> queuedBy_;                 // entries in state kQueued, by tenant
  std::deque<std::string> turns_;         // tenants with a non-empty queue, next first
  std::map<uint64_t, QueryKey> running_;  // job id -> key (the key may be answered already)
  uint64_t nextJob_ = 1;
  QueryStats stats_;
};

}  // namespace lockstep::controllers
