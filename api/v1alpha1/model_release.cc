#include "api/v1alpha1/model_release.h"

#include "api/v1alpha1/approval.h"
#include "api/v1alpha1/conditions.h"
#include "common/flags.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

constexpr std::string_view kPhaseNames[] = {"Pending",  "Evaluating", "Testing", "Canary",
                                            "Promoted", "RolledBack", "Failed",  "Superseded"};
constexpr std::string_view kStagePhaseNames[] = {"Pending", "WaitingForApproval", "Running",
                                                 "Succeeded", "Failed"};

template <typename E, size_t N>
std::optional<E> parseName(std::string_view name, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

DurationField durationField(const json& j, std::string_view key, DurationField fallback = {}) {
  auto text = decode::optionalString(j, key);
  if (!text) return fallback;
  DurationField d;
  d.text = *text;
  if (auto v = parseDuration(*text); v.isOk()) d.value = *v;
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

Canary decodeCanary(const json& c) {
  Canary out;
  for (const auto& s : decode::array(c, "steps")) {
    out.steps.push_back({decode::integer(s, "weight", 0), durationField(s, "pause")});
  }
  const json& analysis = decode::object(c, "analysis");
  if (decode::member(analysis, "prometheus") != nullptr) {
    const json& p = decode::object(analysis, "prometheus");
    PrometheusAnalysis a;
    a.address = decode::string(p, "address");
    a.query = decode::string(p, "query");
    a.min = decode::number(p, "min");
    a.max = decode::number(p, "max");
    a.interval = durationField(p, "interval", a.interval);
    a.failureLimit = decode::integer(p, "failureLimit", 1);
    out.prometheus = std::move(a);
  }
  return out;
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

ModelRelease decodeModelRelease(const json& object) {
  ModelRelease r;
  r.meta = decodeMeta(object);
  const json& spec = decode::object(object, "spec");
  r.spec.model = decode::string(spec, "model");
  r.spec.package = decode::string(spec, "package");
  r.spec.runtimeEnvName = decode::string(decode::object(spec, "runtimeEnvRef"), "name");
  r.spec.closureHash = decode::string(spec, "closureHash");
  for (const auto& s : decode::array(spec, "stages")) {
    Stage st;
    st.name = decode::string(s, "name");
    ApprovalPolicy policy;  // a string or {policy: ...} (approval.h)
    (void)decodeApprovalPolicy(s, "", policy);
    st.approval = policy.manual ? Approval::kManual : Approval::kAutomatic;
    if (decode::member(s, "gate") != nullptr) st.gate = decodeGate(decode::object(s, "gate"));
    if (decode::member(s, "serving") != nullptr) {
      const json& sv = decode::object(s, "serving");
      st.serving = Serving{decode::object(sv, "template"), decode::integer(sv, "replicas", 1),
                           decode::integer(sv, "port", 8080)};
    }
    if (decode::member(s, "canary") != nullptr)
      st.canary = decodeCanary(decode::object(s, "canary"));
    r.spec.stages.push_back(std::move(st));
  }
  if (decode::member(spec, "registryTags") != nullptr) {
    const json& rt = decode::object(spec, "registryTags");
    r.spec.registryTags = RegistryTags{decode::boolean(rt, "enabled", true),
                                       decode::string(decode::object(rt, "secretRef"), "name")};
  }

  const json& status = decode::object(object, "status");
  r.status.observedGeneration = decode::integer(status, "observedGeneration", -1);
  r.status.phase = parsePhase(decode::string(status, "phase"));
  r.status.currentStage = decode::string(status, "currentStage");
  r.status.canaryStep = decode::integer(status, "canaryStep", 0);
  r.status.promotedPackage = decode::string(status, "promotedPackage");
  r.status.previousRelease = decode::string(status, "previousRelease");
  r.status.validatedClosureHash = decode::string(status, "validatedClosureHash");
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
  r.status.conditions = decode::array(status, "conditions");
  return r;
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

std::vector<std::string> indexByRuntimeEnv(const json& modelRelease) {
  // Only the reference is needed: skip decoding templates for every cache write.
  json slim = {
      {"metadata", decode::object(modelRelease, "metadata")},
      {"spec",
       {{"runtimeEnvRef", decode::object(decode::object(modelRelease, "spec"), "runtimeEnvRef")}}}};
  std::string k = decodeModelRelease(slim).runtimeEnvKey();
  return k.empty() ? std::vector<std::string>{} : std::vector<std::string>{k};
}

}  // namespace lockstep::api::v1alpha1
