// Table tests of the canary decision (controllers/modelrelease/prod/canary_plan.h;
// the canary spec as api/v1alpha1/model_release.h checks it). The simulated
// world with restarts, warm-up and termination is canary_world_test.cc.
#include "controllers/modelrelease/prod/canary_plan.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "tests/controllers/modelrelease/prod/canary_world.h"

#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;
using sim::decodeCanarySpec;
using sim::kHash;
using sim::kOldPackage;
using sim::kPackage;
using sim::kT0;
using sim::prodStage;
using sim::promAnalysis;
using sim::rfc;

Measurement valueCanaryPlan(int64_t at, double v) { return {at, v, "", false}; }
Measurement errorCanaryPlan(int64_t at, const std::string& e = "empty result") {
  return {at, {}, e, false};
}

// ---- decoding ---------------------------------------------------------------------------------

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

// Re-plans with the plan's status as the previous one, as after a status
// write, and its progress clock as the shell keeps it in memory.
CanaryObserved after(CanaryObserved o, const CanaryPlan& p, int64_t now) {
  o.previous = p.status;
  o.progress = p.progress;
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

// Issue 29 (change windows): a closed window starts no new step. finishStep:
// the step in flight finishes (its pause), then the next one waits at the same
// weight; once the window opens it starts.
ClosedWindow closedBy(ClosedWindow::InFlight inFlight, int64_t until) {
  ClosedWindow w;
  w.inFlight = inFlight;
  w.message = "closed by Deny window \"freeze\" (spec.changeWindows[0]) until " + rfc(until);
  w.nextTransition = until;
  return w;
}

TEST(CanaryChangeWindow, FinishStepLetsTheStepEndThenHoldsTheNextUntilTheWindowOpens) {
  auto spec =
      specOf({{"steps", json::array({{{"weight", 50}, {"pause", "5m"}}, {{"weight", 75}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 60), 50);
  o.window = closedBy(ClosedWindow::InFlight::kFinishStep, kT0 + 1000);
  auto p1 = planCanary(o);
  EXPECT_EQ(p1.reason, kReasonCanaryPaused) << "the step in flight goes on";
  auto p2 = planCanary(after(o, p1, kT0 + 400));  // its pause is over
  EXPECT_EQ(p2.status["step"], 0) << "the next step does not start";
  EXPECT_EQ(p2.reason, kReasonWaitingForWindow);
  EXPECT_NE(p2.message.find("step 0 passed at weight 50%; step 1 waits for the model's change "
                            "window: closed by Deny window \"freeze\""),
            std::string::npos)
      << p2.message;
  EXPECT_EQ(p2.replicas.canary, o.canary.specReplicas) << "the weight is held";
  EXPECT_EQ(p2.replicas.stable, o.stable.specReplicas);
  EXPECT_EQ(p2.requeueAfterSeconds, 600) << "until the window's transition";
  EXPECT_FALSE(p2.status.contains("passedSteps")) << "not recorded until it moves on";
  EXPECT_EQ(p2.events.size(), 1u);
  auto p3 = planCanary(after(o, p2, kT0 + 500));
  EXPECT_TRUE(p3.events.empty()) << "the wait is said once";
  // Open again: step 1 starts.
  auto open = after(o, p3, kT0 + 1000);
  open.window.reset();
  auto p4 = planCanary(open);
  EXPECT_EQ(p4.status["step"], 1);
  EXPECT_EQ(p4.status["passedSteps"].size(), 1u);
}

// pause: the canary holds its weight at once with its clocks stopped; on
// reopening the pause has as long left as when the window closed.
TEST(CanaryChangeWindow, PauseHoldsTheWeightAndStopsTheStepsClocks) {
  auto spec =
      specOf({{"steps", json::array({{{"weight", 50}, {"pause", "5m"}}, {{"weight", 75}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 60), 50);
  auto p1 = planCanary(o);  // weight reached at kT0+60, pause until kT0+360
  ASSERT_EQ(p1.status["weightReachedAt"], rfc(kT0 + 60));
  auto closed = after(o, p1, kT0 + 100);
  closed.window = closedBy(ClosedWindow::InFlight::kPause, kT0 + 1100);
  auto p2 = planCanary(closed);
  EXPECT_EQ(p2.action, CanaryAction::kWait);
  EXPECT_EQ(p2.reason, kReasonWaitingForWindow);
  EXPECT_EQ(p2.status["windowPausedAt"], rfc(kT0 + 100));
  EXPECT_EQ(p2.replicas.canary, o.canary.specReplicas);
  auto p3 = planCanary(after(closed, p2, kT0 + 900));  // long past the pause's own end
  EXPECT_EQ(p3.status["step"], 0) << "held";
  EXPECT_EQ(p3.status["windowPausedAt"], rfc(kT0 + 100)) << "since the first hold";
  // Open at kT0+1100 after 1000 s held: the pause ends at kT0+360+1000.
  auto open = after(closed, p3, kT0 + 1100);
  open.window.reset();
  auto p4 = planCanary(open);
  EXPECT_FALSE(p4.status.contains("windowPausedAt"));
  EXPECT_EQ(p4.status["weightReachedAt"], rfc(kT0 + 1060));
  EXPECT_EQ(p4.reason, kReasonCanaryPaused);
  EXPECT_EQ(p4.requeueAfterSeconds, 260);
  auto p5 = planCanary(after(open, p4, kT0 + 1360));
  EXPECT_EQ(p5.status["step"], 1);
}

// abort: the canary rolls back like an abort, naming the window; an automatic
// rollback is never held by a window.
TEST(CanaryChangeWindow, AbortRollsBackAndNoWindowHoldsAnAutomaticRollback) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}, {"pause", "5m"}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 60), 50);
  o.window = closedBy(ClosedWindow::InFlight::kAbort, kT0 + 1000);
  auto p1 = planCanary(o);
  EXPECT_EQ(p1.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p1.rollbackReason, kReasonAborted);
  EXPECT_NE(p1.message.find("aborted by the model's change window (inFlight: abort): closed by "
                            "Deny window \"freeze\""),
            std::string::npos)
      << p1.message;
  // finishStep (or pause) and restarting canary pods: rolled back all the same.
  o.window = closedBy(ClosedWindow::InFlight::kPause, kT0 + 1000);
  o.canaryRestarts = 2;
  auto p2 = planCanary(o);
  EXPECT_EQ(p2.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p2.rollbackReason, kReasonCanaryRestarting);
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

// Two steps with indefinite pauses (50%, 100%): the first step's weight is Ready at kT0 + 10.
CanaryObserved atFirstOfTwoIndefinitePauses() {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}, {"pause", "Indefinite"}},
                                             {{"weight", 100}, {"pause", "Indefinite"}}})}});
  return atWeight(after(observed(spec), planCanary(observed(spec)), kT0 + 10), 50);
}

TEST(CanaryPlan, IndefinitePauseWaitsForPromoteOfThatStep) {
  auto o = atFirstOfTwoIndefinitePauses();
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
  // A deadline case: a plan at kT0 + 1 already saw these pods (the last
  // progress); the deadline counts from there.
  bool sinceLastProgress = false;
};

TEST(CanaryPlan, AutomaticRollbackTable) {
  auto spec = specOf({{"progressDeadline", "10m"},
                      {"analysis", promAnalysis(3)},
                      {"steps", json::array({{{"weight", 50}}})}});
  const std::vector<RollbackCase> cases = {
      {"abort", [](CanaryObserved& o) { o.abortBy = "bob"; }, kT0 + 10, kReasonAborted},
      {"a fleet abort for the wave that permitted this cluster",
       [](CanaryObserved& o) {
         o.fleetAbort = "the fleet rollout ml/llama-v7 was aborted in wave \"first\"";
       },
       kT0 + 10, "FleetAborted"},
      {"admission refused a canary pod",
       [](CanaryObserved& o) {
         o.admissionRefusals = {"admission webhook denied the request: closure hash mismatch"};
       },
       kT0 + 10, kReasonAdmissionRefused},
      {"canary container restarted", [](CanaryObserved& o) { o.canaryRestarts = 2; }, kT0 + 10,
       kReasonCanaryRestarting},
      {"a canary pod's runtime check failed (spec.verify.onStart)",
       [](CanaryObserved& o) { o.verificationFailure = "verify-host exited 1: host driver: …"; },
       kT0 + 10, kReasonRuntimeVerificationFailed},
      {"canary not Ready by the deadline",
       [](CanaryObserved& o) {
         o.canary = {1, 0};
       },
       kT0 + 602, kReasonProgressDeadlineExceeded, 0, 4, true},
      {"canary Pending past the deadline",
       [](CanaryObserved& o) {
         o.canary = {1, 0};
         o.canaryPendingUnschedulable = 1;
       },
       kT0 + 602, kReasonInsufficientGPUCapacity, 0, 4, true},
      {"no spare GPU past the deadline",
       [](CanaryObserved& o) {
         o.stable = {3, 3};  // one surge pod done; the second finds no GPU
         o.gpu = GpuCapacity{1, {0, 0}};
       },
       kT0 + 602, kReasonInsufficientGPUCapacity, 1, 4, true},
      {"bad metric",
       [](CanaryObserved& o) {
         o = atWeight(o, 50);
         o.measurement = valueCanaryPlan(o.nowUnix, 0.2);
       },
       kT0 + 30, kReasonAnalysisFailed, 2, 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto p0 = planCanary(observed(spec));
    auto o = after(observed(spec), p0, c.at);
    o.canary = {1, 1};  // the first surge pod runs
    c.world(o);
    if (c.sinceLastProgress) {
      auto seen = planCanary(after(o, p0, kT0 + 1));
      ASSERT_EQ(seen.action, o.gpu ? CanaryAction::kWait : CanaryAction::kProgress);
      ASSERT_TRUE(seen.progress);
      EXPECT_EQ(seen.progress->lastProgressAt, rfc(kT0 + 1)) << "the clock the shell keeps";
      EXPECT_EQ(seen.status["lastProgressAt"], rfc(kT0)) << "a pod turning Ready is no write";
      // One second before the deadline: still waiting.
      EXPECT_NE(planCanary(after(o, seen, kT0 + 601)).action, CanaryAction::kRollingBack);
      o = after(o, seen, c.at);
    }
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

// The world at `at` after `--full` at kT0 + 10 started the promotion
// (status.canary.phase Promoting, FullWeight).
CanaryObserved promotingAt(const CanarySpec& spec, const CanaryPlan& p0, int64_t at) {
  auto full = after(observed(spec), p0, kT0 + 10);
  full.promoteFullBy = "alice";
  auto pr = planCanary(full);
  EXPECT_EQ(pr.status["phase"], "Promoting");
  auto op = after(full, pr, at);
  op.promoteFullBy.clear();
  return op;
}

// An admission webhook the API server could not call (the pod webhook down:
// "failed calling webhook …") is no verdict on the model: the step waits,
// saying why its pods are missing, and only the progress deadline rolls back.
// A webhook's denial rolls back at once, as before; in a step and in Promoting.
TEST(CanaryPlan, AnUnreachableWebhookIsNoVerdictOnlyTheDeadlineRollsBack) {
  const std::string unreachable =
      "FailedCreate: Internal error occurred: failed calling webhook \"pods.lockstep.dev\": "
      "failed to call webhook: Post \"https://lockstep-webhook.lockstep-system.svc:443/"
      "validate-pods?timeout=5s\": dial tcp 10.96.0.12:443: connect: connection refused";
  const std::string denied =
      "FailedCreate: pods \"gpt2-canary-x\" is forbidden: admission webhook "
      "\"pods.lockstep.dev\" denied the request: closure hash mismatch";
  auto spec = specOf({{"progressDeadline", "10m"}, {"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = after(observed(spec), p0, kT0 + 10);
  o.canary = {1, 0};  // the canary asks for a pod the API server cannot admit
  o.admissionRefusals = {unreachable};
  auto p1 = planCanary(o);
  EXPECT_EQ(p1.action, CanaryAction::kProgress);
  EXPECT_EQ(p1.reason, kReasonCanaryProgressing);
  EXPECT_NE(p1.message.find("canary pods not created: " + unreachable), std::string::npos)
      << p1.message;
  // No progress for the deadline: rolled back, naming the webhook error.
  auto p2 = planCanary(after(o, p1, kT0 + 10 + 601));
  EXPECT_EQ(p2.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p2.status["reason"], kReasonProgressDeadlineExceeded);
  EXPECT_NE(p2.status["message"].get<std::string>().find("failed calling webhook"),
            std::string::npos)
      << p2.status["message"];
  // A denial is a verdict, even next to an unreachable one.
  o.admissionRefusals = {unreachable, denied};
  auto p3 = planCanary(o);
  EXPECT_EQ(p3.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p3.status["reason"], kReasonAdmissionRefused);
  EXPECT_NE(p3.status["message"].get<std::string>().find("denied the request"), std::string::npos);

  // Promoting: the same rule (the canary cannot grow to N while the webhook is down).
  auto op = promotingAt(spec, p0, kT0 + 20);
  op.canary = {1, 0};
  op.admissionRefusals = {unreachable};
  auto waiting = planCanary(op);
  EXPECT_EQ(waiting.action, CanaryAction::kPromoting);
  EXPECT_NE(waiting.message.find("pods not created: " + unreachable), std::string::npos)
      << waiting.message;
  auto late = planCanary(after(op, waiting, kT0 + 20 + 601));
  EXPECT_EQ(late.status["reason"], kReasonProgressDeadlineExceeded) << late.status.dump(2);
  op.admissionRefusals = {denied};
  EXPECT_EQ(planCanary(op).status["reason"], kReasonAdmissionRefused);
}

// Promoting has a step's checks: a pod of the release whose onStart check
// fails (spec.verify.onStart) while all traffic moves to it, or once the
// stable Deployment carries it, rolls back with the check's report.
TEST(CanaryPlan, AFailedRuntimeCheckDuringPromotionRollsBack) {
  auto spec = specOf({{"progressDeadline", "10m"}, {"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto op = promotingAt(spec, p0, kT0 + 20);
  op.canary = {3, 2};
  op.verificationFailure = "verify-host exited 1: driver 535 < 570 (CUDA 12.8)";
  auto p = planCanary(op);
  EXPECT_EQ(p.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p.status["reason"], kReasonRuntimeVerificationFailed) << p.status.dump(2);
  EXPECT_NE(p.status["message"].get<std::string>().find("driver 535 < 570"), std::string::npos)
      << p.status["message"];
  EXPECT_GE(p.replicas.stable, op.stable.readyReplicas) << "stable never shrinks on a rollback";
  // In the handover (the stable Deployment carries the release): the same.
  auto ho = op;
  ho.verificationFailure.reset();
  ho.canary = {4, 4};
  ho.stable = {0, 0};
  auto h1 = planCanary(ho);
  ASSERT_EQ(h1.status["promotion"], "Handover") << h1.status.dump(2);
  auto ho2 = after(ho, h1, kT0 + 30);
  ho2.stableRelease = "gpt2-v2";
  ho2.stable = {1, 0};
  ho2.verificationFailure = "verify-env exited 1: torch 2.5.0 installed, 2.5.1 locked";
  auto h2 = planCanary(ho2);
  EXPECT_EQ(h2.status["reason"], kReasonRuntimeVerificationFailed) << h2.status.dump(2);
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

// Drain, one step at 50% (canary 2, stable 2), aborted by bob at kT0 + 10.
CanaryObserved abortedDrainAtHalfWeight() {
  auto spec = specOf({{"capacity", "drain"}, {"steps", json::array({{{"weight", 50}}})}});
  auto o = atWeight(after(observed(spec), planCanary(observed(spec)), kT0 + 10), 50);
  o.abortBy = "bob";
  return o;
}

TEST(CanaryPlan, DrainRollbackRestoresStableBeforeRemovingTheCanary) {
  auto o = abortedDrainAtHalfWeight();
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
  auto o = abortedDrainAtHalfWeight();
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
  o.measurement = valueCanaryPlan(kT0 + 10, 0.001);
  auto p2 = planCanary(o);  // the same pass, with the measurement taken
  EXPECT_FALSE(p2.measureNow);
  EXPECT_EQ(p2.requeueAfterSeconds, 30);
  EXPECT_EQ(p2.status["analysis"]["count"], 1);
  EXPECT_EQ(p2.status["analysis"]["measurements"][0]["value"], 0.001);
  // A measurement taken too early (a duplicate reconcile) is not recorded.
  auto o3 = after(o, p2, kT0 + 20);
  o3.measurement = valueCanaryPlan(kT0 + 20, 0.5);
  auto p3 = planCanary(o3);
  EXPECT_EQ(p3.status["analysis"]["count"], 1);
  EXPECT_EQ(p3.status["analysis"]["failed"], 0);
  // Prometheus unreachable: errors, retried, then the step fails.
  auto oe = after(o, p2, kT0 + 40);
  CanaryPlan pe = p2;
  for (int i = 0; i < 3; ++i) {
    oe = after(oe, pe, kT0 + 40 + 10 * i);
    oe.measurement = errorCanaryPlan(kT0 + 40 + 10 * i, "connection refused");
    pe = planCanary(oe);
  }
  EXPECT_EQ(pe.action, CanaryAction::kRollingBack);
  EXPECT_EQ(pe.status["reason"], kReasonAnalysisError);
  EXPECT_EQ(pe.status["analysis"]["errors"], 3);
}

// The provider refuses the release (its namespace relabelled after admission,
// say): no error limit to wait for, the step fails at once, saying why.
TEST(CanaryPlan, ARefusedMeasurementRollsBackAtOnceSayingWhy) {
  auto spec = specOf({{"analysis", promAnalysis(2)}, {"steps", json::array({{{"weight", 50}}})}});
  auto p0 = planCanary(observed(spec));
  auto o = atWeight(after(observed(spec), p0, kT0 + 10), 50);
  const std::string why =
      "AnalysisProvider \"team-a\" does not serve namespace \"tenant-b\": the namespace's "
      "labels do not match its spec.namespaceSelector (team=a)";
  o.measurement = Measurement{kT0 + 10, {}, why, true};
  auto p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kRollingBack);
  EXPECT_EQ(p.status["reason"], kReasonAnalysisRefused);
  EXPECT_NE(p.status["message"].get<std::string>().find(why), std::string::npos)
      << p.status.dump(2);
  EXPECT_EQ(p.status["analysis"]["measurements"][0]["error"], why);
  EXPECT_FALSE(p.status["analysis"]["measurements"][0].contains("value"));
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
  o2.measurement = valueCanaryPlan(kT0 + 40, 0.5);
  auto p2 = planCanary(o2);
  EXPECT_FALSE(p2.measureNow);
  EXPECT_EQ(p2.status["analysis"].value("count", 0), 0);
  EXPECT_EQ(p2.status["analysis"].value("failed", 0), 0);
  EXPECT_EQ(p2.requeueAfterSeconds, 30);
  // Due at weightReachedAt + 1m.
  auto o3 = after(o2, p2, kT0 + 70);
  EXPECT_TRUE(planCanary(o3).measureNow);
  o3.measurement = valueCanaryPlan(kT0 + 70, 0.5);
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
  // The outcome, whatever intermediate state the previous reconcile recorded.
  EXPECT_EQ(p3.status["reason"], kReasonPromoted) << p3.status.dump(2);
  EXPECT_EQ(p3.status["message"], p3.message);
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

// A first release whose canary is one step of 100 % without analysis or pause
// (also: no steps at all) has nothing to compare and no prod to protect: its
// pods go straight to the stable Deployment, created once (the bench's 200
// models at v1 made N canary pods, then N stable pods one by one).
CanaryObserved firstRelease(const CanarySpec& spec) {
  auto o = observed(spec);
  o.knownGood.reset();
  o.stableRelease.clear();
  o.stable = {0, 0};
  return o;
}

TEST(CanaryPlan, AFirstReleaseWithOneFullStepAndNoAnalysisGoesStraightToStable) {
  for (json canary : {json{{"steps", json::array({{{"weight", 100}}})}}, json::object()}) {
    SCOPED_TRACE(canary.dump());
    auto spec = specOf(canary);
    auto o = firstRelease(spec);
    auto p = planCanary(o);
    EXPECT_EQ(p.action, CanaryAction::kPromoting) << p.message;
    EXPECT_EQ(p.status["phase"], "Promoting");
    EXPECT_EQ(p.status["promotion"], "Handover") << p.status.dump(2);
    EXPECT_EQ(p.stableRelease, "gpt2-v2");
    EXPECT_EQ(p.replicas.canary, 0) << "no canary pod";
    EXPECT_EQ(p.replicas.stable, spec.replicas) << "all N at once: nothing serves yet";
    bool said = false;
    for (const ReleaseEvent& e : p.events)
      said = said || (e.reason == "Promoting" &&
                      e.message.find("straight to the stable Deployment") != std::string::npos);
    EXPECT_TRUE(said);
    // The stable Deployment carries it; its pods come up: Promoted.
    o = after(o, p, kT0 + 5);
    o.stableRelease = "gpt2-v2";
    o.stable = {spec.replicas, spec.replicas - 1};
    p = planCanary(o);
    EXPECT_EQ(p.action, CanaryAction::kPromoting);
    EXPECT_EQ(p.replicas.stable, spec.replicas);
    o = after(o, p, kT0 + 8);
    o.stable = {spec.replicas, spec.replicas};
    p = planCanary(o);
    EXPECT_EQ(p.action, CanaryAction::kPromoted) << p.message;
    EXPECT_EQ(p.replicas.stable, spec.replicas);
    EXPECT_EQ(p.replicas.canary, 0);
    EXPECT_EQ(p.supersede, "");
    // Its health checks still hold during it: a crash-looping pod rolls it back
    // (at once: there is no known-good to restore), its pods scaled to zero.
    auto crashing = after(firstRelease(spec), planCanary(firstRelease(spec)), kT0 + 5);
    crashing.stableRelease = "gpt2-v2";
    crashing.stable = {spec.replicas, 0};
    crashing.canaryRestarts = 2;
    // Its status write lost (a Conflict, a restart) after the stable Deployment
    // took the release: the next plan, from the status before, goes on with
    // the handover and never moves the pods to a canary.
    auto lost = firstRelease(spec);
    lost.stableRelease = "gpt2-v2";
    lost.stable = {spec.replicas, 1};
    const CanaryPlan again = planCanary(lost);
    EXPECT_EQ(again.action, CanaryAction::kPromoting) << again.message;
    EXPECT_EQ(again.status["promotion"], "Handover");
    EXPECT_EQ(again.replicas.canary, 0);
    EXPECT_EQ(again.replicas.stable, spec.replicas);
    const CanaryPlan rb = planCanary(crashing);
    EXPECT_EQ(rb.action, CanaryAction::kRolledBack) << rb.message;
    EXPECT_EQ(rb.rollbackReason, kReasonCanaryRestarting);
    EXPECT_EQ(rb.replicas.stable, 0);
    EXPECT_EQ(rb.replicas.canary, 0);
  }
}

// Every other first release keeps its canary: something to measure or wait
// for, more than one step, pods already on the canary track (a canary started
// by an earlier version), a closed window, or no room for N GPU pods.
TEST(CanaryPlan, AFirstReleaseKeepsItsCanaryWhenItHasSomethingToDoThere) {
  const json analysis = {
      {"prometheus", {{"provider", "prom"}, {"query", "q"}, {"max", 0.1}, {"count", 1}}}};
  struct Case {
    const char* name;
    json canary;
    std::function<void(CanaryObserved&)> edit;
  };
  const Case cases[] = {
      {"analysis", {{"steps", json::array({{{"weight", 100}, {"analysis", analysis}}})}}, {}},
      {"pause", {{"steps", json::array({{{"weight", 100}, {"pause", "1m"}}})}}, {}},
      {"two steps", {{"steps", json::array({{{"weight", 50}}, {{"weight", 100}}})}}, {}},
      {"a partial step", {{"steps", json::array({{{"weight", 50}}})}}, {}},
      {"canary pods already", json::object(),
       [](CanaryObserved& o) {
         o.canary = {o.spec.replicas, 1};
       }},
      {"closed window", json::object(),
       [](CanaryObserved& o) {
         o.window = closedBy(ClosedWindow::InFlight::kFinishStep, kT0 + 1000);
       }},
      {"no GPUs for all N", json::object(),
       [](CanaryObserved& o) {
         o.gpu = GpuCapacity{1, {1, 2}};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto o = firstRelease(specOf(c.canary));
    if (c.edit) c.edit(o);
    auto p = planCanary(o);
    EXPECT_NE(p.action, CanaryAction::kPromoting) << p.message;
    EXPECT_NE(p.status.value("phase", ""), "Promoting");
    EXPECT_EQ(p.replicas.stable, 0) << p.message;
  }
  // With room for all N: straight to stable.
  auto o = firstRelease(specOf(json::object()));
  o.gpu = GpuCapacity{1, {2, 2}};
  EXPECT_EQ(planCanary(o).action, CanaryAction::kPromoting);
  // A release with a stable track (a known-good) keeps its canary.
  auto later = observed(specOf(json::object()));
  EXPECT_EQ(planCanary(later).action, CanaryAction::kProgress);
}

// A first release's canary above its step's share (seen in CI under load: 2 Ready
// canary pods for a share of 1, surge mode) comes down to it: with no stable
// track there is no prod whose N Ready pods the surge floor must keep, and
// holding it ran the step into its progress deadline.
TEST(CanaryPlan, AFirstReleasesCanaryAboveItsShareComesDownToIt) {
  for (const char* capacity : {"surge", "drain"}) {
    SCOPED_TRACE(capacity);
    auto spec = specOf({{"capacity", capacity}, {"steps", json::array({{{"weight", 50}}})}});
    auto o = observed(spec);
    o.knownGood.reset();
    o.stableRelease.clear();
    o.stable = {0, 0};
    o.canary = {spec.replicas, spec.replicas};
    auto p = planCanary(o);
    EXPECT_EQ(p.action, CanaryAction::kProgress) << p.message;
    EXPECT_EQ(p.replicas.canary, spec.replicas / 2);
    EXPECT_EQ(p.replicas.stable, 0);
    o = after(o, p, kT0 + 5);
    o.canary = {spec.replicas / 2, spec.replicas / 2};
    auto reached = planCanary(o);
    EXPECT_EQ(reached.status["weightReachedAt"], rfc(kT0 + 5)) << reached.status.dump();
  }
}

TEST(CanaryPlan, PassedStepIsRecordedOnceWithWhoEndedItsPause) {
  auto o = atFirstOfTwoIndefinitePauses();
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

// ---- capacity during rollbacks (issue 20; the world: canary_world_test.cc) -------------------

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

// A previous status.canary the decoder refuses (api/v1alpha1/canary_status.h)
// is never acted on, not even by an abort: both Deployments keep their
// templates and counts, the status stays as written, the reason names the field.
TEST(CanaryPlan, AnUnreadablePreviousStatusIsNeverActedOn) {
  auto spec = specOf({{"steps", json::array({{{"weight", 50}, {"pause", "1m"}}})}});
  auto o = after(observed(spec), planCanary(observed(spec)), kT0 + 10);
  o.canary = {1, 1};
  o.stable = {3, 3};
  json written = planCanary(o).status;
  ASSERT_TRUE(written.contains("podsToTarget")) << written.dump(2);
  written["podsToTarget"] = "none";
  o.previous = written;
  o.abortBy = "alice";
  o.nowUnix = kT0 + 4000;  // far past the pause and the progress deadline
  o.now = rfc(o.nowUnix);
  CanaryPlan p = planCanary(o);
  EXPECT_EQ(p.action, CanaryAction::kWait);
  EXPECT_EQ(p.reason, kReasonCanaryStatusUnreadable);
  EXPECT_NE(p.message.find("status.canary.podsToTarget: must be an integer"), std::string::npos)
      << p.message;
  EXPECT_EQ(p.replicas.canary, 1);
  EXPECT_EQ(p.replicas.stable, 3);
  EXPECT_EQ(p.stableRelease, "gpt2-v1");
  EXPECT_EQ(p.canaryRelease, "");
  EXPECT_EQ(p.status, written) << "kept as written";
  EXPECT_EQ(p.rollbackReason, "");
  EXPECT_TRUE(p.events.empty());
  // A displaced release's pods on the canary Deployment stay its own.
  o.displacedRelease = "gpt2-v0";
  o.displaced = {2, 2};
  o.canary = {0, 0};
  p = planCanary(o);
  EXPECT_EQ(p.canaryRelease, "gpt2-v0");
  EXPECT_EQ(p.replicas.canary, 2);
  // Repaired, the same observation rolls back on the abort.
  written["podsToTarget"] = 0;
  o.previous = written;
  EXPECT_EQ(planCanary(o).action, CanaryAction::kRollingBack);
}

// A superseding release: the canary Deployment still runs the displaced
// release's 2 pods at weight 50 (stable 2). The new release's first step

}  // namespace
}  // namespace lockstep::controllers
