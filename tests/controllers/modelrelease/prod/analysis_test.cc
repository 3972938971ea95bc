// Table tests of the canary analysis bookkeeping (controllers/modelrelease/prod/analysis.h).
#include "controllers/modelrelease/prod/analysis.h"

#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;

const int64_t kAnalysisT0 = 1796032800;  // 2026-11-30T10:00:00Z

PrometheusAnalysis analysis(int failureLimit = 0, int errorLimit = 4) {
  PrometheusAnalysis a;
  a.address = "http://prometheus:9090";
  a.query = "q";
  a.max = 0.01;
  a.intervalSeconds = 30;
  a.failureLimit = failureLimit;
  a.consecutiveErrorLimit = errorLimit;
  return a;
}

Measurement value(int64_t at, double v) { return {at, v, ""}; }
Measurement error(int64_t at, const std::string& e = "empty result") { return {at, {}, e}; }

TEST(CanaryAnalysis, Table) {
  struct Row {
    const char* name;
    int failureLimit, errorLimit, count;
    std::vector<Measurement> ms;
    AnalysisPhase want;
    const char* reason;
    int64_t nextAt;  // when running
  };
  const std::vector<Row> rows = {
      {"no measurement yet: due at the start",
       0,
       4,
       3,
       {},
       AnalysisPhase::kRunning,
       "",
       kAnalysisT0},
      {"one pass of three: next after interval",
       0,
       4,
       3,
       {value(kAnalysisT0, 0.001)},
       AnalysisPhase::kRunning,
       "",
       kAnalysisT0 + 30},
      {"count reached",
       0,
       4,
       2,
       {value(kAnalysisT0, 0.001), value(kAnalysisT0 + 30, 0.0)},
       AnalysisPhase::kPassed,
       "",
       0},
      {"one failure with failureLimit 0 fails",
       0,
       4,
       3,
       {value(kAnalysisT0, 0.5)},
       AnalysisPhase::kFailed,
       kReasonAnalysisFailed,
       0},
      {"failures up to failureLimit are tolerated",
       1,
       4,
       3,
       {value(kAnalysisT0, 0.5), value(kAnalysisT0 + 30, 0.0), value(kAnalysisT0 + 60, 0.0)},
       AnalysisPhase::kPassed,
       "",
       0},
      {"failed > failureLimit fails",
       1,
       4,
       5,
       {value(kAnalysisT0, 0.5), value(kAnalysisT0 + 30, 0.7)},
       AnalysisPhase::kFailed,
       kReasonAnalysisFailed,
       0},
      {"an error is not a failure and retries after 10s",
       0,
       4,
       1,
       {error(kAnalysisT0)},
       AnalysisPhase::kRunning,
       "",
       kAnalysisT0 + 10},
      {"errors do not count toward count",
       0,
       4,
       1,
       {error(kAnalysisT0), error(kAnalysisT0 + 10)},
       AnalysisPhase::kRunning,
       "",
       kAnalysisT0 + 20},
      {"consecutive errors up to the limit are tolerated",
       0,
       2,
       1,
       {error(kAnalysisT0), error(kAnalysisT0 + 10)},
       AnalysisPhase::kRunning,
       "",
       kAnalysisT0 + 20},
      {"consecutive errors > limit fail: never a silent pass",
       0,
       2,
       1,
       {error(kAnalysisT0), error(kAnalysisT0 + 10), error(kAnalysisT0 + 20)},
       AnalysisPhase::kFailed,
       kReasonAnalysisError,
       0},
      {"a value resets the consecutive errors",
       0,
       2,
       3,
       {error(kAnalysisT0), error(kAnalysisT0 + 10), value(kAnalysisT0 + 20, 0.0),
        error(kAnalysisT0 + 50), error(kAnalysisT0 + 60)},
       AnalysisPhase::kRunning,
       "",
       kAnalysisT0 + 70},
      {"NaN is an error",
       0,
       0,
       1,
       {value(kAnalysisT0, std::nan(""))},
       AnalysisPhase::kFailed,
       kReasonAnalysisError,
       0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    PrometheusAnalysis a = analysis(r.failureLimit, r.errorLimit);
    AnalysisCounters c;
    for (const Measurement& m : r.ms) recordMeasurement(c, a, m);
    AnalysisVerdict v = assessAnalysis(c, a, r.count, kAnalysisT0);
    EXPECT_EQ(v.phase, r.want) << v.message;
    EXPECT_EQ(v.reason, r.reason);
    if (r.want == AnalysisPhase::kRunning) {
      EXPECT_EQ(v.nextMeasurementAtUnix, r.nextAt);
    }
  }
}

TEST(CanaryAnalysis, MinBoundAndDerivedCount) {
  PrometheusAnalysis a = analysis();
  a.max.reset();
  a.min = 0.9;
  AnalysisCounters c;
  recordMeasurement(c, a, value(kAnalysisT0, 0.95));
  recordMeasurement(c, a, value(kAnalysisT0 + 30, 0.5));
  EXPECT_EQ(c.successful, 1);
  EXPECT_EQ(c.failed, 1);
  CanaryStep s;
  s.analysis = analysis();
  EXPECT_EQ(effectiveCount(s), 1);
  s.pause = CanaryStep::Pause::kDuration;
  s.pauseSeconds = 300;
  EXPECT_EQ(effectiveCount(s), 10);  // one per 30s interval over a 5m pause
  s.analysis->initialDelaySeconds = 60;
  EXPECT_EQ(effectiveCount(s), 8);  // the pause after the initial delay: 4m
  s.analysis->initialDelaySeconds = 600;
  EXPECT_EQ(effectiveCount(s), 1);  // a delay past the pause still measures once
  s.analysis->count = 4;
  EXPECT_EQ(effectiveCount(s), 4);
}

}  // namespace
}  // namespace lockstep::controllers
