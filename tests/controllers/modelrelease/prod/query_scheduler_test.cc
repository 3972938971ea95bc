// The analysis providers' queue: pure scheduling with a fake clock (ms), and
// the executor over it with a fake provider whose answers the test holds.
#include "controllers/modelrelease/prod/query_scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <prometheus/registry.h>

#include "controllers/modelrelease/prod/analysis_metrics.h"
#include "controllers/modelrelease/prod/measurement_executor.h"

namespace lockstep::controllers {
namespace {

QuerySchedulerOptions options(int inFlight, int64_t timeoutMs, int maxQueued = 256) {
  QuerySchedulerOptions o;
  o.maxInFlight = inFlight;
  o.timeoutMs = timeoutMs;
  o.maxQueued = maxQueued;
  o.provider = "AnalysisProvider \"slow\"";
  return o;
}

QueryAnswer value(double v) {
  QueryAnswer a;
  a.value = v;
  return a;
}

TEST(QueryScheduler, AnAskIsQueuedRunsAndIsTakenOnce) {
  QueryScheduler s(options(2, 5000));
  QueryKey k{"uid-a", 0, 0};
  auto first = s.ask(k, "up", 100, "mr:ml/a", 0);
  EXPECT_TRUE(first.pending);
  EXPECT_FALSE(first.answer);
  // Asking again while it waits queues nothing more.
  EXPECT_TRUE(s.ask(k, "up", 100, "mr:ml/a", 10).pending);
  auto jobs = s.start(10);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].promql, "up");
  EXPECT_EQ(jobs[0].atUnix, 100);
  EXPECT_TRUE(s.start(10).empty());
  EXPECT_EQ(s.finish(jobs[0].id, value(0.25), 900), "mr:ml/a");
  auto taken = s.ask(k, "up", 100, "mr:ml/a", 1000);
  ASSERT_TRUE(taken.answer);
  EXPECT_EQ(*taken.answer->value, 0.25);
  EXPECT_EQ(taken.answer->atUnix, 100);  // the time it was asked for, not when it landed
  EXPECT_EQ(s.stats().succeeded, 1);
  // Taken once: the same key asks again (a new query).
  EXPECT_TRUE(s.ask(k, "up", 100, "mr:ml/a", 1000).pending);
}

TEST(QueryScheduler, NeverMoreThanMaxInFlightTheRestWaitInOrder) {
  QueryScheduler s(options(2, 60000));
  for (int i = 0; i < 5; ++i) s.ask({"uid", 0, i}, "q" + std::to_string(i), 0, "w", 0);
  auto jobs = s.start(0);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].key.index, 0);
  EXPECT_EQ(jobs[1].key.index, 1);
  EXPECT_EQ(s.stats().inFlight, 2);
  EXPECT_EQ(s.stats().queued, 3);
  EXPECT_TRUE(s.start(0).empty());
  s.finish(jobs[1].id, value(1), 10);
  auto next = s.start(10);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].key.index, 2);
}

// The provider never answers: the ask is answered at its deadline with a
// timeout error (never a pass), the slot stays taken until the query
// returns, and its late answer is dropped.
TEST(QueryScheduler, AQueryPastItsDeadlineIsATimeoutErrorAndItsLateAnswerIsDropped) {
  QueryScheduler s(options(1, 5000));
  QueryKey k{"uid-slow", 1, 3};
  s.ask(k, "up", 50, "mr:ml/slow", 0);
  auto jobs = s.start(0);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(s.nextDeadlineMs(), 5000);
  EXPECT_TRUE(s.expire(4999).empty());
  EXPECT_EQ(s.expire(5000), std::vector<std::string>{"mr:ml/slow"});
  auto got = s.ask(k, "up", 50, "mr:ml/slow", 5001);
  ASSERT_TRUE(got.answer);
  EXPECT_TRUE(got.answer->timedOut);
  EXPECT_FALSE(got.answer->value);
  EXPECT_NE(got.answer->error.find("AnalysisProvider \"slow\": no answer within 5s"),
            std::string::npos)
      << got.answer->error;
  EXPECT_EQ(s.stats().timedOut, 1);
  // The query still runs: its slot is not free.
  s.ask({"uid-slow", 1, 4}, "up", 60, "mr:ml/slow", 5001);
  EXPECT_TRUE(s.start(5001).empty());
  // A late pass is dropped: nobody is told, nothing is stored.
  EXPECT_EQ(s.finish(jobs[0].id, value(0), 9000), "");
  EXPECT_EQ(s.stats().succeeded, 0);
  EXPECT_EQ(s.start(9000).size(), 1u);
}

// A query answered after the deadline but before expire() ran is a timeout too.
TEST(QueryScheduler, AnAnswerAfterTheDeadlineCountsAsATimeoutEvenBeforeExpire) {
  QueryScheduler s(options(1, 1000));
  QueryKey k{"uid", 0, 0};
  s.ask(k, "up", 0, "w", 0);
  auto jobs = s.start(0);
  EXPECT_EQ(s.finish(jobs[0].id, value(0), 1500), "w");
  auto got = s.ask(k, "up", 0, "w", 1600);
  ASSERT_TRUE(got.answer);
  EXPECT_TRUE(got.answer->timedOut);
  EXPECT_FALSE(got.answer->value);
}

// Waiting in the queue counts against the timeout: a saturated provider's
// queued asks end as errors within their deadline too.
TEST(QueryScheduler, QueueWaitCountsAgainstTheDeadline) {
  QueryScheduler s(options(1, 3000));
  s.ask({"a", 0, 0}, "up", 0, "wa", 0);
  s.ask({"b", 0, 0}, "up", 0, "wb", 1000);
  ASSERT_EQ(s.start(1000).size(), 1u);
  auto woken = s.expire(4000);
  EXPECT_EQ(std::set<std::string>(woken.begin(), woken.end()), (std::set<std::string>{"wa", "wb"}));
  auto b = s.ask({"b", 0, 0}, "up", 0, "wb", 4000);
  ASSERT_TRUE(b.answer);
  EXPECT_NE(b.answer->error.find("still waiting for a free slot"), std::string::npos)
      << b.answer->error;
  // The expired queued ask never starts.
  EXPECT_TRUE(s.start(4000).empty());
}

TEST(QueryScheduler, AFullQueueRefusesWithAnErrorAtOnce) {
  QueryScheduler s(options(1, 60000, 1));
  s.ask({"a", 0, 0}, "up", 0, "w", 0);
  s.start(0);
  s.ask({"b", 0, 0}, "up", 0, "w", 0);  // queued: the one allowed
  auto c = s.ask({"c", 0, 0}, "up", 7, "w", 0);
  ASSERT_TRUE(c.answer);
  EXPECT_FALSE(c.pending);
  EXPECT_EQ(c.answer->atUnix, 7);
  EXPECT_NE(c.answer->error.find("1 queries of namespace \"\" already wait"), std::string::npos)
      << c.answer->error;
  EXPECT_EQ(s.stats().refused, 1);
}

// One queue per namespace: a free slot goes to the namespaces in turn, so
// tenant A's one query waits for at most one of B's, however many B has.
TEST(QueryScheduler, FreeSlotsGoToTheNamespacesInTurn) {
  QueryScheduler s(options(1, 60000));
  for (int i = 0; i < 200; ++i) s.ask({"b", 0, i}, "b", 0, "mr:b/x", 0, "tenant-b");
  s.ask({"c", 0, 0}, "c", 0, "mr:c/x", 1, "tenant-c");
  s.ask({"a", 0, 0}, "a", 0, "mr:a/x", 2, "tenant-a");
  std::vector<std::string> order;
  for (int i = 0; i < 5; ++i) {
    auto jobs = s.start(10 + i);
    ASSERT_EQ(jobs.size(), 1u);
    order.push_back(jobs[0].promql);
    s.finish(jobs[0].id, value(1), 10 + i);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"b", "c", "a", "b", "b"}));
  EXPECT_EQ(s.queuedOf("tenant-b"), 197);
  EXPECT_EQ(s.stats().queued, 197);
}

// Must-show 1 in pure form, on a fake clock: B keeps 200 queries queued on a
// provider with 2 slots, each query taking 400 ms; A measures every 10 s.
// Every one of A's measurements is answered within one interval of its ask
// (in fact within two queries' time), and none is an error.
TEST(QueryScheduler, TwoHundredQueuedQueriesOfOneNamespaceDelayAnotherByLessThanAnInterval) {
  constexpr int64_t kQueryMs = 400, kIntervalMs = 10000, kStepMs = 50;
  QueryScheduler s(options(2, 12000));
  std::map<uint64_t, int64_t> running;  // job id -> finishes at
  int bNext = 0;
  std::set<int> bPending;
  auto topUpB = [&](int64_t now) {
    while (s.queuedOf("tenant-b") < 200) {
      s.ask({"b", 0, bNext}, "b", 0, "mr:b/x", now, "tenant-b");
      bPending.insert(bNext++);
    }
  };
  std::optional<int64_t> aAskedAt;
  int aIndex = 0;
  std::vector<int64_t> aLatencies;
  int64_t bAnswered = 0;
  for (int64_t now = 0; now <= 60000; now += kStepMs) {
    for (auto it = running.begin(); it != running.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      s.finish(it->first, value(0), now);
      it = running.erase(it);
    }
    // B takes its answers and asks again at once; A asks every interval.
    for (auto it = bPending.begin(); it != bPending.end();) {
      auto got = s.ask({"b", 0, *it}, "b", 0, "mr:b/x", now, "tenant-b");
      if (got.answer) {
        ++bAnswered;
        it = bPending.erase(it);
      } else {
        ++it;
      }
    }
    topUpB(now);
    if (!aAskedAt && now % kIntervalMs == 0) {
      aAskedAt = now;
      s.ask({"a", 0, aIndex}, "a", 0, "mr:a/x", now, "tenant-a");
    }
    if (aAskedAt) {
      auto got = s.ask({"a", 0, aIndex}, "a", 0, "mr:a/x", now, "tenant-a");
      if (got.answer) {
        EXPECT_TRUE(got.answer->error.empty()) << got.answer->error;
        aLatencies.push_back(now - *aAskedAt);
        aAskedAt.reset();
        ++aIndex;
      }
    }
    for (const QueryJob& j : s.start(now)) running[j.id] = now + kQueryMs;
  }
  ASSERT_GE(aLatencies.size(), 6u);
  for (int64_t l : aLatencies) {
    EXPECT_LT(l, kIntervalMs);
    EXPECT_LE(l, 2 * kQueryMs + 2 * kStepMs) << "waits for at most one of B's queries";
  }
  EXPECT_GT(bAnswered, 100) << "B's queries still run";
  EXPECT_EQ(s.stats().refused, 0);
}

// A full queue is per namespace: B's refusal never touches A's ask.
TEST(QueryScheduler, AFullQueueOfOneNamespaceRefusesOnlyThatNamespace) {
  QueryScheduler s(options(1, 60000, 2));
  s.ask({"b", 0, 0}, "b", 0, "w", 0, "tenant-b");
  s.start(0);
  s.ask({"b", 0, 1}, "b", 0, "w", 0, "tenant-b");
  s.ask({"b", 0, 2}, "b", 0, "w", 0, "tenant-b");
  auto refused = s.ask({"b", 0, 3}, "b", 0, "w", 0, "tenant-b");
  ASSERT_TRUE(refused.answer);
  EXPECT_NE(refused.answer->error.find("2 queries of namespace \"tenant-b\" already wait"),
            std::string::npos)
      << refused.answer->error;
  auto a = s.ask({"a", 0, 0}, "a", 0, "w", 0, "tenant-a");
  EXPECT_TRUE(a.pending) << "A's queue is its own";
  EXPECT_FALSE(a.answer);
  EXPECT_EQ(s.stats().refused, 1);
}

// A release's own address: a timeout says "unreachable" and nothing about
// where the query waited (no port-scan oracle).
TEST(QueryScheduler, OpaqueTimeoutsSayOnlyUnreachable) {
  QuerySchedulerOptions o = options(1, 1000);
  o.provider = "prometheus http://10.0.0.7:22";
  o.opaqueTimeouts = true;
  QueryScheduler s(o);
  s.ask({"a", 0, 0}, "up", 0, "w", 0);
  s.start(0);
  s.ask({"b", 0, 0}, "up", 0, "w", 0);
  s.expire(1000);
  for (const char* k : {"a", "b"}) {
    auto got = s.ask({k, 0, 0}, "up", 0, "w", 1000);
    ASSERT_TRUE(got.answer) << k;
    EXPECT_EQ(got.answer->error, "prometheus http://10.0.0.7:22: analysis provider unreachable")
        << k;
  }
}

// Answers are keyed by release uid, step and measurement index: a release
// deleted and re-created (new uid), or one that moved on to another step,
// never takes an answer asked for another state; untaken answers go.
TEST(QueryScheduler, AnswersAreKeyedByReleaseStepAndIndexAndUntakenOnesExpire) {
  QuerySchedulerOptions o = options(2, 1000);
  o.answerTtlMs = 5000;
  QueryScheduler s(o);
  s.ask({"uid-old", 0, 0}, "up", 0, "mr:ml/v1", 0);
  auto jobs = s.start(0);
  s.finish(jobs[0].id, value(0.9), 10);
  EXPECT_TRUE(s.ask({"uid-new", 0, 0}, "up", 20, "mr:ml/v1", 20).pending);
  EXPECT_TRUE(s.ask({"uid-old", 1, 0}, "up", 20, "mr:ml/v1", 20).pending);
  s.expire(6000);
  auto old = s.ask({"uid-old", 0, 0}, "up", 30, "mr:ml/v1", 6000);
  EXPECT_FALSE(old.answer);  // the old answer was dropped: a new query instead
  EXPECT_TRUE(old.pending);
}

// The executor with a fake provider: `hold` keeps every query of "slow"
// unanswered until released; "fast" answers at once. A slow provider's
// queue never delays another provider's answers.
struct FakeProvider {
  std::mutex mu;
  std::condition_variable cv;
  bool hold = true;
  std::atomic<int> running{0}, maxRunning{0};
  QueryAnswer run() {
    int now = ++running;
    int seen = maxRunning.load();
    while (now > seen && !maxRunning.compare_exchange_weak(seen, now)) {
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !hold; });
    --running;
    return value(0);
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      hold = false;
    }
    cv.notify_all();
  }
};

struct Woken {
  std::mutex mu;
  std::condition_variable cv;
  std::multiset<std::string> wakers;
  void add(const std::string& w) {
    {
      std::lock_guard<std::mutex> lock(mu);
      wakers.insert(w);
    }
    cv.notify_all();
  }
  bool waitFor(const std::string& w, std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, d, [&] { return wakers.count(w) > 0; });
  }
};

TEST(MeasurementExecutor, ASlowProviderDelaysOnlyItsOwnQueriesAndTimesOutAsAnError) {
  FakeProvider slowProvider;
  Woken woken;
  auto tell = [&](const std::string& w) { woken.add(w); };
  MeasurementExecutor slow(
      options(2, 300), [&](const std::string&, int64_t) { return slowProvider.run(); }, tell);
  MeasurementExecutor fast(
      options(2, 5000), [](const std::string&, int64_t) { return value(0.01); }, tell);
  for (int i = 0; i < 5; ++i) slow.ask({"s", 0, i}, "up", 0, "slow" + std::to_string(i));
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(fast.ask({"f", 0, 0}, "up", 0, "fast").pending);
  ASSERT_TRUE(woken.waitFor("fast", std::chrono::seconds(2)));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(250))
      << "the fast provider's answer waited for the slow one";
  auto f = fast.ask({"f", 0, 0}, "up", 0, "fast");
  ASSERT_TRUE(f.answer);
  EXPECT_EQ(*f.answer->value, 0.01);
  // Every slow ask ends at its deadline as a timeout error, none as a pass.
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(woken.waitFor("slow" + std::to_string(i), std::chrono::seconds(3))) << i;
  for (int i = 0; i < 5; ++i) {
    auto a = slow.ask({"s", 0, i}, "up", 0, "slow" + std::to_string(i));
    ASSERT_TRUE(a.answer) << i;
    EXPECT_TRUE(a.answer->timedOut) << i;
    EXPECT_FALSE(a.answer->value) << i;
  }
  EXPECT_LE(slowProvider.maxRunning.load(), 2) << "more queries in flight than maxInFlight";
  EXPECT_EQ(slow.stats().inFlight, 2);  // still stuck: the slots stay taken
  slowProvider.release();               // the destructor joins the threads
}

// --- The queue's metrics (analysis_metrics.h). ---

struct FakeMetrics final : AnalysisMetrics {
  std::mutex mu;
  std::map<std::string, int64_t> counts;  // "provider/result"
  std::map<std::string, int> depth;
  int maxDepth = 0;
  void queries(const std::string& p, const std::string& r, int64_t n) override {
    std::lock_guard<std::mutex> lock(mu);
    counts[p + "/" + r] += n;
  }
  void queueDepth(const std::string& p, int q) override {
    std::lock_guard<std::mutex> lock(mu);
    depth[p] = q;
    maxDepth = std::max(maxDepth, q);
  }
};

TEST(AnalysisMetrics, EveryAnswerIsCountedByResultAndTheQueueDepthFollows) {
  auto metrics = std::make_shared<FakeMetrics>();
  auto reporter = std::make_shared<QueryStatsReporter>(metrics, "slow");
  FakeProvider hanging;
  Woken woken;
  MeasurementExecutor ex(
      options(1, 300),
      [&](const std::string& promql, int64_t) {
        if (promql == "ok") return value(0.5);
        if (promql == "err") {
          QueryAnswer a;
          a.error = "bad_data: parse error";
          return a;
        }
        return hanging.run();
      },
      [&](const std::string& w) { woken.add(w); },
      [reporter](const QueryStats& s) { reporter->report(s); });
  ex.ask({"u", 0, 0}, "ok", 0, "ok");
  ASSERT_TRUE(woken.waitFor("ok", std::chrono::seconds(2)));
  ex.ask({"u", 0, 1}, "err", 0, "err");
  ASSERT_TRUE(woken.waitFor("err", std::chrono::seconds(2)));
  // One slot: the first hangs, two wait behind it; all three time out.
  ex.ask({"u", 1, 0}, "hang", 0, "hang0");
  for (int i = 0; i < 200 && hanging.running.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(hanging.running.load(), 1) << "the first query holds the slot";
  for (int i = 1; i < 3; ++i) ex.ask({"u", 1, i}, "hang", 0, "hang" + std::to_string(i));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(woken.waitFor("hang" + std::to_string(i), std::chrono::seconds(3))) << i;
  {
    std::lock_guard<std::mutex> lock(metrics->mu);
    EXPECT_EQ(metrics->counts["slow/ok"], 1);
    EXPECT_EQ(metrics->counts["slow/error"], 1);
    EXPECT_EQ(metrics->counts["slow/timeout"], 3);
    EXPECT_EQ(metrics->counts.size(), 3u);
    EXPECT_EQ(metrics->maxDepth, 2) << "two queries waited for the one slot";
    EXPECT_EQ(metrics->depth["slow"], 0) << "nothing waits once they timed out";
  }
  hanging.release();
}

TEST(AnalysisMetrics, ARefusedAskIsAnErrorAndTheCountsGoOnAcrossReporters) {
  auto metrics = std::make_shared<FakeMetrics>();
  QueryStatsReporter first(metrics, "p");
  QueryStats s;
  s.succeeded = 2;
  s.failed = 3;  // one timeout, one provider error, one refused (queue full)
  s.timedOut = 1;
  s.refused = 1;
  s.queued = 4;
  first.report(s);
  first.report(s);  // nothing new
  // The queue was re-created (new address): a new reporter from zero.
  QueryStatsReporter second(metrics, "p");
  QueryStats t;
  t.succeeded = 1;
  second.report(t);
  std::lock_guard<std::mutex> lock(metrics->mu);
  EXPECT_EQ(metrics->counts["p/ok"], 3);
  EXPECT_EQ(metrics->counts["p/error"], 2);
  EXPECT_EQ(metrics->counts["p/timeout"], 1);
  EXPECT_EQ(metrics->depth["p"], 0);
  EXPECT_EQ(metrics->maxDepth, 4);
}

TEST(AnalysisMetrics, PrometheusFamiliesCarryProviderAndResult) {
  ::prometheus::Registry registry;
  auto m = makePrometheusAnalysisMetrics(registry);
  m->queries("prometheus-main", "timeout", 2);
  m->queries("prometheus-main", "ok", 5);
  m->queueDepth("prometheus-main", 3);
  std::map<std::string, double> seen;
  for (const ::prometheus::MetricFamily& f : registry.Collect()) {
    for (const ::prometheus::ClientMetric& c : f.metric) {
      std::string key = f.name;
      for (const ::prometheus::ClientMetric::Label& l : c.label)
        key += "," + l.name + "=" + l.value;
      seen[key] = f.type == ::prometheus::MetricType::Counter ? c.counter.value : c.gauge.value;
    }
  }
  EXPECT_EQ(seen["lockstep_analysis_queries_total,provider=prometheus-main,result=timeout"], 2);
  EXPECT_EQ(seen["lockstep_analysis_queries_total,provider=prometheus-main,result=ok"], 5);
  EXPECT_EQ(seen["lockstep_analysis_queue_depth,provider=prometheus-main"], 3);
}

}  // namespace
}  // namespace lockstep::controllers
