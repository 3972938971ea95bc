#include "tests/controllers/modelrelease/prod/canary_world.h"

#include <algorithm>
#include <memory>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/gpu_capacity.h"
#include "controllers/modelrelease/prod/prod_observed.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "controllers/modelrelease/timestamps.h"

namespace lockstep::controllers::sim {
namespace {

using nlohmann::json;
namespace v1 = api::v1alpha1;

constexpr size_t kTrailLength = 30;
constexpr int64_t kCrashBackoffSeconds = 10;
constexpr const char* kUnschedulable =
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are available";

}  // namespace

std::string rfc(int64_t unix) { return formatRfc3339(unix); }

json prodStage(json canary) {
  return {{"name", "prod"},
          {"serving",
           {{"template", {{"spec", {{"containers", json::array({{{"name", "server"}}})}}}}},
            {"replicas", 4},
            {"port", 8080}}},
          {"canary", std::move(canary)}};
}

json promAnalysis(int count, int failureLimit) {
  return {{"prometheus",
           {{"address", "http://prometheus:9090"},
            {"query", "error_rate"},
            {"max", 0.01},
            {"interval", "30s"},
            {"count", count},
            {"failureLimit", failureLimit},
            {"consecutiveErrorLimit", 2}}}};
}

std::optional<std::string> decodeCanarySpec(const json& stage, CanarySpec& out) {
  const v1::ModelRelease r = v1::decodeModelRelease({{"spec", {{"stages", json::array({stage})}}}});
  auto spec = v1::canarySpecOf(r.spec.stages.at(0));
  if (!spec.isOk()) return spec.status().message();
  out = *spec;
  return std::nullopt;
}

Knobs kindWorld() {
  Knobs k;
  k.warmup = 0;
  k.termination = 0;
  k.scrape = 0;
  k.gpusPerPod = 0;
  return k;
}

World::World(CanarySpec s, Knobs k) : spec(std::move(s)), knobs(std::move(k)) {
  knobs.otherGpus.resize(knobs.nodeGpus.size(), 0);
  validated_[kKnownGood] = {kOldPackage, kHash};
  validated_[kRelease] = {kPackage, kHash};
  phases[kKnownGood] = "Promoted";
  phases[kRelease] = "Canary";
  place(kTrackStable, kKnownGood, spec.replicas);
  event("start: stable " + std::string(kKnownGood) + " x" + std::to_string(spec.replicas));
}

void World::startAtFullWeight() {
  pods.clear();
  stable.replicas = 0;
  place(kTrackCanary, kRelease, spec.replicas);
  CanaryObserved o = observe();
  status = planCanary(o).status;
  event("start: canary " + std::string(kRelease) + " x" + std::to_string(spec.replicas) +
        " at full weight, stable 0");
}

void World::startDisplacing(const std::string& release, int n) {
  validated_[release] = {"registry.example/models/gpt2@sha256:" + std::string(64, 'b'), kHash};
  phases[release] = "Superseded";  // it lost the canary slot to this release
  pods.clear();
  stable.replicas = 0;
  place(kTrackStable, kKnownGood, spec.replicas - n);
  place(kTrackCanary, release, n);
  event("start: canary " + release + " x" + std::to_string(n) + " (displaced), stable x" +
        std::to_string(spec.replicas - n));
}

// Warm pods from an hour ago.
void World::place(const std::string& name, const std::string& release, int n) {
  SimDeployment& d = track(name);
  d.release = release;
  d.replicas += n;
  for (int i = 0; i < n; ++i) {
    SimPod p;
    p.name = name + "-" + std::to_string(serial_++);
    p.track = name;
    p.release = release;
    std::tie(p.package, p.closureHash) = validated_[release];
    p.createdAt = p.readyAt = now - 3600;
    p.ready = true;
    p.scrapes = 100;
    // First fit, as the scheduler below.
    for (size_t node = 0; node < knobs.nodeGpus.size() && p.node.empty(); ++node) {
      int64_t used = knobs.otherGpus[node];
      for (const SimPod& q : pods) {
        if (q.node == "node-" + std::to_string(node)) used += knobs.gpusPerPod;
      }
      if (used + knobs.gpusPerPod <= knobs.nodeGpus[node]) p.node = "node-" + std::to_string(node);
    }
    pods.push_back(p);
  }
}

std::string World::phase() const { return status.is_object() ? status.value("phase", "") : ""; }
std::string World::reason() const { return status.is_object() ? status.value("reason", "") : ""; }

json World::podJson(const SimPod& p) const {
  json pod = {
      {"metadata",
       {{"name", p.name},
        {"labels",
         {{v1::kModelLabel, "gpt2"}, {v1::kTrackLabel, p.track}, {v1::kReleaseLabel, p.release}}},
        {"annotations",
         {{"lockstep.dev/package", p.package}, {"lockstep.dev/closure-hash", p.closureHash}}}}},
      {"spec", {{"containers", json::array({{{"name", "server"}}})}}},
      {"status",
       {{"phase", p.node.empty() ? "Pending" : "Running"},
        {"containerStatuses", json::array({{{"name", "server"}, {"restartCount", p.restarts}}})}}}};
  if (knobs.gpusPerPod > 0) {
    pod["spec"]["containers"][0]["resources"] = {
        {"requests", {{kGpuResource, std::to_string(knobs.gpusPerPod)}}}};
  }
  if (!p.node.empty()) pod["spec"]["nodeName"] = p.node;
  if (p.deletedAt) pod["metadata"]["deletionTimestamp"] = rfc(*p.deletedAt);
  json conditions = json::array();
  if (p.node.empty()) {
    conditions.push_back({{"type", "PodScheduled"},
                          {"status", "False"},
                          {"message", p.unschedulable ? kUnschedulable : ""}});
  } else {
    conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}});
  }
  conditions.push_back({{"type", "Ready"}, {"status", p.ready ? "True" : "False"}});
  pod["status"]["conditions"] = conditions;
  return pod;
}

CanaryObserved World::observe() const {
  v1::ModelRelease r;
  r.meta.name = kRelease;
  r.spec.model = "gpt2";
  r.spec.package = kPackage;
  r.spec.closureHash = kHash;
  r.status.canary = status;
  r.annotations = annotations;
  ProdObserved prod;
  auto deployment = [](const SimDeployment& d) -> kube::ObjectPtr {
    if (!d.exists()) return nullptr;
    return std::make_shared<json>(
        json{{"spec",
              {{"replicas", d.replicas},
               {"template", {{"metadata", {{"labels", {{v1::kReleaseLabel, d.release}}}}}}}}}});
  };
  prod.stableDeployment = deployment(stable);
  prod.canaryDeployment = deployment(canary);
  const auto [promotedPackage, promotedHash] = validated_.count(anchorPromoted_) != 0
                                                   ? validated_.at(anchorPromoted_)
                                                   : std::pair<std::string, std::string>();
  json modelStatus = json::object();
  if (!anchorPromoted_.empty())
    modelStatus["prod"] = {{"release", anchorPromoted_},
                           {"package", promotedPackage},
                           {"runtime", {{"closureHash", promotedHash}}}};
  if (!anchorCanary_.empty()) modelStatus["canary"] = {{"release", anchorCanary_}};
  prod.model = std::make_shared<json>(
      json{{"metadata", {{"name", "gpt2"}, {"uid", "model-uid"}}}, {"status", modelStatus}});
  std::vector<json> all;
  for (const SimPod& p : pods) {
    all.push_back(podJson(p));
    prod.pods.push_back(std::make_shared<json>(all.back()));
  }
  if (knobs.gpusPerPod > 0) {
    std::vector<json> nodes;
    for (size_t i = 0; i < knobs.nodeGpus.size(); ++i) {
      const std::string name = "node-" + std::to_string(i);
      nodes.push_back(
          {{"metadata", {{"name", name}}},
           {"status", {{"allocatable", {{kGpuResource, std::to_string(knobs.nodeGpus[i])}}}}}});
      if (knobs.otherGpus[i] > 0) {
        all.push_back(
            {{"spec",
              {{"nodeName", name},
               {"containers",
                json::array(
                    {{{"name", "other"},
                      {"resources",
                       {{"requests", {{kGpuResource, std::to_string(knobs.otherGpus[i])}}}}}}})}}},
             {"status", {{"phase", "Running"}}}});
      }
    }
    prod.gpu = gpuCapacityOf(knobs.gpusPerPod, nodes, all, "");
  }
  prod.progress = progress;
  return observeCanary(r, spec, prod, rfc(now), now);
}

bool World::serving(const SimPod& p) const {
  return !p.deletedAt && (p.ready || p.crashed || p.probeFailsUntil);
}

std::string World::failReadiness(const std::string& name, const std::string& release,
                                 int64_t seconds) {
  for (SimPod& p : pods) {
    if (p.track != name || p.release != release || p.deletedAt || !p.ready) continue;
    p.ready = false;
    p.probeFailsUntil = seconds < 0 ? -1 : now + seconds;
    event("pod " + p.name + " (" + p.release + ") readiness probe failing" +
          (seconds < 0 ? std::string(" for good") : " for " + std::to_string(seconds) + "s"));
    return p.name;
  }
  return "";
}

Measurement World::measure(int step) const {
  if (!promServes) return {now, {}, "connection refused"};
  // sum(rate(...{release}[w])): a pod's rate exists once it was scraped twice
  // while Ready; the sum over none is an empty vector.
  bool series = std::any_of(pods.begin(), pods.end(), [&](const SimPod& p) {
    return p.track == kTrackCanary && p.release == kRelease && !p.deletedAt && p.ready &&
           p.scrapes >= 2;
  });
  if (!series) return {now, {}, "empty result"};
  double v = badFromStep >= 0 && step >= badFromStep ? 0.5 : errorRate;
  return {now, v, ""};
}

void World::reconcile(bool crashBeforeStatus) {
  CanaryObserved o = observe();
  CanaryPlan p = planCanary(o);
  if (p.measureNow) {
    ++measurements;
    o.measurement = measure(static_cast<int>(p.status.value("step", 0)));
    if (!o.measurement->error.empty()) ++emptyMeasurements;
    p = planCanary(o);
  }
  if (p.action == CanaryAction::kRolledBack && stableReadyAtRolledBack < 0)
    stableReadyAtRolledBack = o.stable.readyReplicas;
  // The writes in the shell's order (prod_plan.cc): the track that grows first.
  const std::string canaryWho = !p.canaryRelease.empty() ? p.canaryRelease
                                : p.replicas.canary > 0 || canary.release == kRelease
                                    ? std::string(kRelease)
                                    : std::string();
  if (!p.canaryRelease.empty()) lastDisplacedWriteAt = now;
  const bool stableFirst = p.replicas.stable >= o.stable.specReplicas;
  for (bool stableTurn : {stableFirst, !stableFirst}) {
    if (stableTurn) {
      write(kTrackStable, p.stableRelease, p.replicas.stable);
    } else {
      write(kTrackCanary, canaryWho, p.replicas.canary);
    }
  }
  maxPods = std::max(maxPods, stable.replicas + canary.replicas);
  minStableSpec = std::min(minStableSpec, stable.replicas);
  // The anchor records the end (prod_plan.cc), then the displaced releases
  // notice (release_plan.cc: Superseded), then the release's status.
  if (p.action == CanaryAction::kPromoted || p.action == CanaryAction::kRolledBack) {
    if (p.action == CanaryAction::kPromoted) anchorPromoted_ = kRelease;
    anchorCanary_.clear();
    event("anchor promoted=" + anchorPromoted_ + " canary=-");
    for (auto& [name, ph] : phases) {
      if (name != kRelease && ph == "Promoted" && anchorPromoted_ != name) {
        ph = "Superseded";
        event("release " + name + " Superseded");
      }
    }
  }
  if (crashBeforeStatus) {
    event("operator killed before its status write");
    restart();
    return;
  }
  if (p.status != status || p.message != message) {
    ++statusWrites;
    // News: anything but the progress clock and the messages.
    auto news = [](json s) {
      if (s.is_object()) {
        s.erase("lastProgressAt");
        s.erase("podsToTarget");
        s.erase("message");
      }
      return s;
    };
    const std::string reasonBefore = plans.empty() ? "" : plans.back().reason;
    if (status.is_object() && news(p.status) == news(status) && p.reason == reasonBefore) {
      ++writesWithoutNews;
      if (firstWriteWithoutNews.empty()) {
        firstWriteWithoutNews = "at +" + std::to_string(now - kT0) + "s: message \"" + message +
                                "\" -> \"" + p.message + "\"; status.canary " + status.dump() +
                                " -> " + p.status.dump();
      }
    }
  }
  message = p.message;
  progress = p.progress;
  if (!p.canaryRelease.empty() && p.status != status && status.is_object() &&
      p.status.value("message", "") == status.value("message", ""))
    ++drainWritesWithoutNews;
  if (p.canaryRelease.empty() && lastDisplacedWriteAt > 0 && firstPlanAfterDrainAt < 0)
    firstPlanAfterDrainAt = now;
  status = p.status;
  plans.push_back(p);
  stepsSeen_.push_back(static_cast<int>(status.value("step", 0)));
  phases[kRelease] = p.action == CanaryAction::kPromoted     ? "Promoted"
                     : p.action == CanaryAction::kRolledBack ? "RolledBack"
                                                             : "Canary";
  event("status " + phases[kRelease] + " canary=" + phase() +
        " step=" + std::to_string(status.value("step", 0)) + " reason=" + reason());
}

// placeTrack (prod_plan.cc): a scale when the template already runs
// `release`, else a new template; "" scales to zero and keeps the template.
void World::write(const std::string& name, const std::string& release, int replicas) {
  SimDeployment& d = track(name);
  const int want = release.empty() ? 0 : replicas;
  if (!release.empty() && d.release != release) {
    if (name == kTrackStable && d.exists()) {
      int live = static_cast<int>(std::count_if(pods.begin(), pods.end(), [&](const SimPod& p) {
        return p.track == name && !p.deletedAt;
      }));
      if (live > 0) {
        violate("template: the stable Deployment changed from " + d.release + " to " + release +
                " with " + std::to_string(live) + " pod(s)");
      }
    }
    if (name == kTrackCanary && release == kRelease) {
      ownCanaryPodsAtTakeover = want;
      displacedLiveAtTakeover =
          static_cast<int>(std::count_if(pods.begin(), pods.end(), [&](const SimPod& p) {
            return p.track == name && p.release != kRelease && !p.deletedAt;
          }));
    }
    d.release = release;
    d.replicas = want;
    event("deployment " + name + " template=" + release + " replicas=" + std::to_string(want));
  } else if (d.exists() && d.replicas != want) {
    d.replicas = want;
    event("deployment " + name + " replicas=" + std::to_string(want));
  } else {
    return;
  }
  syncTrack(name);
}

void World::deletePod(SimPod& p) {
  if (p.deletedAt) return;
  p.deletedAt = now;
  event("pod " + p.name + " (" + p.release + ") deleted: Terminating");
}

// The ReplicaSet controller: pods of another template go; then too many go
// (Pending first, then not Ready, then the youngest); too few are created.
void World::syncTrack(const std::string& name) {
  const SimDeployment& d = track(name);
  std::vector<SimPod*> live;
  for (SimPod& p : pods) {
    if (p.track != name || p.deletedAt) continue;
    if (p.release != d.release) {
      deletePod(p);
    } else {
      live.push_back(&p);
    }
  }
  std::sort(live.begin(), live.end(), [](const SimPod* a, const SimPod* b) {
    auto rank = [](const SimPod* p) { return p->node.empty() ? 0 : p->ready ? 2 : 1; };
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return a->createdAt > b->createdAt;
  });
  for (size_t i = 0; static_cast<int>(live.size() - i) > d.replicas; ++i) deletePod(*live[i]);
  for (int n = static_cast<int>(live.size()); n < d.replicas; ++n) {
    SimPod p;
    p.name = name + "-" + std::to_string(serial_++);
    p.track = name;
    p.release = d.release;
    auto it = validated_.find(d.release);
    if (it != validated_.end()) std::tie(p.package, p.closureHash) = it->second;
    p.createdAt = now;
    p.neverReady = d.release == knobs.neverReady;
    pods.push_back(p);
    event("pod " + p.name + " (" + p.release + ") created: Pending");
  }
}

void World::tick(int64_t seconds) {
  for (int64_t i = 0; i < seconds; ++i) {
    ++now;
    step();
  }
}

// One second of kubelet, scheduler and Prometheus.
void World::step() {
  // Terminating pods go once their grace is over (their GPUs with them).
  for (auto it = pods.begin(); it != pods.end();) {
    if (it->deletedAt && (it->node.empty() || now >= *it->deletedAt + knobs.termination)) {
      std::string name = it->name;
      it = pods.erase(it);
      event("pod " + name + " gone");
    } else {
      ++it;
    }
  }
  // The scheduler: first fit, counting every pod bound to a node.
  for (SimPod& p : pods) {
    if (!p.node.empty() || p.deletedAt) continue;
    for (size_t node = 0; node < knobs.nodeGpus.size() && p.node.empty(); ++node) {
      const std::string name = "node-" + std::to_string(node);
      int64_t used = knobs.otherGpus[node];
      for (const SimPod& q : pods) {
        if (q.node == name) used += knobs.gpusPerPod;
      }
      if (used + knobs.gpusPerPod <= knobs.nodeGpus[node]) p.node = name;
    }
    if (p.node.empty()) {
      if (!p.unschedulable) {
        ++unschedulable[p.track];
        event("pod " + p.name + " unschedulable: Insufficient nvidia.com/gpu");
        if (p.track == kTrackCanary && knobs.gpusPerPod > 0)
          violate("gpu: canary pod " + p.name + " was requested but no node has its GPUs");
      }
      p.unschedulable = true;
      continue;
    }
    p.readyAt = now + knobs.warmup;
    event("pod " + p.name + " scheduled on " + p.node + ": Running, warming up");
  }
  // The kubelet: readiness blips, warm-up, crashes.
  const bool fullLoad =
      knobs.crashUnderFullLoad && std::none_of(pods.begin(), pods.end(), [](const SimPod& p) {
        return p.track == kTrackStable && !p.deletedAt && p.ready;
      });
  for (SimPod& p : pods) {
    if (p.node.empty() || p.deletedAt) continue;
    if (p.probeFailsUntil) {
      if (*p.probeFailsUntil < 0 || now < *p.probeFailsUntil) continue;
      p.probeFailsUntil.reset();
      p.ready = true;
      event("pod " + p.name + " (" + p.release + ") readiness probe passes again: Ready");
      continue;
    }
    if (p.ready && p.track == kTrackCanary && p.release == kRelease &&
        ((knobs.crashAfter > 0 && now >= p.readyAt + knobs.crashAfter) || fullLoad)) {
      ++p.restarts;
      p.ready = false;
      p.crashed = true;
      p.scrapes = 0;
      p.readyAt = now + kCrashBackoffSeconds + knobs.warmup;
      event("pod " + p.name + " crashed: restart " + std::to_string(p.restarts));
    } else if (!p.ready && !p.neverReady && now >= p.readyAt) {
      p.ready = true;
      p.crashed = false;
      event("pod " + p.name + " (" + p.release + ") Ready");
    }
  }
  // Prometheus scrapes every Ready pod.
  if (knobs.scrape <= 0 || (now - kT0) % knobs.scrape == 0) {
    for (SimPod& p : pods) {
      if (p.ready && !p.deletedAt) p.scrapes += knobs.scrape <= 0 ? 2 : 1;
    }
  }
}

void World::event(const std::string& what) {
  trail_.push_back("t+" + std::to_string(now - kT0) + "s " + what);
  while (trail_.size() > kTrailLength) trail_.pop_front();
  check();
}

// Kept once, when it starts to hold, with the trail that led to it.
void World::violate(const std::string& what) {
  holding_.insert(what);
  if (held_.count(what) != 0) return;
  std::string t;
  for (const std::string& e : trail_) t += "\n    " + e;
  const bool tolerated = std::any_of(tolerated_.begin(), tolerated_.end(),
                                     [&](const std::string& i) { return what.rfind(i, 0) == 0; });
  (tolerated ? known : violations)
      .push_back("t+" + std::to_string(now - kT0) + "s " + what + "\n  trail:" + t);
}

void World::check() {
  holding_.clear();
  // ready
  int ready = 0, disrupted = 0, live = 0;
  std::map<std::string, int> byTrack;
  for (const SimPod& p : pods) {
    if (!p.deletedAt) ++live;
    if (!serving(p)) continue;
    (p.ready ? ready : disrupted) += 1;
    byTrack[p.track + "/" + p.release]++;
  }
  maxLivePods = std::max(maxLivePods, live);
  const int n = spec.replicas;
  if (!armed_ && ready >= n) armed_ = true;
  const bool drain = spec.capacity == CapacityMode::kDrain;
  const int floor = drain ? n - 1 : n;
  minServing = std::min(minServing, ready + disrupted);
  if (armed_ && ready + disrupted < floor) {
    std::string tracks;
    for (const auto& [k, v] : byTrack) tracks += " " + k + "=" + std::to_string(v);
    violate("ready: " + std::to_string(ready + disrupted) + " serving pod(s) < " +
            std::to_string(floor) + " (N=" + std::to_string(n) + ", " +
            (drain ? "drain" : "surge") +
            "); by track/release:" + (tracks.empty() ? " none" : tracks));
  }
  // gpu
  for (size_t node = 0; node < knobs.nodeGpus.size(); ++node) {
    const std::string name = "node-" + std::to_string(node);
    int64_t used = knobs.otherGpus[node];
    for (const SimPod& p : pods) {
      if (p.node == name) used += knobs.gpusPerPod;
    }
    if (used > knobs.nodeGpus[node]) {
      violate("gpu: " + name + " has " + std::to_string(used) + " GPUs requested of " +
              std::to_string(knobs.nodeGpus[node]));
    }
  }
  // triple
  for (const SimPod& p : pods) {
    if (p.deletedAt) continue;
    bool ok = std::any_of(validated_.begin(), validated_.end(), [&](const auto& kv) {
      return kv.second.first == p.package && kv.second.second == p.closureHash;
    });
    if (!ok) {
      violate("triple: pod " + p.name + " of release '" + p.release + "' runs (" + p.package +
              ", " + p.closureHash + "), which no release validated");
    }
  }
  // promoted
  int promoted = static_cast<int>(std::count_if(
      phases.begin(), phases.end(), [](const auto& kv) { return kv.second == "Promoted"; }));
  if (promoted > 1) {
    violate("promoted: " + std::to_string(promoted) + " releases are Promoted");
  }
  // steps
  for (size_t k = 1; k < stepsSeen_.size(); ++k) {
    if (stepsSeen_[k] < stepsSeen_[k - 1] || stepsSeen_[k] > stepsSeen_[k - 1] + 1) {
      violate("steps: status.canary.step went " + std::to_string(stepsSeen_[k - 1]) + " -> " +
              std::to_string(stepsSeen_[k]));
      break;
    }
  }
  if (status.is_object() && status.contains("passedSteps")) {
    int want = 0;
    for (const json& rec : status["passedSteps"]) {
      if (rec.value("step", -1) != want) {
        violate("steps: passedSteps " + status["passedSteps"].dump() + " skips step " +
                std::to_string(want));
        break;
      }
      ++want;
    }
  }
  held_ = holding_;
}

std::string World::report() const {
  std::string out;
  for (const std::string& v : violations) out += v + "\n";
  return out;
}

void World::run(int crashAt, int64_t every, int maxReconciles) {
  for (int i = 0; i < maxReconciles && phase() != "Promoted" && phase() != "RolledBack"; ++i) {
    reconcile(i == crashAt);
    if (i == crashAt) reconcile(false);  // the restarted operator, same instant
    tick(every);
  }
}

}  // namespace lockstep::controllers::sim
