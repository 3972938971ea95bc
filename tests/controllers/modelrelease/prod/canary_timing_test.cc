// The canary's clocks in the simulated world (canary_world.h): the progress
// deadline counts from the last progress (docs/rollouts.md, "Progress
// deadline"), never during a pause whose weight holds; promotion has the same
// deadline and health checks as a step; an Indefinite pause with analysis
// measures until promoted.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "controllers/modelrelease/timestamps.h"
#include "tests/controllers/modelrelease/prod/canary_world.h"

namespace lockstep::controllers::sim {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons
using nlohmann::json;

CanarySpec specOf(const json& canary) {
  CanarySpec s;
  EXPECT_EQ(decodeCanarySpec(prodStage(canary), s), std::nullopt);
  return s;
}

// Reconciles every `every` seconds until `done` or `seconds` passed; false on timeout.
template <typename Done>
bool reconcileUntil(World& w, Done done, int64_t seconds, int64_t every = 10) {
  for (int64_t t = 0; t <= seconds; t += every) {
    w.reconcile();
    if (done()) return true;
    w.tick(every);
  }
  return false;
}

int64_t timeAt(const json& status, const char* key) {
  return parseRfc3339(status.value(key, std::string())).value_or(0);
}

// One step at 50% baking for an hour; the default progress deadline (10m).
CanarySpec hourBake() {
  return specOf({{"steps", json::array({{{"weight", 50}, {"pause", "1h"}}})}});
}

// The weight holds at minute ~1; the operator then sleeps until the pause's end
// (its requeue), and the first event it sees is a canary pod's readiness blip at
// minute 20, long after stepStartedAt + 10m. The blip recovers within the
// deadline: the bake goes on and promotes.
TEST(ProgressDeadline, AReadinessBlipInALongBakeThatRecoversNeverRollsBack) {
  World w(hourBake());
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.contains("weightReachedAt"); }, 600))
      << w.reason();
  const int64_t reached = timeAt(w.status, "weightReachedAt");
  // While the weight holds, a plan changes nothing (no status write per reconcile).
  const json held = w.status;
  w.tick(10);
  w.reconcile();
  EXPECT_EQ(w.status, held);
  w.tick(reached + 20 * 60 - w.now);  // no reconcile: the pause's requeue is at its end
  ASSERT_NE(w.failReadiness(kTrackCanary, kRelease, 120), "");
  w.run();
  EXPECT_EQ(w.phase(), "Promoted") << w.reason() << ": " << w.status.value("message", "");
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
  EXPECT_GE(w.now, reached + 3600) << "the bake ran its hour";
}

// The same blip, never recovering: the release rolls back one deadline after
// the blip began (seen at the next reconcile), not at once and not later.
TEST(ProgressDeadline, ABlipThatNeverRecoversRollsBackOneDeadlineAfterItBegan) {
  World w(hourBake());
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.contains("weightReachedAt"); }, 600));
  const int64_t reached = timeAt(w.status, "weightReachedAt");
  w.tick(reached + 20 * 60 - w.now);
  const int64_t blipAt = w.now;
  ASSERT_NE(w.failReadiness(kTrackCanary, kRelease, -1), "");
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.value("phase", "") != "Progressing"; }, 3600, 5));
  EXPECT_EQ(w.status.value("phase", ""), "RollingBack");
  EXPECT_EQ(w.reason(), kReasonProgressDeadlineExceeded) << w.status.value("message", "");
  const int64_t rollbackAt = timeAt(w.status, "rollbackStartedAt");
  EXPECT_GE(rollbackAt, blipAt + 600)
      << "rolled back " << rollbackAt - blipAt << "s after the blip";
  EXPECT_LE(rollbackAt, blipAt + 600 + 5 + 1);
  EXPECT_NE(w.status.value("message", "").find("no progress for 60"), std::string::npos)
      << w.status.value("message", "");
  w.run();
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
}

// A model that warms up for 4 minutes per pod, a 5-minute deadline: the step
// takes about 16 minutes but every pod is progress, so it never times out.
TEST(ProgressDeadline, CountsFromTheLastProgressNotFromTheStepsStart) {
  Knobs slow;
  slow.warmup = 240;
  World w(specOf({{"progressDeadline", "5m"}, {"steps", json::array({{{"weight", 100}}})}}), slow);
  w.run();
  EXPECT_EQ(w.phase(), "Promoted") << w.reason() << ": " << w.status.value("message", "");
  EXPECT_GE(w.now - kT0, 16 * 60) << "four pods warmed up one after another";
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
  // The clock of the last progress runs while the pods move (the shell's
  // memory; status.canary records it at the step's start).
  bool seen = false;
  for (const CanaryPlan& p : w.plans) {
    if (p.progress && p.progress->podsToTarget > 0 && p.status.contains("lastProgressAt"))
      seen = true;
  }
  EXPECT_TRUE(seen);
}

// Pods that stop progressing roll the step back one deadline after the last
// progress, the clock kept in the shell's memory between status writes. An
// operator restarted meanwhile (a new leader: no memory), once or before every
// plan, resumes the clock from the written one (the step's start) plus half
// the deadline: the deadline fires, later, never earlier.
TEST(ProgressDeadline, FiresFromTheInMemoryClockAndAfterARestartOnlyLater) {
  int64_t withoutRestart = 0;
  for (const char* restarts : {"none", "once at +90s", "before every plan"}) {
    SCOPED_TRACE(restarts);
    const std::string r = restarts;
    World w(specOf({{"progressDeadline", "2m"}, {"steps", json::array({{{"weight", 50}}})}}));
    w.knobs.neverReady = kRelease;  // its pods never turn Ready
    for (int i = 0; i < 200 && w.phase() != "RollingBack"; ++i) {
      if (r == "before every plan" || (r == "once at +90s" && w.now - kT0 == 90)) w.restart();
      w.reconcile();
      ASSERT_EQ(w.writesWithoutNews, 0) << w.firstWriteWithoutNews;
      w.tick(5);
    }
    ASSERT_EQ(w.phase(), "RollingBack") << w.status.dump();
    EXPECT_EQ(w.reason(), kReasonProgressDeadlineExceeded) << w.status.value("message", "");
    const int64_t rolledBackAt = timeAt(w.status, "rollbackStartedAt");
    const int64_t lastProgress = timeAt(w.status, "lastProgressAt");
    // The rollback records the clock it decided on.
    EXPECT_GT(rolledBackAt - lastProgress, 120);
    EXPECT_LE(rolledBackAt - lastProgress, 125);
    EXPECT_NE(w.status.value("message", "").find("last progress at " + rfc(lastProgress)),
              std::string::npos)
        << w.status.value("message", "");
    const int64_t started = timeAt(w.status, "stepStartedAt");
    if (r == "none") {
      EXPECT_GT(lastProgress, started) << "the canary pod's creation was the last progress";
      EXPECT_LT(lastProgress, started + 60);
      withoutRestart = rolledBackAt;
    } else {
      EXPECT_EQ(lastProgress, started + 60) << "the written clock plus half the deadline";
      EXPECT_GT(rolledBackAt, withoutRestart) << "a restart makes the deadline later";
    }
    EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
  }
}

// ---- status writes: only news -------------------------------------------------------------------

// The Ready pods of both tracks, as the planner sees them.
std::pair<int, int> readyPodsOf(const World& w) {
  const CanaryObserved o = w.observe();
  return {o.canary.readyReplicas, o.stable.readyReplicas};
}

// Two steps and the promotion, reconciled every second (every pod's change
// is seen; pods warm up for 20 s, one at a time): a status write happens only
// when something a user or a restarted operator needs changed (the phase, the
// step, the reason, the promotion stage, the step's clocks), checked at every
// reconcile; a pod turning Ready is none. Per step: its start, and its weight
// reached (the pause); the promotion: its start, the handover, Promoted.
TEST(StatusWrites, APodTurningReadyIsNoStatusWrite) {
  for (const char* capacity : {"surge", "drain"}) {
    SCOPED_TRACE(capacity);
    Knobs k;
    k.warmup = 20;
    World w(specOf({{"capacity", capacity},
                    {"steps", json::array({{{"weight", 25}, {"pause", "1m"}},
                                           {{"weight", 50}, {"pause", "1m"}}})}}),
            k);
    std::map<std::string, int> writes;  // by stage
    int readyChanges = 0;
    std::pair<int, int> ready = readyPodsOf(w);
    for (int i = 0; i < 3600 && w.phase() != "Promoted" && w.phase() != "RolledBack"; ++i) {
      const int before = w.statusWrites;
      w.reconcile();
      ASSERT_EQ(w.writesWithoutNews, 0) << w.firstWriteWithoutNews;
      if (w.statusWrites > before) {
        const std::string phase = w.status.value("phase", "");
        ++writes[phase == "Progressing" ? "step " + std::to_string(w.status.value("step", 0))
                                        : std::string("promotion")];
      }
      w.tick(1);
      const std::pair<int, int> now = readyPodsOf(w);
      if (now != ready) ++readyChanges;
      ready = now;
    }
    ASSERT_EQ(w.phase(), "Promoted") << w.reason() << ": " << w.status.value("message", "");
    EXPECT_GE(readyChanges, 12) << "pods turned Ready and went, one by one";
    EXPECT_EQ(writes, (std::map<std::string, int>{{"step 0", 2}, {"step 1", 2}, {"promotion", 3}}))
        << "writes: " << ::testing::PrintToString(writes);
    EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
  }
}

// ---- promotion: a step's health checks and deadline ----------------------------------------

// The model serves its 50% step, then falls over once it carries all traffic
// (FullWeight, no stable pod left): promotion rolls back, never promotes nor
// waits forever; stable is back on the known-good's N pods.
TEST(PromotionChecks, AModelThatFallsOverUnderFullLoadRollsBack) {
  Knobs k;
  k.crashUnderFullLoad = true;
  World w(specOf({{"steps", json::array({{{"weight", 50}}})}}), k);
  w.run();
  ASSERT_EQ(w.phase(), "RolledBack") << w.reason() << ": " << w.status.value("message", "");
  EXPECT_EQ(w.reason(), kReasonCanaryRestarting);
  EXPECT_NE(w.status.value("message", "").find("promotion (moving all traffic to the canary)"),
            std::string::npos)
      << w.status.value("message", "");
  EXPECT_EQ(w.stable.release, kKnownGood);
  EXPECT_EQ(w.stable.replicas, 4);
  EXPECT_EQ(w.canary.replicas, 0);
  EXPECT_EQ(w.stableReadyAtRolledBack, 4);
  EXPECT_EQ(w.phases.at(kKnownGood), "Promoted");
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
}

// Pods of the release that stop turning Ready once promotion began: rolled
// back one progress deadline (the last step's) after the last progress.
TEST(PromotionChecks, PromotionHasTheLastStepsProgressDeadline) {
  World w(specOf(
      {{"steps", json::array({{{"weight", 25}}, {{"weight", 50}, {"progressDeadline", "4m"}}})}}));
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.value("phase", "") == "Promoting"; }, 3600));
  w.knobs.neverReady = kRelease;  // its new pods never turn Ready
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.value("phase", "") != "Promoting"; }, 3600));
  EXPECT_EQ(w.status.value("phase", ""), "RollingBack");
  EXPECT_EQ(w.reason(), kReasonProgressDeadlineExceeded) << w.status.value("message", "");
  EXPECT_NE(w.status.value("message", "").find("(progress deadline 240s"), std::string::npos)
      << w.status.value("message", "");
  const int64_t late = timeAt(w.status, "rollbackStartedAt") - timeAt(w.status, "lastProgressAt");
  EXPECT_GT(late, 240);
  EXPECT_LE(late, 250);
  w.run();
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.stable.release, kKnownGood);
  EXPECT_EQ(w.stableReadyAtRolledBack, 4);
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
}

// ---- an Indefinite pause with analysis --------------------------------------------------------

CanarySpec indefiniteAnalysed() {
  return specOf({{"steps", json::array({{{"weight", 50},
                                         {"pause", "Indefinite"},
                                         {"analysis", promAnalysis(3, 1)}}})}});
}

// It measures on its interval for as long as it waits, not `count` times;
// status says how many; the promote ends it and the record keeps the counters.
TEST(IndefinitePauseAnalysis, MeasuresOnItsIntervalUntilPromoted) {
  World w(indefiniteAnalysed());
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.contains("weightReachedAt"); }, 600));
  const int64_t reached = timeAt(w.status, "weightReachedAt");
  reconcileUntil(
      w, [] { return false; }, reached + 30 * 60 - w.now);
  const json a = w.status.value("analysis", json::object());
  EXPECT_GE(a.value("count", 0), 50) << a.dump();  // 30 min at 30 s (the first ones empty)
  EXPECT_EQ(a.value("failed", -1), 0);
  EXPECT_EQ(a.value("phase", ""), "Running");
  EXPECT_NE(a.value("message", "").find("until promoted"), std::string::npos) << a.dump();
  EXPECT_NE(a.value("message", "").find(std::to_string(a.value("count", 0)) + " measurements"),
            std::string::npos)
      << a.dump();
  EXPECT_EQ(w.phase(), "Progressing");
  w.annotations[std::string(kPromoteAnnotationPrefix) + "0"] = "alice";
  w.run();
  ASSERT_EQ(w.phase(), "Promoted") << w.reason();
  const json rec = w.status["passedSteps"][0];
  EXPECT_EQ(rec["promotedBy"], "alice");
  EXPECT_GE(rec["analysis"]["count"].get<int>(), 50) << rec.dump();
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
}

// The failure limit still rolls back while it waits: the canary turns bad
// twenty minutes into the pause (failureLimit 1: the second failure).
TEST(IndefinitePauseAnalysis, TheFailureLimitRollsBackWhilePaused) {
  World w(indefiniteAnalysed());
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.status.contains("weightReachedAt"); }, 600));
  reconcileUntil(
      w, [] { return false; }, 20 * 60);
  ASSERT_EQ(w.phase(), "Progressing") << w.reason();
  const int64_t badAt = w.now;
  w.badFromStep = 0;
  ASSERT_TRUE(reconcileUntil(
      w, [&] { return w.phase() != "Progressing"; }, 600));
  EXPECT_EQ(w.reason(), kReasonAnalysisFailed) << w.status.value("message", "");
  EXPECT_NE(w.status.value("message", "").find("failed (2) > failureLimit (1)"), std::string::npos)
      << w.status.value("message", "");
  EXPECT_LE(timeAt(w.status, "rollbackStartedAt"), badAt + 70) << "two intervals";
  w.run();
  EXPECT_EQ(w.phase(), "RolledBack");
  EXPECT_EQ(w.violations, std::vector<std::string>()) << w.report();
}

}  // namespace
}  // namespace lockstep::controllers::sim
