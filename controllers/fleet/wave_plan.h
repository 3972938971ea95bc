// The wave decision of a ModelRollout on the hub (pure; docs/fleet.md "Waves
// and strategy"): from the rollout's spec with its waves resolved to cluster
// names, the wave permits, prod records and fleet aborts the registry holds
// for the package, and the time, to the one permit or abort to write now, the
// rollout's status and when to look again. The registry is the only state:
// every pass re-derives everything from it, so a hub restarted (or stopped
// for a day) resumes exactly where the registry says the fleet is.
//
// Semantics:
//  - A cluster's state comes from the permits naming it and its prod records:
//      Pending     no permit names it and it published no record;
//      Permitted   a permit names it (the earliest permit's issuedAt counts),
//                  no record yet: it is in flight;
//      Promoted    its latest record is Promoted; it has served since the first
//                  Promoted record after its last RolledBack one;
//      Soaked      Promoted, and nowUnix - since >= minSuccessTime. The soak is
//                  measured from the record's `since`, the cluster's own time
//                  in the registry, never from when the hub saw it;
//      RolledBack  its latest record is RolledBack (a RolledBack after a
//                  Promoted is a failure; a Promoted after a RolledBack — the
//                  package promoted again — counts as Promoted);
//      TimedOut    permitted with a progressDeadline, and no record by
//                  issuedAt + progressDeadline: its first record is dated after
//                  the deadline, or nowUnix reached the deadline with none. A
//                  record dated after the deadline is still shown, but the
//                  failure stands. (A record dated before the deadline that
//                  reaches the registry after the hub saw the deadline pass
//                  withdraws the timeout on the next pass — unless the abort it
//                  caused is already written: the registry is append-only.)
//    Records ties (same `since`) order a RolledBack after a Promoted. A
//    cluster that published a record without a permit is judged by its record.
//    Records and permits of clusters in no wave decide nothing; they are listed.
//  - Failures (RolledBack, TimedOut) are counted over the whole rollout's
//    clusters. More than maxFailures: the fleet abort is planned (once: until
//    the registry holds it), the phase is Aborted, and no permit is ever
//    planned again. With maxFailures 1 over a wave of two, one failure lets
//    the wave finish (the next wave then starts) and two abort.
//  - Waves run in order. A wave is done when each of its clusters is Soaked
//    or failed; an empty wave (a selector that matched nothing) is done at
//    once. The current wave is the first not done. Its Pending clusters are
//    permitted in wave order, in batches: one permit per pass naming at most
//    maxConcurrency - (clusters in flight) of them. A cluster leaves flight
//    with its first record (or its timeout), so its soak gates only the next
//    wave, never the next batch.
//  - Every wave done and failures within maxFailures: the final open permit
//    (allClusters, wave "*") is planned once, and the phase is Succeeded. Once
//    any open permit for the package is in the registry the rollout has
//    succeeded for good: no permit, abort or timeout follows; later records
//    (a cluster added since promotes by the open permit) are only listed.
//  - An abort for the package in the registry: Aborted, whatever the records.
//  - Permits and records are those of the package (by digest; others are
//    ignored) from any ModelRollout object: a serving cluster honours every
//    permit for the package, so the hub counts every one too.
//  - Deterministic: the same input gives the same plan; permit and abort
//    contents come from the input, issuedAt is nowUnix.
//
// Invariants (tests/controllers/fleet/wave_plan_test.cc checks each on every
// pass of simulated rollouts):
//  1. no cluster of wave k+1 is permitted before every cluster of waves <= k is
//     Soaked or failed;
//  2. at most maxConcurrency clusters of a wave are in flight (Permitted, no
//     record, not timed out), the new permit included;
//  3. no permit is planned once failures exceed maxFailures, nor after an
//     abort is planned or in the registry;
//  4. no permit names a cluster that a permit already names, and the open
//     permit is planned at most once;
//  5. at most one permit, and never both a permit and an abort, per pass;
//  6. when clusters fail only before their Promoted record, failures never
//     exceed maxFailures + maxConcurrency (those in flight when the limit was
//     passed);
//  7. the phase, once Succeeded or Aborted, stays so.
//
// The shell must feed back what it wrote: a permit it signed and pushed is
// among the next pass's `permits` (or it plans the same batch again).
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_rollout.h"
#include "evidence/fleet_statement.h"

namespace lockstep::controllers {

// status.phase of a ModelRollout (the shell adds WaitingForRegistry itself).
inline constexpr char kRolloutProgressing[] = "Progressing";
inline constexpr char kRolloutSoaking[] = "Soaking";
inline constexpr char kRolloutSucceeded[] = "Succeeded";
inline constexpr char kRolloutAborted[] = "Aborted";

// status.waves[].phase.
inline constexpr char kWavePending[] = "Pending";
inline constexpr char kWaveProgressing[] = "Progressing";
inline constexpr char kWaveSoaking[] = "Soaking";
inline constexpr char kWaveSucceeded[] = "Succeeded";
inline constexpr char kWaveFailed[] = "Failed";

// status.clusters[].state.
inline constexpr char kClusterPending[] = "Pending";
inline constexpr char kClusterPermitted[] = "Permitted";
inline constexpr char kClusterPromoted[] = "Promoted";
inline constexpr char kClusterSoaked[] = "Soaked";
inline constexpr char kClusterRolledBack[] = "RolledBack";
inline constexpr char kClusterTimedOut[] = "TimedOut";

struct WavePlanInput {
  api::v1alpha1::ObjectMeta rollout;  // namespace, name and uid of the ModelRollout
  api::v1alpha1::ModelRolloutSpec spec;
  std::vector<api::v1alpha1::ResolvedWave> waves;  // resolveWaves(spec, inventory)
  std::vector<evidence::WavePermit> permits;       // verified, from the registry
  std::vector<evidence::ProdRecord> records;       // verified, from the registry
  bool abortInRegistry = false;                    // a fleet abort for the package
  int64_t nowUnix = 0;
};

struct WavePlan {
  std::vector<evidence::WavePermit> permits;  // to sign and push now: none or one
  std::optional<evidence::FleetAbort> abort;  // to sign and push now
  std::string phase;                          // status.phase
  nlohmann::json status;  // phase, currentWave, waves[], clusters[], failures, maxFailures, message
  // The next instant the plan changes by time alone (a soak's end, a progress
  // deadline), from now; 0 when none (records still arrive: the shell polls the
  // registry on its own interval).
  int64_t requeueAfterSeconds = 0;
};

WavePlan planWaves(const WavePlanInput& in);

}  // namespace lockstep::controllers
