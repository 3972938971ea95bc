#include "controllers/modelrelease/canary_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "closure/cuda.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

const json kNull = json();

const json& member(const json& o, const char* key) {
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

std::string str(const json& o, const char* key) {
  const json& v = member(o, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

int64_t integer(const json& o, const char* key, int64_t fallback = 0) {
  const json& v = member(o, key);
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

std::string formatRfc3339(int64_t unix) {
  auto t = static_cast<std::time_t>(unix);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int64_t timeOf(const json& o, const char* key) { return parseRfc3339(str(o, key)).value_or(0); }

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

std::optional<std::string> decodeAnalysis(const json& a, const std::string& where,
                                          PrometheusAnalysis& out) {
  const json& p = member(a, "prometheus");
  if (!p.is_object()) return where + ".prometheus is missing";
  out.address = str(p, "address");
  out.query = str(p, "query");
  if (out.address.empty() || out.query.empty())
    return where + ".prometheus needs address and query";
  if (member(p, "min").is_number()) out.min = member(p, "min").get<double>();
  if (member(p, "max").is_number()) out.max = member(p, "max").get<double>();
  if (!out.min && !out.max) return where + ".prometheus needs min or max";
  std::string interval = str(p, "interval");
  if (!interval.empty()) {
    auto secs = parseStageDuration(interval);
    if (!secs || *secs <= 0)
      return where + ".prometheus.interval " + quote(interval) + " is not a duration";
    out.intervalSeconds = *secs;
  }
  out.count = static_cast<int>(integer(p, "count", 0));
  out.failureLimit = static_cast<int>(integer(p, "failureLimit", 0));
  out.consecutiveErrorLimit = static_cast<int>(integer(p, "consecutiveErrorLimit", 4));
  if (out.count < 0 || out.failureLimit < 0 || out.consecutiveErrorLimit < 0)
    return where + ".prometheus: count and limits must not be negative";
  return std::nullopt;
}

}  // namespace

const char* capacityModeName(CapacityMode m) {
  return m == CapacityMode::kSurge ? "surge" : "drain";
}

const char* canaryActionName(CanaryAction a) {
  switch (a) {
    case CanaryAction::kProgress:
      return "Progress";
    case CanaryAction::kWait:
      return "Wait";
    case CanaryAction::kPromoting:
      return "Promoting";
    case CanaryAction::kPromoted:
      return "Promoted";
    case CanaryAction::kRollingBack:
      return "RollingBack";
    case CanaryAction::kRolledBack:
      return "RolledBack";
  }
  return "?";
}

std::optional<std::string> decodeCanarySpec(const json& stage, CanarySpec& out) {
  std::string where = "stage " + quote(str(stage, "name"));
  const json& serving = member(stage, "serving");
  if (!serving.is_object()) return where + " has no serving";
  out.podTemplate = member(serving, "template");
  out.replicas = static_cast<int>(integer(serving, "replicas", 1));
  out.port = static_cast<int>(integer(serving, "port", 8080));
  if (out.replicas < 1) return where + ".serving.replicas must be at least 1";
  const json& canary = member(stage, "canary");
  std::string capacity = str(canary, "capacity");
  if (capacity.empty() || capacity == "surge") {
    out.capacity = CapacityMode::kSurge;
  } else if (capacity == "drain") {
    out.capacity = CapacityMode::kDrain;
  } else {
    return where + ".canary.capacity " + quote(capacity) + " is not surge or drain";
  }
  int64_t deadline = 600;
  std::string d = str(canary, "progressDeadline");
  if (!d.empty()) {
    auto secs = parseStageDuration(d);
    if (!secs || *secs <= 0)
      return where + ".canary.progressDeadline " + quote(d) + " is not a duration";
    deadline = *secs;
  }
  std::optional<PrometheusAnalysis> defaultAnalysis;
  if (member(canary, "analysis").is_object()) {
    PrometheusAnalysis a;
    if (auto err = decodeAnalysis(member(canary, "analysis"), where + ".canary.analysis", a))
      return err;
    defaultAnalysis = a;
  }
  const json& steps = member(canary, "steps");
  if (steps.is_array()) {
    for (size_t i = 0; i < steps.size(); ++i) {
      std::string w = where + ".canary.steps[" + std::to_string(i) + "]";
      CanaryStep s;
      s.weight = static_cast<int>(integer(steps[i], "weight", 0));
      if (s.weight < 0 || s.weight > 100) return w + ".weight must be 0..100";
      std::string pause = str(steps[i], "pause");
      if (pause == "Indefinite") {
        s.pause = CanaryStep::Pause::kIndefinite;
      } else if (!pause.empty()) {
        auto secs = parseStageDuration(pause);
        if (!secs) return w + ".pause " + quote(pause) + " is not a duration or Indefinite";
        s.pause = CanaryStep::Pause::kDuration;
        s.pauseSeconds = *secs;
      }
      s.progressDeadlineSeconds = deadline;
      std::string sd = str(steps[i], "progressDeadline");
      if (!sd.empty()) {
        auto secs = parseStageDuration(sd);
        if (!secs || *secs <= 0) return w + ".progressDeadline " + quote(sd) + " is not a duration";
        s.progressDeadlineSeconds = *secs;
      }
      s.analysis = defaultAnalysis;
      if (member(steps[i], "analysis").is_object()) {
        PrometheusAnalysis a;
        if (auto err = decodeAnalysis(member(steps[i], "analysis"), w + ".analysis", a)) return err;
        s.analysis = a;
      }
      out.steps.push_back(std::move(s));
    }
  }
  if (out.steps.empty()) {
    // No steps: one step at full weight, still analysed and health-checked.
    CanaryStep s;
    s.weight = 100;
    s.analysis = defaultAnalysis;
    s.progressDeadlineSeconds = deadline;
    out.steps.push_back(s);
  }
  return std::nullopt;
}

int effectiveCount(const CanaryStep& step) {
  if (!step.analysis) return 0;
  if (step.analysis->count > 0) return step.analysis->count;
  if (step.pause == CanaryStep::Pause::kDuration && step.analysis->intervalSeconds > 0)
    return static_cast<int>(
        std::max<int64_t>(1, step.pauseSeconds / step.analysis->intervalSeconds));
  return 1;
}

// ---- replica math ----------------------------------------------------------------------------

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

namespace {

bool podReady(const json& pod) {
  const json& conditions = member(member(pod, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (str(c, "type") == "Ready") return str(c, "status") == "True";
  }
  return false;
}

bool terminating(const json& pod) {
  return !str(member(pod, "metadata"), "deletionTimestamp").empty();
}

}  // namespace

int countReadyPods(const std::vector<json>& pods, const std::string& track,
                   const std::string& release) {
  std::set<std::string> nodesWithTerminating;
  for (const json& p : pods) {
    std::string node = str(member(p, "spec"), "nodeName");
    if (terminating(p) && !node.empty()) nodesWithTerminating.insert(node);
  }
  int n = 0;
  for (const json& p : pods) {
    const json& labels = member(member(p, "metadata"), "labels");
    if (str(labels, kTrackLabel) != track || str(labels, kReleaseLabel) != release) continue;
    if (terminating(p) || !podReady(p)) continue;
    if (nodesWithTerminating.count(str(member(p, "spec"), "nodeName")) != 0) continue;
    ++n;
  }
  return n;
}

// ---- analysis --------------------------------------------------------------------------------

void recordMeasurement(AnalysisCounters& c, const PrometheusAnalysis& a, const Measurement& m) {
  c.lastAtUnix = m.atUnix;
  bool error = !m.error.empty() || !m.value || !std::isfinite(*m.value);
  c.lastWasError = error;
  if (error) {
    ++c.errors;
    ++c.consecutiveErrors;
    return;  // Argo: an error is not a measurement of the metric; Count does not move
  }
  c.consecutiveErrors = 0;
  ++c.count;
  double v = *m.value;
  bool failed = (a.min && v < *a.min) || (a.max && v > *a.max);
  if (failed) {
    ++c.failed;
  } else {
    ++c.successful;
  }
}

AnalysisVerdict assessAnalysis(const AnalysisCounters& c, const PrometheusAnalysis& a, int count,
                               int64_t startUnix) {
  AnalysisVerdict v;
  if (c.failed > a.failureLimit) {
    v.phase = AnalysisPhase::kFailed;
    v.reason = kReasonAnalysisFailed;
    v.message = "failed (" + std::to_string(c.failed) + ") > failureLimit (" +
                std::to_string(a.failureLimit) + ")";
    return v;
  }
  if (c.consecutiveErrors > a.consecutiveErrorLimit) {
    v.phase = AnalysisPhase::kFailed;
    v.reason = kReasonAnalysisError;
    v.message = "consecutiveErrors (" + std::to_string(c.consecutiveErrors) +
                ") > consecutiveErrorLimit (" + std::to_string(a.consecutiveErrorLimit) + ")";
    return v;
  }
  if (c.count >= count) {
    v.phase = AnalysisPhase::kPassed;
    v.message = std::to_string(c.successful) + " of " + std::to_string(c.count) +
                " measurements within bounds (failureLimit " + std::to_string(a.failureLimit) + ")";
    return v;
  }
  if (c.count == 0 && c.errors == 0) {
    v.nextMeasurementAtUnix = startUnix;
  } else {
    v.nextMeasurementAtUnix =
        c.lastAtUnix +
        (c.lastWasError ? std::min(kErrorRetrySeconds, a.intervalSeconds) : a.intervalSeconds);
  }
  v.message = std::to_string(c.count) + " of " + std::to_string(count) + " measurements (" +
              std::to_string(c.failed) + " failed, " + std::to_string(c.consecutiveErrors) +
              " consecutive errors)";
  return v;
}

// ---- GPU capacity ----------------------------------------------------------------------------

GpuCheck gpuPreCheck(const GpuCapacity& capacity, int podsToAdd) {
  GpuCheck out;
  if (capacity.gpusPerPod <= 0 || podsToAdd <= 0) return out;
  int64_t fits = 0, free = 0;
  for (int64_t f : capacity.freePerNode) {
    if (f <= 0) continue;
    free += f;
    fits += f / capacity.gpusPerPod;  // a pod's GPUs must be on one node
  }
  if (fits >= podsToAdd) return out;
  out.go = false;
  out.message = std::to_string(podsToAdd) + " new pod(s) need " +
                std::to_string(capacity.gpusPerPod) + " nvidia.com/gpu each on one node; the " +
                std::to_string(capacity.freePerNode.size()) + " compatible node(s) have " +
                std::to_string(free) + " free GPU(s) in total, room for " + std::to_string(fits) +
                " pod(s)";
  return out;
}

namespace {

int64_t quantity(const json& q) {
  if (q.is_number_integer()) return std::max<int64_t>(0, q.get<int64_t>());
  if (!q.is_string()) return 0;
  const auto& t = q.get_ref<const std::string&>();
  if (t.empty() || t.size() > 12) return 0;
  int64_t n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return 0;  // GPUs are whole devices: "2", never "500m"
    n = n * 10 + (c - '0');
  }
  return n;
}

int64_t containerGpus(const json& c) {
  if (!c.is_object()) return 0;
  const json& res = c.contains("resources") ? c["resources"] : json();
  if (!res.is_object()) return 0;
  for (const char* kind : {"requests", "limits"}) {
    if (res.contains(kind) && res[kind].is_object() && res[kind].contains(kGpuResource))
      return quantity(res[kind][kGpuResource]);
  }
  return 0;
}

}  // namespace

int64_t podGpuRequest(const json& spec) {
  if (!spec.is_object()) return 0;
  int64_t sum = 0, init = 0;
  if (spec.contains("containers") && spec["containers"].is_array()) {
    for (const json& c : spec["containers"]) sum += containerGpus(c);
  }
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (const json& c : spec["initContainers"]) init = std::max(init, containerGpus(c));
  }
  return std::max(sum, init);
}

bool gpuNodeCompatible(const json& node, const std::string& minDriver) {
  if (node.value("/spec/unschedulable"_json_pointer, false)) return false;
  if (quantity(node.value("/status/allocatable"_json_pointer, json::object())
                   .value(kGpuResource, json())) <= 0)
    return false;
  if (minDriver.empty()) return true;
  std::map<std::string, std::string> labels;
  const json nodeLabels = node.value("/metadata/labels"_json_pointer, json::object());
  for (const auto& [k, v] : nodeLabels.items()) {
    if (v.is_string()) labels[k] = v.get<std::string>();
  }
  auto driver = closure::driverFromGfdLabels(labels);
  return driver && closure::driverSatisfies(*driver, minDriver);
}

GpuCapacity gpuCapacityOf(int64_t gpusPerPod, const std::vector<json>& nodes,
                          const std::vector<json>& pods, const std::string& minDriver) {
  GpuCapacity cap;
  cap.gpusPerPod = gpusPerPod;
  for (const json& node : nodes) {
    if (!gpuNodeCompatible(node, minDriver)) continue;
    const std::string name = node.value("/metadata/name"_json_pointer, std::string());
    int64_t free = quantity(
        node.value("/status/allocatable"_json_pointer, json::object()).value(kGpuResource, json()));
    for (const json& p : pods) {
      if (p.value("/spec/nodeName"_json_pointer, std::string()) != name) continue;
      const std::string phase = p.value("/status/phase"_json_pointer, std::string());
      if (phase == "Succeeded" || phase == "Failed") continue;
      free -= podGpuRequest(p.value("spec", json::object()));
    }
    cap.freePerNode.push_back(free);
  }
  return cap;
}

// ---- the decision ----------------------------------------------------------------------------

namespace {

AnalysisCounters countersFrom(const json& a) {
  AnalysisCounters c;
  c.count = static_cast<int>(integer(a, "count"));
  c.successful = static_cast<int>(integer(a, "successful"));
  c.failed = static_cast<int>(integer(a, "failed"));
  c.errors = static_cast<int>(integer(a, "errors"));
  c.consecutiveErrors = static_cast<int>(integer(a, "consecutiveErrors"));
  c.lastAtUnix = timeOf(a, "lastMeasuredAt");
  c.lastWasError = member(a, "lastWasError").is_boolean() && member(a, "lastWasError").get<bool>();
  return c;
}

void countersTo(const AnalysisCounters& c, json& a) {
  a["count"] = c.count;
  a["successful"] = c.successful;
  a["failed"] = c.failed;
  a["errors"] = c.errors;
  a["consecutiveErrors"] = c.consecutiveErrors;
  if (c.lastAtUnix > 0) a["lastMeasuredAt"] = formatRfc3339(c.lastAtUnix);
  a["lastWasError"] = c.lastWasError;
}

struct Planner {
  const CanaryObserved& o;
  CanaryPlan plan;
  json st;  // status.canary being built
  int total = 0;
  bool hasStable = false;

  explicit Planner(const CanaryObserved& observed) : o(observed) {}

  std::string knownGoodRelease() const { return str(member(st, "knownGood"), "release"); }

  void event(const char* type, const std::string& reason, const std::string& message) {
    plan.events.push_back({type, reason, message});
  }

  void startStep(int index) {
    st["step"] = index;
    st["stepStartedAt"] = o.now;
    st.erase("weightReachedAt");
    // Recreated by a step with analysis. Never an empty object: server-side
    // apply of `analysis: {}` over owned fields stores null, which the schema refuses.
    st.erase("analysis");
    const CanaryStep& s = o.spec.steps[index];
    event("Normal", "CanaryStepStarted",
          "step " + std::to_string(index + 1) + "/" + std::to_string(o.spec.steps.size()) +
              ": weight " + std::to_string(s.weight) + "%");
  }

  // Appends the step to `passedSteps`, the evidence that every step ran in
  // order (a restart may repeat a step's last plan, never add a second record).
  void recordPassedStep(int index, const CanaryStep& s) {
    json& passed = st["passedSteps"];
    if (!passed.is_array()) passed = json::array();
    if (!passed.empty() && integer(passed.back(), "step") >= index) return;
    json rec = {{"step", index},
                {"weight", s.weight},
                {"startedAt", str(st, "stepStartedAt")},
                {"weightReachedAt", str(st, "weightReachedAt")},
                {"passedAt", o.now}};
    if (st.contains("promotedBy")) rec["promotedBy"] = st["promotedBy"];
    if (s.analysis) {
      AnalysisCounters c = countersFrom(member(st, "analysis"));
      rec["analysis"] = {{"count", c.count},
                         {"successful", c.successful},
                         {"failed", c.failed},
                         {"errors", c.errors}};
    }
    passed.push_back(std::move(rec));
  }

  void rollBack(const std::string& reason, const std::string& message) {
    st["phase"] = kCanaryRollingBack;
    st["reason"] = reason;
    st["message"] = message;
    st["rollbackStartedAt"] = o.now;
    plan.rollbackReason = reason;
    std::string target = knownGoodRelease();
    std::string to = target.empty() ? "no previous release (prod had none); the canary is removed"
                                    : "stable stays on " + target + " (" +
                                          str(member(st, "knownGood"), "package") + ", " +
                                          str(member(st, "knownGood"), "closureHash") + ")";
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
    plan.message = str(st, "reason") + ": " + str(st, "message");
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
      st["phase"] = kCanaryRolledBack;
      st["finishedAt"] = o.now;
      plan.action = CanaryAction::kRolledBack;
      event("Warning", "RolledBack",
            "canary removed after " + str(st, "reason") +
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
  // pods (`canary`) go. Drain: stable first in full, then the canary. Surge
  // (Argo Rollouts' abort of a basic canary): stable grows first within the
  // surge budget and the canary shrinks only as stable pods become Ready, so N
  // pods stay Ready throughout. Sets plan.replicas; returns what it waits for.
  std::string restoreStableFirst(const TrackObserved& canary, const TrackObserved& stable) {
    if (o.spec.capacity == CapacityMode::kDrain) {
      bool restored = stable.specReplicas == total && stable.readyReplicas >= total;
      plan.replicas = {restored ? 0 : canary.specReplicas, total};
    } else {
      plan.replicas = nextReplicaCounts(total, {0, total}, canary, stable, CapacityMode::kSurge);
    }
    if (o.stablePendingUnschedulable > 0 && o.podsTerminating == 0 && canary.specReplicas > 0 &&
        o.stable.specReplicas >= plan.replicas.stable &&
        plan.replicas.canary == canary.specReplicas) {
      // The scheduler found no room for a stable pod (the cluster is full:
      // the GPUs stable gave up are the canary's now). Waiting would leave a
      // failed canary serving; trade one canary pod for one stable pod, the
      // drain rule run backwards (N-1 pods serve while the trade happens).
      // The next trade waits until no pod of the model is terminating.
      plan.replicas.canary = canary.specReplicas - 1;
      return std::to_string(o.stablePendingUnschedulable) +
             " stable pod(s) unschedulable: removing one canary pod so stable can take its GPU (" +
             std::to_string(stable.readyReplicas) + "/" + std::to_string(total) + " stable Ready)";
    }
    return "waiting for " + std::to_string(total) + " Ready stable pods (" +
           std::to_string(stable.readyReplicas) + " now) before removing the canary";
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
    // The first step's clock starts when its pods can.
    st["stepStartedAt"] = o.now;
    plan.reason = kReasonCanaryProgressing;
    plan.message = "step 1/" + std::to_string(o.spec.steps.size()) + " starts once the " +
                   std::to_string(o.displaced.specReplicas) + " canary pod(s) of " +
                   o.displacedRelease + " (displaced) are gone; stable " + knownGoodRelease() +
                   " first: " + waits;
    st["reason"] = plan.reason;
    st["message"] = plan.message;
    plan.requeueAfterSeconds = kPodPollSeconds;
  }

  void promoting() {
    plan.action = CanaryAction::kPromoting;
    plan.reason = kReasonPromoting;
    std::string sub = str(st, "promotion");
    if (sub.empty() || sub == kPromotionFullWeight) {
      st["promotion"] = kPromotionFullWeight;
      plan.stableRelease = hasStable ? knownGoodRelease() : o.release;
      ReplicaCounts target{total, 0};
      // The stable Deployment already carrying this release means the handover
      // started and its status write was lost: continue it, never flip back.
      bool handedOver = o.stableRelease == o.release;
      if (handedOver || (o.canary.specReplicas == total && o.canary.readyReplicas >= total &&
                         o.stable.specReplicas == 0 && o.stable.readyReplicas == 0)) {
        st["promotion"] = kPromotionHandover;
        sub = kPromotionHandover;
      } else {
        plan.replicas = nextReplicaCounts(total, target, o.canary, o.stable, o.spec.capacity);
        plan.message = "moving all replicas to the canary (" +
                       std::to_string(o.canary.readyReplicas) + "/" + std::to_string(total) +
                       " Ready) before the stable Deployment takes " + o.release;
        plan.requeueAfterSeconds = kPodPollSeconds;
        return;
      }
    }
    // Handover: the stable Deployment (no pods) carries this release; grow it
    // and drain the canary with the same one-pod-at-a-time rule.
    plan.stableRelease = o.release;
    TrackObserved stable = o.stable;
    if (o.stableRelease != o.release) stable.readyReplicas = 0;  // template not applied yet
    ReplicaCounts target{0, total};
    if (stable.specReplicas == total && stable.readyReplicas >= total &&
        o.canary.specReplicas == 0) {
      st["phase"] = kCanaryPromoted;
      st["finishedAt"] = o.now;
      st.erase("promotion");
      plan.action = CanaryAction::kPromoted;
      plan.reason = kReasonPromoted;
      plan.message = "prod runs " + o.package + " on closure " + o.closureHash;
      plan.replicas = {0, total};
      plan.supersede = knownGoodRelease() == o.release ? "" : knownGoodRelease();
      event("Normal", "Promoted", plan.message);
      return;
    }
    plan.replicas = nextReplicaCounts(total, target, o.canary, stable, o.spec.capacity);
    plan.message = "stable Deployment takes " + o.release + " (" +
                   std::to_string(stable.readyReplicas) + "/" + std::to_string(total) + " Ready)";
    plan.requeueAfterSeconds = kPodPollSeconds;
  }

  void startPromotion(const std::string& why) {
    st["phase"] = kCanaryPromoting;
    st["promotion"] = kPromotionFullWeight;
    event("Normal", "Promoting", why);
    promoting();
  }

  bool pastDeadline(const CanaryStep& s) const {
    return o.nowUnix - timeOf(st, "stepStartedAt") > s.progressDeadlineSeconds;
  }

  // One step of the progression; returns true when the step passed and the
  // caller should plan the next one in the same pass.
  bool progressStep() {
    int index = static_cast<int>(integer(st, "step"));
    const CanaryStep& s = o.spec.steps[index];
    std::string stepName =
        "step " + std::to_string(index + 1) + "/" + std::to_string(o.spec.steps.size());
    plan.action = CanaryAction::kProgress;
    plan.stableRelease = knownGoodRelease();

    ReplicaCounts target = targetReplicaCounts(total, s.weight, o.spec.capacity);
    if (!hasStable) target = {targetReplicaCounts(total, s.weight, CapacityMode::kDrain).canary, 0};
    ReplicaCounts next = nextReplicaCounts(total, target, o.canary, o.stable, o.spec.capacity);

    // GPU pre-check before adding canary pods.
    if (next.canary > o.canary.specReplicas && o.gpu) {
      GpuCheck check = gpuPreCheck(*o.gpu, next.canary - o.canary.specReplicas);
      if (!check.go) {
        if (pastDeadline(s)) {
          rollBack(kReasonInsufficientGPUCapacity,
                   stepName + " could not add canary pods within its progress deadline (" +
                       std::to_string(s.progressDeadlineSeconds) + "s): " + check.message);
          return false;
        }
        next.canary = o.canary.specReplicas;
        plan.action = CanaryAction::kWait;
        plan.reason = kReasonWaitingForGPUCapacity;
        plan.message = stepName + " waits for GPU capacity: " + check.message;
        plan.replicas = next;
        if (str(st, "reason") != kReasonWaitingForGPUCapacity)
          event("Warning", kReasonWaitingForGPUCapacity, plan.message);
        st["reason"] = kReasonWaitingForGPUCapacity;
        st["message"] = plan.message;
        plan.requeueAfterSeconds = std::max<int64_t>(
            1, std::min(kPodPollSeconds * 2,
                        timeOf(st, "stepStartedAt") + s.progressDeadlineSeconds + 1 - o.nowUnix));
        return false;
      }
    }
    plan.replicas = next;

    bool reached =
        o.canary.specReplicas == target.canary && o.stable.specReplicas == target.stable &&
        o.canary.readyReplicas >= target.canary && o.stable.readyReplicas >= target.stable;
    if (!reached) {
      if (pastDeadline(s)) {
        if (o.canaryPendingUnschedulable > 0) {
          rollBack(kReasonInsufficientGPUCapacity,
                   std::to_string(o.canaryPendingUnschedulable) +
                       " canary pod(s) still Pending (unschedulable) after the progress deadline "
                       "of " +
                       stepName + " (" + std::to_string(s.progressDeadlineSeconds) + "s)");
        } else {
          rollBack(kReasonProgressDeadlineExceeded,
                   stepName + ": " + std::to_string(o.canary.readyReplicas) + " of " +
                       std::to_string(target.canary) + " canary pods Ready after " +
                       std::to_string(s.progressDeadlineSeconds) + "s");
        }
        return false;
      }
      plan.reason = kReasonCanaryProgressing;
      plan.message = stepName + ": scaling to weight " + std::to_string(s.weight) + "% (canary " +
                     std::to_string(o.canary.readyReplicas) + "/" + std::to_string(target.canary) +
                     " Ready, stable " + std::to_string(o.stable.readyReplicas) + "/" +
                     std::to_string(target.stable) + ")";
      st["reason"] = kReasonCanaryProgressing;
      st["message"] = plan.message;
      plan.requeueAfterSeconds = std::max<int64_t>(
          1, std::min(kPodPollSeconds,
                      timeOf(st, "stepStartedAt") + s.progressDeadlineSeconds + 1 - o.nowUnix));
      return false;
    }
    if (!st.contains("weightReachedAt")) st["weightReachedAt"] = o.now;
    int64_t reachedAt = timeOf(st, "weightReachedAt");

    // Analysis (measured only once the weight is reached, i.e. on Ready canary pods).
    std::optional<AnalysisVerdict> verdict;
    if (s.analysis) {
      json& a = st["analysis"];
      if (!a.is_object()) a = json::object();
      AnalysisCounters c = countersFrom(a);
      int count = effectiveCount(s);
      verdict = assessAnalysis(c, *s.analysis, count, reachedAt);
      if (verdict->phase == AnalysisPhase::kRunning && o.measurement &&
          o.measurement->atUnix >= verdict->nextMeasurementAtUnix) {
        recordMeasurement(c, *s.analysis, *o.measurement);
        countersTo(c, a);
        json m = {{"at", formatRfc3339(o.measurement->atUnix)}};
        if (o.measurement->error.empty() && o.measurement->value) {
          m["value"] = *o.measurement->value;
        } else {
          m["error"] = o.measurement->error.empty() ? "no value" : o.measurement->error;
        }
        json& recent = a["measurements"];
        if (!recent.is_array()) recent = json::array();
        recent.push_back(m);
        while (recent.size() > kKeptMeasurements) recent.erase(recent.begin());
        verdict = assessAnalysis(c, *s.analysis, count, reachedAt);
      }
      a["phase"] = verdict->phase == AnalysisPhase::kRunning  ? "Running"
                   : verdict->phase == AnalysisPhase::kPassed ? "Passed"
                                                              : "Failed";
      a["message"] = verdict->message;
      if (verdict->phase == AnalysisPhase::kFailed) {
        rollBack(verdict->reason, stepName + " analysis: " + verdict->message);
        return false;
      }
    }

    // Pause.
    bool promoted = !o.promoteStepBy.empty();
    if (promoted && !st.contains("promotedBy")) st["promotedBy"] = o.promoteStepBy;
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
      st["reason"] = plan.reason;
      st["message"] = plan.message;
      return false;
    }

    // The step passed.
    event("Normal", "CanaryStepPassed",
          stepName + " passed at weight " + std::to_string(s.weight) + "%" +
              (verdict ? " (" + verdict->message + ")" : std::string()));
    recordPassedStep(index, s);
    st.erase("promotedBy");
    if (index + 1 < static_cast<int>(o.spec.steps.size())) {
      startStep(index + 1);
      return true;
    }
    startPromotion("every canary step passed");
    return false;
  }

  void run() {
    total = o.spec.replicas;
    hasStable = !knownGoodRelease().empty();
    std::string phase = str(st, "phase");
    if (phase == kCanaryPromoted) {
      plan.action = CanaryAction::kPromoted;
      plan.reason = kReasonPromoted;
      plan.message = "prod runs " + o.package + " on closure " + o.closureHash;
      plan.replicas = {0, total};
      plan.stableRelease = o.release;
      return;
    }
    if (phase == kCanaryRolledBack) {
      plan.action = CanaryAction::kRolledBack;
      plan.reason = str(st, "reason");
      plan.message = str(st, "message");
      plan.replicas = {0, hasStable ? total : 0};
      plan.stableRelease = knownGoodRelease();
      return;
    }
    if (phase == kCanaryRollingBack) return rollingBack();
    // Abort wins over everything but a finished rollback, even mid-promotion.
    if (!o.abortBy.empty()) {
      st["abortedBy"] = o.abortBy;
      return rollBack(kReasonAborted, "aborted by " + o.abortBy);
    }
    if (phase == kCanaryPromoting) return promoting();
    if (displacing()) return drainDisplaced();

    // Progressing: failures that need no analysis come first.
    if (!o.admissionRefusals.empty()) {
      return rollBack(kReasonAdmissionRefused,
                      "a canary pod was refused by admission: " + o.admissionRefusals.front());
    }
    if (o.canaryRestarts > 0) {
      return rollBack(kReasonCanaryRestarting,
                      std::to_string(o.canaryRestarts) + " container restart(s) in canary pods");
    }
    if (!o.promoteFullBy.empty()) {
      st["promotedBy"] = o.promoteFullBy;
      return startPromotion("promoted by " + o.promoteFullBy +
                            " (--full: remaining steps skipped)");
    }
    // Each pass may finish a step and plan the next one; bounded by the step count.
    for (size_t guard = 0; guard <= o.spec.steps.size(); ++guard) {
      if (!progressStep()) return;
    }
  }
};

}  // namespace

CanaryPlan planCanary(const CanaryObserved& o) {
  Planner p(o);
  p.st = o.previous.is_object() ? o.previous : json::object();
  if (str(p.st, "phase").empty()) {
    p.st["phase"] = kCanaryProgressing;
    p.st["capacity"] = capacityModeName(o.spec.capacity);
    p.st["startedAt"] = o.now;
    // The rollback target is fixed when the canary starts: later promotions of
    // other releases do not change what this one falls back to.
    if (o.knownGood) {
      p.st["knownGood"] = {{"release", o.knownGood->release},
                           {"package", o.knownGood->package},
                           {"closureHash", o.knownGood->closureHash}};
    }
    p.startStep(0);
  }
  int step = static_cast<int>(integer(p.st, "step"));
  if (step < 0 || step >= static_cast<int>(o.spec.steps.size())) {
    // The spec is immutable in prod; a status from another spec is repaired, not trusted.
    p.st["step"] = std::clamp(step, 0, static_cast<int>(o.spec.steps.size()) - 1);
  }
  p.run();
  p.plan.status = std::move(p.st);
  return std::move(p.plan);
}

// ---- desired objects -------------------------------------------------------------------------

namespace {

json modelOwnerRefs(const ServingObjectsInput& in) {
  if (in.anchorUid.empty()) return json::array();
  // Not `controller`: a ConfigMap has no controller; GC still deletes the
  // serving objects when the anchor goes (`lockstep model delete`).
  return json::array({{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"name", modelAnchorName(in.model)},
                       {"uid", in.anchorUid}}});
}

json servingSelector(const std::string& model) {
  return {{kModelLabel, model}, {"app.kubernetes.io/component", "serving"}};
}

}  // namespace

std::string modelAnchorName(const std::string& model) { return "lockstep-model-" + model; }

std::string servingDeploymentName(const std::string& model, const std::string& track) {
  return model + "-" + track;
}

json buildModelService(const ServingObjectsInput& in) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", in.model},
            {"namespace", in.ns},
            {"labels", {{kModelLabel, in.model}, {"app.kubernetes.io/managed-by", "lockstep"}}},
            {"ownerReferences", modelOwnerRefs(in)}}},
          {"spec",
           {{"selector", servingSelector(in.model)},
            {"ports", json::array({{{"name", "http"},
                                    {"port", in.port},
                                    {"targetPort", in.port},
                                    {"protocol", "TCP"}}})}}}};
}

BuiltDeployment buildServingDeployment(const ServingObjectsInput& in, const std::string& track,
                                       const ServingRelease& r, int replicas) {
  BuiltDeployment out;
  json tmpl = r.podTemplate.is_object() ? r.podTemplate : json::object();
  RuntimePod pod;
  pod.owner = "the serving template of release " + r.release;
  pod.runtimeEnv = r.runtimeEnv;
  pod.runtimeImage = r.runtimeImage;
  pod.closureHash = r.closureHash;
  pod.package = r.package;
  const json selectorLabels = servingSelector(in.model);
  for (const auto& [k, v] : selectorLabels.items()) pod.labels[k] = v.get<std::string>();
  pod.labels[kTrackLabel] = track;
  pod.labels[kReleaseLabel] = r.release;
  pod.env = {
      {"LOCKSTEP_RELEASE", r.release}, {"LOCKSTEP_MODEL", in.model}, {"LOCKSTEP_TRACK", track}};
  pod.mount = in.mount;
  pod.fetchCommand = in.fetchCommand;
  if (auto err = prepareRuntimePod(tmpl, pod)) {
    out.error = *err;
    return out;
  }
  bool surge = in.capacity == CapacityMode::kSurge;
  json selector = servingSelector(in.model);
  selector[kTrackLabel] = track;
  out.deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata",
       {{"name", servingDeploymentName(in.model, track)},
        {"namespace", in.ns},
        {"labels",
         {{kModelLabel, in.model},
          {kTrackLabel, track},
          {kReleaseLabel, r.release},
          {"app.kubernetes.io/managed-by", "lockstep"}}},
        {"ownerReferences", modelOwnerRefs(in)}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", selector}}},
        // The Deployment's own rolling update follows the same capacity rule.
        {"strategy",
         {{"type", "RollingUpdate"},
          {"rollingUpdate", {{"maxSurge", surge ? 1 : 0}, {"maxUnavailable", surge ? 0 : 1}}}}},
        {"template", tmpl}}}};
  return out;
}

}  // namespace lockstep::controllers
