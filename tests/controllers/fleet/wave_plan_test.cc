// The wave planner (controllers/fleet/wave_plan.h): each rule of its header
// as a test over a small fleet (builders and verbs: permitted, promoted,
// rolledBack, at, step), then simulated rollouts — random waves, strategies
// and cluster behaviour from fixed seeds — with the header's invariants
// checked on every pass against an oracle of their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

#include "controllers/fleet/wave_plan.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using evidence::ProdRecord;
using evidence::WavePermit;
using nlohmann::json;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kPackage = "registry.example/models/llama@" + kDigest;
constexpr int64_t kT0 = 1796029200;  // 2026-11-30T09:00:00Z

using Waves = std::vector<std::pair<std::string, std::vector<std::string>>>;

// A hub's view of one rollout: its spec, the registry's statements and the time.
class Fleet {
 public:
  Fleet(const Waves& waves, const json& strategy) {
    json spec{{"package", kPackage}, {"model", "llama"}, {"trustPolicy", "fleet"}};
    spec["waves"] = json::array();
    for (const auto& [name, clusters] : waves) {
      json w{{"name", name}, {"clusters", clusters}};
      // A wave without clusters selects by a label no cluster has.
      if (clusters.empty()) w["clusterSelector"] = {{"matchLabels", {{"gpu", "none"}}}};
      spec["waves"].push_back(w);
    }
    spec["strategy"] = strategy;
    auto decoded = v1::decodeModelRolloutSpec(spec);
    EXPECT_TRUE(decoded.isOk()) << decoded.status().toString();
    in_.spec = *decoded;
    in_.waves = v1::resolveWaves(in_.spec, {});
    in_.rollout.name = "llama-v7";
    in_.rollout.ns = "ml";
    in_.rollout.uid = "uid-1";
    in_.nowUnix = kT0;
  }

  // The time, as seconds after kT0.
  Fleet& at(int64_t t) {
    in_.nowUnix = kT0 + t;
    return *this;
  }
  Fleet& permitted(const std::vector<std::string>& clusters, int64_t t) {
    WavePermit p;
    p.package = in_.spec.packageRef;
    p.rollout = "ml/llama-v7";
    p.rolloutUid = "uid-1";
    p.wave = "?";
    p.clusters = clusters;
    p.issuedAt = kT0 + t;
    in_.permits.push_back(p);
    return *this;
  }
  Fleet& record(const std::string& cluster, const std::string& outcome, int64_t since,
                const std::string& reason = "") {
    ProdRecord r;
    r.package = in_.spec.packageRef;
    r.cluster = cluster;
    r.outcome = outcome;
    r.since = kT0 + since;
    r.reason = reason;
    in_.records.push_back(r);
    return *this;
  }
  Fleet& promoted(const std::string& cluster, int64_t since) {
    return record(cluster, evidence::kOutcomePromoted, since);
  }
  Fleet& rolledBack(const std::string& cluster, int64_t since,
                    const std::string& reason = "AnalysisFailed") {
    return record(cluster, evidence::kOutcomeRolledBack, since, reason);
  }
  Fleet& abortInRegistry() {
    in_.abortInRegistry = true;
    return *this;
  }

  WavePlan plan() const { return planWaves(in_); }
  // Plans, and writes what the plan says to the registry (as the shell does).
  WavePlan step() {
    WavePlan p = plan();
    for (const WavePermit& w : p.permits) in_.permits.push_back(w);
    if (p.abort) in_.abortInRegistry = true;
    return p;
  }

  WavePlanInput& input() { return in_; }

 private:
  WavePlanInput in_;
};

json clusterOf(const WavePlan& p, const std::string& name) {
  for (const json& c : p.status.at("clusters"))
    if (c.at("name") == name) return c;
  ADD_FAILURE() << "no status.clusters entry for " << name << " in " << p.status.dump();
  return json::object();
}
std::string stateOf(const WavePlan& p, const std::string& name) {
  return clusterOf(p, name).value("state", "");
}
std::string wavePhase(const WavePlan& p, size_t i) {
  return p.status.at("waves").at(i).at("phase");
}
std::vector<std::string> permitted(const WavePlan& p) {
  return p.permits.empty() ? std::vector<std::string>{} : p.permits.at(0).clusters;
}
using Names = std::vector<std::string>;

TEST(WavePlan, FirstPassPermitsTheFirstBatchOfTheFirstWave) {
  Fleet f({{"first", {"a", "b", "c"}}, {"rest", {"d"}}}, {{"maxConcurrency", 2}});
  WavePlan p = f.plan();
  ASSERT_EQ(p.permits.size(), 1U);
  const WavePermit& w = p.permits[0];
  EXPECT_EQ(w.clusters, (Names{"a", "b"}));
  EXPECT_EQ(w.wave, "first");
  EXPECT_EQ(w.waveIndex, 0);
  EXPECT_EQ(w.rollout, "ml/llama-v7");
  EXPECT_EQ(w.rolloutUid, "uid-1");
  EXPECT_EQ(w.model, "llama");
  EXPECT_EQ(w.package.digest, kDigest);
  EXPECT_EQ(w.issuedAt, kT0) << "issuedAt is the now given";
  EXPECT_FALSE(w.allClusters);
  EXPECT_FALSE(p.abort);
  EXPECT_EQ(p.phase, kRolloutProgressing);
  EXPECT_EQ(p.status.at("currentWave"), "first");
  EXPECT_EQ(wavePhase(p, 0), kWaveProgressing);
  EXPECT_EQ(wavePhase(p, 1), kWavePending);
  EXPECT_EQ(stateOf(p, "a"), kClusterPermitted);
  EXPECT_EQ(clusterOf(p, "a").at("permittedAt"), "2026-11-30T09:00:00Z");
  EXPECT_EQ(stateOf(p, "c"), kClusterPending);
  EXPECT_EQ(clusterOf(p, "d").at("wave"), "rest");
  EXPECT_EQ(p.status.at("failures"), 0);
  EXPECT_EQ(p.status.at("maxFailures"), 0);
  EXPECT_EQ(p.status.at("message"),
            "wave first (1 of 2): 2 in flight, 1 waiting for a permit, 0 soaking; failures 0 of "
            "at most 0");
  EXPECT_EQ(p.requeueAfterSeconds, 0) << "no deadline, no soak: nothing changes by time alone";
}

TEST(WavePlan, NoSecondPermitWhileTheBatchIsInFlight) {
  Fleet f({{"first", {"a", "b", "c"}}}, {{"maxConcurrency", 2}});
  f.step();
  WavePlan p = f.at(60).plan();
  EXPECT_TRUE(p.permits.empty());
  EXPECT_EQ(stateOf(p, "a"), kClusterPermitted);
  EXPECT_EQ(clusterOf(p, "a").at("permittedAt"), "2026-11-30T09:00:00Z") << "not re-dated";
}

TEST(WavePlan, APromotedClusterLeavesFlightAtOnceItsSoakGatesOnlyTheNextWave) {
  Fleet f({{"first", {"a", "b", "c"}}, {"rest", {"d"}}},
          {{"maxConcurrency", 2}, {"minSuccessTime", "10m"}});
  f.step();
  WavePlan p = f.promoted("a", 100).at(120).plan();
  EXPECT_EQ(permitted(p), Names{"c"}) << "a's soak does not hold the next batch";
  EXPECT_EQ(p.permits.at(0).waveIndex, 0);
  EXPECT_EQ(stateOf(p, "a"), kClusterPromoted);
  EXPECT_EQ(clusterOf(p, "a").at("since"), "2026-11-30T09:01:40Z");
  EXPECT_EQ(clusterOf(p, "a").at("reason"), "soaking until 2026-11-30T09:11:40Z");
  EXPECT_EQ(p.requeueAfterSeconds, 580);
}

TEST(WavePlan, TheNextWaveStartsWhenEveryClusterSoakedMeasuredFromTheRecordsSince) {
  Fleet f({{"first", {"a", "b"}}, {"rest", {"c"}}}, {{"minSuccessTime", "10m"}});
  f.step();
  f.promoted("a", 100).promoted("b", 200);
  WavePlan p = f.at(500).plan();
  EXPECT_TRUE(p.permits.empty());
  EXPECT_EQ(p.phase, kRolloutSoaking);
  EXPECT_EQ(wavePhase(p, 0), kWaveSoaking);
  EXPECT_EQ(p.status.at("message"),
            "wave first (1 of 2): soaking until 2026-11-30T09:13:20Z; failures 0 of at most 0");
  EXPECT_EQ(p.requeueAfterSeconds, 200) << "a's soak ends at 700";
  p = f.at(700).plan();
  EXPECT_TRUE(p.permits.empty());
  EXPECT_EQ(stateOf(p, "a"), kClusterSoaked);
  EXPECT_EQ(stateOf(p, "b"), kClusterPromoted);
  EXPECT_EQ(p.requeueAfterSeconds, 100);
  p = f.at(800).plan();
  EXPECT_EQ(permitted(p), Names{"c"});
  EXPECT_EQ(p.permits.at(0).wave, "rest");
  EXPECT_EQ(p.permits.at(0).waveIndex, 1);
  EXPECT_EQ(wavePhase(p, 0), kWaveSucceeded);
  EXPECT_EQ(wavePhase(p, 1), kWaveProgressing);
  EXPECT_EQ(p.status.at("currentWave"), "rest");
}

TEST(WavePlan, ARecordSeenLateHasSoakedSinceItsOwnTime) {
  // The hub was down for an hour: the record it finds is an hour old, so the soak is over.
  Fleet f({{"first", {"a"}}, {"rest", {"b"}}}, {{"minSuccessTime", "10m"}});
  f.step();
  WavePlan p = f.promoted("a", 60).at(3600).plan();
  EXPECT_EQ(stateOf(p, "a"), kClusterSoaked);
  EXPECT_EQ(permitted(p), Names{"b"});
}

TEST(WavePlan, ARolledBackClusterFailsAndPastMaxFailuresTheRolloutAborts) {
  Fleet f({{"first", {"b"}}, {"rest", {"c", "d"}}}, json::object());
  f.step();
  WavePlan p = f.rolledBack("b", 300, "AnalysisFailed: error-rate 0.09 > 0.05").at(310).plan();
  EXPECT_TRUE(p.permits.empty());
  ASSERT_TRUE(p.abort.has_value());
  EXPECT_EQ(p.abort->wave, "first");
  EXPECT_EQ(p.abort->maxFailures, 0);
  EXPECT_EQ(p.abort->issuedAt, kT0 + 310);
  EXPECT_EQ(p.abort->rollout, "ml/llama-v7");
  EXPECT_EQ(p.abort->model, "llama");
  ASSERT_EQ(p.abort->failures.size(), 1U);
  EXPECT_EQ(p.abort->failures[0],
            (evidence::FleetFailure{"b", "RolledBack", kT0 + 300,
                                    "AnalysisFailed: error-rate 0.09 > 0.05"}));
  EXPECT_EQ(p.phase, kRolloutAborted);
  EXPECT_EQ(wavePhase(p, 0), kWaveFailed);
  EXPECT_EQ(wavePhase(p, 1), kWavePending) << "no later wave starts";
  EXPECT_EQ(stateOf(p, "b"), kClusterRolledBack);
  EXPECT_EQ(clusterOf(p, "b").at("reason"), "AnalysisFailed: error-rate 0.09 > 0.05");
  EXPECT_EQ(p.status.at("message"),
            "aborted in wave first: 1 failures (b RolledBack) exceed maxFailures 0");
  EXPECT_EQ(p.requeueAfterSeconds, 0);
}

TEST(WavePlan, TheAbortIsPlannedOnceAndNoPermitEverFollows) {
  Fleet f({{"first", {"b"}}, {"rest", {"c", "d"}}}, json::object());
  f.step();
  f.rolledBack("b", 300).at(310).step();
  // Even if b promotes again, the abort in the registry stands.
  WavePlan p = f.promoted("b", 900).at(5000).plan();
  EXPECT_FALSE(p.abort);
  EXPECT_TRUE(p.permits.empty());
  EXPECT_EQ(p.phase, kRolloutAborted);
  EXPECT_EQ(p.status.at("message"),
            "a fleet abort for this package is in the registry: no cluster starts it");
}

TEST(WavePlan, OneFailureOfTwoWithinMaxFailuresOneLetsTheWaveFinishTwoAbort) {
  const Waves waves = {{"first", {"b", "c"}}, {"rest", {"d", "e"}}};
  const json strategy = {{"maxFailures", 1}};
  {
    Fleet f(waves, strategy);
    f.step();
    WavePlan p = f.rolledBack("b", 300).promoted("c", 400).at(400).plan();
    EXPECT_FALSE(p.abort);
    EXPECT_EQ(permitted(p), (Names{"d", "e"})) << "the wave finished: the next one starts";
    EXPECT_EQ(wavePhase(p, 0), kWaveSucceeded);
    EXPECT_EQ(p.status.at("waves").at(0).at("message"), "1 of 2 clusters failed");
    EXPECT_EQ(p.status.at("failures"), 1);
    EXPECT_EQ(p.status.at("maxFailures"), 1);
  }
  {
    Fleet f(waves, strategy);
    f.step();
    WavePlan p = f.rolledBack("b", 300).rolledBack("c", 400).at(400).plan();
    ASSERT_TRUE(p.abort.has_value());
    EXPECT_EQ(p.abort->failures.size(), 2U);
    EXPECT_TRUE(p.permits.empty());
    EXPECT_EQ(p.phase, kRolloutAborted);
  }
}

TEST(WavePlan, MaxFailuresAsAPercentageIsOfAllTheRolloutsClustersRoundedDown) {
  // 20% of 9 clusters is 1: one failure is tolerated, two abort.
  Fleet f({{"first", {"a", "b"}}, {"rest", {"c", "d", "e", "f", "g", "h", "i"}}},
          {{"maxFailures", "20%"}});
  f.step();
  WavePlan p = f.rolledBack("a", 10).at(20).plan();
  EXPECT_EQ(p.status.at("maxFailures"), 1);
  EXPECT_FALSE(p.abort);
  p = f.rolledBack("b", 30).at(40).plan();
  EXPECT_TRUE(p.abort.has_value());
}

TEST(WavePlan, ARolledBackAfterAPromotedIsAFailure) {
  Fleet f({{"first", {"b"}}, {"rest", {"c"}}}, {{"maxFailures", 1}});
  f.step();
  f.promoted("b", 100).rolledBack("b", 200, "rolled back by hand");
  WavePlan p = f.at(300).plan();
  EXPECT_EQ(stateOf(p, "b"), kClusterRolledBack);
  EXPECT_EQ(clusterOf(p, "b").at("since"), "2026-11-30T09:03:20Z");
  EXPECT_EQ(p.status.at("failures"), 1);
}

TEST(WavePlan, APromotedAfterARolledBackServesFromItsOwnSince) {
  Fleet f({{"first", {"b"}}, {"rest", {"c"}}}, {{"maxFailures", 1}, {"minSuccessTime", "10m"}});
  f.step();
  f.promoted("b", 100).rolledBack("b", 200).promoted("b", 1000).promoted("b", 1300);
  WavePlan p = f.at(1500).plan();
  EXPECT_EQ(stateOf(p, "b"), kClusterPromoted);
  EXPECT_EQ(clusterOf(p, "b").at("since"), "2026-11-30T09:16:40Z")
      << "the first Promoted after the last RolledBack; a re-dated record does not restart it";
  EXPECT_EQ(p.status.at("failures"), 0);
  EXPECT_EQ(p.requeueAfterSeconds, 100);
}

TEST(WavePlan, RecordsAtTheSameInstantOrderARolledBackLast) {
  Fleet f({{"first", {"b"}}}, {{"maxFailures", 1}});
  f.step();
  f.rolledBack("b", 100).promoted("b", 100);
  EXPECT_EQ(stateOf(f.at(200).plan(), "b"), kClusterRolledBack);
}

TEST(WavePlan, NoRecordByTheProgressDeadlineIsATimeout) {
  Fleet f({{"first", {"a", "b"}}, {"rest", {"c"}}},
          {{"progressDeadline", "30m"}, {"maxFailures", 1}, {"maxConcurrency", 1}});
  WavePlan p = f.step();
  EXPECT_EQ(p.requeueAfterSeconds, 1800) << "the new permit's deadline";
  p = f.at(1000).plan();
  EXPECT_EQ(stateOf(p, "a"), kClusterPermitted);
  EXPECT_EQ(p.requeueAfterSeconds, 800);
  p = f.at(1800).plan();
  EXPECT_EQ(stateOf(p, "a"), kClusterTimedOut);
  EXPECT_EQ(clusterOf(p, "a").at("reason"),
            "no prod record within progressDeadline 30m of its permit (issued "
            "2026-11-30T09:00:00Z)");
  EXPECT_EQ(p.status.at("failures"), 1);
  EXPECT_EQ(permitted(p), Names{"b"}) << "a timed-out cluster leaves flight";
}

TEST(WavePlan, ARecordDatedAfterTheDeadlineIsShownButTheFailureStands) {
  Fleet f({{"first", {"a"}}, {"rest", {"c"}}}, {{"progressDeadline", "30m"}, {"maxFailures", 1}});
  f.step();
  WavePlan p = f.promoted("a", 1900).at(2000).plan();
  EXPECT_EQ(stateOf(p, "a"), kClusterTimedOut);
  EXPECT_EQ(clusterOf(p, "a").at("since"), "2026-11-30T09:31:40Z");
  EXPECT_EQ(clusterOf(p, "a").at("reason"),
            "its first prod record (Promoted at 2026-11-30T09:31:40Z) is dated after its progress "
            "deadline 2026-11-30T09:30:00Z: the failure stands");
  EXPECT_EQ(p.status.at("failures"), 1);
  EXPECT_EQ(permitted(p), Names{"c"}) << "failed counts as done; within maxFailures 1";
}

TEST(WavePlan, ARecordWithinTheDeadlineIsNoTimeoutWhenTheHubSeesItLate) {
  Fleet f({{"first", {"a"}}}, {{"progressDeadline", "30m"}});
  f.step();
  WavePlan p = f.promoted("a", 1700).at(4000).plan();
  EXPECT_EQ(stateOf(p, "a"), kClusterSoaked);
  EXPECT_FALSE(p.abort);
}

TEST(WavePlan, TheDeadlineJudgesTheFirstRecordOnly) {
  Fleet f({{"first", {"a"}}}, {{"progressDeadline", "30m"}, {"maxFailures", 1}});
  f.step();
  WavePlan p = f.promoted("a", 100).rolledBack("a", 5000, "late regression").at(5000).plan();
  EXPECT_EQ(stateOf(p, "a"), kClusterRolledBack);
  EXPECT_EQ(clusterOf(p, "a").at("reason"), "late regression");
}

TEST(WavePlan, EveryWaveDonePlansTheOpenPermitOnce) {
  Fleet f({{"first", {"a"}}, {"rest", {"b"}}}, {{"maxFailures", 1}});
  f.step();
  f.promoted("a", 10).at(20).step();
  WavePlan p = f.rolledBack("b", 30).at(40).step();
  ASSERT_EQ(p.permits.size(), 1U);
  EXPECT_TRUE(p.permits[0].allClusters);
  EXPECT_TRUE(p.permits[0].clusters.empty());
  EXPECT_EQ(p.permits[0].wave, "*");
  EXPECT_EQ(p.permits[0].waveIndex, 2);
  EXPECT_EQ(p.phase, kRolloutSucceeded);
  EXPECT_EQ(p.status.at("currentWave"), "");
  EXPECT_EQ(p.status.at("message"),
            "every wave is done: the open permit lets every cluster promote it (1 failed, within "
            "maxFailures 1)");
  p = f.at(50).plan();
  EXPECT_TRUE(p.permits.empty()) << "the open permit is in the registry";
  EXPECT_EQ(p.phase, kRolloutSucceeded);
  EXPECT_EQ(wavePhase(p, 0), kWaveSucceeded);
  EXPECT_EQ(wavePhase(p, 1), kWaveSucceeded);
}

TEST(WavePlan, AfterTheOpenPermitFailuresDecideNothing) {
  Fleet f({{"first", {"a"}}}, json::object());
  f.step();
  f.promoted("a", 10).at(20).step();
  WavePlan p = f.rolledBack("a", 30).at(40).plan();
  EXPECT_EQ(p.phase, kRolloutSucceeded);
  EXPECT_FALSE(p.abort);
  EXPECT_EQ(stateOf(p, "a"), kClusterRolledBack) << "still shown";
  EXPECT_EQ(p.status.at("message"),
            "every wave is done: the open permit lets every cluster promote it (1 failed, past "
            "maxFailures 0 after the open permit: listed, deciding nothing)");
}

TEST(WavePlan, AnAbortInTheRegistryHoldsEverything) {
  Fleet f({{"first", {"a"}}}, json::object());
  WavePlan p = f.abortInRegistry().plan();
  EXPECT_TRUE(p.permits.empty());
  EXPECT_FALSE(p.abort);
  EXPECT_EQ(p.phase, kRolloutAborted);
  EXPECT_EQ(wavePhase(p, 0), kWaveFailed);
}

TEST(WavePlan, AnEmptyWaveIsDoneAtOnce) {
  Fleet f({{"gpu", {}}, {"rest", {"a"}}}, json::object());
  ASSERT_TRUE(f.input().waves[0].clusters.empty());
  WavePlan p = f.plan();
  EXPECT_EQ(permitted(p), Names{"a"});
  EXPECT_EQ(p.permits.at(0).waveIndex, 1);
  EXPECT_EQ(wavePhase(p, 0), kWaveSucceeded);
  EXPECT_EQ(p.status.at("waves").at(0).at("message"), "no cluster matched: done at once");
  // After the current wave it waits its turn, and is then done at once too.
  Fleet g({{"first", {"a"}}, {"gpu", {}}, {"rest", {"b"}}}, json::object());
  p = g.step();
  EXPECT_EQ(wavePhase(p, 1), kWavePending);
  EXPECT_EQ(p.status.at("waves").at(1).at("message"),
            "no cluster matched: done at once when reached");
  p = g.promoted("a", 10).at(20).plan();
  EXPECT_EQ(permitted(p), Names{"b"});
  EXPECT_EQ(p.permits.at(0).waveIndex, 2);
  EXPECT_EQ(wavePhase(p, 1), kWaveSucceeded);
}

TEST(WavePlan, ClustersInNoWaveAreListedAndDecideNothing) {
  Fleet f({{"first", {"a"}}}, json::object());
  f.step();
  f.rolledBack("stray", 10).promoted("a", 20).permitted({"old"}, -100);
  WavePlan p = f.at(30).plan();
  EXPECT_FALSE(p.abort) << "stray's failure is not the rollout's";
  EXPECT_EQ(p.status.at("failures"), 0);
  EXPECT_TRUE(p.permits.at(0).allClusters);
  json stray = clusterOf(p, "stray");
  EXPECT_FALSE(stray.contains("wave"));
  EXPECT_EQ(stray.at("state"), kClusterRolledBack);
  EXPECT_EQ(stray.at("reason"), "in no wave of this rollout: listed, not counted; AnalysisFailed");
  EXPECT_EQ(stateOf(p, "old"), kClusterPermitted);
  // Wave clusters first, in wave order; then the others by name.
  const json& clusters = p.status.at("clusters");
  ASSERT_EQ(clusters.size(), 3U);
  EXPECT_EQ(clusters[0].at("name"), "a");
  EXPECT_EQ(clusters[1].at("name"), "old");
  EXPECT_EQ(clusters[2].at("name"), "stray");
}

TEST(WavePlan, StatementsAboutAnotherPackageAreIgnored) {
  Fleet f({{"first", {"a"}}}, json::object());
  f.step();
  f.rolledBack("a", 10);
  f.input().records.back().package.digest = "sha256:" + std::string(64, 'b');
  WavePlan p = f.at(20).plan();
  EXPECT_FALSE(p.abort);
  EXPECT_EQ(stateOf(p, "a"), kClusterPermitted);
  // Nor does another package's permit permit a cluster.
  Fleet g({{"first", {"a"}}}, json::object());
  g.permitted({"a"}, 0);
  g.input().permits.back().package.digest = "sha256:" + std::string(64, 'b');
  EXPECT_EQ(permitted(g.plan()), Names{"a"});
}

TEST(WavePlan, AClusterThatPromotedWithoutAPermitIsNotPermittedAgain) {
  Fleet f({{"first", {"a", "b"}}}, json::object());
  f.promoted("a", -50);
  WavePlan p = f.plan();
  EXPECT_EQ(permitted(p), Names{"b"});
  EXPECT_EQ(stateOf(p, "a"), kClusterSoaked);
}

TEST(WavePlan, AnyPermitForThePackageCountsWhoeverWroteIt) {
  // A permit left by an earlier ModelRollout object for the same package: the
  // cluster honours it, so the hub does not permit it twice.
  Fleet f({{"first", {"a", "b"}}}, {{"maxConcurrency", 1}});
  f.permitted({"a"}, -10);
  f.input().permits.back().rolloutUid = "an-older-rollout";
  WavePlan p = f.plan();
  EXPECT_TRUE(p.permits.empty()) << "a is in flight: capacity 1 is used";
  EXPECT_EQ(stateOf(p, "a"), kClusterPermitted);
}

TEST(WavePlan, TheSameInputGivesTheSamePlan) {
  Fleet f({{"first", {"a", "b", "c"}}, {"rest", {"d", "e"}}},
          {{"maxConcurrency", "50%"}, {"minSuccessTime", "5m"}, {"progressDeadline", "20m"}});
  f.step();
  f.promoted("a", 100).rolledBack("b", 120).at(400);
  WavePlan one = f.plan(), two = f.plan();
  EXPECT_EQ(one.status.dump(), two.status.dump());
  EXPECT_EQ(one.permits, two.permits);
  EXPECT_EQ(one.abort.has_value(), two.abort.has_value());
  EXPECT_EQ(one.requeueAfterSeconds, two.requeueAfterSeconds);
  // Reordering the registry's listing changes nothing either.
  std::reverse(f.input().records.begin(), f.input().records.end());
  EXPECT_EQ(f.plan().status.dump(), one.status.dump());
}

// Simulated rollouts. Each seed draws waves (empty ones too), a strategy and
// how each cluster answers its permit: it promotes, rolls back, or stays
// silent (only with a progress deadline: without one a silent cluster holds
// its wave for ever, as it should), after a delay that may pass the deadline,
// and its record reaches the registry later still (a publish delay that may
// straddle the deadline). With `failAfterPromotion` some clusters roll back
// after their Promoted record, during or after the soak.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {  // splitmix64: the same numbers on every platform
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t in(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return in(1, 100) <= percent; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(in(0, static_cast<int64_t>(v.size()) - 1))];
  }

 private:
  uint64_t s_;
};

struct SimStats {
  int runs = 0, passes = 0, succeeded = 0, aborted = 0, timedOut = 0, toleratedFailures = 0,
      batches = 0;
};

// The invariants' own reading of the registry (deliberately not the planner's code).
class Oracle {
 public:
  Oracle(const WavePlanInput& in) : in_(in) {
    for (const WavePermit& p : in.permits) {
      if (p.allClusters) {
        open_ = true;
        continue;
      }
      for (const std::string& c : p.clusters) {
        named_.insert(c);
        auto [it, fresh] = permittedAt_.emplace(c, p.issuedAt);
        if (!fresh) it->second = std::min(it->second, p.issuedAt);
      }
    }
    for (const ProdRecord& r : in.records) records_[r.cluster].push_back(r);
    for (auto& [c, rs] : records_)
      std::sort(rs.begin(), rs.end(), [](const ProdRecord& a, const ProdRecord& b) {
        if (a.since != b.since) return a.since < b.since;
        return a.outcome == evidence::kOutcomePromoted && b.outcome == evidence::kOutcomeRolledBack;
      });
  }
  std::optional<int64_t> deadline(const std::string& c) const {
    auto p = permittedAt_.find(c);
    if (p == permittedAt_.end() || !in_.spec.strategy.progressDeadlineSeconds) return std::nullopt;
    return p->second + *in_.spec.strategy.progressDeadlineSeconds;
  }
  const std::vector<ProdRecord>& records(const std::string& c) const {
    static const std::vector<ProdRecord> kNone;
    auto it = records_.find(c);
    return it == records_.end() ? kNone : it->second;
  }
  bool timedOut(const std::string& c) const {
    auto d = deadline(c);
    if (!d) return false;
    const auto& rs = records(c);
    return rs.empty() ? in_.nowUnix >= *d : rs.front().since > *d;
  }
  bool failed(const std::string& c) const {
    const auto& rs = records(c);
    return timedOut(c) || (!rs.empty() && rs.back().outcome == evidence::kOutcomeRolledBack);
  }
  bool soaked(const std::string& c) const {
    const auto& rs = records(c);
    if (failed(c) || rs.empty()) return false;
    int64_t since = rs.back().since;
    for (auto it = rs.rbegin(); it != rs.rend() && it->outcome == evidence::kOutcomePromoted; ++it)
      since = it->since;
    return in_.nowUnix - since >= in_.spec.strategy.minSuccessTimeSeconds;
  }
  bool done(const std::string& c) const { return failed(c) || soaked(c); }
  bool inFlight(const std::string& c) const {
    return permittedAt_.count(c) != 0 && records(c).empty() && !timedOut(c);
  }
  bool named(const std::string& c) const { return named_.count(c) != 0; }
  bool open() const { return open_; }
  int64_t failures() const {
    int64_t n = 0;
    for (const auto& w : in_.waves)
      for (const std::string& c : w.clusters) n += failed(c) ? 1 : 0;
    return n;
  }
  int64_t total() const {
    int64_t n = 0;
    for (const auto& w : in_.waves) n += static_cast<int64_t>(w.clusters.size());
    return n;
  }

 private:
  const WavePlanInput& in_;
  bool open_ = false;
  std::set<std::string> named_;
  std::map<std::string, int64_t> permittedAt_;
  std::map<std::string, std::vector<ProdRecord>> records_;
};

void checkInvariants(const WavePlanInput& in, const WavePlan& p, const std::string& previousPhase,
                     bool failAfterPromotion, const std::string& where) {
  SCOPED_TRACE(where);
  const Oracle o(in);
  const auto& strategy = in.spec.strategy;
  const int64_t maxFailures = v1::maxFailuresFor(strategy, o.total());
  int64_t maxCap = 1;
  for (const auto& w : in.waves)
    maxCap =
        std::max(maxCap, v1::maxConcurrencyFor(strategy, static_cast<int64_t>(w.clusters.size())));

  // 5. At most one permit, never both a permit and an abort; an abort only once.
  ASSERT_LE(p.permits.size(), 1U);
  ASSERT_FALSE(!p.permits.empty() && p.abort.has_value());
  if (in.abortInRegistry) {
    ASSERT_FALSE(p.abort.has_value());
  }
  if (p.abort) {
    ASSERT_GT(o.failures(), maxFailures) << "an abort needs failures past maxFailures";
  }
  // 3. No permit past maxFailures, nor once an abort is planned or in the registry.
  if (in.abortInRegistry || p.abort || o.failures() > maxFailures) {
    ASSERT_TRUE(p.permits.empty()) << p.status.dump();
  }
  // 6. Failures bounded by what was in flight when the limit was passed.
  if (!failAfterPromotion) {
    ASSERT_LE(o.failures(), maxFailures + maxCap) << p.status.dump();
  }
  // 7. Terminal phases stay.
  if (previousPhase == kRolloutSucceeded || previousPhase == kRolloutAborted) {
    ASSERT_EQ(p.phase, previousPhase);
  }
  if (p.permits.empty()) return;

  const WavePermit& permit = p.permits[0];
  if (permit.allClusters) {
    // 4. The open permit once; only when every wave is done within maxFailures.
    ASSERT_FALSE(o.open());
    for (const auto& w : in.waves)
      for (const std::string& c : w.clusters) ASSERT_TRUE(o.done(c)) << c;
    return;
  }
  const auto k = static_cast<size_t>(permit.waveIndex);
  ASSERT_LT(k, in.waves.size());
  const auto& wave = in.waves[k].clusters;
  std::set<std::string> batch;
  for (const std::string& c : permit.clusters) {
    // 4. Never a cluster a permit already names; named once in this one.
    ASSERT_FALSE(o.named(c)) << c << " permitted twice";
    ASSERT_TRUE(batch.insert(c).second) << c;
    ASSERT_NE(std::find(wave.begin(), wave.end(), c), wave.end()) << c << " not in wave " << k;
  }
  // 1. Waves in order: every cluster of the waves before is Soaked or failed.
  for (size_t w = 0; w < k; ++w)
    for (const std::string& c : in.waves[w].clusters) ASSERT_TRUE(o.done(c)) << c;
  // 2. Within maxConcurrency, the new permit included.
  int64_t inFlight = 0;
  for (const std::string& c : wave) inFlight += o.inFlight(c) ? 1 : 0;
  ASSERT_LE(inFlight + static_cast<int64_t>(batch.size()),
            v1::maxConcurrencyFor(strategy, static_cast<int64_t>(wave.size())));
}

void simulate(uint64_t seed, bool failAfterPromotion, SimStats* stats) {
  Rng rng(seed);
  Waves waves;
  const int64_t waveCount = rng.in(1, 4);
  for (int64_t w = 0; w < waveCount; ++w) {
    std::vector<std::string> clusters;
    const int64_t size = rng.in(0, 5);
    for (int64_t c = 0; c < size; ++c)
      clusters.push_back("w" + std::to_string(w) + "-" + std::to_string(c));
    waves.emplace_back("wave" + std::to_string(w), clusters);
  }
  json strategy = json::object();
  const json none;
  if (json v = rng.pick(std::vector<json>{none, 1, 2, "50%"}); !v.is_null())
    strategy["maxConcurrency"] = v;
  if (json v = rng.pick(std::vector<json>{none, 1, 2, "25%"}); !v.is_null())
    strategy["maxFailures"] = v;
  if (json v = rng.pick(std::vector<json>{none, "5m", "20m"}); !v.is_null())
    strategy["minSuccessTime"] = v;
  if (json v = rng.pick(std::vector<json>{none, "15m", "1h"}); !v.is_null())
    strategy["progressDeadline"] = v;
  const bool deadline = strategy.contains("progressDeadline");
  const std::string where = "seed " + std::to_string(seed) + " strategy " + strategy.dump();

  Fleet fleet(waves, strategy);
  struct InTransit {
    int64_t visibleAt;
    ProdRecord record;
  };
  std::vector<InTransit> transit;
  auto answer = [&](const std::string& cluster, int64_t permitAt) {
    const int64_t roll = rng.in(1, 100);
    if (roll > 85 && deadline) return;  // silent
    ProdRecord r;
    r.package = fleet.input().spec.packageRef;
    r.cluster = cluster;
    r.since = permitAt + rng.in(30, 1500);
    r.outcome = roll <= 70 || roll > 85 ? evidence::kOutcomePromoted : evidence::kOutcomeRolledBack;
    transit.push_back({r.since + rng.in(0, 400), r});
    if (failAfterPromotion && r.outcome == evidence::kOutcomePromoted && rng.chance(20)) {
      r.outcome = evidence::kOutcomeRolledBack;
      r.since += rng.in(60, 2000);
      transit.push_back({r.since + rng.in(0, 400), r});
    }
  };

  ++stats->runs;
  std::string phase;
  bool sawTimeout = false;
  for (int pass = 0;; ++pass) {
    ASSERT_LT(pass, 2000) << where << ": the rollout never ends";
    WavePlanInput& in = fleet.input();
    // Records reach the registry once their publish delay passed.
    for (auto it = transit.begin(); it != transit.end();) {
      if (it->visibleAt <= in.nowUnix) {
        in.records.push_back(it->record);
        it = transit.erase(it);
      } else {
        ++it;
      }
    }
    const WavePlan p = fleet.plan();
    ++stats->passes;
    const WavePlan again = fleet.plan();
    ASSERT_EQ(p.status.dump(), again.status.dump()) << where;
    ASSERT_EQ(p.permits, again.permits) << where;
    checkInvariants(
        in, p, phase, failAfterPromotion,
        where + " pass " + std::to_string(pass) + " at +" + std::to_string(in.nowUnix - kT0));
    if (testing::Test::HasFatalFailure()) return;
    for (const json& c : p.status.at("clusters"))
      sawTimeout = sawTimeout || c.at("state") == kClusterTimedOut;
    phase = p.phase;

    // The shell writes what the plan says; the permitted clusters answer.
    for (const WavePermit& w : p.permits) {
      in.permits.push_back(w);
      stats->batches += w.allClusters ? 0 : 1;
      for (const std::string& c : w.clusters) answer(c, in.nowUnix);
    }
    if (p.abort) in.abortInRegistry = true;
    if (!p.permits.empty() || p.abort) continue;  // the shell plans again after a write

    std::optional<int64_t> next;
    for (const InTransit& t : transit) next = std::min(next.value_or(t.visibleAt), t.visibleAt);
    if (p.requeueAfterSeconds > 0)
      next = std::min(next.value_or(in.nowUnix + p.requeueAfterSeconds),
                      in.nowUnix + p.requeueAfterSeconds);
    if (!next) break;
    ASSERT_GT(*next, in.nowUnix) << where;
    in.nowUnix = *next;
  }
  // Nothing left to happen: the rollout has ended one way or the other.
  ASSERT_TRUE(phase == kRolloutSucceeded || phase == kRolloutAborted)
      << where << " ended " << phase;
  if (phase == kRolloutSucceeded) {
    ++stats->succeeded;
    const WavePlan last = fleet.plan();
    if (last.status.at("failures") > 0) ++stats->toleratedFailures;
  } else {
    ++stats->aborted;
  }
  stats->timedOut += sawTimeout ? 1 : 0;
}

TEST(WavePlanSimulation, InvariantsHoldOnEveryPass) {
  SimStats stats;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    simulate(seed, /*failAfterPromotion=*/false, &stats);
    if (HasFatalFailure()) return;
  }
  // The runs reach every ending, or the invariants were checked on nothing much.
  EXPECT_GT(stats.succeeded, 30);
  EXPECT_GT(stats.aborted, 30);
  EXPECT_GT(stats.toleratedFailures, 5);
  EXPECT_GT(stats.timedOut, 10);
  EXPECT_GT(stats.batches, 600);
  std::printf(
      "%d runs, %d passes, %d succeeded (%d with failures within maxFailures), %d aborted, "
      "%d with a timeout, %d batches\n",
      stats.runs, stats.passes, stats.succeeded, stats.toleratedFailures, stats.aborted,
      stats.timedOut, stats.batches);
}

TEST(WavePlanSimulation, InvariantsHoldWhenClustersRollBackAfterPromoting) {
  SimStats stats;
  for (uint64_t seed = 1001; seed <= 1300; ++seed) {
    simulate(seed, /*failAfterPromotion=*/true, &stats);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(stats.succeeded, 20);
  EXPECT_GT(stats.aborted, 30);
  std::printf("%d runs, %d passes, %d succeeded, %d aborted\n", stats.runs, stats.passes,
              stats.succeeded, stats.aborted);
}

}  // namespace
}  // namespace lockstep::controllers
