// Issue 12 item 14: the Prometheus admission recorder beyond the audited
// counter the cluster test reads: every decision and operation lands in its own
// series of lockstep_admission_requests_total, durations in the histogram per
// webhook (in seconds), request content never becomes a label, and the fan-out
// reaches every recorder.
#include "webhooks/metrics/prometheus_recorder.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace lockstep::webhooks {
namespace {

using namespace std::chrono_literals;

class PrometheusRecorderTest : public ::testing::Test {
 protected:
  std::string text() {
    prometheus::TextSerializer s;
    return s.Serialize(registry_.Collect());
  }
  // The value of the sample whose line starts with `series` (-1 when absent).
  double sample(const std::string& series) {
    std::string t = text();
    std::size_t at = t.find(series + " ");
    if (at == std::string::npos || (at > 0 && t[at - 1] != '\n')) return -1;
    return std::stod(t.substr(at + series.size() + 1));
  }
  AdmissionOutcome outcome(std::string webhook, Operation op, Decision d,
                           std::chrono::nanoseconds took = 1ms) {
    AdmissionOutcome o;
    o.webhook = std::move(webhook);
    o.operation = op;
    o.decision = d;
    o.duration = took;
    o.ns = "tenant-ns";
    o.name = "tenant-pod";
    o.userName = "alice";
    o.message = "image registry.example/x:latest is not pinned";
    return o;
  }
  prometheus::Registry registry_;
  PrometheusRecorder recorder_{registry_};
};

TEST_F(PrometheusRecorderTest, EveryDecisionAndOperationIsItsOwnSeries) {
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kAllowed));
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kAllowed));
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kDenied));
  recorder_.record(outcome("pods", Operation::kUpdate, Decision::kWarned));
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kAudited));
  recorder_.record(outcome("modelreleases", Operation::kUpdate, Decision::kError));
  const std::string f = "lockstep_admission_requests_total";
  EXPECT_EQ(sample(f + "{decision=\"allowed\",operation=\"CREATE\",webhook=\"pods\"}"), 2)
      << text();
  EXPECT_EQ(sample(f + "{decision=\"denied\",operation=\"CREATE\",webhook=\"pods\"}"), 1);
  EXPECT_EQ(sample(f + "{decision=\"warned\",operation=\"UPDATE\",webhook=\"pods\"}"), 1);
  EXPECT_EQ(sample(f + "{decision=\"audited\",operation=\"CREATE\",webhook=\"pods\"}"), 1);
  EXPECT_EQ(sample(f + "{decision=\"error\",operation=\"UPDATE\",webhook=\"modelreleases\"}"), 1);
  EXPECT_EQ(sample(f + "{decision=\"denied\",operation=\"UPDATE\",webhook=\"pods\"}"), -1);
}

TEST_F(PrometheusRecorderTest, DurationsAreSecondsPerWebhook) {
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kAllowed, 2ms));
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kDenied, 300ms));
  recorder_.record(outcome("modelreleases", Operation::kCreate, Decision::kAllowed, 40us));
  const std::string h = "lockstep_admission_duration_seconds";
  EXPECT_EQ(sample(h + "_count{webhook=\"pods\"}"), 2) << text();
  EXPECT_DOUBLE_EQ(sample(h + "_sum{webhook=\"pods\"}"), 0.302);
  EXPECT_EQ(sample(h + "_bucket{webhook=\"pods\",le=\"0.0025\"}"), 1);
  EXPECT_EQ(sample(h + "_bucket{webhook=\"pods\",le=\"0.25\"}"), 1);
  EXPECT_EQ(sample(h + "_bucket{webhook=\"pods\",le=\"1\"}"), 2);
  EXPECT_EQ(sample(h + "_bucket{webhook=\"modelreleases\",le=\"5e-05\"}"), 1);
}

TEST_F(PrometheusRecorderTest, RequestContentNeverBecomesALabel) {
  recorder_.record(outcome("pods", Operation::kCreate, Decision::kDenied));
  std::string t = text();
  for (const char* secretish : {"tenant-ns", "tenant-pod", "alice", "registry.example"}) {
    EXPECT_EQ(t.find(secretish), std::string::npos) << secretish << " in\n" << t;
  }
}

TEST_F(PrometheusRecorderTest, FanoutReachesEveryRecorder) {
  prometheus::Registry other;
  PrometheusRecorder second(other);
  FanoutRecorder both{&recorder_, &second};
  both.record(outcome("pods", Operation::kCreate, Decision::kDenied));
  prometheus::TextSerializer s;
  std::string t2 = s.Serialize(other.Collect());
  EXPECT_EQ(sample("lockstep_admission_requests_total{decision=\"denied\",operation=\"CREATE\","
                   "webhook=\"pods\"}"),
            1);
  EXPECT_NE(t2.find("decision=\"denied\""), std::string::npos) << t2;
}

}  // namespace
}  // namespace lockstep::webhooks
