#include "controllers/modelrelease/prod/measurement_executor.h"

#include <utility>

namespace lockstep::controllers {

MeasurementExecutor::MeasurementExecutor(QuerySchedulerOptions options, Runner runner, Wake wake,
                                         Report report)
    : options_(options),
      runner_(std::move(runner)),
      wake_(std::move(wake)),
      report_(std::move(report)),
      scheduler_(std::move(options)) {
  const int n = scheduler_.options().maxInFlight;
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { worker(); });
  threads_.emplace_back([this] { timer(); });
}

MeasurementExecutor::~MeasurementExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  deadlines_.notify_all();
  for (auto& t : threads_) t.join();
}

int64_t MeasurementExecutor::nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void MeasurementExecutor::tell(const std::vector<std::string>& wakers) const {
  if (!wake_) return;
  for (const std::string& w : wakers)
    if (!w.empty()) wake_(w);
}

QueryScheduler::Ask MeasurementExecutor::ask(const QueryKey& key, const std::string& promql,
                                             int64_t atUnix, const std::string& waker,
                                             const std::string& tenant) {
  QueryScheduler::Ask out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out = scheduler_.ask(key, promql, atUnix, waker, nowMs(), tenant);
    reportLocked();
  }
  work_.notify_one();
  deadlines_.notify_one();
  return out;
}

QueryStats MeasurementExecutor::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_.stats();
}

void MeasurementExecutor::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::vector<QueryJob> jobs;
    work_.wait(lock, [&] {
      if (stopping_) return true;
      // One job per thread: this thread's slot.
      QueryScheduler& s = scheduler_;
      if (s.stats().queued == 0) return false;
      jobs = s.start(nowMs(), 1);
      return !jobs.empty();
    });
    if (stopping_) return;
    reportLocked();
    for (const QueryJob& job : jobs) {
      lock.unlock();
      QueryAnswer a = runner_(job.promql, job.atUnix);
      lock.lock();
      std::string waker = scheduler_.finish(job.id, a, nowMs());
      reportLocked();
      if (!waker.empty()) {
        lock.unlock();
        tell({waker});
        lock.lock();
      }
    }
    work_.notify_one();  // a freed slot: another queued query may start
  }
}

void MeasurementExecutor::timer() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    std::optional<int64_t> next = scheduler_.nextDeadlineMs();
    if (next) {
      deadlines_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, *next - nowMs())));
    } else {
      deadlines_.wait(lock);
    }
    if (stopping_) return;
    std::vector<std::string> wakers = scheduler_.expire(nowMs());
    reportLocked();
    if (!wakers.empty()) {
      lock.unlock();
      tell(wakers);
      lock.lock();
    }
  }
}

}  // namespace lockstep::controllers
