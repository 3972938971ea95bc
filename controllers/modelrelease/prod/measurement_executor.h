// Runs one analysis provider's queries off the reconcile workers: a
// QueryScheduler (query_scheduler.h) driven by `maxInFlight` threads of its
// own and a timer thread for deadlines. A reconcile asks and returns at once;
// when the answer lands (or the deadline passes) `wake(waker)` is called so the
// release is reconciled again and takes it. A provider that never answers
// keeps only its own threads busy.
// Thread-safety: ask() and stats() from any thread. The destructor stops the
// threads and joins them (a query in flight finishes first: the transport's
// own timeout bounds it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controllers/modelrelease/prod/query_scheduler.h"

namespace lockstep::controllers {

class MeasurementExecutor {
 public:
  // Runs one query (blocking; never throws).
  using Runner = std::function<QueryAnswer(const std::string& promql, int64_t atUnix)>;
  using Wake = std::function<void(const std::string& waker)>;

  // Called under the executor's lock with the queue's counts after every
  // change (an ask, a start, an answer, a deadline): the metrics.
  using Report = std::function<void(const QueryStats&)>;

  MeasurementExecutor(QuerySchedulerOptions options, Runner runner, Wake wake, Report report = {});
  ~MeasurementExecutor();
  MeasurementExecutor(const MeasurementExecutor&) = delete;
  MeasurementExecutor& operator=(const MeasurementExecutor&) = delete;

  QueryScheduler::Ask ask(const QueryKey& key, const std::string& promql, int64_t atUnix,
                          const std::string& waker, const std::string& tenant = "");
  QueryStats stats() const;
  int64_t timeoutMs() const { return options_.timeoutMs; }
  int64_t answerTtlMs() const { return options_.answerTtlMs; }

 private:
  static int64_t nowMs();
  void worker();
  void timer();
  void tell(const std::vector<std::string>& wakers) const;
  void reportLocked() const {
    if (report_) report_(scheduler_.stats());
  }

  QuerySchedulerOptions options_;
  Runner runner_;
  Wake wake_;
  Report report_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::condition_variable deadlines_;
  QueryScheduler scheduler_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace lockstep::controllers
