#include "controllers/modelrelease/release_plan.h"

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/conditions.h"

#include <openssl/sha.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "operator/kube/clock.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

using api::v1alpha1::kConditionStale;
using api::v1alpha1::kReasonClosureHashChanged;
using api::v1alpha1::kReasonClosureHashMatches;
using kube::Condition;
using kube::conditionTrue;
using kube::findCondition;
using kube::setCondition;
using nlohmann::json;

const json kEmptyObject = json::object();
const json kEmptyArray = json::array();

const json& member(const json& o, const char* key, const json& fallback = kEmptyObject) {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  return it == o.end() ? fallback : *it;
}

std::string str(const json& o, const char* key) {
  const json& v = member(o, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

std::string annotation(const json& o, const std::string& key) {
  return str(member(member(o, "metadata"), "annotations"), key.c_str());
}

std::string formatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// ---- the spec, decoded once ------------------------------------------------

struct MetricThreshold {
  std::string name;
  std::optional<double> min, max;
};

struct StageSpec {
  std::string name;
  bool manual = false;
  api::v1alpha1::ApprovalPolicy approval;
  bool gate = false;
  bool serving = false;
  json podTemplate;  // gate.template
  std::vector<MetricThreshold> metrics;
  int64_t timeoutSeconds = 1800;
};

struct ReleaseSpec {
  std::string name, ns, model, package, runtimeEnv, closureHash;
  int64_t generation = 0;
  std::string uid;
  std::vector<StageSpec> stages;
};

// Decodes what the planner needs; the schema and webhook already checked the
// shape, so a failure here is a spec the API server should not have accepted.
std::optional<std::string> decodeSpec(const json& release, ReleaseSpec& out) {
  const json& meta = member(release, "metadata");
  out.name = str(meta, "name");
  out.ns = str(meta, "namespace");
  out.uid = str(meta, "uid");
  out.generation = member(meta, "generation").is_number_integer()
                       ? member(meta, "generation").get<int64_t>()
                       : 0;
  const json& spec = member(release, "spec");
  out.model = str(spec, "model");
  out.package = str(spec, "package");
  out.runtimeEnv = str(member(spec, "runtimeEnvRef"), "name");
  out.closureHash = str(spec, "closureHash");
  const json& stages = member(spec, "stages", kEmptyArray);
  if (!stages.is_array() || stages.empty()) return "spec.stages is empty";
  for (size_t i = 0; i < stages.size(); ++i) {
    const json& s = stages[i];
    std::string where = "spec.stages[" + std::to_string(i) + "]";
    StageSpec st;
    st.name = str(s, "name");
    if (st.name.empty()) return where + ".name is empty";
    if (auto err = api::v1alpha1::decodeApprovalPolicy(s, where, st.approval)) return *err;
    st.manual = st.approval.manual;
    const json& gate = member(s, "gate", json());
    const json& serving = member(s, "serving", json());
    st.gate = gate.is_object();
    st.serving = serving.is_object();
    if (st.gate) {
      st.podTemplate = member(gate, "template");
      std::string timeout = str(gate, "timeout");
      if (!timeout.empty()) {
        auto secs = parseStageDuration(timeout);
        if (!secs || *secs <= 0)
          return where + ".gate.timeout " + quote(timeout) + " is not a duration";
        st.timeoutSeconds = *secs;
      }
      const json& metrics = member(gate, "metrics", kEmptyArray);
      for (size_t m = 0; metrics.is_array() && m < metrics.size(); ++m) {
        MetricThreshold t;
        t.name = str(metrics[m], "name");
        const json& mn = member(metrics[m], "min", json());
        const json& mx = member(metrics[m], "max", json());
        if (mn.is_number()) t.min = mn.get<double>();
        if (mx.is_number()) t.max = mx.get<double>();
        st.metrics.push_back(std::move(t));
      }
    }
    out.stages.push_back(std::move(st));
  }
  return std::nullopt;
}

// Approvals of a Manual stage (api/v1alpha1/approval.h, docs/modelrelease.md
// "Approvals"): distinct users, never the recorded creator unless the stage
// allows it. Recorded with the generation (the content) they were acted on for.
api::v1alpha1::ApprovalDecision stageApproval(const StageSpec& s, const json& release) {
  return api::v1alpha1::decideApproval(s.approval, api::v1alpha1::stageApprovals(release, s.name),
                                       api::v1alpha1::releaseCreator(release));
}

void recordApprovers(json& st, const api::v1alpha1::ApprovalDecision& d, int64_t generation) {
  std::string by;
  for (const std::string& u : d.approvers) by += (by.empty() ? "" : ", ") + u;
  st["approvedBy"] = by;
  st["approvers"] = d.approvers;
  st["approvedGeneration"] = generation;
}

// ---- the RuntimeEnv, as admission sees it ------------------------------------

struct RuntimeEnvState {
  bool found = false;
  bool ready = false;  // Ready=True for its current generation, with a hash
  std::string closureHash, image;
  std::string notReadyMessage;
};

RuntimeEnvState runtimeEnvState(const std::optional<json>& rte) {
  RuntimeEnvState s;
  if (!rte) return s;
  s.found = true;
  const json& status = member(*rte, "status");
  s.closureHash = str(status, "closureHash");
  s.image = str(member(*rte, "spec"), "image");
  int64_t gen = member(member(*rte, "metadata"), "generation").is_number_integer()
                    ? member(member(*rte, "metadata"), "generation").get<int64_t>()
                    : 0;
  int64_t observed = member(status, "observedGeneration").is_number_integer()
                         ? member(status, "observedGeneration").get<int64_t>()
                         : -1;
  bool readyTrue = conditionTrue(member(status, "conditions", kEmptyArray), "Ready");
  s.ready = readyTrue && observed == gen && !s.closureHash.empty();
  if (!s.ready) {
    auto ready = findCondition(member(status, "conditions", kEmptyArray), "Ready");
    s.notReadyMessage = observed != gen ? "its status is not for generation " + std::to_string(gen)
                        : ready ? ready->value("reason", "") + ": " + ready->value("message", "")
                                : "it has no Ready condition yet";
  }
  return s;
}

// ---- Jobs and their pods ---------------------------------------------------

const json* findByName(const std::vector<json>& objects, const std::string& name) {
  for (const json& o : objects) {
    if (str(member(o, "metadata"), "name") == name) return &o;
  }
  return nullptr;
}

std::optional<json> jobCondition(const json& job, const std::string& type) {
  return findCondition(member(member(job, "status"), "conditions", kEmptyArray), type);
}

bool jobConditionTrue(const json& job, const std::string& type) {
  auto c = jobCondition(job, type);
  return c && c->value("status", "") == "True";
}

// The pods of `jobName` (label batch.kubernetes.io/job-name, or job-name).
std::vector<const json*> podsOfJob(const std::vector<json>& pods, const std::string& jobName) {
  std::vector<const json*> out;
  for (const json& p : pods) {
    const json& labels = member(member(p, "metadata"), "labels");
    if (str(labels, "batch.kubernetes.io/job-name") == jobName ||
        str(labels, "job-name") == jobName)
      out.push_back(&p);
  }
  return out;
}

// The terminated state of `container` in `pod`, or nullptr.
const json* terminatedState(const json& pod, const std::string& container) {
  const json& statuses = member(member(pod, "status"), "containerStatuses", kEmptyArray);
  if (!statuses.is_array()) return nullptr;
  for (const json& cs : statuses) {
    if (str(cs, "name") != container) continue;
    const json& t = member(member(cs, "state"), "terminated", json());
    return t.is_object() ? &t : nullptr;
  }
  return nullptr;
}

std::string mainContainerOf(const json& job) {
  const json& containers =
      member(member(member(member(job, "spec"), "template"), "spec"), "containers", kEmptyArray);
  if (!containers.is_array() || containers.empty()) return "";
  return str(containers[0], "name");
}

// The outcome of checking a gate's report against its thresholds.
struct GateVerdict {
  bool passed = false;
  std::string message;
  json metrics = json::object();
};

GateVerdict checkMetrics(const StageSpec& stage, const std::string& container,
                         const std::string& text) {
  GateVerdict v;
  std::string where = "termination message of container " + quote(container);
  if (text.size() > kMaxTerminationMessage) {
    v.message = where + " is " + std::to_string(text.size()) + " bytes; at most " +
                std::to_string(kMaxTerminationMessage) + " are allowed";
    return v;
  }
  bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) {
    if (stage.metrics.empty()) {
      v.passed = true;
      v.message = "Job completed; no metrics required";
      return v;
    }
    v.message = where + " is empty; expected a JSON object with " + quote(stage.metrics[0].name);
    return v;
  }
  json report = json::parse(text, nullptr, false);
  if (report.is_discarded() || !report.is_object()) {
    std::string shown = text.size() > 80 ? text.substr(0, 80) + "…" : text;
    v.message = where + " is not a JSON object: " + quote(shown);
    return v;
  }
  for (const auto& [k, val] : report.items()) {
    if (val.is_number() && std::isfinite(val.get<double>())) v.metrics[k] = val;
  }
  std::vector<std::string> failures, passes;
  for (const MetricThreshold& t : stage.metrics) {
    if (!report.contains(t.name)) {
      failures.push_back("metric " + quote(t.name) + " is missing from the " + where);
      continue;
    }
    const json& val = report[t.name];
    if (!val.is_number() || !std::isfinite(val.get<double>())) {
      failures.push_back("metric " + quote(t.name) + " is " + val.dump() + ", not a number");
      continue;
    }
    double x = val.get<double>();
    if (t.min && x < *t.min) {
      failures.push_back("metric " + quote(t.name) + " is " + formatNumber(x) +
                         ", below the minimum " + formatNumber(*t.min));
    } else if (t.max && x > *t.max) {
      failures.push_back("metric " + quote(t.name) + " is " + formatNumber(x) +
                         ", above the maximum " + formatNumber(*t.max));
    } else {
      std::string bound = t.min ? ">= " + formatNumber(*t.min) : "";
      if (t.max) bound += std::string(bound.empty() ? "" : ", ") + "<= " + formatNumber(*t.max);
      passes.push_back(t.name + " " + formatNumber(x) + " " + bound);
    }
  }
  std::string joined;
  for (const auto& s : failures.empty() ? passes : failures)
    joined += (joined.empty() ? "" : "; ") + s;
  v.passed = failures.empty();
  v.message = v.passed ? (joined.empty() ? "Job completed" : joined) : joined;
  return v;
}

// ---- the Job of a gate stage -----------------------------------------------

struct BuiltJob {
  json job;
  std::string error;  // non-empty: the template cannot run
};

BuiltJob buildGateJob(const ReleaseSpec& r, const StageSpec& s, const RuntimeEnvState& env,
                      const ReleaseObserved& o, const std::string& jobName, int attempt) {
  BuiltJob out;
  json tmpl = s.podTemplate.is_object() ? s.podTemplate : json::object();
  RuntimePod pod;
  pod.owner = "stage " + quote(s.name);
  pod.runtimeEnv = r.runtimeEnv;
  pod.runtimeImage = env.image;
  pod.closureHash = env.closureHash;
  pod.package = r.package;
  pod.labels = {
      {kReleaseLabel, r.name}, {"lockstep.dev/stage", s.name}, {"lockstep.dev/model", r.model}};
  pod.env = {{"LOCKSTEP_RELEASE", r.name}, {"LOCKSTEP_STAGE", s.name}, {"LOCKSTEP_MODEL", r.model}};
  pod.mount = o.mount;
  pod.fetchCommand = o.fetchCommand;
  if (auto err = prepareRuntimePod(tmpl, pod)) {
    out.error = *err;
    return out;
  }
  tmpl["spec"]["restartPolicy"] = "Never";

  json jobLabels = {{"lockstep.dev/release", r.name},
                    {"lockstep.dev/stage", s.name},
                    {"lockstep.dev/model", r.model}};
  out.job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", jobName},
        {"namespace", r.ns},
        {"labels", jobLabels},
        {"annotations", {{"lockstep.dev/attempt", std::to_string(attempt)}}},
        {"ownerReferences", json::array({{{"apiVersion", "lockstep.dev/v1alpha1"},
                                          {"kind", "ModelRelease"},
                                          {"name", r.name},
                                          {"uid", r.uid},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}})}}},
      {"spec",
       {{"backoffLimit", 0}, {"activeDeadlineSeconds", s.timeoutSeconds}, {"template", tmpl}}}};
  return out;
}

// How a gate Job (as created by buildGateJob) mounts the package.
std::string jobMount(const json& job) {
  const json& volumes =
      member(member(member(member(job, "spec"), "template"), "spec"), "volumes", kEmptyArray);
  for (const json& v : volumes.is_array() ? volumes : kEmptyArray) {
    if (str(v, "name") == kPackageVolume && member(v, "image", json()).is_object())
      return "ImageVolume";
  }
  return "InitContainer";
}

// ---- status helpers ---------------------------------------------------------

bool isTerminalPhase(const std::string& p) {
  return p == kPhaseValidated || p == kPhaseFailed || p == "Promoted" || p == "RolledBack" ||
         p == "Superseded";
}

json& stageStatus(json& stages, const std::string& name) {
  for (json& s : stages) {
    if (s.value("name", "") == name) return s;
  }
  stages.push_back({{"name", name}, {"phase", "Pending"}});
  return stages.back();
}

double durationOf(const json& st, int64_t nowUnix) {
  auto start = parseRfc3339(st.value("startedAt", ""));
  if (!start) return 0;
  auto end = parseRfc3339(st.value("finishedAt", ""));
  return static_cast<double>(end.value_or(nowUnix) - *start);
}

// Summary of the plan, turned into conditions at the end.
struct Summary {
  std::string phase = kPhasePending;
  std::string readyReason, readyMessage;
  bool ready = false;
  bool reconciling = false;
  std::string stalledReason, stalledMessage;  // empty: not stalled
};

// The revision before `revision` ("" when there is none or it is not a number).
std::string previousRevision(const std::string& revision) {
  if (revision.empty() || revision.size() > 18) return "";
  int64_t n = 0;
  for (char c : revision) {
    if (c < '0' || c > '9') return "";
    n = n * 10 + (c - '0');
  }
  return n > 0 ? std::to_string(n - 1) : "";
}

}  // namespace

std::optional<int64_t> parseStageDuration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > 1'000'000'000) return std::nullopt;
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start || i == text.size()) return std::nullopt;
    char unit = text[i++];
    int64_t mult = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
    if (mult == 0) return std::nullopt;
    total += n * mult;
    if (total > 366LL * 24 * 3600) return std::nullopt;
  }
  return total;
}

std::optional<int64_t> parseRfc3339(const std::string& text) {
  kube::Clock::WallTime t;
  if (!kube::parseTime(text, &t)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::string gateJobName(const std::string& release, const std::string& stage, int attempt) {
  std::string full = release + "-" + stage + "-" + std::to_string(attempt);
  if (full.size() <= 63) return full;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(full.data()), full.size(), digest);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", digest[0], digest[1], digest[2], digest[3]);
  std::string prefix = full.substr(0, 63 - 9);
  while (!prefix.empty() && (prefix.back() == '-' || prefix.back() == '.')) prefix.pop_back();
  return prefix + "-" + hex;
}

ReleasePlan planRelease(const ReleaseObserved& o) {
  ReleasePlan plan;
  const json& prevStatus = member(o.release, "status");
  json status = prevStatus.is_object() ? prevStatus : json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();

  ReleaseSpec r;
  auto specError = decodeSpec(o.release, r);
  status["observedGeneration"] = r.generation;
  json& stages = status["stages"];
  if (!stages.is_array()) stages = json::array();

  Summary sum;
  std::string prevPhase = str(prevStatus, "phase");
  sum.phase = prevPhase.empty() ? kPhasePending : prevPhase;

  // Events for stage transitions are derived from the phases before and after.
  std::map<std::string, std::string> phasesBefore;
  for (const json& s : stages) phasesBefore[s.value("name", "")] = s.value("phase", "Pending");

  auto setConditions = [&] {
    status["phase"] = sum.phase;
    setCondition(conditions,
                 {"Ready", sum.ready ? "True" : "False", sum.readyReason, sum.readyMessage},
                 r.generation, o.now);
    setCondition(conditions,
                 {"Reconciling", sum.reconciling ? "True" : "False",
                  sum.reconciling ? sum.readyReason : "Idle",
                  sum.reconciling ? sum.readyMessage : "nothing in progress"},
                 r.generation, o.now);
    bool stalled = !sum.stalledReason.empty();
    setCondition(
        conditions,
        {"Stalled", stalled ? "True" : "False", stalled ? sum.stalledReason : "Progressing",
         stalled ? sum.stalledMessage : "the release can make progress"},
        r.generation, o.now);
  };
  auto finish = [&] {
    setConditions();
    // Stage transition events, in stage order.
    for (const json& s : stages) {
      std::string name = s.value("name", "");
      std::string before = phasesBefore.count(name) ? phasesBefore[name] : "Pending";
      std::string after = s.value("phase", "Pending");
      if (before == after) continue;
      std::string msg = s.value("message", "");
      if (after == kStageRunning) {
        plan.events.push_back({"Normal", "StageStarted",
                               "stage " + quote(name) + ": started Job " + s.value("jobName", "")});
      } else if (after == kStageWaitingForApproval) {
        plan.events.push_back({"Normal", "WaitingForApproval",
                               "stage " + quote(name) + " is waiting for manual approval"});
      } else if (after == kStageSucceeded) {
        plan.events.push_back({"Normal", "StageSucceeded", "stage " + quote(name) + ": " + msg});
      } else if (after == kStageFailed) {
        plan.events.push_back({"Warning", "StageFailed", "stage " + quote(name) + ": " + msg});
      }
    }
    if (sum.phase != prevPhase && sum.phase == kPhaseValidated) {
      plan.events.push_back({"Normal", "Validated", "every gate passed for " + r.package});
    }
    plan.statusChanged = status != prevStatus;
    plan.status = std::move(status);
    return plan;
  };

  if (specError) {
    sum.phase = kPhaseFailed;
    sum.readyReason = sum.stalledReason = kReasonInvalidSpec;
    sum.readyMessage = sum.stalledMessage = *specError;
    return finish();
  }
  for (const StageSpec& s : r.stages) stageStatus(stages, s.name);

  // Manual rollback (`lockstep model rollback`, docs/rollouts.md): a release
  // that was promoted once, annotated rollback.lockstep.dev/<the model's
  // current prod revision>, takes the stable track back without re-running any
  // gate, unless its runtime has moved on or another release is in canary. A release the
  // anchor names as promoted again (a rollback whose status write was lost) is
  // Promoted again.
  if (str(member(prevStatus, "canary"), "phase") == kPhasePromoted &&
      (prevPhase == kPhaseSuperseded || prevPhase == kPhasePromoted)) {
    const std::string from = o.promotedRelease;
    const std::string by =
        from.empty() || from == r.name || o.modelRevision.empty()
            ? std::string()
            : annotation(o.release, std::string(kRollbackAnnotationPrefix) + o.modelRevision);
    const bool restoredBefore = prevPhase == kPhaseSuperseded && from == r.name;
    if (!by.empty() || restoredBefore) {
      RuntimeEnvState env = runtimeEnvState(o.runtimeEnv);
      std::string refusal;
      if (!by.empty() && !o.canaryRelease.empty()) {
        refusal = "release " + quote(o.canaryRelease) + " is in canary on model " + quote(r.model) +
                  "; abort it first";
      } else if (!by.empty() && (!env.ready || env.closureHash != r.closureHash)) {
        refusal =
            !env.found ? "RuntimeEnv " + quote(r.runtimeEnv) + " does not exist"
            : !env.ready
                ? "RuntimeEnv " + quote(r.runtimeEnv) + " is not Ready: " + env.notReadyMessage
                : "RuntimeEnv " + quote(r.runtimeEnv) + " now resolves to " + env.closureHash +
                      ", not the " + r.closureHash + " this release was validated on";
      }
      json rollback = member(prevStatus, "rollback", json::object());
      if (!refusal.empty()) {
        json refused = {{"from", from},
                        {"requestedBy", by},
                        {"revision", o.modelRevision},
                        {"refused", refusal}};
        if (rollback != refused) {
          plan.events.push_back({"Warning", kReasonRollbackRefused,
                                 "rollback of model " + quote(r.model) + " from " + quote(from) +
                                     " refused: " + refusal});
        }
        status["rollback"] = refused;
      } else {
        if (by.empty() && rollback.empty() && !o.rollbackFrom.empty()) {
          // The rollback ran (the anchor moved to this release) but its status
          // write was lost: re-derive the record from the anchor and the request.
          const std::string spent = previousRevision(o.modelRevision);
          const std::string requester =
              spent.empty() ? std::string()
                            : annotation(o.release, std::string(kRollbackAnnotationPrefix) + spent);
          if (!requester.empty()) {
            rollback = {{"from", o.rollbackFrom},
                        {"requestedBy", requester},
                        {"revision", spent},
                        {"at", o.now}};
            status["rollback"] = rollback;
          }
        }
        if (!by.empty()) {
          plan.modelRollback = ModelRollbackRequest{from, by, o.modelRevision};
          rollback = {
              {"from", from}, {"requestedBy", by}, {"revision", o.modelRevision}, {"at", o.now}};
          status["rollback"] = rollback;
          plan.events.push_back({"Normal", kReasonManualRollback,
                                 "model " + quote(r.model) + " rolled back from release " +
                                     quote(from) + " to this release by " + by +
                                     " (no gate ran again)"});
        }
        sum.phase = kPhasePromoted;
        sum.ready = true;
        sum.readyReason = kReasonManualRollback;
        sum.readyMessage = "prod runs this release again: model " + quote(r.model) +
                           " rolled back from " + quote(rollback.value("from", from)) + " by " +
                           rollback.value("requestedBy", by);
        return finish();
      }
    }
  }

  // Superseded: prod runs another release now (a Promoted one), or another
  // release took the canary slot from this one (docs/rollouts.md).
  {
    bool promotedAway =
        prevPhase == kPhasePromoted && !o.promotedRelease.empty() && o.promotedRelease != r.name;
    bool slotLost = prevPhase == kPhaseCanary && !o.canaryRelease.empty() &&
                    o.canaryRelease != r.name && o.promotedRelease != r.name;
    if (promotedAway || slotLost) {
      sum.phase = kPhaseSuperseded;
      sum.readyReason = kReasonSuperseded;
      sum.readyMessage = promotedAway ? "prod now runs release " + quote(o.promotedRelease)
                                      : "release " + quote(o.canaryRelease) +
                                            " took the canary of model " + quote(r.model);
      for (json& st : stages) {
        if (st.value("phase", "") == kStageRunning) {
          st["phase"] = kStageFailed;
          st["message"] = sum.readyMessage;
        }
      }
      if (status.contains("canary") && status["canary"].is_object())
        status["canary"]["finishedAt"] = o.now;
      plan.events.push_back({"Normal", kReasonSuperseded, sum.readyMessage});
      return finish();
    }
  }

  // Terminal releases never move again (a GitOps re-apply restarts nothing).
  if (isTerminalPhase(prevPhase)) {
    if (auto ready = findCondition(conditions, "Ready")) {
      sum.ready = ready->value("status", "") == "True";
      sum.readyReason = ready->value("reason", "");
      sum.readyMessage = ready->value("message", "");
    }
    if (auto stalled = findCondition(conditions, "Stalled");
        stalled && stalled->value("status", "") == "True") {
      sum.stalledReason = stalled->value("reason", "");
      sum.stalledMessage = stalled->value("message", "");
    }
    // An aborted release's Job is gone for good, even if a delete was lost in a crash.
    if (prevPhase == kPhaseFailed) {
      for (const json& j : o.jobs) {
        if (!jobConditionTrue(j, "Complete") && !jobConditionTrue(j, "Failed"))
          plan.jobsToDelete.push_back(str(member(j, "metadata"), "name"));
      }
    }
    return finish();
  }

  // Stale runtime: computed from the cached RuntimeEnv, never written by it.
  RuntimeEnvState env = runtimeEnvState(o.runtimeEnv);
  bool stale = env.ready && env.closureHash != r.closureHash;
  if (!env.found) {
    setCondition(conditions,
                 {kConditionStale, "Unknown", kReasonRuntimeEnvNotFound,
                  "RuntimeEnv " + quote(r.ns + "/" + r.runtimeEnv) + " does not exist"},
                 r.generation, o.now);
  } else if (env.ready) {
    setCondition(
        conditions,
        stale ? Condition{kConditionStale, "True", kReasonClosureHashChanged,
                          "RuntimeEnv " + quote(r.runtimeEnv) + " now resolves to " +
                              env.closureHash + "; this release was packaged for " + r.closureHash}
              : Condition{kConditionStale, "False", kReasonClosureHashMatches,
                          "RuntimeEnv " + quote(r.runtimeEnv) + " resolves to " + r.closureHash},
        r.generation, o.now);
  }
  bool wasStale = conditionTrue(member(prevStatus, "conditions", kEmptyArray), kConditionStale);
  if (stale && !wasStale) {
    plan.events.push_back({"Warning", kReasonRuntimeStale,
                           "RuntimeEnv " + quote(r.runtimeEnv) + " resolves to " + env.closureHash +
                               ", not " + r.closureHash + "; no further stage starts"});
  }

  std::string abortedBy = annotation(o.release, kAbortAnnotation);
  int gateIndex = 0;
  for (const StageSpec& s : r.stages) {
    json& st = stageStatus(stages, s.name);
    std::string phase = st.value("phase", "Pending");
    if (phase == kStageSucceeded) {
      if (s.gate) ++gateIndex;
      continue;
    }
    status["currentStage"] = s.name;
    if (s.serving) {
      // A canary already running goes on (a moved runtime shows up as refused
      // canary pods and rolls it back); one not started waits like a gate.
      bool started = status.contains("canary") && status["canary"].is_object();
      if (!started && (stale || !env.ready)) {
        sum.phase = gateIndex == 0 ? kPhasePending : kPhaseTesting;
        sum.readyReason = stale       ? kReasonRuntimeStale
                          : env.found ? kReasonRuntimeEnvNotReady
                                      : kReasonRuntimeEnvNotFound;
        sum.readyMessage = stale ? "RuntimeEnv " + quote(r.runtimeEnv) + " resolves to " +
                                       env.closureHash + ", not the release's " + r.closureHash +
                                       "; stage " + quote(s.name) + " does not start"
                                 : "RuntimeEnv " + quote(r.ns + "/" + r.runtimeEnv) +
                                       (env.found ? " is not Ready (" + env.notReadyMessage + ")"
                                                  : " does not exist");
        if (stale) {
          sum.stalledReason = kReasonRuntimeStale;
          sum.stalledMessage = sum.readyMessage;
        }
        break;
      }
      // approval: Manual on the serving stage holds the canary before it starts.
      if (!started && s.manual) {
        auto d = stageApproval(s, o.release);
        if (!d.approved || !abortedBy.empty()) {
          sum.phase = gateIndex == 0 ? kPhaseEvaluating : kPhaseTesting;
          if (!abortedBy.empty()) {
            st["phase"] = kStageFailed;
            st["message"] = "aborted by " + abortedBy;
            sum.phase = kPhaseFailed;
            sum.readyReason = sum.stalledReason = kReasonAborted;
            sum.readyMessage = sum.stalledMessage =
                "aborted by " + abortedBy + " during stage " + quote(s.name);
            plan.events.push_back({"Warning", kReasonAborted, sum.readyMessage});
            break;
          }
          st["phase"] = kStageWaitingForApproval;
          sum.readyReason = kReasonWaitingForApproval;
          sum.readyMessage =
              "stage " + quote(s.name) + " is " + d.message + " (the canary starts once approved)";
          break;
        }
        if (phase == kStageWaitingForApproval || phase == "Pending") {
          recordApprovers(st, d, r.generation);
          plan.events.push_back(
              {"Normal", "StageApproved",
               "stage " + quote(s.name) + " approved by " + st["approvedBy"].get<std::string>()});
        }
      }
      sum.phase = kPhaseCanary;
      sum.reconciling = true;
      if (st.value("phase", "Pending") != kStageRunning) {
        st["phase"] = kStageRunning;
        st["startedAt"] = o.now;
      }
      const json& specStages = member(member(o.release, "spec"), "stages", kEmptyArray);
      for (const json& ss : specStages) {
        if (str(ss, "name") == s.name) plan.prod = ProdStageRequest{s.name, ss};
      }
      break;
    }
    sum.phase = gateIndex == 0 ? kPhaseEvaluating : kPhaseTesting;
    int attempt = st.value("attempt", 1);
    std::string jobName = gateJobName(r.name, s.name, attempt);
    const json* job = findByName(o.jobs, jobName);

    if (!abortedBy.empty()) {
      st["phase"] = kStageFailed;
      st["message"] = "aborted by " + abortedBy;
      if (st.contains("startedAt")) st["finishedAt"] = o.now;
      if (job != nullptr || phase == kStageRunning) {
        plan.jobsToDelete.push_back(jobName);
        plan.outcomes.push_back({s.name, "aborted", durationOf(st, o.nowUnix)});
      }
      sum.phase = kPhaseFailed;
      sum.readyReason = sum.stalledReason = kReasonAborted;
      sum.readyMessage = sum.stalledMessage =
          "aborted by " + abortedBy + " during stage " + quote(s.name);
      plan.events.push_back({"Warning", kReasonAborted, sum.readyMessage});
      break;
    }

    if (job != nullptr) {
      st["phase"] = kStageRunning;
      st["jobName"] = jobName;
      st["attempt"] = attempt;
      if (!st.contains("startedAt")) st["startedAt"] = o.now;
      // Re-derived from the Job and the release, never only remembered: the cached
      // status may predate our last write (a stale cache after create), and the
      // status is applied whole.
      st["packageMount"] = jobMount(*job);
      status["packageMount"] = st["packageMount"];
      if (s.manual) {
        auto d = stageApproval(s, o.release);
        if (d.approved && !st.contains("approvedGeneration")) recordApprovers(st, d, r.generation);
      }
      std::string jobUid = str(member(*job, "metadata"), "uid");
      if (jobConditionTrue(*job, "Complete")) {
        std::string container = mainContainerOf(*job);
        const json* terminated = nullptr;
        for (const json* p : podsOfJob(o.pods, jobName)) {
          if (str(member(*p, "status"), "phase") != "Succeeded") continue;
          terminated = terminatedState(*p, container);
          if (terminated) break;
        }
        if (terminated == nullptr) {
          // Complete, but the pod is not in the cache yet (or was deleted).
          auto completed = parseRfc3339(str(member(*job, "status"), "completionTime"));
          if (completed && o.nowUnix - *completed > 120) {
            st["phase"] = kStageFailed;
            st["message"] = "Job " + jobName + " completed but no succeeded pod with container " +
                            quote(container) + " is left to read its metrics from";
          } else {
            sum.reconciling = true;
            sum.readyReason = kReasonWaitingForMetrics;
            sum.readyMessage = "Job " + jobName + " completed; reading its pod's metrics";
            plan.requeueAfterSeconds = 2;
            break;
          }
        } else {
          GateVerdict v = checkMetrics(s, container, str(*terminated, "message"));
          st["phase"] = v.passed ? kStageSucceeded : kStageFailed;
          st["message"] = v.message;
          st["metrics"] = v.metrics;
        }
        std::string completion = str(member(*job, "status"), "completionTime");
        st["finishedAt"] = completion.empty() ? o.now : completion;
        const json& podTemplate = member(member(*job, "spec"), "template");
        const json& podContainers = member(member(podTemplate, "spec"), "containers", kEmptyArray);
        json evidence = {
            {"package", r.package},
            {"closureHash", str(member(member(podTemplate, "metadata"), "annotations"),
                                "lockstep.dev/closure-hash")},
            {"image", podContainers.empty() ? std::string() : str(podContainers[0], "image")},
            {"jobUID", jobUid}};
        st["evidence"] = evidence;
        bool passed = st["phase"] == kStageSucceeded;
        plan.outcomes.push_back(
            {s.name, passed ? "succeeded" : "failed", durationOf(st, o.nowUnix)});
        if (passed) {
          if (!evidence["closureHash"].get<std::string>().empty())
            status["validatedClosureHash"] = evidence["closureHash"];
          ++gateIndex;
          continue;
        }
        sum.phase = kPhaseFailed;
        sum.readyReason = sum.stalledReason = kReasonGateFailed;
        sum.readyMessage = sum.stalledMessage =
            "stage " + quote(s.name) + " failed: " + st.value("message", "");
        break;
      }
      if (jobConditionTrue(*job, "Failed")) {
        auto failed = jobCondition(*job, "Failed");
        std::string reason = failed->value("reason", "");
        bool timedOut = reason == "DeadlineExceeded";
        std::string detail;
        std::string container = mainContainerOf(*job);
        for (const json* p : podsOfJob(o.pods, jobName)) {
          if (const json* t = terminatedState(*p, container)) {
            detail = "container " + quote(container) + " exited " +
                     std::to_string(t->value("exitCode", -1));
            std::string msg = str(*t, "message");
            if (!msg.empty()) detail += ": " + (msg.size() > 200 ? msg.substr(0, 200) + "…" : msg);
          }
        }
        std::string message = timedOut ? "timed out after " + std::to_string(s.timeoutSeconds) +
                                             "s (Job " + jobName + ": DeadlineExceeded)"
                                       : "Job " + jobName + " failed (" + reason + ": " +
                                             failed->value("message", "") + ")";
        if (!detail.empty()) message += "; " + detail;
        st["phase"] = kStageFailed;
        st["message"] = message;
        std::string when = failed->value("lastTransitionTime", "");
        st["finishedAt"] = when.empty() ? o.now : when;
        st["evidence"] = {{"package", r.package}, {"jobUID", jobUid}};
        plan.outcomes.push_back(
            {s.name, timedOut ? "timed_out" : "failed", durationOf(st, o.nowUnix)});
        sum.phase = kPhaseFailed;
        sum.readyReason = sum.stalledReason = timedOut ? kReasonGateTimedOut : kReasonGateFailed;
        sum.readyMessage = sum.stalledMessage = "stage " + quote(s.name) + " " + message;
        break;
      }
      // Still running (SuccessCriteriaMet / FailureTarget are not final).
      sum.reconciling = true;
      sum.readyReason = kReasonGateRunning;
      sum.readyMessage = "stage " + quote(s.name) + ": Job " + jobName + " is running";
      break;
    }

    // No Job (yet). A stale or unready runtime starts nothing.
    if (stale || !env.ready) {
      if (phase == kStageRunning) {
        // Created before the runtime moved; the Job will appear in the cache.
        sum.reconciling = true;
        sum.readyReason = kReasonGateRunning;
        sum.readyMessage = "stage " + quote(s.name) + ": waiting for Job " + jobName;
        break;
      }
      if (gateIndex == 0 && phase != kStageWaitingForApproval) sum.phase = kPhasePending;
      if (stale) {
        sum.readyReason = sum.stalledReason = kReasonRuntimeStale;
        sum.readyMessage = sum.stalledMessage =
            "RuntimeEnv " + quote(r.runtimeEnv) + " resolves to " + env.closureHash +
            ", not the release's " + r.closureHash + "; stage " + quote(s.name) + " does not start";
      } else {
        sum.readyReason = env.found ? kReasonRuntimeEnvNotReady : kReasonRuntimeEnvNotFound;
        sum.readyMessage =
            "RuntimeEnv " + quote(r.ns + "/" + r.runtimeEnv) +
            (env.found ? " is not Ready (" + env.notReadyMessage + ")" : " does not exist");
      }
      break;
    }
    if (s.manual) {
      auto d = stageApproval(s, o.release);
      if (!d.approved) {
        st["phase"] = kStageWaitingForApproval;
        sum.readyReason = kReasonWaitingForApproval;
        sum.readyMessage = "stage " + quote(s.name) + " is " + d.message;
        break;
      }
      recordApprovers(st, d, r.generation);
      if (phase == kStageWaitingForApproval || phase == "Pending") {
        plan.events.push_back(
            {"Normal", "StageApproved",
             "stage " + quote(s.name) + " approved by " + st["approvedBy"].get<std::string>()});
      }
    }
    BuiltJob built = buildGateJob(r, s, env, o, jobName, attempt);
    if (!built.error.empty()) {
      st["phase"] = kStageFailed;
      st["message"] = built.error;
      sum.phase = kPhaseFailed;
      sum.readyReason = sum.stalledReason = kReasonInvalidSpec;
      sum.readyMessage = sum.stalledMessage = built.error;
      break;
    }
    plan.jobsToCreate.push_back(std::move(built.job));
    st["phase"] = kStageRunning;
    st["jobName"] = jobName;
    st["attempt"] = attempt;
    st["packageMount"] = packageMountName(o.mount);
    if (!st.contains("startedAt") || phase != kStageRunning) st["startedAt"] = o.now;
    status["packageMount"] = packageMountName(o.mount);
    sum.reconciling = true;
    sum.readyReason = kReasonGateRunning;
    sum.readyMessage = "stage " + quote(s.name) + ": starting Job " + jobName;
    break;
  }
  {
    bool every = true;
    for (const StageSpec& s : r.stages)
      every = every && stageStatus(stages, s.name).value("phase", "") == kStageSucceeded;
    if (every) {
      sum.phase = kPhaseValidated;
      sum.ready = true;
      sum.reconciling = false;
      sum.readyReason = kReasonValidated;
      sum.readyMessage = "every gate passed on closure " + r.closureHash;
      sum.stalledReason.clear();
      status.erase("currentStage");
    }
  }
  return finish();
}

}  // namespace lockstep::controllers
