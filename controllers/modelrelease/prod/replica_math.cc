#include "controllers/modelrelease/prod/replica_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lockstep::controllers {
namespace {

constexpr int kMaxWeight = 100;

bool floorCeilingTied(int weight, int total) {
  double whole;
  double frac = std::modf(static_cast<double>(total) * weight / kMaxWeight, &whole);
  return frac == 0.5;
}

double weightDelta(int weight, int canary, int total) {
  return std::fabs(static_cast<double>(canary) * kMaxWeight / total - weight);
}

}  // namespace

ReplicaCounts targetReplicaCounts(int total, int weight, CapacityMode mode) {
  if (total <= 0) return {0, 0};
  int maxSurge = mode == CapacityMode::kSurge ? 1 : 0;
  int ceilCount = static_cast<int>(std::ceil(static_cast<double>(total) * weight / kMaxWeight));
  int floorCount = static_cast<int>(std::floor(static_cast<double>(total) * weight / kMaxWeight));
  bool tied = floorCeilingTied(weight, total);
  bool zeroAllowed = weight == kMaxWeight || weight == 0 || (total == 1 && maxSurge == 0);
  struct Option {
    int canary, total;
  };
  std::vector<Option> options;
  if (ceilCount < total || zeroAllowed) options.push_back({ceilCount, total});
  if (!tied && (floorCount != 0 || zeroAllowed)) options.push_back({floorCount, total});
  if (maxSurge > 0) {
    options.push_back({ceilCount, total + 1});
    if (!floorCeilingTied(weight, total + 1) && (floorCount != 0 || zeroAllowed))
      options.push_back({floorCount, total + 1});
  }
  if (options.empty()) return {0, total};
  Option best = options[0];
  double bestDelta = weightDelta(weight, best.canary, best.total);
  for (size_t i = 1; i < options.size(); ++i) {
    double d = weightDelta(weight, options[i].canary, options[i].total);
    if (d < bestDelta) {  // strictly closer: the first (larger canary) wins a tie
      best = options[i];
      bestDelta = d;
    }
  }
  return {best.canary, best.total - best.canary};
}

ReplicaCounts nextReplicaCounts(int total, ReplicaCounts target, TrackObserved canary,
                                TrackObserved stable, CapacityMode mode) {
  int maxSurge = mode == CapacityMode::kSurge ? 1 : 0;
  int maxUnavailable = mode == CapacityMode::kSurge ? 0 : 1;
  int maxAllowed = total + maxSurge;
  int minAvailable = total - maxUnavailable;
  ReplicaCounts next{canary.specReplicas, stable.specReplicas};

  // Scale up within the surge budget, stable first (it serves while the canary warms up).
  int up = maxAllowed - (canary.specReplicas + stable.specReplicas);
  if (next.stable < target.stable && up > 0) {
    int add = std::min(up, target.stable - next.stable);
    next.stable += add;
    up -= add;
  }
  if (next.canary < target.canary && up > 0)
    next.canary += std::min(up, target.canary - next.canary);

  // Scale down only what keeps minAvailable Ready pods. When the canary grows,
  // the stable's pods are counted by spec and the canary's by readiness (and the
  // other way round when it shrinks), as in Argo's GetReplicasForScaleDown.
  bool increasing = target.canary >= canary.specReplicas;
  auto forScaleDown = [](TrackObserved t, bool ignoreAvailability) {
    if (t.specReplicas < t.readyReplicas || ignoreAvailability) return t.specReplicas;
    return t.readyReplicas;
  };
  int countable = forScaleDown(canary, !increasing) + forScaleDown(stable, increasing);
  if (countable <= minAvailable) return next;
  int scaleDown = countable - minAvailable;
  if (increasing) {
    if (stable.specReplicas > target.stable)
      next.stable = std::max(target.stable, stable.specReplicas - scaleDown);
  } else if (canary.specReplicas > target.canary) {
    next.canary = std::max(target.canary, canary.specReplicas - scaleDown);
  }
  return next;
}
}  // namespace lockstep::controllers
