#include "controllers/modelrelease/prod/canary_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/modelrelease/prod/rollback_capacity.h"
#include "controllers/modelrelease/timestamps.h"
#include "evidence/fleet_permit.h"

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): the reasons

// Seconds since the epoch of a status timestamp; 0 when absent or malformed.
int64_t timeOf(const std::optional<std::string>& at) {
  return parseRfc3339(at.value_or("")).value_or(0);
}

// Status phases of status.canary.
constexpr const char* kCanaryProgressing = "Progressing";
constexpr const char* kCanaryPromoting = "Promoting";
constexpr const char* kCanaryPromoted = "Promoted";
constexpr const char* kCanaryRollingBack = "RollingBack";
constexpr const char* kCanaryRolledBack = "RolledBack";
// Promotion first moves all traffic to the canary, then hands the stable
// Deployment the new template while it has no pods (no second rolling update).
constexpr const char* kPromotionFullWeight = "FullWeight";
constexpr const char* kPromotionHandover = "Handover";
// Recent measurements kept in status for humans (the counters decide).
constexpr size_t kKeptMeasurements = 10;
// How often to look again while pods move (watches usually come first).
constexpr int64_t kPodPollSeconds = 5;

// Appends a measurement to the analysis' recent ones, keeping the last kKeptMeasurements.
void keep(CanaryAnalysisStatus& a, CanaryMeasurement m) {
  std::vector<CanaryMeasurement>& recent =
      a.measurements ? *a.measurements : a.measurements.emplace();
  recent.push_back(std::move(m));
  if (recent.size() > kKeptMeasurements)
    recent.erase(recent.begin(), recent.end() - static_cast<std::ptrdiff_t>(kKeptMeasurements));
}

// A previous status.canary the decoder refused (api/v1alpha1/canary_status.h):
// nothing is planned from it. Both Deployments keep their templates and
// counts, the status stays as written, and the reason names the bad field.
CanaryPlan unreadableStatus(const CanaryObserved& o) {
  CanaryPlan plan;
  plan.action = CanaryAction::kWait;
  plan.reason = kReasonCanaryStatusUnreadable;
  plan.message = "status.canary cannot be read (" + o.previous.error +
                 "): the canary plans nothing from it and prod's Deployments stay as they are "
                 "until it is repaired";
  const bool displaced = !o.displacedRelease.empty();
  plan.replicas = {displaced ? o.displaced.specReplicas : o.canary.specReplicas,
                   o.stable.specReplicas};
  plan.stableRelease = o.stableRelease;
  if (displaced) plan.canaryRelease = o.displacedRelease;
  plan.status = o.previous.refused;
  return plan;
}

// A pod create the API server could not put to an admission webhook (it is
// unreachable, times out, answers garbage: "failed calling webhook …"): no
// verdict on the model. Only a refusal ("… denied the request: …", a policy,
// a quota) is one.
bool webhookUnreachable(const std::string& message) {
  return message.find("failed calling webhook") != std::string::npos;
}

}  // namespace

const char* canaryActionName(CanaryAction a) {
  // In the order of the enum.
  static constexpr const char* kNames[] = {"Progress", "Wait",        "Promoting",
                                           "Promoted", "RollingBack", "RolledBack"};
  return kNames[static_cast<size_t>(a)];
}

namespace {

struct Planner {
  const CanaryObserved& o;
  // The first admission refusal that is a verdict, and the first create that
  // found no webhook to ask ("" when none).
  std::string refused, notCreated;
  CanaryPlan plan;
  CanaryStatus st;  // status.canary being built
  int total = 0;
  bool hasStable = false;
  bool straight = false;   // this pass sends a first release straight to stable (straightToStable)
  bool clockLost = false;  // no record of the progress clock in this stage (loadClock)

  explicit Planner(const CanaryObserved& observed) : o(observed) {}

  std::string knownGoodRelease() const { return st.knownGoodRelease(); }

  void event(const char* type, const std::string& reason, const std::string& message) {
    plan.events.push_back({type, reason, message});
  }

  void startStep(int index) {
    st.step = index;
    st.stepStartedAt = o.now;
    restartProgressClock();
    st.weightReachedAt.reset();
    // Recreated by a step with analysis. Never an empty object: server-side
    // apply of `analysis: {}` over owned fields stores null, which the schema refuses.
    st.analysis.reset();
    const CanaryStep& s = o.spec.steps[index];
    event("Normal", "CanaryStepStarted",
          "step " + std::to_string(index + 1) + "/" + std::to_string(o.spec.steps.size()) +
              ": weight " + std::to_string(s.weight) + "%");
  }

  // Appends the step to `passedSteps`, the evidence that every step ran in
  // order (a restart may repeat a step's last plan, never add a second record).
  void recordPassedStep(int index, const CanaryStep& s) {
    std::vector<PassedStep>& passed = st.passedSteps ? *st.passedSteps : st.passedSteps.emplace();
    if (!passed.empty() && passed.back().step >= index) return;
    PassedStep rec;
    rec.step = index;
    rec.weight = s.weight;
    rec.startedAt = st.stepStartedAt.value_or("");
    rec.weightReachedAt = st.weightReachedAt.value_or("");
    rec.passedAt = o.now;
    rec.promotedBy = st.promotedBy;
    if (s.analysis) {
      AnalysisCounters c = countersFrom(st.analysis.value_or(CanaryAnalysisStatus{}));
      rec.analysis = PassedStepAnalysis{c.count, c.successful, c.failed, c.errors};
    }
    passed.push_back(std::move(rec));
  }

  void rollBack(const std::string& reason, const std::string& message) {
    st.phase = kCanaryRollingBack;
    st.reason = reason;
    st.message = message;
    st.rollbackStartedAt = o.now;
    plan.rollbackReason = reason;
    std::string target = knownGoodRelease();
    std::string to = target.empty()
                         ? "no previous release (prod had none); the canary is removed"
                         : "stable stays on " + target + " (" + st.knownGood->package.value_or("") +
                               ", " + st.knownGood->closureHash.value_or("") + ")";
    event("Warning", "RollingBack", reason + ": " + message + "; " + to);
    if (!target.empty() && o.knownGoodStale) {
      event("Warning", kReasonRollbackTargetStale,
            "the last known-good release " + target +
                " runs on a runtime whose closure hash has moved on; stable pods that must be "
                "re-created will be refused by admission");
    }
    rollingBack();
  }

  void rollingBack() {
    plan.action = CanaryAction::kRollingBack;
    plan.reason = kReasonRollingBack;
    plan.message = st.reason.value_or("") + ": " + st.message.value_or("");
    if (o.stableVerificationFailure) plan.message += "; " + *o.stableVerificationFailure;
    plan.stableRelease = knownGoodRelease();
    int stableTarget = hasStable ? total : 0;
    // The canary track's pods: a displaced release's until they are gone.
    const TrackObserved canary = displacing() ? o.displaced : o.canary;
    if (displacing()) plan.canaryRelease = o.displacedRelease;
    // Only pods of the known-good pair count as restored stable capacity (the
    // stable Deployment may still carry another template, e.g. after an abort
    // mid-handover).
    TrackObserved stable = o.stable;
    if (o.stableRelease != knownGoodRelease()) stable.readyReplicas = 0;
    const bool stableRestored =
        !hasStable || (stable.specReplicas == stableTarget && stable.readyReplicas >= stableTarget);
    if (hasStable && !stableRestored && canary.specReplicas > 0) {
      plan.message += "; " + restoreStableFirst(canary, stable);
      plan.requeueAfterSeconds = kPodPollSeconds;
      return;
    }
    plan.replicas = {0, stableTarget};
    // RolledBack only once the canary is gone and stable has N Ready pods of
    // the known-good pair.
    if (canary.specReplicas == 0 && canary.readyReplicas == 0 && stableRestored) {
      st.phase = kCanaryRolledBack;
      st.finishedAt = o.now;
      plan.action = CanaryAction::kRolledBack;
      event("Warning", "RolledBack",
            "canary removed after " + st.reason.value_or("") +
                (knownGoodRelease().empty() ? "" : "; prod runs " + knownGoodRelease()));
      return;
    }
    if (canary.specReplicas == 0 && !stableRestored) {
      plan.message += "; canary removed, waiting for " + std::to_string(stableTarget) +
                      " Ready stable pods (" + std::to_string(stable.readyReplicas) + " now)";
    }
    plan.requeueAfterSeconds = kPodPollSeconds;
  }

  // Stable back to N Ready pods of the known-good before the canary track's
  // pods go (rollback_capacity.h). Sets plan.replicas; returns what it waits for.
  std::string restoreStableFirst(const TrackObserved& canary, const TrackObserved& stable) {
    RestoreStep r =
        restoreStableStep(total, o.spec.capacity, canary, stable,
                          {o.stablePendingUnschedulable, o.podsTerminating, o.stable.specReplicas});
    plan.replicas = r.replicas;
    return r.waits;
  }

  // Whether the canary Deployment still runs pods of the release this one
  // displaced from the slot. With a stable track they are drained first, as in
  // a rollback; this release's first step then starts from zero pods and never
  // inherits their share. With no stable (nothing promoted yet) they are only
  // canary pods too, replaced by this release's first step.
  bool displacing() const {
    return hasStable && !o.displacedRelease.empty() && o.displaced.specReplicas > 0;
  }

  void drainDisplaced() {
    plan.action = CanaryAction::kProgress;
    plan.stableRelease = knownGoodRelease();
    plan.canaryRelease = o.displacedRelease;
    TrackObserved stable = o.stable;
    if (o.stableRelease != knownGoodRelease()) stable.readyReplicas = 0;
    std::string waits = restoreStableFirst(o.displaced, stable);
    // The first step's clocks start when its pods can (run(), once the drain is
    // over). Unset meanwhile: a clock moved on at every poll would be a status
    // write every few seconds while nothing changes.
    st.stepStartedAt.reset();
    st.lastProgressAt.reset();
    st.podsToTarget.reset();
    plan.reason = kReasonCanaryProgressing;
    plan.message = "step 1/" + std::to_string(o.spec.steps.size()) + " starts once the " +
                   std::to_string(o.displaced.specReplicas) + " canary pod(s) of " +
                   o.displacedRelease + " (displaced) are gone; stable " + knownGoodRelease() +
                   " first: " + waits;
    st.reason = plan.reason;
    st.message = plan.message;
    plan.requeueAfterSeconds = kPodPollSeconds;
  }

  // Promotion has a step's health checks (admission refusals, container
  // restarts of this release's pods on either track) and the last step's
  // progress deadline, counted from the last progress toward `target`.
  // Returns true when it rolled back.
  bool promotionFailed(const char* stage, const ReplicaCounts& target, const TrackObserved& canary,
                       const TrackObserved& stable, bool waitingForGpus) {
    const std::string what = std::string("promotion (") + stage + ")";
    if (o.verificationFailure) {
      rollBack(kReasonRuntimeVerificationFailed, what +
                                                     ": runtime verification failed in a pod of " +
                                                     o.release + ": " + *o.verificationFailure);
      return true;
    }
    if (!refused.empty()) {
      rollBack(kReasonAdmissionRefused,
               what + ": a pod of " + o.release + " was refused by admission: " + refused);
      return true;
    }
    if (o.canaryRestarts > 0) {
      rollBack(kReasonCanaryRestarting, what + ": " + std::to_string(o.canaryRestarts) +
                                            " container restart(s) in pods of " + o.release);
      return true;
    }
    const int64_t deadline = o.spec.steps.back().progressDeadlineSeconds;
    trackProgress(podsToTarget(target, canary, stable), deadline);
    if (!pastDeadline(deadline)) return false;
    const std::string counts = "canary " + std::to_string(canary.readyReplicas) + "/" +
                               std::to_string(target.canary) + " Ready, stable " +
                               std::to_string(stable.readyReplicas) + "/" +
                               std::to_string(target.stable) + " Ready, " + noProgressFor(deadline);
    if (waitingForGpus || o.canaryPendingUnschedulable > 0) {
      rollBack(kReasonInsufficientGPUCapacity,
               what + ": " +
                   (waitingForGpus ? std::string("no GPU capacity for the canary")
                                   : std::to_string(o.canaryPendingUnschedulable) +
                                         " pod(s) Pending (unschedulable)") +
                   "; " + counts);
    } else {
      rollBack(kReasonProgressDeadlineExceeded, what + ": " + counts);
    }
    return true;
  }

  void promoting() {
    plan.action = CanaryAction::kPromoting;
    plan.reason = kReasonPromoting;
    std::string sub = st.promotion.value_or("");
    const int64_t deadline = o.spec.steps.back().progressDeadlineSeconds;
    if (sub.empty() || sub == kPromotionFullWeight) {
      st.promotion = kPromotionFullWeight;
      plan.stableRelease = hasStable ? knownGoodRelease() : o.release;
      ReplicaCounts target{total, 0};
      // The stable Deployment already carrying this release means the handover
      // started and its status write was lost: continue it, never flip back.
      bool handedOver = o.stableRelease == o.release;
      if (handedOver || straight ||
          (o.canary.specReplicas == total && o.canary.readyReplicas >= total &&
           o.stable.specReplicas == 0 && o.stable.readyReplicas == 0)) {
        if (o.verificationFailure || !refused.empty() || o.canaryRestarts > 0) {
          promotionFailed("all traffic on the canary", target, o.canary, o.stable, false);
          return;
        }
        st.promotion = kPromotionHandover;
        sub = kPromotionHandover;
        restartProgressClock();
      } else {
        plan.replicas = nextReplicaCounts(total, target, o.canary, o.stable, o.spec.capacity);
        plan.message = "moving all " + std::to_string(total) +
                       " replicas to the canary before the stable Deployment takes " + o.release +
                       podsNotCreated();
        plan.requeueAfterSeconds = pollUntilDeadline(kPodPollSeconds, deadline);
        // The same GPU pre-check as a step's: a canary pod is added only where
        // it fits (in drain, after the stable pod it replaces gave its GPU back).
        std::optional<GpuCheck> gpus;
        if (plan.replicas.canary > o.canary.specReplicas && o.gpu) {
          gpus = gpuPreCheck(*o.gpu, plan.replicas.canary - o.canary.specReplicas);
        }
        if (promotionFailed("moving all traffic to the canary", target, o.canary, o.stable,
                            gpus && !gpus->go))
          return;
        if (gpus) {
          const GpuCheck& check = *gpus;
          if (!check.go) {
            plan.replicas.canary = o.canary.specReplicas;
            plan.reason = kReasonWaitingForGPUCapacity;
            plan.message = "promotion waits for GPU capacity: " + check.message;
            if (st.reason.value_or("") != kReasonWaitingForGPUCapacity)
              event("Warning", kReasonWaitingForGPUCapacity, plan.message);
          }
        }
        st.reason = plan.reason;
        st.message = plan.message;
        return;
      }
    }
    // Handover: the stable Deployment (no pods) carries this release; grow it
    // and drain the canary with the same one-pod-at-a-time rule.
    plan.stableRelease = o.release;
    TrackObserved stable = o.stable;
    if (o.stableRelease != o.release) stable.readyReplicas = 0;  // template not applied yet
    ReplicaCounts target{0, total};
    if (promotionFailed("stable handover", target, o.canary, stable, false)) return;
    if (stable.specReplicas == total && stable.readyReplicas >= total &&
        o.canary.specReplicas == 0) {
      st.phase = kCanaryPromoted;
      st.finishedAt = o.now;
      st.promotion.reset();
      recordPromoted();
      plan.replicas = {0, total};
      plan.supersede = knownGoodRelease() == o.release ? "" : knownGoodRelease();
      event("Normal", "Promoted", plan.message);
      return;
    }
    plan.replicas = nextReplicaCounts(total, target, o.canary, stable, o.spec.capacity);
    plan.message = "stable Deployment takes " + o.release + ": waiting for its " +
                   std::to_string(total) + " pods Ready while the canary drains" + podsNotCreated();
    if (o.stableVerificationFailure) plan.message += "; " + *o.stableVerificationFailure;
    plan.requeueAfterSeconds = pollUntilDeadline(kPodPollSeconds, deadline);
  }

  // The promoted outcome in the plan and in status.canary: the outcome, not the
  // last intermediate state a reconcile happened to see.
  void recordPromoted() {
    plan.action = CanaryAction::kPromoted;
    plan.reason = kReasonPromoted;
    plan.message = "prod runs " + o.package + " on closure " + o.closureHash;
    st.reason = kReasonPromoted;
    st.message = plan.message;
  }

  void startPromotion(const std::string& why) {
    st.phase = kCanaryPromoting;
    st.promotion = kPromotionFullWeight;
    restartProgressClock();
    event("Normal", "Promoting", why);
    promoting();
  }

  // The progress deadline (Argo Rollouts' progressDeadlineSeconds) counts from
  // the last progress, `status.canary.lastProgressAt`: the last plan that saw
  // pods move toward the target (a spec count or a Ready count closer to it,
  // up to the target holding), or a held target lost (the loss starts the
  // count). While the target holds no deadline applies, so a reached pause
  // never counts. `podsToTarget` is what the last plan saw.
  void restartProgressClock() {
    st.lastProgressAt = o.now;
    st.podsToTarget.reset();
  }

  // Pods still to add, remove or turn Ready before `target` holds (0: it holds).
  static int podsToTarget(const ReplicaCounts& target, const TrackObserved& canary,
                          const TrackObserved& stable) {
    return std::abs(target.canary - canary.specReplicas) +
           std::abs(target.stable - stable.specReplicas) +
           std::max(0, target.canary - canary.readyReplicas) +
           std::max(0, target.stable - stable.readyReplicas);
  }

  // The clock as the last plan left it: the shell's record when it was taken
  // in this very stage; else (a restart, a new leader, another stage) it is
  // lost, and trackProgress bounds it from status.canary's (lastClockKnown).
  void loadClock() {
    const std::optional<CanaryProgress>& r = o.progress;
    if (r && r->step == st.step.value_or(0) && r->phase == st.phase.value_or("") &&
        r->promotion == st.promotion.value_or("") &&
        r->stepStartedAt == st.stepStartedAt.value_or("") && !r->lastProgressAt.empty()) {
      st.lastProgressAt = r->lastProgressAt;
      st.podsToTarget = r->podsToTarget;
    } else {
      clockLost = true;
    }
  }

  // The deadline of the stage the status is in: the step's, or the last
  // step's during promotion.
  int64_t stageDeadlineSeconds() const {
    if (st.phase.value_or("") == kCanaryPromoting)
      return o.spec.steps.back().progressDeadlineSeconds;
    const auto i = static_cast<size_t>(
        std::clamp<int64_t>(st.step.value_or(0), 0, static_cast<int64_t>(o.spec.steps.size()) - 1));
    return o.spec.steps[i].progressDeadlineSeconds;
  }

  // The clock for the shell's memory, and what status.canary records of it.
  // Written: when the step, the phase, the promotion stage or the step's
  // start changed (a rollback decided is a phase change), and when the clock
  // moved more than half the deadline past the written one (a checkpoint, so
  // that a lost clock is bounded: lastClockKnown). Else the clock as written
  // stays: a pod turning Ready is no status write.
  void persistClock(const CanaryStatus& written) {
    const std::string phase = st.phase.value_or("");
    if ((phase == kCanaryProgressing || phase == kCanaryPromoting) && st.lastProgressAt &&
        st.podsToTarget) {
      plan.progress = CanaryProgress{st.step.value_or(0),       phase,
                                     st.promotion.value_or(""), st.stepStartedAt.value_or(""),
                                     *st.lastProgressAt,        *st.podsToTarget};
    }
    const bool sameStage = written.phase == st.phase && written.step == st.step &&
                           written.promotion == st.promotion &&
                           written.stepStartedAt == st.stepStartedAt;
    if (!sameStage) return;
    const bool checkpoint =
        plan.progress && written.lastProgressAt &&
        timeOf(st.lastProgressAt) > timeOf(written.lastProgressAt) + stageDeadlineSeconds() / 2;
    if (checkpoint || (plan.progress && !written.lastProgressAt)) return;
    st.lastProgressAt = written.lastProgressAt;
    st.podsToTarget = written.podsToTarget;
  }

  // A lost clock (no record of this stage) is bounded from the written one:
  // the true last progress lies between it and half a deadline later
  // (persistClock's checkpoint), and not after `now`. So the clock resumes
  // at min(now, written + deadline/2): a deadline later than the lost
  // clock's by at most half a deadline, never earlier, however often the
  // operator restarts. No written clock: `now`.
  void lastClockKnown(int toGo, int64_t deadlineSeconds) {
    int64_t at = o.nowUnix;
    if (st.lastProgressAt) at = std::min(at, timeOf(st.lastProgressAt) + deadlineSeconds / 2);
    if (at != timeOf(st.lastProgressAt)) st.lastProgressAt = formatRfc3339(at);
    st.podsToTarget = toGo;
  }

  void trackProgress(int toGo, int64_t deadlineSeconds) {
    if (clockLost) {
      clockLost = false;
      return lastClockKnown(toGo, deadlineSeconds);
    }
    const bool seen = st.podsToTarget && st.lastProgressAt;
    const int64_t before = seen ? *st.podsToTarget : -1;
    // While the target holds (0 → 0) nothing is written: no deadline applies
    // then, and a status that changes on every plan would be a write per reconcile.
    if (!seen || toGo < before || (before == 0 && toGo > 0)) st.lastProgressAt = o.now;
    st.podsToTarget = toGo;
  }

  int64_t deadlineAt(int64_t deadlineSeconds) const {
    return timeOf(st.lastProgressAt) + deadlineSeconds;
  }
  bool pastDeadline(int64_t deadlineSeconds) const {
    return o.nowUnix > deadlineAt(deadlineSeconds);
  }
  // When to look again while waiting for pods: soon, and just after the deadline.
  int64_t pollUntilDeadline(int64_t poll, int64_t deadlineSeconds) const {
    return std::max<int64_t>(1, std::min(poll, deadlineAt(deadlineSeconds) + 1 - o.nowUnix));
  }
  std::string noProgressFor(int64_t deadlineSeconds) const {
    return "no progress for " + std::to_string(o.nowUnix - timeOf(st.lastProgressAt)) +
           "s (progress deadline " + std::to_string(deadlineSeconds) + "s, last progress at " +
           st.lastProgressAt.value_or("") + ")" + podsNotCreated();
  }
  // Why pods are missing when an admission webhook could not be asked.
  std::string podsNotCreated() const {
    return notCreated.empty() ? std::string() : "; pods not created: " + notCreated;
  }

  // One step of the progression; returns true when the step passed and the
  // caller should plan the next one in the same pass.
  bool progressStep() {
    int index = static_cast<int>(st.step.value_or(0));
    const CanaryStep& s = o.spec.steps[index];
    std::string stepName =
        "step " + std::to_string(index + 1) + "/" + std::to_string(o.spec.steps.size());
    plan.action = CanaryAction::kProgress;
    plan.stableRelease = knownGoodRelease();

    ReplicaCounts target = targetReplicaCounts(total, s.weight, o.spec.capacity);
    if (!hasStable) target = {targetReplicaCounts(total, s.weight, CapacityMode::kDrain).canary, 0};
    ReplicaCounts next = nextReplicaCounts(total, target, o.canary, o.stable, o.spec.capacity);
    // No stable track: no prod whose Ready pods a scale-down must keep (the surge
    // mode's floor of N would hold a canary above its step's share for good).
    if (!hasStable && next.canary > target.canary) next.canary = target.canary;
    trackProgress(podsToTarget(target, o.canary, o.stable), s.progressDeadlineSeconds);

    // GPU pre-check before adding canary pods.
    if (next.canary > o.canary.specReplicas && o.gpu) {
      GpuCheck check = gpuPreCheck(*o.gpu, next.canary - o.canary.specReplicas);
      if (!check.go) {
        if (pastDeadline(s.progressDeadlineSeconds)) {
          rollBack(kReasonInsufficientGPUCapacity, stepName + " could not add canary pods: " +
                                                       noProgressFor(s.progressDeadlineSeconds) +
                                                       "; " + check.message);
          return false;
        }
        next.canary = o.canary.specReplicas;
        plan.action = CanaryAction::kWait;
        plan.reason = kReasonWaitingForGPUCapacity;
        plan.message = stepName + " waits for GPU capacity: " + check.message;
        plan.replicas = next;
        if (st.reason.value_or("") != kReasonWaitingForGPUCapacity)
          event("Warning", kReasonWaitingForGPUCapacity, plan.message);
        st.reason = kReasonWaitingForGPUCapacity;
        st.message = plan.message;
        plan.requeueAfterSeconds =
            pollUntilDeadline(kPodPollSeconds * 2, s.progressDeadlineSeconds);
        return false;
      }
    }
    plan.replicas = next;

    bool reached =
        o.canary.specReplicas == target.canary && o.stable.specReplicas == target.stable &&
        o.canary.readyReplicas >= target.canary && o.stable.readyReplicas >= target.stable;
    if (!reached) {
      if (pastDeadline(s.progressDeadlineSeconds)) {
        if (o.canaryPendingUnschedulable > 0) {
          rollBack(kReasonInsufficientGPUCapacity,
                   stepName + ": " + std::to_string(o.canaryPendingUnschedulable) +
                       " canary pod(s) still Pending (unschedulable), " +
                       noProgressFor(s.progressDeadlineSeconds));
        } else {
          rollBack(kReasonProgressDeadlineExceeded,
                   stepName + ": " + std::to_string(o.canary.readyReplicas) + " of " +
                       std::to_string(target.canary) + " canary and " +
                       std::to_string(o.stable.readyReplicas) + " of " +
                       std::to_string(target.stable) + " stable pods Ready, " +
                       noProgressFor(s.progressDeadlineSeconds));
        }
        return false;
      }
      plan.reason = kReasonCanaryProgressing;
      // No live pod count: a message that changed with every Ready pod was a
      // status write per pod (the Deployments show the counts; the deadline's
      // rollback message says them).
      plan.message = stepName + ": scaling to weight " + std::to_string(s.weight) +
                     "%: waiting for " + std::to_string(target.canary) + " canary and " +
                     std::to_string(target.stable) + " stable pods Ready" +
                     (notCreated.empty() ? std::string()
                                         : "; canary pods not created: " + notCreated +
                                               " (no verdict: the progress deadline decides)");
      st.reason = kReasonCanaryProgressing;
      st.message = plan.message;
      plan.requeueAfterSeconds = pollUntilDeadline(kPodPollSeconds, s.progressDeadlineSeconds);
      return false;
    }
    if (!st.weightReachedAt) st.weightReachedAt = o.now;
    int64_t reachedAt = timeOf(st.weightReachedAt);

    // Analysis (measured only once the weight is reached, i.e. on Ready canary pods).
    std::optional<AnalysisVerdict> verdict;
    if (s.analysis) {
      CanaryAnalysisStatus& a = st.analysis ? *st.analysis : st.analysis.emplace();
      AnalysisCounters c = countersFrom(a);
      int count = effectiveCount(s);
      // Argo Rollouts' initialDelay: the first measurement waits until the
      // canary's own series can fill the query's window.
      int64_t firstMeasurementAt = reachedAt + s.analysis->initialDelaySeconds;
      // An Indefinite pause keeps measuring on its interval until promoted:
      // `count` reached is not the end, and the limits still roll back.
      const bool watching = s.pause == CanaryStep::Pause::kIndefinite && o.promoteStepBy.empty();
      auto assess = [&] {
        AnalysisVerdict v = assessAnalysis(c, *s.analysis, count, firstMeasurementAt);
        if (!watching || v.phase != AnalysisPhase::kPassed) return v;
        v = assessAnalysis(c, *s.analysis, c.count + 1, firstMeasurementAt);
        v.message = std::to_string(c.successful) + " of " + std::to_string(c.count) +
                    " measurements within bounds (count " + std::to_string(count) +
                    " reached; measuring every " + std::to_string(s.analysis->intervalSeconds) +
                    "s until promoted; " + std::to_string(c.failed) + " failed, failureLimit " +
                    std::to_string(s.analysis->failureLimit) + ")";
        return v;
      };
      verdict = assess();
      if (verdict->phase == AnalysisPhase::kRunning && o.measurement && o.measurement->refused) {
        // The provider refuses this release (its namespace, its free-form
        // query): no retry can fix that; fail the step now, saying why.
        CanaryMeasurement m;
        m.at = formatRfc3339(o.measurement->atUnix);
        m.error = o.measurement->error;
        keep(a, std::move(m));
        a.phase = "Failed";
        a.message = o.measurement->error;
        rollBack(kReasonAnalysisRefused, stepName + " analysis: " + o.measurement->error);
        return false;
      }
      if (verdict->phase == AnalysisPhase::kRunning && o.measurement &&
          o.measurement->atUnix >= verdict->nextMeasurementAtUnix) {
        recordMeasurement(c, *s.analysis, *o.measurement);
        countersTo(c, a);
        CanaryMeasurement m;
        m.at = formatRfc3339(o.measurement->atUnix);
        if (o.measurement->error.empty() && o.measurement->value) {
          m.value = *o.measurement->value;
        } else {
          m.error = o.measurement->error.empty() ? "no value" : o.measurement->error;
        }
        keep(a, std::move(m));
        verdict = assess();
      }
      a.phase = verdict->phase == AnalysisPhase::kRunning  ? "Running"
                : verdict->phase == AnalysisPhase::kPassed ? "Passed"
                                                           : "Failed";
      a.message = verdict->message;
      if (verdict->phase == AnalysisPhase::kFailed) {
        rollBack(verdict->reason, stepName + " analysis: " + verdict->message);
        return false;
      }
    }

    // Pause.
    bool promoted = !o.promoteStepBy.empty();
    if (promoted && !st.promotedBy) st.promotedBy = o.promoteStepBy;
    int64_t pauseEnds = 0;
    bool paused = false;
    if (s.pause == CanaryStep::Pause::kDuration) {
      pauseEnds = reachedAt + s.pauseSeconds;
      paused = !promoted && o.nowUnix < pauseEnds;
    } else if (s.pause == CanaryStep::Pause::kIndefinite) {
      paused = !promoted;
    }
    bool analysing = verdict && verdict->phase == AnalysisPhase::kRunning;
    if (paused || analysing) {
      int64_t wake = 0;
      if (analysing) {
        plan.measureNow = o.nowUnix >= verdict->nextMeasurementAtUnix;
        wake = verdict->nextMeasurementAtUnix;
      }
      if (paused && pauseEnds > 0) wake = wake == 0 ? pauseEnds : std::min(wake, pauseEnds);
      if (wake > o.nowUnix) plan.requeueAfterSeconds = wake - o.nowUnix;
      if (analysing) {
        plan.reason = kReasonAnalysisRunning;
        plan.message =
            stepName + " at weight " + std::to_string(s.weight) + "%: analysis " + verdict->message;
      } else {
        plan.reason = kReasonCanaryPaused;
        plan.message = stepName + " at weight " + std::to_string(s.weight) + "%: paused " +
                       (pauseEnds > 0 ? "until " + formatRfc3339(pauseEnds)
                                      : std::string("until promoted (lockstep release promote)"));
      }
      st.reason = plan.reason;
      st.message = plan.message;
      return false;
    }

    // The step passed; what comes next is new work, which a closed change
    // window holds (finishStep: the step finished, the next one waits).
    if (o.window) {
      holdForWindow("step " + std::to_string(index) + " passed at weight " +
                    std::to_string(s.weight) + "%; " +
                    (index + 1 < static_cast<int>(o.spec.steps.size())
                         ? "step " + std::to_string(index + 1)
                         : std::string("promotion")) +
                    " waits for the model's change window");
      return false;
    }
    event("Normal", "CanaryStepPassed",
          stepName + " passed at weight " + std::to_string(s.weight) + "%" +
              (verdict ? " (" + verdict->message + ")" : std::string()));
    recordPassedStep(index, s);
    st.promotedBy.reset();
    if (index + 1 < static_cast<int>(o.spec.steps.size())) {
      startStep(index + 1);
      return true;
    }
    startPromotion("every canary step passed");
    return false;
  }

  // Held by a closed change window: the current counts stay, the reason says
  // why and until when (the evaluator's message), the next look is at the
  // window's transition.
  void holdForWindow(const std::string& what) {
    plan.action = CanaryAction::kWait;
    plan.replicas = {o.canary.specReplicas, o.stable.specReplicas};
    plan.reason = kReasonWaitingForWindow;
    plan.message = what + ": " + o.window->message;
    if (st.reason.value_or("") != kReasonWaitingForWindow)
      event("Normal", kReasonWaitingForWindow, plan.message);
    st.reason = kReasonWaitingForWindow;
    st.message = plan.message;
    plan.requeueAfterSeconds = o.window->requeueSeconds(o.nowUnix);
  }

  // inFlight pause: the step's clocks stop while the window holds it, so a
  // pause, a progress deadline or an analysis' delay counts only open time.
  // On reopening every step clock moves on by the time held.
  void resumeAfterWindowPause() {
    const std::optional<int64_t> since = parseRfc3339(st.windowPausedAt.value_or(""));
    st.windowPausedAt.reset();
    if (!since || o.nowUnix <= *since) return;
    const int64_t held = o.nowUnix - *since;
    for (std::optional<std::string>* clock :
         {&st.stepStartedAt, &st.weightReachedAt, &st.lastProgressAt}) {
      if (!*clock) continue;
      if (auto t = parseRfc3339(**clock)) *clock = formatRfc3339(*t + held);
    }
  }

  // A first release (no stable track: nothing promoted before it) whose canary
  // is one step of 100 % with no analysis and no pause has nothing to compare
  // and no prod to protect: the canary would only make its N pods, then hand
  // them over to the stable Deployment one by one, creating every pod twice.
  // Its pods go straight to the stable Deployment instead (the handover from
  // an empty canary track; Argo Rollouts' first rollout skips its steps too).
  // Only from the start: nothing on the canary track, no closed change window,
  // and room for all N pods where the template requests GPUs (else the step
  // waits for capacity as any other does). A stable Deployment that already
  // carries this release is this path begun, its status write lost (a
  // Conflict, a restart): it goes on, never back to the canary.
  bool straightToStable() const {
    if (hasStable || st.step.value_or(0) != 0 || o.spec.steps.size() != 1 || o.window) return false;
    const CanaryStep& s = o.spec.steps.front();
    if (s.weight != 100 || s.analysis || s.pause != CanaryStep::Pause::kNone) return false;
    if (o.canary.specReplicas != 0 || o.canary.readyReplicas != 0 || !o.displacedRelease.empty() ||
        st.weightReachedAt)
      return false;
    if (o.stableRelease == o.release) return true;
    if (o.stable.specReplicas != 0) return false;
    return !o.gpu || gpuPreCheck(*o.gpu, total).go;
  }

  void run() {
    for (const std::string& m : o.admissionRefusals) {
      std::string& slot = webhookUnreachable(m) ? notCreated : refused;
      if (slot.empty()) slot = m;
    }
    total = o.spec.replicas;
    hasStable = !knownGoodRelease().empty();
    std::string phase = st.phase.value_or("");
    if (phase == kCanaryPromoted) {
      recordPromoted();
      plan.replicas = {0, total};
      plan.stableRelease = o.release;
      return;
    }
    if (phase == kCanaryRolledBack) {
      plan.action = CanaryAction::kRolledBack;
      plan.reason = st.reason.value_or("");
      plan.message = st.message.value_or("");
      plan.replicas = {0, hasStable ? total : 0};
      plan.stableRelease = knownGoodRelease();
      return;
    }
    if (phase == kCanaryRollingBack) return rollingBack();
    // Abort (and the release's deletion, which is one) wins over everything
    // but a finished rollback, even mid-promotion.
    if (o.releaseDeleted) {
      return rollBack(kReasonReleaseDeleted,
                      "ModelRelease " + o.release +
                          " was deleted while its canary ran; it goes once prod is back on "
                          "the known-good (finalizer " +
                          kReleaseCleanupFinalizer + ")");
    }
    if (!o.abortBy.empty()) {
      st.abortedBy = o.abortBy;
      return rollBack(kReasonAborted, "aborted by " + o.abortBy);
    }
    if (o.fleetAbort) {
      st.abortedBy = "fleet abort";
      return rollBack(evidence::kReasonFleetAborted, *o.fleetAbort);
    }
    // A change window with inFlight abort rolls the canary back like an abort.
    if (o.window && o.window->inFlight == ClosedWindow::InFlight::kAbort) {
      st.abortedBy = "change window";
      return rollBack(kReasonAborted, "aborted by the model's change window (inFlight: abort): " +
                                          o.window->message);
    }
    if (phase == kCanaryPromoting) return promoting();
    if (displacing()) return drainDisplaced();
    if (!st.stepStartedAt) {  // a drain just ended (or a status without the clock)
      st.stepStartedAt = o.now;
      restartProgressClock();
    }

    // Progressing: failures that need no analysis come first.
    if (o.verificationFailure) {
      return rollBack(kReasonRuntimeVerificationFailed,
                      "runtime verification failed in a canary pod: " + *o.verificationFailure);
    }
    if (!refused.empty()) {
      return rollBack(kReasonAdmissionRefused, "a canary pod was refused by admission: " + refused);
    }
    if (o.canaryRestarts > 0) {
      return rollBack(kReasonCanaryRestarting,
                      std::to_string(o.canaryRestarts) + " container restart(s) in canary pods");
    }
    // inFlight pause: the canary holds its weight, its clocks stopped.
    if (o.window && o.window->inFlight == ClosedWindow::InFlight::kPause) {
      if (!st.windowPausedAt) st.windowPausedAt = o.now;
      return holdForWindow("step " + std::to_string(st.step.value_or(0)) + " paused at its weight");
    }
    if (st.windowPausedAt) resumeAfterWindowPause();
    if (!o.promoteFullBy.empty()) {
      if (o.window) return holdForWindow("promotion (--full)");
      st.promotedBy = o.promoteFullBy;
      return startPromotion("promoted by " + o.promoteFullBy +
                            " (--full: remaining steps skipped)");
    }
    if (straightToStable()) {
      straight = true;
      return startPromotion(
          "a first release with one step of 100% and no analysis: its " + std::to_string(total) +
          " pods go straight to the stable Deployment (no stable track to compare with)");
    }
    // Each pass may finish a step and plan the next one; bounded by the step count.
    for (size_t guard = 0; guard <= o.spec.steps.size(); ++guard) {
      if (!progressStep()) return;
    }
  }
};

}  // namespace

CanaryPlan planCanary(const CanaryObserved& o) {
  if (!o.previous.error.empty()) return unreadableStatus(o);
  Planner p(o);
  if (const CanaryStatus* previous = o.previous.get()) p.st = *previous;
  const CanaryStatus written = p.st;
  if (p.st.phase.value_or("").empty()) {
    p.st.phase = kCanaryProgressing;
    p.st.capacity = capacityModeName(o.spec.capacity);
    p.st.startedAt = o.now;
    // The rollback target is fixed when the canary starts: later promotions of
    // other releases do not change what this one falls back to.
    if (o.knownGood) {
      p.st.knownGood =
          CanaryKnownGood{o.knownGood->release, o.knownGood->package, o.knownGood->closureHash};
    }
    p.startStep(0);
  }
  int step = static_cast<int>(p.st.step.value_or(0));
  if (step < 0 || step >= static_cast<int>(o.spec.steps.size())) {
    // The spec is immutable in prod; a status from another spec is repaired, not trusted.
    p.st.step = std::clamp(step, 0, static_cast<int>(o.spec.steps.size()) - 1);
  }
  p.loadClock();
  p.run();
  p.persistClock(written);
  if (o.modelUid) {
    p.st.anchorUid.reset();
    p.st.modelUid = *o.modelUid;
  }
  p.plan.status = encodeCanaryStatus(p.st);
  return std::move(p.plan);
}

}  // namespace lockstep::controllers
