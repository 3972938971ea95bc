// Table tests of the canary decision (controllers/modelrelease/prod/canary_plan.h;
// the canary spec as api/v1alpha1/model_release.h checks it) and a simulated
// world (Deployments, pods, Prometheus) that restarts the operator at every step.
#include "controllers/modelrelease/prod/canary_plan.h"

#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/serving_objects.h"

#include <algorithm>
#include <ctime>
#include <functional>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;

// The prod stage `stage` through the one decoder (api/v1alpha1/model_release.h):
// nullopt, or the error message naming the field.
std::optional<std::string> decodeCanarySpec(const json& stage, CanarySpec& out) {
  const ModelRelease r = decodeModelRelease({{"spec", {{"stages", json::array({stage})}}}});
  auto spec = canarySpecOf(r.spec.stages.at(0));
  if (!spec.isOk()) return spec.status().message();
  out = *spec;
  return std::nullopt;
}

const std::string kHash = "sha256:" + std::string(64, 'a');
const std::string kOldHash = "sha256:" + std::string(64, 'd');
const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
const std::string kOldPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'e');
const int64_t kT0 = 1796032800;  // 2026-11-30T10:00:00Z

Measurement value(int64_t at, double v) { return {at, v, ""}; }
Measurement error(int64_t at, const std::string& e = "empty result") { return {at, {}, e}; }

std::string rfc(int64_t unix) {
  std::time_t t = static_cast<std::time_t>(unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---- decoding ---------------------------------------------------------------------------------

json prodStage(json canary) {
  return {{"name", "prod"},
          {"serving",
           {{"template", {{"spec", {{"containers", json::array({{{"name", "server"}}})}}}}},
            {"replicas", 4},
            {"port", 8080}}},
          {"canary", canary}};
}

json promAnalysis(int count = 1, int failureLimit = 0) {
  return {{"prometheus",
           {{"address", "http://prometheus:9090"},
            {"query", "error_rate"},
            {"max", 0.01},
            {"interval", "30s"},
            {"count", count},
            {"failureLimit", failureLimit},
            {"consecutiveErrorLimit", 2}}}};
}

TEST(CanarySpecDecode, StepsPausesAnalysisAndErrors) {
  CanarySpec spec;
  json canary = {
      {"capacity", "drain"},
      {"progressDeadline", "5m"},
      {"analysis", promAnalysis(3)},
      {"steps",
       json::array(
           {{{"weight", 25}, {"pause", "2m"}},
            {{"weight", 50}, {"pause", "Indefinite"}},
            {{"weight", 100}, {"progressDeadline", "20m"}, {"analysis", promAnalysis(1, 2)}}})}};
  ASSERT_EQ(decodeCanarySpec(prodStage(canary), spec), std::nullopt);
  EXPECT_EQ(spec.replicas, 4);
  EXPECT_EQ(spec.capacity, CapacityMode::kDrain);
  ASSERT_EQ(spec.steps.size(), 3u);
  EXPECT_EQ(spec.steps[0].pause, CanaryStep::Pause::kDuration);
  EXPECT_EQ(spec.steps[0].pauseSeconds, 120);
  EXPECT_EQ(spec.steps[0].progressDeadlineSeconds, 300);
  EXPECT_EQ(spec.steps[0].analysis->count, 3);
  EXPECT_EQ(spec.steps[1].pause, CanaryStep::Pause::kIndefinite);
  EXPECT_EQ(spec.steps[2].progressDeadlineSeconds, 1200);
  EXPECT_EQ(spec.steps[2].analysis->failureLimit, 2);
  EXPECT_EQ(spec.steps[2].analysis->consecutiveErrorLimit, 2);

  CanarySpec bad;
  auto err = decodeCanarySpec(prodStage({{"capacity", "steal"}}), bad);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("capacity \"steal\""), std::string::npos);
  CanarySpec none;
  ASSERT_EQ(decodeCanarySpec(prodStage(json::object()), none), std::nullopt);
  ASSERT_EQ(none.steps.size(), 1u);  // no steps: one step at 100%
  EXPECT_EQ(none.steps[0].weight, 100);
}

// ---- the decision ------------------------------------------------------------------------------

CanarySpec specOf(json canary) {
  CanarySpec s;
  auto err = decodeCanarySpec(prodStage(std::move(canary)), s);
  EXPECT_EQ(err, std::nullopt);
  return s;
}

CanaryObserved observed(const CanarySpec& spec, int64_t now = kT0) {
  CanaryObserved o;
  o.spec = spec;
  o.release = "gpt2-v2";
  o.model = "gpt2";
  o.package = kPackage;
  o.closureHash = kHash;
  o.knownGood = KnownGood{"gpt2-v1", kOldPackage, kHash};
  o.stableRelease = "gpt2-v1";
  o.stable = {spec.replicas, spec.replicas};
  o.now = rfc(now);
  o.nowUnix = now;
  return o;
}

// Re-plans with the plan's status as the previous one, as after a status write.
CanaryObserved after(CanaryObserved o, const CanaryPlan& p, int64_t now) {
  o.previous = p.status;
  o.now = rfc(now);
  o.nowUnix = now;
  o.measurement.reset();
  return o;
}

TEST(CanaryPlan, FirstPlanStartsStepOneAndFixesTheKnownGood) {
  auto o = observed(specOf({{"steps", json::array({{{"weight", 50}}})}}));
  auto p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kProgress);
  EXPECT_EQ(p.status["phase"], "Progressing");
  EXPECT_EQ(p.status["step"], 0);
  EXPECT_EQ(p.status["stepStartedAt"], rfc(kT0));
  EXPECT_EQ(p.status["knownGood"]["release"], "gpt2-v1");
  EXPECT_EQ(p.status["knownGood"]["package"], kOldPackage);
  EXPECT_EQ(p.replicas.canary, 1);  // one surge pod first
  EXPECT_EQ(p.replicas.stable, 4);
  EXPECT_EQ(p.stableRelease, "gpt2-v1");
  EXPECT_EQ(p.reason, kReasonCanaryProgressing);
  // A later known-good (another release promoted meanwhile) does not move the target.
  auto o2 = after(o, p, kT0 + 5);
  o2.knownGood = KnownGood{"gpt2-v9", kPackage, kHash};
  EXPECT_EQ(planCanary(o2).status["knownGood"]["release"], "gpt2-v1");
}

// Puts the step's weight in place (spec and Ready counts at the target).
CanaryObserved atWeight(CanaryObserved o, int weight) {
  auto t = targetReplicaCounts(o.spec.replicas, weight, o.spec.capacity);
  o.canary = {t.canary, t.canary};
  o.stable = {t.stable, t.stable};
  return o;
}

TEST(CanaryPlan, DurationPauseStartsWhenTheWeightIsReadyThenTheNextStepStarts) {
  auto spec =
      specOf({{"steps", json::array({{{"weight", 50}, {"pause", "5m"}}, {{"weight", 75}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 60), 50);
  auto p1 = planCanary(o);
  EXPECT_EQ(p1.reason, kReasonCanaryPaused);
  EXPECT_EQ(p1.status["weightReachedAt"], rfc(kT0 + 60));
  EXPECT_EQ(p1.requeueAfterSeconds, 300);
  auto p2 = planCanary(after(o, p1, kT0 + 200));
  EXPECT_EQ(p2.status["step"], 0);
  EXPECT_EQ(p2.requeueAfterSeconds, 160);
  auto p3 = planCanary(after(o, p2, kT0 + 360));
  EXPECT_EQ(p3.status["step"], 1);
  EXPECT_EQ(p3.status["stepStartedAt"], rfc(kT0 + 360));
  EXPECT_FALSE(p3.status.contains("weightReachedAt"));
  EXPECT_EQ(p3.reason, kReasonCanaryProgressing);
  EXPECT_EQ(p3.replicas.canary, 3);  // 50% → 75% of 4 with one surge pod
}

TEST(CanaryPlan, RequestedButNotReadyCanaryPodsDoNotCountTowardTheWeight) {
  auto spec = specOf(
      {{"analysis", promAnalysis(1)}, {"steps", json::array({{{"weight", 50}, {"pause", "1m"}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  o.canary.readyReplicas = 1;  // 2 requested, 1 warm
  auto p = planCanary(o);
  EXPECT_EQ(p.reason, kReasonCanaryProgressing);
  EXPECT_FALSE(p.measureNow) << "no analysis before the weight is Ready";
  EXPECT_FALSE(p.status.contains("weightReachedAt")) << "the pause has not started";
}

TEST(CanaryPlan, IndefinitePauseWaitsForPromoteOfThatStep) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}, {"pause", "Indefinite"}},
                                             {{"weight", 100}, {"pause", "Indefinite"}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  auto p1 = planCanary(o);
  EXPECT_EQ(p1.reason, kReasonCanaryPaused);
  EXPECT_EQ(p1.requeueAfterSeconds, 0);  // nothing to wait for but the user
  auto p2 = planCanary(after(o, p1, kT0 + 86400));
  EXPECT_EQ(p2.status["step"], 0);
  auto o3 = after(o, p2, kT0 + 86401);
  o3.promoteStepBy = "alice";
  auto p3 = planCanary(o3);
  EXPECT_EQ(p3.status["step"], 1);
  // The next step's promote annotation is a different one: it still pauses.
  auto o4 = atWeight(after(o3, p3, kT0 + 86500), 100);
  o4.promoteStepBy.clear();
  auto p4 = planCanary(o4);
  EXPECT_EQ(p4.status["step"], 1);
  EXPECT_EQ(p4.reason, kReasonCanaryPaused);
}

TEST(CanaryPlan, PromoteFullSkipsRemainingStepsAndAnalysis) {
  auto spec = specOf({{"analysis", promAnalysis(10)},
                      {"steps", json::array({{{"weight", 25}}, {{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = after(observed(spec), p0, kT0 + 10);
  o.promoteFullBy = "alice";
  auto p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kPromoting);
  EXPECT_EQ(p.status["phase"], "Promoting");
  EXPECT_EQ(p.status["promotedBy"], "alice");
  EXPECT_EQ(p.stableRelease, "gpt2-v1");  // stable keeps serving until the canary holds all
}

struct RollbackCase {
  const char* name;
  std::function<void(CanaryObserved&)> world;
  int64_t at;
  const char* reason;
  // The first rollback plan: stable grows first (within the surge budget) and
  // canary pods stay until stable pods replace them.
  int canaryKept = 0;
  int stableNext = 4;
};

TEST(CanaryPlan, AutomaticRollbackTable) {
  auto spec = specOf({{"progressDeadline", "10m"},
                      {"analysis", promAnalysis(3)},
                      {"steps", json::array({{{"weight", 50}}})}});
  const std::vector<RollbackCase> cases = {
      {"abort", [](CanaryObserved& o) { o.abortBy = "bob"; }, kT0 + 10, kReasonAborted},
      {"admission refused a canary pod",
       [](CanaryObserved& o) {
         o.admissionRefusals = {"admission webhook denied the request: closure hash mismatch"};
       },
       kT0 + 10, kReasonAdmissionRefused},
      {"canary container restarted", [](CanaryObserved& o) { o.canaryRestarts = 2; }, kT0 + 10,
       kReasonCanaryRestarting},
      {"canary not Ready by the deadline",
       [](CanaryObserved& o) {
         o.canary = {1, 0};
       },
       kT0 + 601, kReasonProgressDeadlineExceeded},
      {"canary Pending past the deadline",
       [](CanaryObserved& o) {
         o.canary = {1, 0};
         o.canaryPendingUnschedulable = 1;
       },
       kT0 + 601, kReasonInsufficientGPUCapacity},
      {"no spare GPU past the deadline",
       [](CanaryObserved& o) {
         o.stable = {3, 3};  // one surge pod done; the second finds no GPU
         o.gpu = GpuCapacity{1, {0, 0}};
       },
       kT0 + 601, kReasonInsufficientGPUCapacity, 1},
      {"bad metric",
       [](CanaryObserved& o) {
         o = atWeight(o, 50);
         o.measurement = value(o.nowUnix, 0.2);
       },
       kT0 + 30, kReasonAnalysisFailed, 2, 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto p0 = planCanary(observed(spec));
    auto o = after(observed(spec), p0, c.at);
    o.canary = {1, 1};  // the first surge pod runs
    c.world(o);
    auto p = planCanary(o);
    EXPECT_EQ(p.action, CanaryAction::kRollingBack);
    EXPECT_EQ(p.status["phase"], "RollingBack");
    EXPECT_EQ(p.status["reason"], c.reason);
    EXPECT_EQ(p.rollbackReason, c.reason);
    EXPECT_EQ(p.replicas.canary, c.canaryKept);
    EXPECT_EQ(p.replicas.stable, c.stableNext);
    EXPECT_EQ(p.stableRelease, "gpt2-v1");
    ASSERT_FALSE(p.events.empty());
    EXPECT_EQ(p.events.back().type, "Warning");
    // Once the canary is gone and stable is back: RolledBack, terminal, and the reason is kept.
    auto o2 = after(o, p, c.at + 5);
    o2.canary = {0, 0};
    o2.stable = {4, 4};
    o2.measurement.reset();
    auto done = planCanary(o2);
    EXPECT_EQ(done.action, CanaryAction::kRolledBack);
    EXPECT_EQ(done.status["phase"], "RolledBack");
    EXPECT_EQ(done.status["reason"], c.reason);
    EXPECT_TRUE(done.rollbackReason.empty()) << "counted once, on the transition";
    // Terminal: a later promote or a healthy world changes nothing.
    auto o3 = after(o2, done, c.at + 100);
    o3.promoteFullBy = "alice";
    auto again = planCanary(o3);
    EXPECT_EQ(again.status, done.status);
    EXPECT_EQ(again.replicas.canary, 0);
  }
}

TEST(CanaryPlan, WaitsForGpuCapacityWithAClearReasonAndLeavesStableAlone) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}}})}});
  auto o = observed(spec);
  o.gpu = GpuCapacity{1, {0, 0}};
  auto p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kWait);
  EXPECT_EQ(p.reason, kReasonWaitingForGPUCapacity);
  EXPECT_NE(p.message.find("waits for GPU capacity"), std::string::npos) << p.message;
  EXPECT_EQ(p.replicas.canary, 0);
  EXPECT_EQ(p.replicas.stable, 4);
  EXPECT_GT(p.requeueAfterSeconds, 0);
  // A GPU frees up: the surge pod is requested.
  auto o2 = after(o, p, kT0 + 60);
  o2.gpu = GpuCapacity{1, {0, 1}};
  EXPECT_EQ(planCanary(o2).replicas.canary, 1);
}

TEST(CanaryPlan, DrainRollbackRestoresStableBeforeRemovingTheCanary) {
  auto spec = specOf({{"capacity", "drain"}, {"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);  // canary 2, stable 2
  o.abortBy = "bob";
  auto p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p.replicas.stable, 4);
  EXPECT_EQ(p.replicas.canary, 2) << "the canary keeps serving until stable is back";
  auto o2 = after(o, p, kT0 + 20);
  o2.stable = {4, 3};
  EXPECT_EQ(planCanary(o2).replicas.canary, 2);
  o2.stable = {4, 4};
  auto p3 = planCanary(o2);
  EXPECT_EQ(p3.replicas.canary, 0);
  EXPECT_EQ(p3.replicas.stable, 4);
}

// A full cluster: the stable pods the rollback asks for are unschedulable
// (their GPUs are the canary's), so the canary gives back one pod at a time
// instead of waiting forever with a failed canary serving.
TEST(CanaryPlan, DrainRollbackOnAFullClusterTradesOneCanaryPodAtATime) {
  auto spec = specOf({{"capacity", "drain"}, {"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);  // canary 2, stable 2
  o.abortBy = "bob";
  auto p = planCanary(o);
  auto o2 = after(o, p, kT0 + 20);
  o2.stable = {4, 2};
  o2.stablePendingUnschedulable = 2;
  auto p2 = planCanary(o2);
  EXPECT_EQ(p2.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p2.replicas.canary, 1) << "one canary pod at a time";
  EXPECT_EQ(p2.replicas.stable, 4);
  EXPECT_NE(p2.message.find("2 stable pod(s) unschedulable: removing one canary pod"),
            std::string::npos)
      << p2.message;
  // The canary pod is still terminating (it holds the GPU): no second trade yet.
  auto o25 = after(o2, p2, kT0 + 25);
  o25.canary = {1, 1};
  o25.podsTerminating = 1;
  EXPECT_EQ(planCanary(o25).replicas.canary, 1);
  // Stable took that GPU; one stable pod is still unschedulable: one more.
  auto o3 = after(o2, p2, kT0 + 30);
  o3.canary = {1, 1};
  o3.stable = {4, 3};
  o3.stablePendingUnschedulable = 1;
  EXPECT_EQ(planCanary(o3).replicas.canary, 0);
  // Pending but not (yet) found unschedulable: wait, keep the canary.
  o3.stablePendingUnschedulable = 0;
  EXPECT_EQ(planCanary(o3).replicas.canary, 1);
}

TEST(CanaryPlan, AnalysisAsksForMeasurementsAndRecordsThem) {
  auto spec = specOf({{"analysis", promAnalysis(2)}, {"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  auto p1 = planCanary(o);
  EXPECT_TRUE(p1.measureNow);
  EXPECT_EQ(p1.reason, kReasonAnalysisRunning);
  o.measurement = value(kT0 + 10, 0.001);
  auto p2 = planCanary(o);  // the same pass, with the measurement taken
  EXPECT_FALSE(p2.measureNow);
  EXPECT_EQ(p2.requeueAfterSeconds, 30);
  EXPECT_EQ(p2.status["analysis"]["count"], 1);
  EXPECT_EQ(p2.status["analysis"]["measurements"][0]["value"], 0.001);
  // A measurement taken too early (a duplicate reconcile) is not recorded.
  auto o3 = after(o, p2, kT0 + 20);
  o3.measurement = value(kT0 + 20, 0.5);
  auto p3 = planCanary(o3);
  EXPECT_EQ(p3.status["analysis"]["count"], 1);
  EXPECT_EQ(p3.status["analysis"]["failed"], 0);
  // Prometheus unreachable: errors, retried, then the step fails.
  auto oe = after(o, p2, kT0 + 40);
  CanaryPlan pe = p2;
  for (int i = 0; i < 3; ++i) {
    oe = after(oe, pe, kT0 + 40 + 10 * i);
    oe.measurement = error(kT0 + 40 + 10 * i, "connection refused");
    pe = planCanary(oe);
  }
  EXPECT_EQ(pe.action, CanaryAction::kRollingBack);
  EXPECT_EQ(pe.status["reason"], kReasonAnalysisError);
  EXPECT_EQ(pe.status["analysis"]["errors"], 3);
}

// Argo Rollouts' initialDelay: the first measurement waits until the weight has
// been Ready that long (a rate over a window needs the canary's own samples),
// and the wait is counted from weightReachedAt, so a restart does not move it.
TEST(CanaryPlan, InitialDelayHoldsTheFirstMeasurementAfterTheWeightIsReady) {
  json a = promAnalysis(2);
  a["prometheus"]["initialDelay"] = "1m";
  auto spec = specOf({{"analysis", a}, {"steps", json::array({{{"weight", 50}}})}});
  ASSERT_EQ(spec.steps[0].analysis->initialDelaySeconds, 60);
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  auto p1 = planCanary(o);  // the weight is Ready at kT0 + 10
  EXPECT_FALSE(p1.measureNow);
  EXPECT_EQ(p1.reason, kReasonAnalysisRunning);
  EXPECT_EQ(p1.requeueAfterSeconds, 60);
  // A measurement offered early (another reconcile) is not recorded.
  auto o2 = after(o, p1, kT0 + 40);
  o2.measurement = value(kT0 + 40, 0.5);
  auto p2 = planCanary(o2);
  EXPECT_FALSE(p2.measureNow);
  EXPECT_EQ(p2.status["analysis"].value("count", 0), 0);
  EXPECT_EQ(p2.status["analysis"].value("failed", 0), 0);
  EXPECT_EQ(p2.requeueAfterSeconds, 30);
  // Due at weightReachedAt + 1m.
  auto o3 = after(o2, p2, kT0 + 70);
  EXPECT_TRUE(planCanary(o3).measureNow);
  o3.measurement = value(kT0 + 70, 0.5);
  auto p3 = planCanary(o3);
  EXPECT_EQ(p3.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p3.status["reason"], kReasonAnalysisFailed);

  json bad = promAnalysis(1);
  bad["prometheus"]["initialDelay"] = "soon";
  CanarySpec unused;
  auto err = decodeCanarySpec(prodStage({{"analysis", bad}}), unused);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("initialDelay \"soon\" is not a duration"), std::string::npos) << *err;
}

TEST(CanaryPlan, PromotionMovesTrafficThenHandsStableTheNewReleaseAndSupersedes) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  auto p1 = planCanary(o);
  ASSERT_EQ(p1.action, CanaryAction::kPromoting);
  EXPECT_EQ(p1.status["promotion"], "FullWeight");
  EXPECT_EQ(p1.stableRelease, "gpt2-v1");
  // All on the canary: the stable Deployment, now empty, takes the new template.
  auto o2 = after(o, p1, kT0 + 100);
  o2.canary = {4, 4};
  o2.stable = {0, 0};
  auto p2 = planCanary(o2);
  EXPECT_EQ(p2.status["promotion"], "Handover");
  EXPECT_EQ(p2.stableRelease, "gpt2-v2");
  EXPECT_EQ(p2.replicas.stable, 1);
  EXPECT_EQ(p2.replicas.canary, 4);
  auto o3 = after(o2, p2, kT0 + 200);
  o3.stableRelease = "gpt2-v2";
  o3.canary = {0, 0};
  o3.stable = {4, 4};
  auto p3 = planCanary(o3);
  EXPECT_EQ(p3.action, CanaryAction::kPromoted);
  EXPECT_EQ(p3.status["phase"], "Promoted");
  EXPECT_EQ(p3.supersede, "gpt2-v1");
  EXPECT_EQ(p3.replicas.canary, 0);
  EXPECT_EQ(p3.replicas.stable, 4);
  // Abort after promotion changes nothing (rollback of a model is `model rollback`).
  auto o4 = after(o3, p3, kT0 + 300);
  o4.abortBy = "bob";
  EXPECT_EQ(planCanary(o4).action, CanaryAction::kPromoted);
}

TEST(CanaryPlan, FirstReleaseOfAModelHasNoStable) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}}})}});
  auto o = observed(spec);
  o.knownGood.reset();
  o.stableRelease.clear();
  o.stable = {0, 0};
  auto p = planCanary(o);
  EXPECT_EQ(p.replicas.stable, 0);
  EXPECT_EQ(p.replicas.canary, 2) << "no stable to protect: the step's pods at once";
  auto o2 = after(o, p, kT0 + 10);
  o2.abortBy = "bob";
  auto rb = planCanary(o2);
  EXPECT_EQ(rb.replicas.canary, 0);
  EXPECT_EQ(rb.replicas.stable, 0);
}

// ---- a simulated world with a restart at every step -----------------------------------------

// The API server (status.canary and two Deployments' replica counts), the
// Deployment controller and kubelet (pods become Ready one tick after they are
// requested), Prometheus (the error rate the test sets) and a clock. A
// reconcile may "crash" after scaling and measuring but before writing status.
struct World {
  CanarySpec spec;
  json status;  // status.canary
  ReplicaCounts specCounts{0, 4};
  ReplicaCounts ready{0, 4};
  std::string stableRelease = "gpt2-v1";
  int64_t now = kT0;
  double errorRate = 0.001;
  int badFromStep = -1;  // the canary's error rate rises from this step
  bool promServes = true;
  std::vector<int> stepsSeen;  // status.canary.step after every reconcile
  int measurements = 0;
  int maxPods = 0;
  std::optional<GpuCapacity> gpu;  // free GPUs the scheduler would see
  int minStableSpec = 1 << 30;

  std::string phase() const { return status.is_object() ? status.value("phase", "") : ""; }

  CanaryObserved observe() const {
    CanaryObserved o = observed(spec, now);
    o.previous = status;
    o.canary = {specCounts.canary, ready.canary};
    o.stable = {specCounts.stable, ready.stable};
    o.stableRelease = stableRelease;
    o.gpu = gpu;
    return o;
  }

  void reconcile(bool crashBeforeStatus) {
    CanaryObserved o = observe();
    CanaryPlan p = planCanary(o);
    if (p.measureNow) {
      ++measurements;
      int step = static_cast<int>(p.status.value("step", 0));
      double v = badFromStep >= 0 && step >= badFromStep ? 0.5 : errorRate;
      o.measurement = promServes ? Measurement{now, v, ""} : Measurement{now, {}, "unreachable"};
      p = planCanary(o);
    }
    // Execute: the stable template first (it is empty when it changes), then counts.
    if (p.stableRelease != stableRelease) {
      EXPECT_EQ(specCounts.stable, 0) << "the stable template changes only without pods";
      stableRelease = p.stableRelease;
      ready.stable = 0;
    }
    if (p.action == CanaryAction::kRollingBack && spec.capacity == CapacityMode::kDrain &&
        p.replicas.canary < specCounts.canary) {
      EXPECT_GE(ready.stable, spec.replicas) << "drain: canary removed before stable is back";
    }
    specCounts = p.replicas;
    ready.canary = std::min(ready.canary, specCounts.canary);
    ready.stable = std::min(ready.stable, specCounts.stable);
    maxPods = std::max(maxPods, specCounts.canary + specCounts.stable);
    minStableSpec = std::min(minStableSpec, specCounts.stable);
    if (crashBeforeStatus) return;
    status = p.status;
    stepsSeen.push_back(static_cast<int>(status.value("step", 0)));
  }
  void tick(int64_t seconds) {
    now += seconds;
    ready = specCounts;  // pods requested last tick are Ready now
  }
};

struct RunResult {
  std::string phase, reason, stableRelease;
  ReplicaCounts specCounts;
  int maxPods;
};

RunResult runWorld(World w, int crashAt) {
  for (int i = 0; i < 400 && w.phase() != "Promoted" && w.phase() != "RolledBack"; ++i) {
    w.reconcile(i == crashAt);
    if (i == crashAt) w.reconcile(false);  // the restarted operator, same instant
    // Steps never go back and never jump by more than one between writes.
    for (size_t k = 1; k < w.stepsSeen.size(); ++k) {
      EXPECT_GE(w.stepsSeen[k], w.stepsSeen[k - 1]);
      EXPECT_LE(w.stepsSeen[k], w.stepsSeen[k - 1] + 1) << "a step was skipped";
    }
    w.tick(10);
  }
  return {w.phase(), w.status.value("reason", ""), w.stableRelease, w.specCounts, w.maxPods};
}

World world(const char* capacity = "surge") {
  World w;
  w.spec = specOf({{"capacity", capacity},
                   {"analysis", promAnalysis(2)},
                   {"steps", json::array({{{"weight", 25}, {"pause", "1m"}},
                                          {{"weight", 50}, {"pause", "1m"}},
                                          {{"weight", 75}}})}});
  return w;
}

TEST(CanaryWorld, RestartAtEveryStepEndsPromotedLikeAnUninterruptedRun) {
  RunResult clean = runWorld(world(), -1);
  ASSERT_EQ(clean.phase, "Promoted");
  EXPECT_EQ(clean.stableRelease, "gpt2-v2");
  EXPECT_TRUE(clean.specCounts == (ReplicaCounts{0, 4}));
  EXPECT_LE(clean.maxPods, 5) << "never more than one surge pod";
  for (int crashAt = 0; crashAt < 80; ++crashAt) {
    SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
    RunResult r = runWorld(world(), crashAt);
    EXPECT_EQ(r.phase, clean.phase);
    EXPECT_EQ(r.stableRelease, clean.stableRelease);
    EXPECT_TRUE(r.specCounts == clean.specCounts);
    EXPECT_LE(r.maxPods, 5);
  }
}

TEST(CanaryWorld, EveryStepIsAnalysedBeforeTheNext) {
  World w = world();
  for (int i = 0; i < 400 && w.phase() != "Promoted"; ++i) {
    w.reconcile(false);
    w.tick(10);
  }
  ASSERT_EQ(w.phase(), "Promoted");
  EXPECT_GE(w.measurements, 6) << "3 steps × count 2";
}

// status.canary.passedSteps: one record per step, in order, with the step's
// pause honoured and its analysis complete; a restart at any reconcile leaves
// the same records (none repeated, none missing).
json passedStepsOf(World w, int crashAt) {
  for (int i = 0; i < 400 && w.phase() != "Promoted"; ++i) {
    w.reconcile(i == crashAt);
    if (i == crashAt) w.reconcile(false);
    w.tick(10);
  }
  EXPECT_EQ(w.phase(), "Promoted");
  return w.status.value("passedSteps", json());
}

TEST(CanaryWorld, PassedStepsRecordEveryStepInOrderAcrossRestarts) {
  json clean = passedStepsOf(world(), -1);
  ASSERT_TRUE(clean.is_array()) << clean.dump();
  ASSERT_EQ(clean.size(), 3u) << clean.dump(2);
  const int weights[] = {25, 50, 75};
  const int64_t pauses[] = {60, 60, 0};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const json& r = clean[i];
    EXPECT_EQ(r["step"], i);
    EXPECT_EQ(r["weight"], weights[i]);
    EXPECT_EQ(r["analysis"]["count"], 2);
    EXPECT_EQ(r["analysis"]["successful"], 2);
    EXPECT_EQ(r["analysis"]["failed"], 0);
    std::string reached = r["weightReachedAt"], passed = r["passedAt"];
    EXPECT_LE(r["startedAt"].get<std::string>(), reached);  // same-length RFC 3339 UTC
    EXPECT_GE(passed, rfc(kT0));
    // The pause ran from the weight being Ready (whole ticks of 10 s).
    std::string pauseEnd = reached;
    for (int64_t t = kT0; t < kT0 + 4000; t += 10) {
      if (rfc(t) == reached) pauseEnd = rfc(t + pauses[i]);
    }
    EXPECT_GE(passed, pauseEnd);
    if (i > 0) {
      EXPECT_GE(r["startedAt"].get<std::string>(), clean[i - 1]["passedAt"].get<std::string>());
    }
  }
  for (int crashAt = 0; crashAt < 80; ++crashAt) {
    SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
    json r = passedStepsOf(world(), crashAt);
    ASSERT_TRUE(r.is_array());
    ASSERT_EQ(r.size(), 3u) << r.dump(2);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(r[i]["step"], i);
      EXPECT_EQ(r[i]["analysis"]["count"], 2);
    }
  }
}

TEST(CanaryPlan, PassedStepIsRecordedOnceWithWhoEndedItsPause) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}, {"pause", "Indefinite"}},
                                             {{"weight", 100}, {"pause", "Indefinite"}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  auto p1 = planCanary(o);
  EXPECT_FALSE(p1.status.contains("passedSteps"));
  o = after(o, p1, kT0 + 20);
  o.promoteStepBy = "alice";
  auto p2 = planCanary(o);
  ASSERT_EQ(p2.status["step"], 1);
  ASSERT_EQ(p2.status["passedSteps"].size(), 1u);
  EXPECT_EQ(p2.status["passedSteps"][0]["promotedBy"], "alice");
  EXPECT_EQ(p2.status["passedSteps"][0]["weightReachedAt"], rfc(kT0 + 10));
  EXPECT_EQ(p2.status["passedSteps"][0]["passedAt"], rfc(kT0 + 20));
  EXPECT_FALSE(p2.status["passedSteps"][0].contains("analysis"));
  // A status that already records step 0 (written by an earlier operator) is not
  // recorded twice when step 0 passes again from a stale copy.
  json stale = p1.status;
  stale["passedSteps"] = p2.status["passedSteps"];
  o.previous = stale;
  auto p3 = planCanary(o);
  EXPECT_EQ(p3.status["passedSteps"].size(), 1u) << p3.status.dump(2);
}

TEST(CanaryWorld, BadMetricAtStepTwoRollsBackWithOrWithoutRestarts) {
  World bad = world();
  bad.badFromStep = 1;
  RunResult clean = runWorld(bad, -1);
  ASSERT_EQ(clean.phase, "RolledBack");
  EXPECT_EQ(clean.reason, kReasonAnalysisFailed);
  EXPECT_EQ(clean.stableRelease, "gpt2-v1");
  EXPECT_TRUE(clean.specCounts == (ReplicaCounts{0, 4}));
  for (int crashAt = 0; crashAt < 60; ++crashAt) {
    SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
    RunResult r = runWorld(bad, crashAt);
    EXPECT_EQ(r.phase, "RolledBack");
    EXPECT_EQ(r.reason, kReasonAnalysisFailed);
    EXPECT_EQ(r.stableRelease, "gpt2-v1");
  }
}

TEST(CanaryWorld, PrometheusUnreachableFailsAfterTheErrorLimitNeverPasses) {
  World w = world();
  w.promServes = false;
  RunResult r = runWorld(w, -1);
  EXPECT_EQ(r.phase, "RolledBack");
  EXPECT_EQ(r.reason, kReasonAnalysisError);
}

}  // namespace
}  // namespace lockstep::controllers

namespace lockstep::controllers {
namespace {

TEST(CanaryWorld, DrainNeverRunsMorePodsThanReplicasAndRollsBackStableFirst) {
  RunResult clean = runWorld(world("drain"), -1);
  ASSERT_EQ(clean.phase, "Promoted");
  EXPECT_LE(clean.maxPods, 4);
  for (int crashAt = 0; crashAt < 80; crashAt += 3) {
    SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
    RunResult r = runWorld(world("drain"), crashAt);
    EXPECT_EQ(r.phase, "Promoted");
    EXPECT_LE(r.maxPods, 4);
  }
  World bad = world("drain");
  bad.badFromStep = 1;
  RunResult rb = runWorld(bad, -1);
  EXPECT_EQ(rb.phase, "RolledBack");
  EXPECT_TRUE(rb.specCounts == (ReplicaCounts{0, 4}));
  EXPECT_EQ(rb.stableRelease, "gpt2-v1");
}

}  // namespace
}  // namespace lockstep::controllers

namespace lockstep::controllers {
namespace {

TEST(CanaryWorld, FullClusterSurgeWaitsThenAbortsWithStableUntouched) {
  World w = world();
  w.gpu = GpuCapacity{1, {0, 0}};  // compatible GPU nodes filled by other pods
  std::vector<std::string> reasons;
  for (int i = 0; i < 200 && w.phase() != "RolledBack"; ++i) {
    w.reconcile(i % 7 == 3);  // and a restart now and then
    reasons.push_back(w.status.value("reason", ""));
    w.tick(10);
  }
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.status.value("reason", ""), kReasonInsufficientGPUCapacity);
  EXPECT_EQ(reasons.front(), kReasonWaitingForGPUCapacity);
  EXPECT_EQ(w.minStableSpec, 4) << "the stable track never gave up a pod";
  EXPECT_EQ(w.maxPods, 4) << "no canary pod was ever requested";
  // The wait lasted the step's progress deadline (10m default), not forever.
  EXPECT_GE(w.now - kT0, 600);
  EXPECT_LE(w.now - kT0, 700);
}

}  // namespace
}  // namespace lockstep::controllers

// ---- capacity during rollbacks (issue 20) ----------------------------------------------------

namespace lockstep::controllers {
namespace {

// One track's pods, each with the time it becomes Ready: pods take `warmup`
// seconds (a model loading its weights). Scaling down removes the pods that
// are not Ready first, then the youngest, as a ReplicaSet does.
struct WarmingTrack {
  std::vector<int64_t> readyAt;
  int spec() const { return static_cast<int>(readyAt.size()); }
  int ready(int64_t now) const {
    return static_cast<int>(
        std::count_if(readyAt.begin(), readyAt.end(), [&](int64_t t) { return t <= now; }));
  }
  void scaleTo(int n, int64_t now, int64_t warmup) {
    while (spec() < n) readyAt.push_back(now + warmup);
    std::sort(readyAt.begin(), readyAt.end());
    while (spec() > n) readyAt.pop_back();
  }
};

struct RollbackRun {
  int minReady = 1 << 30;     // fewest Ready serving pods seen at any instant
  int stableReadyAtEnd = -1;  // Ready stable pods when RolledBack was first reported
  std::string phase;
  int canarySpecAtEnd = -1;
};

// The canary holds all N pods at a weight-100 step (stable at zero pods, its
// template still the known-good's); the user aborts; the operator reconciles
// every 5 s while stable pods need `warmup` seconds to become Ready
// (`stableNeverReady`: the known-good's pods cannot be re-created at all).
RollbackRun rollBackFromFullWeight(CapacityMode mode, int64_t warmup, bool stableNeverReady) {
  auto spec = specOf({{"capacity", capacityModeName(mode)},
                      {"steps", json::array({{{"weight", 100}, {"pause", "Indefinite"}}})}});
  const int n = spec.replicas;
  int64_t now = kT0;
  CanaryPlan p = planCanary(observed(spec, now));
  WarmingTrack canary, stable;
  canary.scaleTo(n, now - 3600, 0);  // warm for an hour
  CanaryObserved o = observed(spec, now);
  RollbackRun run;
  for (int i = 0; i < 200; ++i) {
    now += 5;
    o = after(o, p, now);
    o.canary = {canary.spec(), canary.ready(now)};
    o.stable = {stable.spec(), stableNeverReady ? 0 : stable.ready(now)};
    o.abortBy = "bob";
    p = planCanary(o);
    // Apply: the track that grows first, then the one that shrinks; the
    // instant between the two writes counts too.
    const bool stableFirst = p.replicas.stable >= stable.spec();
    for (bool stableTurn : {stableFirst, !stableFirst}) {
      if (stableTurn) {
        stable.scaleTo(p.replicas.stable, now, warmup);
      } else {
        canary.scaleTo(p.replicas.canary, now, warmup);
      }
      int ready = canary.ready(now) + (stableNeverReady ? 0 : stable.ready(now));
      run.minReady = std::min(run.minReady, ready);
    }
    run.phase = p.status.value("phase", "");
    if (p.action == CanaryAction::kRolledBack) {
      run.stableReadyAtEnd = o.stable.readyReplicas;
      break;
    }
  }
  run.canarySpecAtEnd = canary.spec();
  return run;
}

TEST(CanaryRollbackCapacity, SurgeRollbackNeverDropsBelowNReadyPodsWhileStableWarmsUp) {
  for (int64_t warmup : {0, 5, 20, 60}) {
    SCOPED_TRACE("stable pods Ready after " + std::to_string(warmup) + "s");
    RollbackRun r = rollBackFromFullWeight(CapacityMode::kSurge, warmup, false);
    EXPECT_EQ(r.phase, "RolledBack");
    EXPECT_GE(r.minReady, 4) << "surge: N Ready serving pods at every instant";
    EXPECT_EQ(r.stableReadyAtEnd, 4) << "RolledBack only with N Ready stable pods";
    EXPECT_EQ(r.canarySpecAtEnd, 0);
  }
}

TEST(CanaryRollbackCapacity, DrainRollbackKeepsItsNMinusOneFloor) {
  for (int64_t warmup : {0, 5, 20, 60}) {
    SCOPED_TRACE("stable pods Ready after " + std::to_string(warmup) + "s");
    RollbackRun r = rollBackFromFullWeight(CapacityMode::kDrain, warmup, false);
    EXPECT_EQ(r.phase, "RolledBack");
    EXPECT_GE(r.minReady, 3) << "drain: never fewer than N-1 Ready serving pods";
    EXPECT_EQ(r.stableReadyAtEnd, 4);
  }
}

TEST(CanaryRollbackCapacity, StableThatCannotBeRecreatedKeepsTheCanaryServing) {
  RollbackRun r = rollBackFromFullWeight(CapacityMode::kSurge, 5, /*stableNeverReady=*/true);
  EXPECT_EQ(r.phase, "RollingBack") << "never RolledBack without N Ready stable pods";
  EXPECT_GE(r.minReady, 4) << "the canary keeps serving rather than leave prod empty";
}

TEST(CanaryRollbackCapacity, RolledBackWaitsForNReadyStablePodsOfTheKnownGood) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = after(observed(spec), p0, kT0 + 10);
  o.abortBy = "bob";
  o.canary = {0, 0};
  o.stable = {4, 2};  // the canary is gone, two stable pods still warming up
  auto p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kRollingBack);
  EXPECT_NE(p.message.find("waiting for 4 Ready stable pods (2 now)"), std::string::npos)
      << p.message;
  // Four Ready stable pods, but of another release (the stable Deployment
  // still carries the new template after an abort mid-handover): not yet.
  auto o2 = after(o, p, kT0 + 20);
  o2.stable = {4, 4};
  o2.stableRelease = "gpt2-v2";
  EXPECT_EQ(planCanary(o2).action, CanaryAction::kRollingBack);
  o2.stableRelease = "gpt2-v1";
  EXPECT_EQ(planCanary(o2).action, CanaryAction::kRolledBack);
}

// A superseding release: the canary Deployment still runs the displaced
// release's 2 pods at weight 50 (stable 2). The new release's first step
// starts from zero pods, after stable is back, and N pods stay Ready.
TEST(CanaryRollbackCapacity, SupersedingReleaseStartsItsFirstStepFromZeroPods) {
  for (CapacityMode mode : {CapacityMode::kSurge, CapacityMode::kDrain}) {
    SCOPED_TRACE(capacityModeName(mode));
    auto spec = specOf({{"capacity", capacityModeName(mode)},
                        {"steps", json::array({{{"weight", 25}, {"pause", "1m"}},
                                               {{"weight", 100}, {"pause", "Indefinite"}}})}});
    const int64_t warmup = 20;
    int64_t now = kT0;
    WarmingTrack displaced, mine, stable;
    displaced.scaleTo(2, now - 3600, 0);
    stable.scaleTo(2, now - 3600, 0);
    bool canaryIsMine = false;  // the canary Deployment's template
    CanaryObserved o = observed(spec, now);
    CanaryPlan p;
    int minReady = 1 << 30;
    int firstOwnPods = -1;
    int64_t lastDrainAt = 0;
    for (int i = 0; i < 100 && firstOwnPods < 0; ++i) {
      now += 5;
      o = i == 0 ? observed(spec, now) : after(o, p, now);
      o.stable = {stable.spec(), stable.ready(now)};
      if (canaryIsMine) {
        o.canary = {mine.spec(), mine.ready(now)};
        o.displacedRelease.clear();
        o.displaced = {};
      } else {
        o.canary = {0, 0};
        o.displacedRelease = "gpt2-v1b";
        o.displaced = {displaced.spec(), displaced.ready(now)};
      }
      p = planCanary(o);
      ASSERT_EQ(p.action, CanaryAction::kProgress) << p.message;
      const bool stableFirst = p.replicas.stable >= stable.spec();
      for (bool stableTurn : {stableFirst, !stableFirst}) {
        if (stableTurn) {
          stable.scaleTo(p.replicas.stable, now, warmup);
        } else if (!p.canaryRelease.empty()) {
          EXPECT_EQ(p.canaryRelease, "gpt2-v1b");
          displaced.scaleTo(p.replicas.canary, now, warmup);
          lastDrainAt = now;
        } else if (p.replicas.canary > 0) {
          EXPECT_EQ(displaced.spec(), 0) << "the displaced canary was drained first";
          canaryIsMine = true;  // the template changes: any displaced pod would go
          displaced.scaleTo(0, now, 0);
          mine.scaleTo(p.replicas.canary, now, warmup);
          firstOwnPods = p.replicas.canary;
          EXPECT_EQ(p.status["stepStartedAt"], rfc(lastDrainAt))
              << "the step's clock starts when the displaced pods are gone";
        }
        minReady = std::min(minReady, displaced.ready(now) + mine.ready(now) + stable.ready(now));
      }
    }
    EXPECT_EQ(firstOwnPods, targetReplicaCounts(4, 25, mode).canary)
        << "the first step's share, not the displaced canary's";
    EXPECT_GE(minReady, mode == CapacityMode::kSurge ? 4 : 3);
  }
}

}  // namespace
}  // namespace lockstep::controllers
