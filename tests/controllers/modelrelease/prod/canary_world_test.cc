// The canary planner in a simulated world (canary_world.h): warm-up before
// Ready, Terminating pods that keep their GPUs, series that exist only once
// scraped, crashing canaries, and a restart of the operator at every
// reconcile. Every test checks the world's invariants on every event, and
// runs in the realistic world (the default knobs) and, where it says so, in
// the kind world the planner tests had before.
#include "tests/controllers/modelrelease/prod/canary_world.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/prod/replica_math.h"

namespace lockstep::controllers::sim {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons
using nlohmann::json;

CanarySpec specOfCanaryWorld(const json& canary) {
  CanarySpec s;
  EXPECT_EQ(decodeCanarySpec(prodStage(canary), s), std::nullopt);
  return s;
}

// Three steps (25%, 50%, 75%), two measurements each, one-minute pauses.
CanarySpec threeSteps(const char* capacity = "surge") {
  return specOfCanaryWorld({{"capacity", capacity},
                            {"analysis", promAnalysis(2)},
                            {"steps", json::array({{{"weight", 25}, {"pause", "1m"}},
                                                   {{"weight", 50}, {"pause", "1m"}},
                                                   {{"weight", 75}}})}});
}

struct Case {
  const char* name;
  Knobs knobs;
};
// A node a pod: a Terminating pod holds only its own node's GPU.
Knobs nodePerPod() {
  Knobs k;
  k.nodeGpus = std::vector<int64_t>(6, 1);
  return k;
}
const std::vector<Case> kWorlds = {
    {"realistic world", Knobs{}}, {"a node a pod", nodePerPod()}, {"kind world", kindWorld()}};

World ran(World w, int crashAt = -1) {
  w.run(crashAt);
  return w;
}

TEST(CanaryWorld, RestartAtEveryStepEndsPromotedLikeAnUninterruptedRun) {
  for (const Case& c : kWorlds) {
    SCOPED_TRACE(c.name);
    World clean = ran(World(threeSteps(), c.knobs));
    ASSERT_EQ(clean.phase(), "Promoted") << clean.reason() << "\n" << clean.report();
    EXPECT_EQ(clean.stable.release, kRelease);
    EXPECT_EQ(clean.stable.replicas, 4);
    EXPECT_EQ(clean.canary.replicas, 0);
    EXPECT_LE(clean.maxPods, 5) << "never more than one surge pod";
    EXPECT_EQ(clean.violations, std::vector<std::string>());
    EXPECT_EQ(clean.phases.at(kKnownGood), "Superseded");
    for (int crashAt = 0; crashAt < 80; ++crashAt) {
      SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
      World w = ran(World(threeSteps(), c.knobs), crashAt);
      EXPECT_EQ(w.phase(), "Promoted") << w.reason();
      EXPECT_EQ(w.stable.release, kRelease);
      EXPECT_EQ(w.canary.replicas, 0);
      EXPECT_LE(w.maxPods, 5);
      EXPECT_EQ(w.violations, std::vector<std::string>());
    }
  }
}

TEST(CanaryWorld, EveryStepIsAnalysedBeforeTheNext) {
  World w = ran(World(threeSteps()));
  ASSERT_EQ(w.phase(), "Promoted");
  EXPECT_GE(w.measurements, 6) << "3 steps × count 2";
}

// status.canary.passedSteps: one record per step, in order, with the step's
// pause honoured and its analysis complete; a restart at any reconcile leaves
// the same records (none repeated, none missing).
TEST(CanaryWorld, PassedStepsRecordEveryStepInOrderAcrossRestarts) {
  World clean = ran(World(threeSteps()));
  ASSERT_EQ(clean.phase(), "Promoted");
  const json passed = clean.status.value("passedSteps", json());
  ASSERT_TRUE(passed.is_array()) << clean.status.dump();
  ASSERT_EQ(passed.size(), 3u) << passed.dump(2);
  const int weights[] = {25, 50, 75};
  const int64_t pauses[] = {60, 60, 0};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const json& r = passed[i];
    EXPECT_EQ(r["step"], i);
    EXPECT_EQ(r["weight"], weights[i]);
    EXPECT_EQ(r["analysis"]["count"], 2);
    EXPECT_EQ(r["analysis"]["successful"], 2);
    EXPECT_EQ(r["analysis"]["failed"], 0);
    std::string reached = r["weightReachedAt"], at = r["passedAt"];
    EXPECT_LE(r["startedAt"].get<std::string>(), reached);  // same-length RFC 3339 UTC
    // The pause ran from the weight being Ready (whole ticks of 10 s).
    std::string pauseEnd = reached;
    for (int64_t t = kT0; t < kT0 + 4000; t += 10) {
      if (rfc(t) == reached) pauseEnd = rfc(t + pauses[i]);
    }
    EXPECT_GE(at, pauseEnd);
    if (i > 0) {
      EXPECT_GE(r["startedAt"].get<std::string>(), passed[i - 1]["passedAt"].get<std::string>());
    }
  }
  for (int crashAt = 0; crashAt < 80; ++crashAt) {
    SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
    World w = ran(World(threeSteps()), crashAt);
    const json r = w.status.value("passedSteps", json());
    ASSERT_TRUE(r.is_array());
    ASSERT_EQ(r.size(), 3u) << r.dump(2);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(r[i]["step"], i);
      EXPECT_EQ(r[i]["analysis"]["count"], 2);
    }
  }
}

TEST(CanaryWorld, BadMetricAtStepTwoRollsBackWithOrWithoutRestarts) {
  for (const Case& c : kWorlds) {
    SCOPED_TRACE(c.name);
    World bad(threeSteps(), c.knobs);
    bad.badFromStep = 1;
    World clean = ran(bad);
    ASSERT_EQ(clean.phase(), "RolledBack");
    EXPECT_EQ(clean.reason(), kReasonAnalysisFailed);
    EXPECT_EQ(clean.stable.release, kKnownGood);
    EXPECT_EQ(clean.stable.replicas, 4);
    EXPECT_EQ(clean.canary.replicas, 0);
    EXPECT_EQ(clean.stableReadyAtRolledBack, 4);
    EXPECT_EQ(clean.violations, std::vector<std::string>());
    for (int crashAt = 0; crashAt < 60; ++crashAt) {
      SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
      World w = ran(bad, crashAt);
      EXPECT_EQ(w.phase(), "RolledBack");
      EXPECT_EQ(w.reason(), kReasonAnalysisFailed);
      EXPECT_EQ(w.stable.release, kKnownGood);
      EXPECT_EQ(w.violations, std::vector<std::string>());
    }
  }
}

TEST(CanaryWorld, PrometheusUnreachableFailsAfterTheErrorLimitNeverPasses) {
  World w(threeSteps());
  w.promServes = false;
  w.run();
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.reason(), kReasonAnalysisError);
  EXPECT_EQ(w.violations, std::vector<std::string>());
}

// A just-Ready canary has no series yet: the first measurement meets an
// empty vector (an error, retried), never a value nor a failure; with an
// initialDelay of two scrape intervals it meets none.
TEST(CanaryWorld, AJustReadyCanaryIsMeasuredAsAnEmptyVectorUntilScraped) {
  World w(threeSteps(), nodePerPod());
  w.run();
  EXPECT_GT(w.emptyMeasurements, 0) << "the realistic world measures before the first scrapes";
  for (const CanaryPlan& p : w.plans) {
    const json& a = p.status.value("analysis", json::object());
    EXPECT_EQ(a.value("failed", 0), 0) << "an unscraped canary is not a bad canary";
  }
  World kind(threeSteps(), kindWorld());
  kind.run();
  EXPECT_EQ(kind.emptyMeasurements, 0) << "the kind world has every series at once";
  // initialDelay of two scrape intervals: the first measurement finds the series.
  json analysis = promAnalysis(2);
  analysis["prometheus"]["initialDelay"] = "30s";
  World delayed(specOfCanaryWorld({{"analysis", analysis},
                                   {"steps", json::array({{{"weight", 25}, {"pause", "1m"}},
                                                          {{"weight", 50}, {"pause", "1m"}},
                                                          {{"weight", 75}}})}}),
                nodePerPod());
  delayed.run();
  EXPECT_EQ(delayed.phase(), "Promoted");
  EXPECT_EQ(delayed.emptyMeasurements, 0) << "initialDelay covers two scrapes";
  EXPECT_EQ(delayed.violations, std::vector<std::string>());
}

TEST(CanaryWorld, DrainNeverRunsMorePodsThanReplicasAndRollsBackStableFirst) {
  for (const Case& c : kWorlds) {
    SCOPED_TRACE(c.name);
    World clean = ran(World(threeSteps("drain"), c.knobs));
    ASSERT_EQ(clean.phase(), "Promoted") << clean.reason();
    EXPECT_LE(clean.maxPods, 4);
    EXPECT_LE(clean.maxLivePods, 4);
    EXPECT_EQ(clean.violations, std::vector<std::string>());
    for (int crashAt = 0; crashAt < 80; crashAt += 3) {
      SCOPED_TRACE("crash at reconcile " + std::to_string(crashAt));
      World r = ran(World(threeSteps("drain"), c.knobs), crashAt);
      EXPECT_EQ(r.phase(), "Promoted");
      EXPECT_LE(r.maxPods, 4);
      EXPECT_EQ(r.violations, std::vector<std::string>());
    }
    World bad(threeSteps("drain"), c.knobs);
    bad.badFromStep = 1;
    World rb = ran(bad);
    EXPECT_EQ(rb.phase(), "RolledBack");
    EXPECT_EQ(rb.canary.replicas, 0);
    EXPECT_EQ(rb.stable.replicas, 4);
    EXPECT_EQ(rb.stable.release, kKnownGood);
    EXPECT_EQ(rb.violations, std::vector<std::string>());
  }
}

// Drain on a cluster with exactly N GPUs: the stable pod drained first still
// holds its GPU while it terminates, so a canary pod waits for it (the GPU
// pre-check sees the Terminating pod) instead of being requested into a full
// node: in every step and in the promotion's FullWeight phase, which once
// added its last canary pods with no pre-check (a pod Pending with
// Insufficient nvidia.com/gpu until the termination ended; issue 19's F4).
TEST(CanaryWorld, DrainOnAFullClusterWaitsForTheTerminatingPodsGpu) {
  Knobs k;
  k.nodeGpus = {2, 2};
  World w(threeSteps("drain"), k);
  std::vector<std::string> reasons, promotingReasons;
  for (int i = 0; i < 400 && w.phase() != "Promoted"; ++i) {
    w.reconcile();
    reasons.push_back(w.reason());
    if (w.phase() == "Promoting") promotingReasons.push_back(w.reason());
    w.tick(10);
  }
  EXPECT_EQ(w.phase(), "Promoted");
  EXPECT_NE(std::find(reasons.begin(), reasons.end(), kReasonWaitingForGPUCapacity), reasons.end())
      << "the Terminating pod's GPU was counted";
  EXPECT_NE(
      std::find(promotingReasons.begin(), promotingReasons.end(), kReasonWaitingForGPUCapacity),
      promotingReasons.end())
      << "the promotion's last canary pod waited for the GPU too";
  EXPECT_GT(w.unschedulable["stable"], 0)
      << "the handover's stable pods wait for the canary's GPUs (the pre-check guards canary pods)";
  EXPECT_EQ(w.unschedulable["canary"], 0) << "no canary pod was requested into a full node";
  EXPECT_EQ(w.violations, std::vector<std::string>());
}

TEST(CanaryWorld, FullClusterSurgeWaitsThenAbortsWithStableUntouched) {
  Knobs k;
  k.nodeGpus = {2, 2};  // the stable pods fill every GPU
  World w(threeSteps(), k);
  std::vector<std::string> reasons;
  for (int i = 0; i < 200 && w.phase() != "RolledBack"; ++i) {
    w.reconcile(i % 7 == 3);  // and a restart now and then
    reasons.push_back(w.reason());
    w.tick(10);
  }
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.reason(), kReasonInsufficientGPUCapacity);
  EXPECT_EQ(reasons.front(), kReasonWaitingForGPUCapacity);
  EXPECT_EQ(w.minStableSpec, 4) << "the stable track never gave up a pod";
  EXPECT_EQ(w.maxPods, 4) << "no canary pod was ever requested";
  // The wait lasted the step's progress deadline (10m default), not forever;
  // each restart lost the in-memory clock, which resumes at most half a
  // deadline after the written one (canary_plan.cc lastClockKnown).
  EXPECT_GE(w.now - kT0, 600);
  EXPECT_LE(w.now - kT0, 600 + 300 + 20);  // a reconcile every 10 s, and the tick after it
  EXPECT_EQ(w.violations, std::vector<std::string>());
}

// A canary whose container restarts after it turned Ready: rolled back, and
// the N stable pods serve throughout.
TEST(CanaryWorld, ACrashingCanaryIsRolledBackWhileStableServes) {
  Knobs k;
  k.crashAfter = 20;
  World w(threeSteps(), k);
  w.run();
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.reason(), kReasonCanaryRestarting);
  EXPECT_EQ(w.stable.release, kKnownGood);
  EXPECT_EQ(w.stableReadyAtRolledBack, 4);
  EXPECT_GE(w.minServing, 4);
  EXPECT_EQ(w.violations, std::vector<std::string>());
}

// ---- capacity during rollbacks (issue 20) ----------------------------------------------------

// The canary holds all N pods at a weight-100 step (stable at zero pods, its
// template still the known-good's); the user aborts; the operator reconciles
// every 5 s while stable pods warm up for `warmup` seconds.
World rolledBackFromFullWeight(CapacityMode mode, Knobs k) {
  World w(specOfCanaryWorld({{"capacity", capacityModeName(mode)},
                             {"steps", json::array({{{"weight", 100}, {"pause", "Indefinite"}}})}}),
          k);
  w.startAtFullWeight();
  w.annotations[kAbortAnnotation] = "bob";
  w.run(-1, 5, 200);
  return w;
}

// Surge: N Ready serving pods at every event; drain: never fewer than N-1.
// RolledBack only with N Ready stable pods.
TEST(CanaryRollbackCapacity, RollbackKeepsItsFloorWhileStableWarmsUp) {
  for (CapacityMode mode : {CapacityMode::kSurge, CapacityMode::kDrain}) {
    for (int64_t warmup : {0, 5, 20, 60}) {
      SCOPED_TRACE(std::string(capacityModeName(mode)) + ", stable pods Ready after " +
                   std::to_string(warmup) + "s");
      Knobs k;
      k.warmup = warmup;
      World w = rolledBackFromFullWeight(mode, k);
      EXPECT_EQ(w.phase(), "RolledBack");
      EXPECT_GE(w.minServing, mode == CapacityMode::kSurge ? 4 : 3);
      EXPECT_EQ(w.violations, std::vector<std::string>());
      EXPECT_EQ(w.stableReadyAtRolledBack, 4);
      EXPECT_EQ(w.canary.replicas, 0);
    }
  }
}

TEST(CanaryRollbackCapacity, StableThatCannotBeRecreatedKeepsTheCanaryServing) {
  Knobs k;
  k.neverReady = kKnownGood;
  World w = rolledBackFromFullWeight(CapacityMode::kSurge, k);
  EXPECT_EQ(w.phase(), "RollingBack") << "never RolledBack without N Ready stable pods";
  EXPECT_GE(w.minServing, 4) << "the canary keeps serving rather than leave prod empty";
  EXPECT_EQ(w.violations, std::vector<std::string>());
}

// A superseding release: the canary Deployment still runs the displaced
// release's 2 pods at weight 50 (stable 2). The new release's first step
// starts from zero pods, after stable is back, and N pods stay Ready.
TEST(CanaryRollbackCapacity, SupersedingReleaseStartsItsFirstStepFromZeroPods) {
  for (CapacityMode mode : {CapacityMode::kSurge, CapacityMode::kDrain}) {
    SCOPED_TRACE(capacityModeName(mode));
    Knobs k;
    k.warmup = 20;
    World w(
        specOfCanaryWorld({{"capacity", capacityModeName(mode)},
                           {"steps", json::array({{{"weight", 25}, {"pause", "1m"}},
                                                  {{"weight", 100}, {"pause", "Indefinite"}}})}}),
        k);
    w.startDisplacing("gpt2-v1b", 2);
    for (int i = 0; i < 100 && w.ownCanaryPodsAtTakeover < 0; ++i) {
      w.reconcile();
      ASSERT_EQ(w.plans.back().action, CanaryAction::kProgress) << w.plans.back().message;
      w.tick(5);
    }
    EXPECT_EQ(w.displacedLiveAtTakeover, 0) << "the displaced canary was drained first";
    EXPECT_EQ(w.ownCanaryPodsAtTakeover, targetReplicaCounts(4, 25, mode).canary)
        << "the first step's share, not the displaced canary's";
    EXPECT_EQ(w.status["stepStartedAt"], rfc(w.firstPlanAfterDrainAt))
        << "the step's clock starts when the displaced pods are gone";
    EXPECT_GT(w.firstPlanAfterDrainAt, w.lastDisplacedWriteAt);
    EXPECT_EQ(w.drainWritesWithoutNews, 0)
        << "a drain's polls write the status only when what it waits for changed";
    EXPECT_GE(w.minServing, mode == CapacityMode::kSurge ? 4 : 3);
    EXPECT_EQ(w.violations, std::vector<std::string>());
  }
}

}  // namespace
}  // namespace lockstep::controllers::sim
