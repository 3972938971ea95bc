#include "controllers/fleet/wave_plan.h"

#include <algorithm>
#include <map>
#include <set>

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using evidence::ProdRecord;
using evidence::WavePermit;
using nlohmann::json;

std::string duration(int64_t secs) {
  if (secs % 3600 == 0) return std::to_string(secs / 3600) + "h";
  if (secs % 60 == 0) return std::to_string(secs / 60) + "m";
  return std::to_string(secs) + "s";
}

// What the registry says of one cluster.
struct ClusterView {
  std::string name;
  int wave = -1;                           // index in the waves; -1: in none
  std::optional<int64_t> permittedAt;      // earliest permit naming it
  bool openPermit = false;                 // an allClusters permit covers it
  std::vector<const ProdRecord*> records;  // by since; a RolledBack after a Promoted on ties
  std::string state = kClusterPending;
  std::optional<int64_t> since;     // Promoted: serving since; RolledBack: its record's
  std::optional<int64_t> failedAt;  // RolledBack or TimedOut
  std::optional<int64_t> soakEnd;   // Promoted: since + minSuccessTime
  std::optional<int64_t> deadline;  // permittedAt + progressDeadline
  std::string reason;

  bool failed() const { return state == kClusterRolledBack || state == kClusterTimedOut; }
  bool done() const { return failed() || state == kClusterSoaked; }
  bool inFlight() const { return state == kClusterPermitted; }
};

void classify(ClusterView* c, const v1::RolloutStrategy& strategy, int64_t now) {
  std::stable_sort(c->records.begin(), c->records.end(),
                   [](const ProdRecord* a, const ProdRecord* b) {
                     const bool aBack = a->outcome == evidence::kOutcomeRolledBack;
                     const bool bBack = b->outcome == evidence::kOutcomeRolledBack;
                     return a->since != b->since ? a->since < b->since : (!aBack && bBack);
                   });
  if (c->permittedAt && strategy.progressDeadlineSeconds)
    c->deadline = *c->permittedAt + *strategy.progressDeadlineSeconds;
  const ProdRecord* latest = c->records.empty() ? nullptr : c->records.back();
  if (latest != nullptr) c->since = latest->since;

  // The deadline judges the first record only: a cluster that promoted in time
  // and rolled back later failed by its RolledBack record, not by the clock.
  if (c->deadline) {
    const ProdRecord* first = c->records.empty() ? nullptr : c->records.front();
    if (first == nullptr && now >= *c->deadline) {
      c->state = kClusterTimedOut;
      c->failedAt = c->deadline;
      c->reason = "no prod record within progressDeadline " +
                  duration(*c->deadline - *c->permittedAt) + " of its permit (issued " +
                  evidence::statementTime(*c->permittedAt) + ")";
      return;
    }
    if (first != nullptr && first->since > *c->deadline) {
      c->state = kClusterTimedOut;
      c->failedAt = c->deadline;
      c->reason = "its first prod record (" + first->outcome + " at " +
                  evidence::statementTime(first->since) +
                  ") is dated after its progress deadline " +
                  evidence::statementTime(*c->deadline) + ": the failure stands";
      return;
    }
  }
  if (latest == nullptr) {
    c->state = c->permittedAt || c->openPermit ? kClusterPermitted : kClusterPending;
    return;
  }
  if (latest->outcome == evidence::kOutcomeRolledBack) {
    c->state = kClusterRolledBack;
    c->failedAt = latest->since;
    c->reason = latest->reason.empty() ? "its canary rolled back" : latest->reason;
    return;
  }
  // Serving since the first Promoted record after the last RolledBack one: a
  // duplicate or re-dated Promoted record does not restart the soak.
  auto firstServing = c->records.end();
  for (auto it = c->records.end(); it != c->records.begin();) {
    --it;
    if ((*it)->outcome == evidence::kOutcomeRolledBack) break;
    firstServing = it;
  }
  c->since = (*firstServing)->since;
  c->soakEnd = *c->since + strategy.minSuccessTimeSeconds;
  c->state = now >= *c->soakEnd ? kClusterSoaked : kClusterPromoted;
}

json clusterStatus(const ClusterView& c, const std::vector<v1::ResolvedWave>& waves) {
  json j{{"name", c.name}, {"state", c.state}};
  if (c.wave >= 0) j["wave"] = waves[static_cast<size_t>(c.wave)].name;
  if (c.permittedAt) j["permittedAt"] = evidence::statementTime(*c.permittedAt);
  if (c.since) j["since"] = evidence::statementTime(*c.since);
  std::string reason = c.reason;
  if (c.state == kClusterPromoted && c.soakEnd && c.wave >= 0)
    reason = "soaking until " + evidence::statementTime(*c.soakEnd);
  if (c.wave < 0)
    reason = "in no wave of this rollout: listed, not counted" +
             (reason.empty() ? std::string() : "; " + reason);
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

std::string failureList(const std::vector<const ClusterView*>& failed) {
  std::string out;
  for (const ClusterView* c : failed) out += (out.empty() ? "" : ", ") + c->name + " " + c->state;
  return out;
}

}  // namespace

WavePlan planWaves(const WavePlanInput& in) {
  const int64_t now = in.nowUnix;
  const std::string& digest = in.spec.packageRef.digest;
  const std::string rolloutKey = in.rollout.key();

  // Every cluster named by a wave, a permit or a record; wave clusters in wave order.
  std::map<std::string, ClusterView> views;
  std::vector<std::string> waveOrder;
  for (size_t w = 0; w < in.waves.size(); ++w) {
    for (const std::string& name : in.waves[w].clusters) {
      if (views.count(name) != 0) continue;  // resolveWaves never repeats one; be safe
      views[name].name = name;
      views[name].wave = static_cast<int>(w);
      waveOrder.push_back(name);
    }
  }
  bool openInRegistry = false;
  for (const WavePermit& p : in.permits) {
    if (p.package.digest != digest) continue;
    if (p.allClusters) {
      openInRegistry = true;
      continue;
    }
    for (const std::string& name : p.clusters) {
      ClusterView& c = views[name];
      c.name = name;
      if (!c.permittedAt || p.issuedAt < *c.permittedAt) c.permittedAt = p.issuedAt;
    }
  }
  for (const ProdRecord& r : in.records) {
    if (r.package.digest != digest) continue;
    ClusterView& c = views[r.cluster];
    c.name = r.cluster;
    c.records.push_back(&r);
  }
  for (auto& [name, c] : views) {
    c.openPermit = openInRegistry;
    classify(&c, in.spec.strategy, now);
  }

  // Per wave: its clusters, whether done, its failures.
  const size_t waveCount = in.waves.size();
  std::vector<std::vector<ClusterView*>> members(waveCount);
  for (const std::string& name : waveOrder) {
    ClusterView& c = views[name];
    members[static_cast<size_t>(c.wave)].push_back(&c);
  }
  auto waveDone = [&](size_t w) {
    return std::all_of(members[w].begin(), members[w].end(),
                       [](const ClusterView* c) { return c->done(); });
  };
  size_t current = 0;
  while (current < waveCount && waveDone(current)) ++current;

  std::vector<const ClusterView*> failed;
  for (const std::string& name : waveOrder)
    if (views[name].failed()) failed.push_back(&views[name]);
  const auto total = static_cast<int64_t>(waveOrder.size());
  const int64_t maxFailures = v1::maxFailuresFor(in.spec.strategy, total);
  const auto failures = static_cast<int64_t>(failed.size());

  WavePlan plan;
  // The wave the rollout is in: the last one any cluster of which has a permit
  // or a record (a wave finished by a failure is still the one that failed),
  // else the current one. An abort names it; waves after it stay Pending.
  std::optional<size_t> started;
  for (size_t w = 0; w < waveCount; ++w)
    for (const ClusterView* c : members[w])
      if (c->permittedAt || !c->records.empty()) started = w;
  const size_t reached = started ? *started : std::min(current, waveCount == 0 ? 0 : waveCount - 1);
  const std::string reachedName = waveCount > 0 ? in.waves[reached].name : std::string();
  auto permitFor = [&](const std::string& wave, int64_t index) {
    WavePermit p;
    p.package = in.spec.packageRef;
    p.rollout = rolloutKey;
    p.rolloutUid = in.rollout.uid;
    p.wave = wave;
    p.waveIndex = index;
    p.issuedAt = now;
    p.model = in.spec.model;
    return p;
  };

  std::string message;
  bool aborted = false;
  bool succeeded = false;
  if (in.abortInRegistry) {
    // An abort is final, and wins over an open permit: no cluster may start.
    aborted = true;
    message = "a fleet abort for this package is in the registry: no cluster starts it";
  } else if (openInRegistry) {
    succeeded = true;
    message = "every wave is done: the open permit lets every cluster promote it";
  } else if (failures > maxFailures) {
    aborted = true;
    evidence::FleetAbort abort;
    abort.package = in.spec.packageRef;
    abort.rollout = rolloutKey;
    abort.rolloutUid = in.rollout.uid;
    abort.wave = reachedName;
    for (const ClusterView* c : failed)
      abort.failures.push_back({c->name, c->state, *c->failedAt, c->reason});
    abort.maxFailures = maxFailures;
    abort.issuedAt = now;
    abort.model = in.spec.model;
    plan.abort = std::move(abort);
    message = "aborted in wave " + reachedName + ": " + std::to_string(failures) + " failures (" +
              failureList(failed) + ") exceed maxFailures " + std::to_string(maxFailures);
  } else if (current == waveCount) {
    succeeded = true;
    WavePermit open = permitFor(evidence::kOpenPermitWave, static_cast<int64_t>(waveCount));
    open.allClusters = true;
    plan.permits.push_back(std::move(open));
    message = "every wave is done: the open permit lets every cluster promote it";
  } else {
    // The current wave: permit its Pending clusters, in wave order, up to capacity.
    const std::vector<ClusterView*>& wave = members[current];
    const int64_t cap = v1::maxConcurrencyFor(in.spec.strategy, static_cast<int64_t>(wave.size()));
    int64_t inFlight = 0;
    for (const ClusterView* c : wave) inFlight += c->inFlight() ? 1 : 0;
    WavePermit batch = permitFor(in.waves[current].name, static_cast<int64_t>(current));
    for (ClusterView* c : wave) {
      if (inFlight >= cap) break;
      if (c->state != kClusterPending) continue;
      batch.clusters.push_back(c->name);
      c->state = kClusterPermitted;  // shown as permitted by this pass's permit
      c->permittedAt = now;
      if (in.spec.strategy.progressDeadlineSeconds)
        c->deadline = now + *in.spec.strategy.progressDeadlineSeconds;
      ++inFlight;
    }
    if (!batch.clusters.empty()) plan.permits.push_back(std::move(batch));
  }

  // Phases and messages.
  const bool finished = aborted || succeeded;
  auto wavePhase = [&](size_t w) -> std::string {
    if (aborted && w == reached) return kWaveFailed;
    if (aborted && w > reached) return kWavePending;
    if (!succeeded && w > current) return kWavePending;
    if (waveDone(w)) return kWaveSucceeded;
    const bool moving = std::any_of(members[w].begin(), members[w].end(), [](const ClusterView* c) {
      return c->state == kClusterPending || c->state == kClusterPermitted;
    });
    return moving ? kWaveProgressing : kWaveSoaking;
  };
  json waves = json::array();
  for (size_t w = 0; w < waveCount; ++w) {
    const std::string phase = wavePhase(w);
    json entry{{"name", in.waves[w].name}, {"phase", phase}};
    int64_t waveFailures = 0;
    for (const ClusterView* c : members[w]) waveFailures += c->failed() ? 1 : 0;
    if (members[w].empty()) {
      entry["message"] = phase == kWavePending ? "no cluster matched: done at once when reached"
                                               : "no cluster matched: done at once";
    } else if (waveFailures > 0) {
      entry["message"] = std::to_string(waveFailures) + " of " + std::to_string(members[w].size()) +
                         " clusters failed";
    }
    waves.push_back(std::move(entry));
  }

  if (!finished) {
    const std::vector<ClusterView*>& wave = members[current];
    int64_t pending = 0, inFlight = 0, promoted = 0;
    std::optional<int64_t> soakEnd;
    for (const ClusterView* c : wave) {
      pending += c->state == kClusterPending ? 1 : 0;
      inFlight += c->inFlight() ? 1 : 0;
      if (c->state == kClusterPromoted) {
        ++promoted;
        soakEnd = std::max(soakEnd.value_or(*c->soakEnd), *c->soakEnd);
      }
    }
    message = "wave " + in.waves[current].name + " (" + std::to_string(current + 1) + " of " +
              std::to_string(waveCount) + "): ";
    if (pending + inFlight > 0) {
      message += std::to_string(inFlight) + " in flight, " + std::to_string(pending) +
                 " waiting for a permit, " + std::to_string(promoted) + " soaking";
    } else {
      message += "soaking until " + evidence::statementTime(*soakEnd);
    }
    message +=
        "; failures " + std::to_string(failures) + " of at most " + std::to_string(maxFailures);
    plan.phase = pending + inFlight > 0 ? kRolloutProgressing : kRolloutSoaking;
  } else {
    plan.phase = aborted ? kRolloutAborted : kRolloutSucceeded;
    if (succeeded && failures > 0 && failures <= maxFailures)
      message += " (" + std::to_string(failures) + " failed, within maxFailures " +
                 std::to_string(maxFailures) + ")";
    if (succeeded && failures > maxFailures)
      message += " (" + std::to_string(failures) + " failed, past maxFailures " +
                 std::to_string(maxFailures) + " after the open permit: listed, deciding nothing)";
  }

  // The next change by time alone: a soak's end, a progress deadline.
  if (!finished) {
    std::optional<int64_t> next;
    for (const auto& [name, c] : views) {
      if (c.wave < 0) continue;
      std::optional<int64_t> at;
      if (c.state == kClusterPromoted) at = c.soakEnd;
      if (c.state == kClusterPermitted && c.deadline) at = c.deadline;
      if (at && *at > now) next = std::min(next.value_or(*at), *at);
    }
    if (next) plan.requeueAfterSeconds = *next - now;
  }

  json clusters = json::array();
  for (const std::string& name : waveOrder)
    clusters.push_back(clusterStatus(views[name], in.waves));
  for (const auto& [name, c] : views)
    if (c.wave < 0) clusters.push_back(clusterStatus(c, in.waves));

  plan.status = json{
      {"phase", plan.phase},  {"currentWave", current < waveCount ? in.waves[current].name : ""},
      {"waves", waves},       {"clusters", clusters},
      {"failures", failures}, {"maxFailures", maxFailures},
      {"message", message}};
  return plan;
}

}  // namespace lockstep::controllers
