// A simulated prod world for the canary planner (controllers/modelrelease/prod/
// canary_plan.h), as unkind as a GPU cluster: the API server (two Deployments,
// the model's Model, the releases' phases and status.canary), the ReplicaSet
// controller, the scheduler (GPUs per node, other workloads' GPUs), the
// kubelet (warm-up before Ready, Terminating pods that keep their GPUs,
// crashing containers) and Prometheus (a pod's series exist only once it was
// scraped twice while Ready), and a clock. The operator observes it through
// the shell's own pure observation (observeCanary, gpuCapacityOf), plans with
// planCanary and writes in the shell's order (prod_plan.cc: the track that
// grows first). A reconcile may "crash" after its writes, before its status.
//
// After every simulated event (a Deployment write, a pod created, scheduled,
// Ready, crashed, deleted or gone, a scrape, a Model or status write) it
// checks the invariants of tests/support/invariant_monitor.h:
//   ready     Ready serving pods >= N (surge) or N-1 (drain), once N were
//             Ready; a pod down after an injected crash counts as serving
//             (an involuntary disruption is not the planner's doing)
//   gpu       on every node, the GPUs of the pods bound to it (Terminating
//             ones included) and of other workloads <= its allocatable
//   triple    every live serving pod runs a validated (package, closure hash)
//   template  the stable Deployment's template changes only without pods
//   promoted  at most one release of the model is Promoted
//   steps     status.canary.step never goes back nor skips one between
//             writes, and passedSteps is 0, 1, 2, ... in order
// A violation is kept with the trail of the events that led to it.
// Thread-safety: none (one test, one world).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controllers/modelrelease/prod/canary_plan.h"

namespace lockstep::controllers::sim {

inline const std::string kHash = "sha256:" + std::string(64, 'a');
inline const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
inline const std::string kOldPackage =
    "registry.example/models/gpt2@sha256:" + std::string(64, 'e');
inline constexpr int64_t kT0 = 1796032800;  // 2026-11-30T10:00:00Z
inline constexpr const char* kRelease = "gpt2-v2";
inline constexpr const char* kKnownGood = "gpt2-v1";

// RFC 3339 UTC of a Unix time.
std::string rfc(int64_t unix);

// A prod stage of 4 replicas with `canary` as its canary block.
nlohmann::json prodStage(nlohmann::json canary);
// A Prometheus analysis (interval 30s, consecutiveErrorLimit 2).
nlohmann::json promAnalysis(int count = 1, int failureLimit = 0);
// The prod stage `stage` through the one decoder (api/v1alpha1/model_release.h):
// nullopt, or the error message naming the field.
std::optional<std::string> decodeCanarySpec(const nlohmann::json& stage, CanarySpec& out);

// How unkind the world is. The defaults are a GPU cluster's: a model loads
// for half a minute, a serving pod drains for half a minute, Prometheus
// scrapes every 15 s, one GPU a pod on two 4-GPU nodes.
struct Knobs {
  int64_t warmup = 30;       // seconds from Running to Ready
  int64_t termination = 30;  // seconds a deleted pod stays Terminating, holding its GPUs
  int64_t scrape = 15;       // Prometheus scrape interval (seconds)
  // > 0: this release's canary pods crash this long after turning Ready (the
  // container restarts: not Ready, warm-up again after a 10 s back-off).
  int64_t crashAfter = 0;
  // This release's Ready canary pods crash (restart, as crashAfter) while no
  // stable pod serves: the model falls over under full load.
  bool crashUnderFullLoad = false;
  // Pods of this release created after the start never turn Ready (its image
  // or runtime cannot be started again).
  std::string neverReady;
  int64_t gpusPerPod = 1;                  // 0: the template asks for no GPU
  std::vector<int64_t> nodeGpus = {4, 4};  // allocatable nvidia.com/gpu per node
  std::vector<int64_t> otherGpus;          // GPUs other workloads hold, per node
};

// The world the planner tests had before: Ready at once, gone at once,
// scraped at once, no GPUs.
Knobs kindWorld();

struct SimPod {
  std::string name, track, release, package, closureHash;
  std::string node;  // "" while Pending
  int64_t createdAt = 0;
  int64_t readyAt = 0;  // when a scheduled pod turns Ready
  std::optional<int64_t> deletedAt;
  int restarts = 0;
  int scrapes = 0;       // scrapes while Ready since the container started
  bool crashed = false;  // down after an injected crash
  bool ready = false;    // as last reported
  bool unschedulable = false;
  bool neverReady = false;
  // Its readiness probe fails (no restart) until this time; -1: for good.
  std::optional<int64_t> probeFailsUntil;
};

struct SimDeployment {
  int replicas = 0;
  std::string release;  // the template's lockstep.dev/release; "" when there is none
  bool exists() const { return !release.empty(); }
};

class World {
 public:
  World(CanarySpec spec, Knobs knobs = {});

  // Start states. Default: prod runs the known-good on N warm stable pods, the
  // release holds the canary slot and has not started.
  // The canary holds all N pods of the release (warm); stable has none and
  // its template is still the known-good's; status.canary as planned then.
  void startAtFullWeight();
  // The canary Deployment still runs `release`'s `pods` warm pods (another
  // release this one displaced), stable N - pods.
  void startDisplacing(const std::string& release, int pods);

  // One reconcile of the release; `crashBeforeStatus`: the operator dies
  // after its writes, before the status write.
  void reconcile(bool crashBeforeStatus = false);
  // The world moves on, second by second.
  void tick(int64_t seconds);
  // A readiness blip: the first Ready live pod of `track` running `release`
  // fails its readiness probe (not Ready, no restart) for `seconds` (-1: for
  // good). Counts as serving for the ready invariant (not the planner's doing).
  // Returns the pod's name ("" when there is none).
  std::string failReadiness(const std::string& track, const std::string& release, int64_t seconds);
  // Reconciles every `every` seconds (a restart, then a second reconcile at
  // the same instant, at reconcile `crashAt`) until Promoted or RolledBack.
  void run(int crashAt = -1, int64_t every = 10, int maxReconciles = 400);

  std::string phase() const;
  std::string reason() const;
  CanaryObserved observe() const;
  // Every violation with its trail ("" when none).
  std::string report() const;
  // A planner defect already reported, which this test meets: violations of
  // `invariant` ("gpu") go to `known` instead (as the monitor's tolerate()).
  void tolerate(const std::string& invariant) { tolerated_.insert(invariant + ":"); }

  // Inputs the tests set.
  double errorRate = 0.001;
  int badFromStep = -1;  // the canary's error rate is 0.5 from this step on
  bool promServes = true;
  std::map<std::string, std::string> annotations;  // of the release (abort, promote)

  // What the tests read.
  CanarySpec spec;
  Knobs knobs;
  nlohmann::json status;  // status.canary as written
  int64_t now = kT0;
  SimDeployment stable, canary;
  std::vector<SimPod> pods;                   // the model's pods
  std::map<std::string, std::string> phases;  // release -> phase (Promoted, Canary, ...)
  std::vector<std::string> violations;
  std::vector<std::string> known;  // tolerated violations, with their trails
  std::vector<CanaryPlan> plans;   // every plan whose status was written
  int measurements = 0;
  int emptyMeasurements = 0;  // measurements that met no scraped canary series
  int maxPods = 0;            // the most pods the Deployments asked for at once
  int maxLivePods = 0;        // the most pods not Terminating at once
  int minStableSpec = 1 << 30;
  std::map<std::string, int> unschedulable;  // pods found unschedulable, by track
  int minServing = 1 << 30;                  // the fewest serving pods at any event
  // Ready stable pods of the known-good (as the shell counts them) when RolledBack was planned.
  int stableReadyAtRolledBack = -1;
  int64_t lastDisplacedWriteAt = 0;    // the last plan that scaled the displaced release
  int64_t firstPlanAfterDrainAt = -1;  // the first plan after that one that did not
  // Plans that drained a displaced release and changed the status while its message
  // (what the drain waits for) stayed the same: a status write per poll for nothing.
  int drainWritesWithoutNews = 0;
  // The shell's in-memory progress clock (CanaryProgress): the last written
  // plan's; lost when the operator is killed (reconcile(true), restart()).
  std::optional<CanaryProgress> progress;
  // Status writes (status.canary, or the release's reason or message, changed),
  // and those that carried no news: only the progress clock (lastProgressAt,
  // podsToTarget) or a message changed, the phase, step, reason, promotion
  // stage, the step's clocks and everything else as written. Checked at every
  // reconcile; the first such write is described in firstWriteWithoutNews.
  int statusWrites = 0;
  int writesWithoutNews = 0;
  std::string firstWriteWithoutNews;
  std::string message;  // the release's message (plan.message) as last written
  // The operator restarts (a new leader): the in-memory clock is gone.
  void restart() { progress.reset(); }
  int ownCanaryPodsAtTakeover = -1;  // the canary's count when its template became the release's
  int displacedLiveAtTakeover = -1;  // the displaced release's pods not yet deleted then

 private:
  void place(const std::string& track, const std::string& release, int n);
  void write(const std::string& track, const std::string& release, int replicas);
  void syncTrack(const std::string& track);
  void deletePod(SimPod& p);
  void step();
  void event(const std::string& what);
  void check();
  void violate(const std::string& what);
  bool serving(const SimPod& p) const;
  Measurement measure(int step) const;
  nlohmann::json podJson(const SimPod& p) const;
  SimDeployment& track(const std::string& name) { return name == "stable" ? stable : canary; }

  std::map<std::string, std::pair<std::string, std::string>> validated_;  // release -> pair
  std::string anchorPromoted_ = kKnownGood, anchorCanary_ = kRelease;
  std::deque<std::string> trail_;
  std::vector<int> stepsSeen_;
  std::set<std::string> holding_, held_,
      tolerated_;  // violations holding at this check, at the last one
  int serial_ = 0;
  bool armed_ = false;
};

}  // namespace lockstep::controllers::sim
