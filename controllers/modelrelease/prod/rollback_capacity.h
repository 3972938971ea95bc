// How a rollback (or a superseding release draining the release it
// displaced) gives the canary's share back to stable without dropping prod
// below capacity (pure, docs/rollouts.md "Rollback"): stable first. Drain:
// stable back in full, then the canary. Surge (Argo Rollouts' abort of a basic
// canary): stable grows first within the surge budget and the canary shrinks
// only as stable pods become Ready, so N pods stay Ready throughout. On a full
// cluster, one canary pod is traded for one stable pod at a time.
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "controllers/modelrelease/prod/replica_math.h"

namespace lockstep::controllers {

// What the scheduler and the kubelet say of the model's pods.
struct RestoreObserved {
  int stablePendingUnschedulable = 0;  // stable pods Pending for lack of a resource
  int podsTerminating = 0;             // the model's pods with a deletionTimestamp
  int stableSpecReplicas = 0;          // the stable Deployment's spec.replicas
};

struct RestoreStep {
  ReplicaCounts replicas;  // the next spec counts
  std::string waits;       // what the step waits for, for the release's message
};

// The next step from `canary` (the canary track's pods) and `stable` (Ready
// pods of the known-good pair only) toward {0, total}.
RestoreStep restoreStableStep(int total, CapacityMode mode, const TrackObserved& canary,
                              const TrackObserved& stable, const RestoreObserved& observed);

}  // namespace lockstep::controllers
