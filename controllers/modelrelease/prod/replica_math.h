// The canary's replica math (pure): how many pods each track gets for a
// step's weight, and the next counts on the way there. It reproduces Argo
// Rollouts' basic canary (utils/replicaset/canary.go) with maxSurge 1 (surge)
// or maxUnavailable 1 (drain), and its test vectors. Thread-safety: pure functions.
#pragma once

#include "api/v1alpha1/model_release.h"

namespace lockstep::controllers {

using api::v1alpha1::CapacityMode;

struct ReplicaCounts {
  int canary = 0;
  int stable = 0;
  bool operator==(const ReplicaCounts& o) const { return canary == o.canary && stable == o.stable; }
};

// The target canary/stable counts for `weight` percent of `total`: Argo
// Rollouts' approximateWeightedCanaryStableReplicaCounts with maxSurge 1
// (surge: the sum may be total+1) or 0 (drain: the sum is total). A weight of
// 1..99 with two or more pods gets at least one pod on each track.
ReplicaCounts targetReplicaCounts(int total, int weight, CapacityMode mode);

// What one track has now: Deployment spec.replicas and Ready pods of the

// track's intended release (see countReadyPods).
struct TrackObserved {
  int specReplicas = 0;
  int readyReplicas = 0;
};

// The next spec counts on the way from `current` to `target`, never above
// total+maxSurge pods and never below total-maxUnavailable Ready pods (Argo's
// CalculateReplicaCountsForBasicCanary with no older ReplicaSets).
ReplicaCounts nextReplicaCounts(int total, ReplicaCounts target, TrackObserved canary,
                                TrackObserved stable, CapacityMode mode);

// Ready pods of `release` on `track` among `pods` (JSON core/v1 Pods of the
}  // namespace lockstep::controllers
