#include "api/v1alpha1/model_release.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_env.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

constexpr std::string_view kPhaseNames[] = {"Pending",    "Evaluating", "Testing",
                                            "Validated",  "Canary",     "Promoted",
                                            "RolledBack", "Failed",     "Superseded"};
constexpr std::string_view kStagePhaseNames[] = {"Pending", "WaitingForApproval", "Running",
                                                 "Succeeded", "Failed"};

template <typename E, size_t N>
std::optional<E> parseName(std::string_view name, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

std::string quoteModelRelease(const std::string& s) { return "\"" + s + "\""; }

DurationField durationField(const json& j, std::string_view key) {
  DurationField d;
  d.text = decode::string(j, key);
  if (auto v = parseStageDuration(d.text)) d.value = std::chrono::seconds(*v);
  return d;
}

Gate decodeGate(const json& g) {
  Gate out;
  out.podTemplate = decode::object(g, "template");
  for (const auto& m : decode::array(g, "metrics")) {
    out.metrics.push_back(
        {decode::string(m, "name"), decode::number(m, "min"), decode::number(m, "max")});
  }
  out.timeout = durationField(g, "timeout");
  return out;
}

AnalysisField decodeAnalysis(const json& a) {
  AnalysisField out;
  const json* p = decode::member(a, "prometheus");
  out.prometheusGiven = p != nullptr && p->is_object();
  if (!out.prometheusGiven) return out;
  out.provider = decode::string(*p, "provider");
  out.address = decode::string(*p, "address");
  out.query = decode::string(*p, "query");
  out.templateName = decode::string(*p, "template");
  if (const json* args = decode::member(*p, "args"); args != nullptr && !args->is_null()) {
    if (!args->is_object()) {
      out.argsError = "args: must be a map of argument names to strings";
    } else {
      for (const auto& [k, v] : args->items()) {
        if (!v.is_string()) {
          out.argsError = "args." + k + ": must be a string";
          break;
        }
        out.args[k] = v.get<std::string>();
      }
    }
  }
  out.min = decode::number(*p, "min");
  out.max = decode::number(*p, "max");
  out.interval = durationField(*p, "interval");
  out.initialDelay = durationField(*p, "initialDelay");
  out.count = decode::integer(*p, "count", 0);
  out.failureLimit = decode::integer(*p, "failureLimit", 0);
  out.consecutiveErrorLimit = decode::integer(*p, "consecutiveErrorLimit", 4);
  return out;
}

bool isObject(const json& j, std::string_view key) {
  const json* m = decode::member(j, key);
  return m != nullptr && m->is_object();
}

CanaryField decodeCanary(const json& c) {
  CanaryField out;
  out.capacity = decode::string(c, "capacity");
  out.progressDeadline = durationField(c, "progressDeadline");
  if (isObject(c, "analysis")) out.analysis = decodeAnalysis(decode::object(c, "analysis"));
  for (const auto& s : decode::array(c, "steps")) {
    CanaryStepField step;
    step.weight = decode::integer(s, "weight", 0);
    step.pause = decode::string(s, "pause");
    step.progressDeadline = durationField(s, "progressDeadline");
    if (isObject(s, "analysis")) step.analysis = decodeAnalysis(decode::object(s, "analysis"));
    out.steps.push_back(std::move(step));
  }
  return out;
}

// The analysis as the planner runs it; the error names `where`.
StatusOr<PrometheusAnalysis> analysisOf(const AnalysisField& a, const std::string& where) {
  if (!a.prometheusGiven) return Status(Code::kInvalidArgument, where + ".prometheus is missing");
  PrometheusAnalysis out;
  out.provider = a.provider;
  out.address = a.address;
  out.query = a.query;
  if (out.provider.empty() == out.address.empty())
    return Status(Code::kInvalidArgument,
                  where + ".prometheus needs provider (an AnalysisProvider's name)" +
                      (out.provider.empty() ? std::string() : ", not also address"));
  out.templateName = a.templateName;
  out.args = a.args;
  if (out.query.empty() == out.templateName.empty())
    return Status(Code::kInvalidArgument,
                  where + ".prometheus needs query or template (an AnalysisTemplate's name)" +
                      (out.query.empty() ? std::string() : ", not both"));
  if (!a.argsError.empty())
    return Status(Code::kInvalidArgument, where + ".prometheus." + a.argsError);
  if (!out.args.empty() && out.templateName.empty())
    return Status(Code::kInvalidArgument,
                  where +
                      ".prometheus.args: arguments are for a template; this analysis gives a "
                      "query");
  out.min = a.min;
  out.max = a.max;
  if (!out.min && !out.max)
    return Status(Code::kInvalidArgument, where + ".prometheus needs min or max");
  if (!a.interval.text.empty()) {
    if (!a.interval.value || a.interval.value->count() <= 0)
      return Status(Code::kInvalidArgument, where + ".prometheus.interval " +
                                                quoteModelRelease(a.interval.text) +
                                                " is not a duration");
    out.intervalSeconds = a.interval.value->count();
  }
  if (!a.initialDelay.text.empty()) {
    if (!a.initialDelay.value || a.initialDelay.value->count() < 0)
      return Status(Code::kInvalidArgument, where + ".prometheus.initialDelay " +
                                                quoteModelRelease(a.initialDelay.text) +
                                                " is not a duration");
    out.initialDelaySeconds = a.initialDelay.value->count();
  }
  out.count = static_cast<int>(a.count);
  out.failureLimit = static_cast<int>(a.failureLimit);
  out.consecutiveErrorLimit = static_cast<int>(a.consecutiveErrorLimit);
  if (out.count < 0 || out.failureLimit < 0 || out.consecutiveErrorLimit < 0)
    return Status(Code::kInvalidArgument,
                  where + ".prometheus: count and limits must not be negative");
  return out;
}

// A positive duration, or the error naming `field`.
StatusOr<int64_t> positiveSeconds(const DurationField& d, const std::string& field) {
  if (!d.value || d.value->count() <= 0)
    return Status(Code::kInvalidArgument,
                  field + " " + quoteModelRelease(d.text) + " is not a duration");
  return d.value->count();
}

}  // namespace

std::string_view phaseName(Phase p) { return kPhaseNames[static_cast<size_t>(p)]; }
std::optional<Phase> parsePhase(std::string_view name) {
  return parseName<Phase>(name, kPhaseNames);
}
std::string_view stagePhaseName(StagePhase p) { return kStagePhaseNames[static_cast<size_t>(p)]; }
std::optional<StagePhase> parseStagePhase(std::string_view name) {
  return parseName<StagePhase>(name, kStagePhaseNames);
}

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

int64_t Gate::timeoutSeconds() const {
  if (timeout.text.empty() || !timeout.value || timeout.value->count() <= 0)
    return kDefaultGateTimeoutSeconds;
  return timeout.value->count();
}

const char* capacityModeName(CapacityMode m) {
  return m == CapacityMode::kSurge ? "surge" : "drain";
}

ModelRelease decodeModelRelease(const json& object) {
  ModelRelease r;
  r.meta = decodeMeta(object);
  const json& metadata = decode::object(object, "metadata");
  r.resourceVersion = decode::string(metadata, "resourceVersion");
  for (const auto& [k, v] : decode::object(metadata, "annotations").items()) {
    if (v.is_string()) r.annotations[k] = v.get<std::string>();
  }
  const json& spec = decode::object(object, "spec");
  r.spec.model = decode::string(spec, "model");
  r.spec.package = decode::string(spec, "package");
  r.spec.runtimeEnvName = decode::string(decode::object(spec, "runtimeEnvRef"), "name");
  r.spec.closureHash = decode::string(spec, "closureHash");
  r.spec.runtimeImage = decode::string(spec, "runtimeImage");
  const json* stages = decode::member(spec, "stages");
  r.spec.stagesGiven = stages != nullptr && stages->is_array();
  for (const auto& s : decode::array(spec, "stages")) {
    Stage st;
    st.name = decode::string(s, "name");
    // A string or {policy: ...}: the one reading is approval.h.
    if (auto err = decodeApprovalPolicy(
            s, "spec.stages[" + std::to_string(r.spec.stages.size()) + "]", st.approvalPolicy))
      st.approvalError = *err;
    st.approval = st.approvalPolicy.manual ? Approval::kManual : Approval::kAutomatic;
    if (isObject(s, "gate")) st.gate = decodeGate(decode::object(s, "gate"));
    if (isObject(s, "evidence")) {
      const json& e = decode::object(s, "evidence");
      EvidenceStage ev;
      for (const json& n : decode::array(e, "stages"))
        if (n.is_string()) ev.stages.push_back(n.get<std::string>());
      ev.trustPolicy = decode::string(e, "trustPolicy");
      for (const auto& [k, v] : decode::object(e, "specDigests").items())
        if (v.is_string()) ev.specDigests[k] = v.get<std::string>();
      st.evidence = std::move(ev);
    }
    if (isObject(s, "serving")) {
      const json& sv = decode::object(s, "serving");
      st.serving = Serving{decode::object(sv, "template"), decode::integer(sv, "replicas", 1),
                           decode::integer(sv, "port", 8080)};
    }
    if (isObject(s, "canary")) st.canary = decodeCanary(decode::object(s, "canary"));
    if (isObject(s, "fleet"))
      st.fleet = FleetField{decode::string(decode::object(s, "fleet"), "trustPolicy")};
    r.spec.stages.push_back(std::move(st));
  }
  if (decode::member(spec, "registryTags") != nullptr) {
    const json& rt = decode::object(spec, "registryTags");
    r.spec.registryTags = RegistryTags{decode::boolean(rt, "enabled", true),
                                       decode::string(decode::object(rt, "secretRef"), "name")};
  }
  r.spec.maxSeverity = decode::string(decode::object(spec, "policy"), "maxSeverity");

  const json& status = decode::object(object, "status");
  r.status.observedGeneration = decode::integer(status, "observedGeneration", -1);
  r.status.phase = parsePhase(decode::string(status, "phase"));
  r.status.currentStage = decode::string(status, "currentStage");
  r.status.canaryStep = decode::integer(status, "canaryStep", 0);
  r.status.promotedPackage = decode::string(status, "promotedPackage");
  r.status.previousRelease = decode::string(status, "previousRelease");
  r.status.validatedClosureHash = decode::string(status, "validatedClosureHash");
  r.status.runtime = decodeRuntimePin(object);
  if (const json* p = decode::member(status, "package")) r.status.package = decodePackageInfo(*p);
  for (const auto& s : decode::array(status, "stages")) {
    StageStatus st;
    st.name = decode::string(s, "name");
    st.phase = parseStagePhase(decode::string(s, "phase"));
    st.jobName = decode::string(s, "jobName");
    st.message = decode::string(s, "message");
    st.approvedBy = decode::string(s, "approvedBy");
    st.startedAt = decode::string(s, "startedAt");
    st.finishedAt = decode::string(s, "finishedAt");
    for (const auto& [k, v] : decode::object(s, "metrics").items()) {
      if (v.is_number()) st.metrics[k] = v.get<double>();
    }
    r.status.stages.push_back(std::move(st));
  }
  for (const auto& t : decode::array(status, "registryTags")) {
    r.status.registryTags.push_back(
        {decode::string(t, "tag"), decode::string(t, "reference"), decode::string(t, "digest"),
         decode::string(t, "previousDigest"), decode::string(t, "phase"),
         decode::string(t, "message"), decode::integer(t, "attempts", 0),
         decode::string(t, "lastAttemptAt")});
  }
  r.status.canary = readReleaseCanary(object);
  r.status.rollback = decode::object(status, "rollback");
  r.status.evidenceChecks = decode::array(status, "evidenceChecks");
  r.status.conditions = decode::array(status, "conditions");
  return r;
}

Status checkStages(const ModelReleaseSpec& spec) {
  if (spec.stages.empty()) return Status(Code::kInvalidArgument, "spec.stages is empty");
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const Stage& s = spec.stages[i];
    const std::string where = "spec.stages[" + std::to_string(i) + "]";
    if (s.name.empty()) return Status(Code::kInvalidArgument, where + ".name is empty");
    if (!s.approvalError.empty()) return Status(Code::kInvalidArgument, s.approvalError);
    if (s.gate && !s.gate->timeout.text.empty()) {
      auto secs = positiveSeconds(s.gate->timeout, where + ".gate.timeout");
      if (!secs.isOk()) return secs.status();
    }
    if (s.evidence) {
      if (s.gate || s.serving)
        return Status(Code::kInvalidArgument,
                      where + " has evidence and also " + (s.gate ? "gate" : "serving"));
      if (s.evidence->stages.empty())
        return Status(Code::kInvalidArgument, where + ".evidence.stages is empty");
      if (s.evidence->trustPolicy.empty())
        return Status(Code::kInvalidArgument, where + ".evidence.trustPolicy is empty");
      if (s.approval == Approval::kManual)
        return Status(Code::kInvalidArgument,
                      where + ".approval: an evidence stage takes no approval");
    }
    if (s.fleet) {
      if (!s.serving)
        return Status(Code::kInvalidArgument,
                      where + ".fleet: only the serving stage waits for a fleet's wave permit");
      if (s.fleet->trustPolicy.empty())
        return Status(Code::kInvalidArgument, where + ".fleet.trustPolicy is empty");
    }
  }
  return Status::ok();
}

StatusOr<CanarySpec> canarySpecOf(const Stage& stage) {
  const std::string where = "stage " + quoteModelRelease(stage.name);
  if (!stage.serving) return Status(Code::kInvalidArgument, where + " has no serving");
  CanarySpec out;
  out.podTemplate = stage.serving->podTemplate;
  out.replicas = static_cast<int>(stage.serving->replicas);
  out.port = static_cast<int>(stage.serving->port);
  if (out.replicas < 1)
    return Status(Code::kInvalidArgument, where + ".serving.replicas must be at least 1");
  const CanaryField canary = stage.canary.value_or(CanaryField{});
  if (canary.capacity.empty() || canary.capacity == "surge") {
    out.capacity = CapacityMode::kSurge;
  } else if (canary.capacity == "drain") {
    out.capacity = CapacityMode::kDrain;
  } else {
    return Status(Code::kInvalidArgument, where + ".canary.capacity " +
                                              quoteModelRelease(canary.capacity) +
                                              " is not surge or drain");
  }
  int64_t deadline = 600;
  if (!canary.progressDeadline.text.empty()) {
    auto secs = positiveSeconds(canary.progressDeadline, where + ".canary.progressDeadline");
    if (!secs.isOk()) return secs.status();
    deadline = *secs;
  }
  std::optional<PrometheusAnalysis> defaultAnalysis;
  if (canary.analysis) {
    auto a = analysisOf(*canary.analysis, where + ".canary.analysis");
    if (!a.isOk()) return a.status();
    defaultAnalysis = *a;
  }
  for (size_t i = 0; i < canary.steps.size(); ++i) {
    const CanaryStepField& f = canary.steps[i];
    const std::string w = where + ".canary.steps[" + std::to_string(i) + "]";
    CanaryStep s;
    s.weight = static_cast<int>(f.weight);
    if (s.weight < 0 || s.weight > 100)
      return Status(Code::kInvalidArgument, w + ".weight must be 0..100");
    if (f.pause == "Indefinite") {
      s.pause = CanaryStep::Pause::kIndefinite;
    } else if (!f.pause.empty()) {
      auto secs = parseStageDuration(f.pause);
      if (!secs)
        return Status(Code::kInvalidArgument, w + ".pause " + quoteModelRelease(f.pause) +
                                                  " is not a duration or Indefinite");
      s.pause = CanaryStep::Pause::kDuration;
      s.pauseSeconds = *secs;
    }
    s.progressDeadlineSeconds = deadline;
    if (!f.progressDeadline.text.empty()) {
      auto secs = positiveSeconds(f.progressDeadline, w + ".progressDeadline");
      if (!secs.isOk()) return secs.status();
      s.progressDeadlineSeconds = *secs;
    }
    s.analysis = defaultAnalysis;
    if (f.analysis) {
      auto a = analysisOf(*f.analysis, w + ".analysis");
      if (!a.isOk()) return a.status();
      s.analysis = *a;
    }
    out.steps.push_back(std::move(s));
  }
  if (out.steps.empty()) {
    // No steps: one step at full weight, still analysed and health-checked.
    CanaryStep s;
    s.weight = 100;
    s.analysis = defaultAnalysis;
    s.progressDeadlineSeconds = deadline;
    out.steps.push_back(s);
  }
  return out;
}

StatusOr<RegistryTags> registryTagsOf(const json& modelRelease) {
  const json* rt = decode::member(decode::object(modelRelease, "spec"), "registryTags");
  if (rt == nullptr) return RegistryTags{false, ""};
  if (!rt->is_object())
    return Status(Code::kInvalidArgument, "spec.registryTags must be an object");
  RegistryTags out;
  if (const json* enabled = decode::member(*rt, "enabled"); enabled != nullptr) {
    if (!enabled->is_boolean())
      return Status(Code::kInvalidArgument, "spec.registryTags.enabled must be a boolean");
    out.enabled = enabled->get<bool>();
  }
  if (const json* ref = decode::member(*rt, "secretRef"); ref != nullptr) {
    std::optional<std::string> name = decode::optionalString(*ref, "name");
    if (!name || name->empty())
      return Status(Code::kInvalidArgument,
                    "spec.registryTags.secretRef.name must be a non-empty string");
    out.secretName = *name;
  }
  return out;
}

bool ModelRelease::ready() const {
  return readyForGeneration(status.conditions, status.observedGeneration, meta.generation);
}

std::string ModelRelease::runtimeEnvKey() const {
  if (spec.runtimeEnvName.empty()) return "";
  return ObjectMeta{spec.runtimeEnvName, meta.ns, "", 0}.key();
}

std::string ModelRelease::validatedClosureHash() const {
  return status.validatedClosureHash.empty() ? spec.closureHash : status.validatedClosureHash;
}

const Stage* ModelRelease::prodStage() const {
  const Stage* out = nullptr;
  for (const Stage& s : spec.stages) {
    if (s.serving) out = &s;
  }
  return out;
}

std::string ModelRelease::annotation(const std::string& key) const {
  auto it = annotations.find(key);
  return it == annotations.end() ? std::string() : it->second;
}

std::vector<std::string> indexByRuntimeEnv(const json& modelRelease) {
  // Only the reference is needed: skip decoding templates for every cache write.
  json slim = {
      {"metadata", decode::object(modelRelease, "metadata")},
      {"spec",
       {{"runtimeEnvRef", decode::object(decode::object(modelRelease, "spec"), "runtimeEnvRef")}}}};
  std::string k = decodeModelRelease(slim).runtimeEnvKey();
  return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
}

std::vector<std::string> indexByModel(const json& modelRelease) {
  std::string model = decode::string(decode::object(modelRelease, "spec"), "model");
  if (model.empty()) return {};
  return {decode::string(decode::object(modelRelease, "metadata"), "namespace") + "/" + model};
}

bool takesRollbackRequests(const ModelRelease& release) {
  const bool ran = !release.status.canary.error.empty() ||
                   release.status.canary.orEmpty().phase == kPhasePromoted;
  const std::string phase =
      release.status.phase ? std::string(phaseName(*release.status.phase)) : "";
  return ran && (phase == kPhasePromoted || phase == kPhaseSuperseded);
}

RollbackRuntime rollbackRuntime(const ModelRelease& target, const RuntimeEnv* env) {
  RollbackRuntime out;
  const std::string rte = "RuntimeEnv \"" + target.spec.runtimeEnvName + "\"";
  const std::string release = "release \"" + target.meta.name + "\"";
  if (env == nullptr) {
    out.refusal = rte + " of " + release + " does not exist";
    return out;
  }
  const RuntimeEnvStatus& st = env->status;
  if (st.revisions.empty()) {
    // A RuntimeEnv from before revisions: only its current hash is admitted.
    if (st.closureHash != target.spec.closureHash) {
      out.refusal = release + " was validated on closure " + target.spec.closureHash + " but " +
                    rte + " now resolves to " +
                    (st.closureHash.empty() ? std::string("nothing") : st.closureHash) +
                    " and records no revisions";
      return out;
    }
    out.pair = RuntimePin{0, env->spec.image, st.closureHash};
    return out;
  }
  out.pair = runtimeOf(target.status.runtime, st.revisions, st.currentRevision,
                       target.spec.closureHash, target.spec.runtimeImage);
  if (!out.pair) {
    out.refusal = "no revision of " + rte + " has closure " + target.spec.closureHash +
                  " any more (pruned): " + release +
                  " cannot run again; promote a release built for the current runtime";
    return out;
  }
  const int64_t n = recordedRevision(st.revisions, *out.pair);
  if (n == 0) {
    out.refusal = release + " is pinned to " + describePin(*out.pair) + " of " + rte +
                  ", which was pruned from its status.revisions: it cannot run again; promote a "
                  "release built for the current runtime";
    return out;
  }
  out.pair->revision = n;
  if (n != st.currentRevision) {
    out.movedOn = true;
    std::string current = "revision " + std::to_string(st.currentRevision);
    for (const RuntimeRevision& rev : st.revisions) {
      if (rev.number == st.currentRevision)
        current = describePin({rev.number, rev.image, rev.closureHash});
    }
    out.movedOnMessage = "the rollback runs " + release + " on its pinned " +
                         describePin(*out.pair) + "; " + rte + " has moved on to " + current;
  }
  return out;
}

}  // namespace lockstep::api::v1alpha1
