#include "controllers/modelrelease/prod/query_scheduler.h"

#include <algorithm>
#include <utility>

namespace lockstep::controllers {

QueryScheduler::QueryScheduler(QuerySchedulerOptions options) : options_(std::move(options)) {
  options_.maxInFlight = std::max(1, options_.maxInFlight);
  options_.maxQueued = std::max(0, options_.maxQueued);
}

QueryScheduler::Ask QueryScheduler::ask(const QueryKey& key, const std::string& promql,
                                        int64_t atUnix, const std::string& waker, int64_t nowMs,
                                        const std::string& tenant) {
  Ask out;
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry& e = it->second;
    if (e.state != State::kAnswered) {
      e.waker = waker;
      out.pending = true;
      return out;
    }
    out.answer = e.answer;
    entries_.erase(it);  // taken once
    return out;
  }
  if (const int queued = queuedOf(tenant); queued >= options_.maxQueued) {
    ++stats_.refused;
    ++stats_.failed;
    QueryAnswer a;
    a.atUnix = atUnix;
    a.error = options_.provider + ": " + std::to_string(queued) + " queries of namespace \"" +
              tenant + "\" already wait for a free slot (maxConcurrentQueries " +
              std::to_string(options_.maxInFlight) + "); not queued";
    out.answer = a;
    return out;
  }
  Entry e;
  e.promql = promql;
  e.tenant = tenant;
  e.atUnix = atUnix;
  e.waker = waker;
  e.askedMs = nowMs;
  e.deadlineMs = nowMs + options_.timeoutMs;
  entries_.emplace(key, std::move(e));
  std::deque<QueryKey>& q = queues_[tenant];
  if (q.empty()) turns_.push_back(tenant);
  q.push_back(key);
  ++queuedBy_[tenant];
  out.pending = true;
  return out;
}

std::vector<QueryJob> QueryScheduler::start(int64_t /*nowMs*/, int max) {
  std::vector<QueryJob> jobs;
  while (!turns_.empty() && static_cast<int>(running_.size()) < options_.maxInFlight &&
         static_cast<int>(jobs.size()) < max) {
    // The tenant whose turn it is gives its oldest waiting query, then goes last.
    const std::string tenant = turns_.front();
    turns_.pop_front();
    std::deque<QueryKey>& q = queues_[tenant];
    std::optional<QueryKey> next;
    while (!q.empty() && !next) {
      QueryKey key = q.front();
      q.pop_front();
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.state == State::kQueued) next = key;  // else expired
    }
    if (q.empty()) {
      queues_.erase(tenant);
    } else {
      turns_.push_back(tenant);
    }
    if (!next) continue;
    Entry& e = entries_.at(*next);
    const QueryKey& key = *next;
    if (--queuedBy_[tenant] <= 0) queuedBy_.erase(tenant);
    e.state = State::kInFlight;
    e.jobId = nextJob_++;
    running_[e.jobId] = key;
    jobs.push_back({e.jobId, key, e.promql, e.atUnix});
  }
  return jobs;
}

void QueryScheduler::answer(Entry& e, QueryAnswer a, int64_t nowMs) {
  if (e.state == State::kQueued && --queuedBy_[e.tenant] <= 0) queuedBy_.erase(e.tenant);
  e.state = State::kAnswered;
  e.answeredMs = nowMs;
  a.atUnix = e.atUnix;
  if (a.timedOut) {
    ++stats_.timedOut;
    ++stats_.failed;
  } else if (a.error.empty() && a.value) {
    ++stats_.succeeded;
  } else {
    ++stats_.failed;
  }
  e.answer = std::move(a);
}

std::string QueryScheduler::finish(uint64_t jobId, const QueryAnswer& a, int64_t nowMs) {
  auto run = running_.find(jobId);
  if (run == running_.end()) return "";
  QueryKey key = run->second;
  running_.erase(run);
  auto it = entries_.find(key);
  // Timed out meanwhile (answered with the timeout error) or dropped: the late answer goes.
  if (it == entries_.end() || it->second.state != State::kInFlight || it->second.jobId != jobId)
    return "";
  if (nowMs > it->second.deadlineMs) {
    QueryAnswer late;
    late.timedOut = true;
    late.error = options_.opaqueTimeouts
                     ? options_.provider + ": analysis provider unreachable"
                     : options_.provider + ": no answer within " +
                           std::to_string(options_.timeoutMs / 1000) + "s (answered after " +
                           std::to_string((nowMs - it->second.askedMs) / 1000) + "s)";
    answer(it->second, late, nowMs);
  } else {
    answer(it->second, a, nowMs);
  }
  return it->second.waker;
}

std::vector<std::string> QueryScheduler::expire(int64_t nowMs) {
  std::vector<std::string> wakers;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.state == State::kAnswered) {
      if (nowMs - e.answeredMs > options_.answerTtlMs) {
        it = entries_.erase(it);
        continue;
      }
    } else if (nowMs >= e.deadlineMs) {
      QueryAnswer a;
      a.timedOut = true;
      const int64_t inQueueOrFlight = (nowMs - e.askedMs) / 1000;
      a.error = options_.provider + ": no answer within " +
                std::to_string(options_.timeoutMs / 1000) + "s (" +
                (e.state == State::kQueued
                     ? "still waiting for a free slot of maxConcurrentQueries " +
                           std::to_string(options_.maxInFlight)
                     : "query sent, no reply after " + std::to_string(inQueueOrFlight) + "s") +
                ")";
      if (options_.opaqueTimeouts) a.error = options_.provider + ": analysis provider unreachable";
      answer(e, a, nowMs);  // an in-flight job keeps its slot in running_ until finish()
      wakers.push_back(e.waker);
    }
    ++it;
  }
  return wakers;
}

std::optional<int64_t> QueryScheduler::nextDeadlineMs() const {
  std::optional<int64_t> next;
  for (const auto& [key, e] : entries_) {
    if (e.state == State::kAnswered) continue;
    if (!next || e.deadlineMs < *next) next = e.deadlineMs;
  }
  return next;
}

QueryStats QueryScheduler::stats() const {
  QueryStats s = stats_;
  s.inFlight = static_cast<int>(running_.size());
  s.queued = 0;
  for (const auto& [tenant, n] : queuedBy_) s.queued += n;
  s.answered = 0;
  for (const auto& [key, e] : entries_)
    if (e.state == State::kAnswered) ++s.answered;
  return s;
}

int QueryScheduler::queuedOf(const std::string& tenant) const {
  auto it = queuedBy_.find(tenant);
  return it == queuedBy_.end() ? 0 : it->second;
}

}  // namespace lockstep::controllers
