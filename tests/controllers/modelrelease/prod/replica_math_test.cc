// Table tests of the canary replica math (controllers/modelrelease/prod/replica_math.h,
// Argo Rollouts' vectors) and of the Ready pods a track counts (canary_observe.h).
#include "controllers/modelrelease/prod/replica_math.h"

#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/serving_objects.h"

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;

// Argo Rollouts' own vectors (utils/replicaset/canary_test.go,
// TestApproximateWeightedNewStableReplicaCounts): {replicas, weight, maxSurge, canary, stable}.
TEST(CanaryReplicas, TargetCountsMatchArgoRollouts) {
  struct Row {
    int replicas, weight, maxSurge, canary, stable;
  };
  const Row rows[] = {
      {1, 0, 0, 0, 1},     {1, 1, 0, 0, 1},   {1, 49, 0, 0, 1},  {1, 50, 0, 1, 0},
      {1, 99, 0, 1, 0},    {1, 100, 0, 1, 0}, {1, 0, 1, 0, 1},   {1, 1, 1, 1, 1},
      {1, 49, 1, 1, 1},    {1, 50, 1, 1, 1},  {1, 99, 1, 1, 1},  {1, 100, 1, 1, 0},
      {2, 0, 0, 0, 2},     {2, 1, 0, 1, 1},   {2, 50, 0, 1, 1},  {2, 99, 0, 1, 1},
      {2, 100, 0, 2, 0},   {2, 0, 1, 0, 2},   {2, 1, 1, 1, 2},   {2, 50, 1, 1, 1},
      {2, 99, 1, 2, 1},    {2, 100, 1, 2, 0}, {3, 10, 0, 1, 2},  {3, 25, 0, 1, 2},
      {3, 33, 0, 1, 2},    {3, 34, 0, 1, 2},  {3, 49, 0, 1, 2},  {3, 50, 0, 2, 1},
      {3, 10, 1, 1, 3},    {3, 25, 1, 1, 3},  {3, 33, 1, 1, 2},  {3, 34, 1, 1, 2},
      {3, 49, 1, 2, 2},    {3, 50, 1, 2, 2},  {10, 0, 1, 0, 10}, {10, 1, 0, 1, 9},
      {10, 14, 0, 1, 9},   {10, 15, 0, 2, 8}, {10, 16, 0, 2, 8}, {10, 99, 0, 9, 1},
      {10, 1, 1, 1, 10},   {10, 18, 1, 2, 9}, {10, 19, 1, 2, 9}, {10, 20, 1, 2, 8},
      {10, 23, 1, 2, 8},   {10, 24, 1, 3, 8}, {10, 25, 1, 3, 8}, {10, 99, 1, 10, 1},
      {10, 100, 1, 10, 0},
  };
  for (const Row& r : rows) {
    auto got = targetReplicaCounts(r.replicas, r.weight,
                                   r.maxSurge ? CapacityMode::kSurge : CapacityMode::kDrain);
    EXPECT_EQ(got.canary, r.canary)
        << r.replicas << " replicas at " << r.weight << "% surge " << r.maxSurge;
    EXPECT_EQ(got.stable, r.stable)
        << r.replicas << " replicas at " << r.weight << "% surge " << r.maxSurge;
  }
}

// Drives nextReplicaCounts with pods that become Ready one tick after they are
// requested; returns the spec counts seen, checking the surge/unavailable bounds.
// With `slow`, pods become Ready only every other tick (a slow warm-up).
std::vector<ReplicaCounts> progression(int total, ReplicaCounts from, ReplicaCounts target,
                                       CapacityMode mode, bool slow = false) {
  std::vector<ReplicaCounts> seen;
  TrackObserved canary{from.canary, from.canary}, stable{from.stable, from.stable};
  for (int tick = 0; tick < 100; ++tick) {
    ReplicaCounts next = nextReplicaCounts(total, target, canary, stable, mode);
    EXPECT_LE(next.canary + next.stable, total + (mode == CapacityMode::kSurge ? 1 : 0));
    // Pods removed are gone at once; pods added become Ready next tick.
    int readyNow =
        std::min(canary.readyReplicas, next.canary) + std::min(stable.readyReplicas, next.stable);
    EXPECT_GE(readyNow, total - (mode == CapacityMode::kSurge ? 0 : 1))
        << "tick " << tick << ": availability broken";
    if (seen.empty() || !(seen.back() == next)) seen.push_back(next);
    canary = {next.canary, std::min(canary.readyReplicas, next.canary)};
    stable = {next.stable, std::min(stable.readyReplicas, next.stable)};
    if (next == ReplicaCounts{canary.specReplicas, stable.specReplicas} &&
        canary.readyReplicas == next.canary && stable.readyReplicas == next.stable &&
        next == target)
      break;
    if (slow && tick % 2 == 0) continue;
    canary.readyReplicas = canary.specReplicas;  // Ready by the next tick
    stable.readyReplicas = stable.specReplicas;
  }
  return seen;
}

TEST(CanaryReplicas, SurgeAddsOneCanaryThenRemovesOneStable) {
  auto seen = progression(4, {0, 4}, {2, 2}, CapacityMode::kSurge);
  std::vector<ReplicaCounts> want = {{1, 4}, {1, 3}, {2, 3}, {2, 2}};
  ASSERT_EQ(seen.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(seen[i].canary, want[i].canary) << i;
    EXPECT_EQ(seen[i].stable, want[i].stable) << i;
  }
}

TEST(CanaryReplicas, DrainRemovesOneStableThenAddsOneCanary) {
  auto seen = progression(4, {0, 4}, {2, 2}, CapacityMode::kDrain);
  std::vector<ReplicaCounts> want = {{0, 3}, {1, 3}, {1, 2}, {2, 2}};
  ASSERT_EQ(seen.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(seen[i].canary, want[i].canary) << i;
    EXPECT_EQ(seen[i].stable, want[i].stable) << i;
  }
}

TEST(CanaryReplicas, BoundsHoldForEveryWeightAndBothDirections) {
  for (CapacityMode mode : {CapacityMode::kSurge, CapacityMode::kDrain}) {
    for (int total : {1, 2, 3, 5, 10}) {
      for (int w : {0, 10, 33, 50, 90, 100}) {
        SCOPED_TRACE(std::to_string(total) + " at " + std::to_string(w));
        ReplicaCounts target = targetReplicaCounts(total, w, mode);
        for (bool slow : {false, true}) {
          auto up = progression(total, {0, total}, target, mode, slow);
          ASSERT_FALSE(up.empty());
          EXPECT_TRUE(up.back() == target);
          auto back = progression(total, target, {0, total}, mode, slow);  // abort from there
          EXPECT_TRUE(back.back() == (ReplicaCounts{0, total}));
        }
      }
    }
  }
}

TEST(CanaryReplicas, NotReadyCanaryHoldsTheStable) {
  // A canary pod requested but not Ready: the stable keeps all its pods.
  auto next = nextReplicaCounts(4, {2, 2}, {1, 0}, {4, 4}, CapacityMode::kSurge);
  EXPECT_EQ(next.canary, 1);
  EXPECT_EQ(next.stable, 4);
}

json pod(const std::string& name, const std::string& track, const std::string& release,
         const std::string& node, bool ready, bool deleting = false) {
  json p = {
      {"metadata",
       {{"name", name},
        {"labels", {{"lockstep.dev/track", track}, {"lockstep.dev/release", release}}}}},
      {"spec", {{"nodeName", node}}},
      {"status",
       {{"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  if (deleting) p["metadata"]["deletionTimestamp"] = "2026-11-30T10:00:00Z";
  return p;
}

TEST(CanaryReplicas, WeightCountsOnlyReadyCanaryPodsWhoseGpuIsFree) {
  std::vector<json> pods = {
      pod("c1", "canary", "v2", "gpu-1", true),
      pod("c2", "canary", "v2", "gpu-2", false),  // warming up
      pod("c3", "canary", "v2", "gpu-3", true),   // but the old pod on gpu-3 still terminates
      pod("s1", "stable", "v1", "gpu-3", true, true),
      pod("c4", "canary", "v1", "gpu-4", true),  // another release's canary
      pod("s2", "stable", "v1", "gpu-5", true),
  };
  EXPECT_EQ(countReadyPods(pods, "canary", "v2"), 1);
  EXPECT_EQ(countReadyPods(pods, "stable", "v1"), 1);
}

// Issue 28: one terminating pod on a node hid every Ready pod of that node.
// It hides one, the youngest (its replacement); the others count.
TEST(CanaryReplicas, OneTerminatingPodHidesOneReadyPodOfItsNodeNotAll) {
  auto born = [](json p, const std::string& at) {
    p["metadata"]["creationTimestamp"] = at;
    return p;
  };
  std::vector<json> pods = {
      born(pod("s1", "stable", "v1", "gpu-1", true), "2026-11-30T09:00:00Z"),
      born(pod("s2", "stable", "v1", "gpu-1", true), "2026-11-30T09:00:01Z"),
      born(pod("s3", "stable", "v1", "gpu-1", true), "2026-11-30T09:00:02Z"),
      born(pod("s4", "stable", "v1", "gpu-1", true, true), "2026-11-30T09:00:03Z"),
      born(pod("c1", "canary", "v2", "gpu-1", true), "2026-11-30T10:00:00Z"),  // the youngest
  };
  EXPECT_EQ(countReadyPods(pods, "stable", "v1"), 3);
  EXPECT_EQ(countReadyPods(pods, "canary", "v2"), 0);
  // Two terminating: two hidden, youngest first.
  pods.push_back(born(pod("s5", "stable", "v1", "gpu-1", true, true), "2026-11-30T08:00:00Z"));
  EXPECT_EQ(countReadyPods(pods, "stable", "v1"), 2);
  EXPECT_EQ(countReadyPods(pods, "canary", "v2"), 0);
  // Another node's terminating pod hides nothing here.
  std::vector<json> apart = {pod("s1", "stable", "v1", "gpu-1", true),
                             pod("s2", "stable", "v1", "gpu-1", true),
                             pod("t1", "stable", "v1", "gpu-2", true, true)};
  EXPECT_EQ(countReadyPods(apart, "stable", "v1"), 2);
}

}  // namespace
}  // namespace lockstep::controllers
