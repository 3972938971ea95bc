#include "controllers/modelrelease/prod/rollback_capacity.h"

namespace lockstep::controllers {

RestoreStep restoreStableStep(int total, CapacityMode mode, const TrackObserved& canary,
                              const TrackObserved& stable, const RestoreObserved& o) {
  RestoreStep out;
  if (mode == CapacityMode::kDrain) {
    bool restored = stable.specReplicas == total && stable.readyReplicas >= total;
    out.replicas = {restored ? 0 : canary.specReplicas, total};
  } else {
    out.replicas = nextReplicaCounts(total, {0, total}, canary, stable, CapacityMode::kSurge);
  }
  if (o.stablePendingUnschedulable > 0 && o.podsTerminating == 0 && canary.specReplicas > 0 &&
      o.stableSpecReplicas >= out.replicas.stable && out.replicas.canary == canary.specReplicas) {
    // The scheduler found no room for a stable pod (the cluster is full:
    // the GPUs stable gave up are the canary's now). Waiting would leave a
    // failed canary serving; trade one canary pod for one stable pod, the
    // drain rule run backwards (N-1 pods serve while the trade happens).
    // The next trade waits until no pod of the model is terminating.
    out.replicas.canary = canary.specReplicas - 1;
    out.waits =
        std::to_string(o.stablePendingUnschedulable) +
        " stable pod(s) unschedulable: removing one canary pod so stable can take its GPU (" +
        std::to_string(stable.readyReplicas) + "/" + std::to_string(total) + " stable Ready)";
    return out;
  }
  out.waits = "waiting for " + std::to_string(total) + " Ready stable pods (" +
              std::to_string(stable.readyReplicas) + " now) before removing the canary";
  return out;
}

}  // namespace lockstep::controllers
