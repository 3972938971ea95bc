#include "controllers/modelrelease/runtime_env_state.h"

#include "advisories/severity.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

namespace {

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// A RuntimeEnv without what runtimeEnvChangeConcernsReleases ignores.
nlohmann::json withoutPinsAndBookkeeping(nlohmann::json rte) {
  if (auto m = rte.find("metadata"); m != rte.end() && m->is_object()) {
    m->erase("resourceVersion");
    m->erase("managedFields");
  }
  if (auto st = rte.find("status"); st != rte.end() && st->is_object()) {
    if (auto revs = st->find("revisions"); revs != st->end() && revs->is_array()) {
      for (nlohmann::json& rev : *revs) {
        if (!rev.is_object()) continue;
        rev.erase("pinnedBy");
        rev.erase("pinnedByCount");
      }
    }
  }
  return rte;
}

}  // namespace

RuntimeEnvState runtimeEnvState(const std::optional<nlohmann::json>& rte) {
  RuntimeEnvState s;
  if (!rte) return s;
  s.found = true;
  const v1::RuntimeEnv env = v1::decodeRuntimeEnv(*rte);
  s.closureHash = env.status.closureHash;
  s.image = env.spec.image;
  s.currentRevision = env.status.currentRevision;
  s.revisions = env.status.revisions;
  if (auto st = rte->find("status"); st != rte->end() && st->is_object()) {
    if (auto a = st->find("advisories"); a != st->end() && a->is_object()) s.advisories = *a;
  }
  const int64_t gen = env.meta.generation;
  const int64_t observed = env.status.observedGeneration;
  const bool readyTrue = kube::conditionTrue(env.status.conditions, v1::kConditionReady);
  s.ready = readyTrue && observed == gen && !s.closureHash.empty();
  if (!s.ready) {
    auto ready = kube::findCondition(env.status.conditions, v1::kConditionReady);
    s.notReadyMessage = observed != gen ? "its status is not for generation " + std::to_string(gen)
                        : ready ? ready->value("reason", "") + ": " + ready->value("message", "")
                                : "it has no Ready condition yet";
  }
  return s;
}

bool runtimeEnvChangeConcernsReleases(const nlohmann::json& before, const nlohmann::json& after) {
  return withoutPinsAndBookkeeping(before) != withoutPinsAndBookkeeping(after);
}

ReleaseRuntime releaseRuntime(const RuntimeEnvState& env, const v1::ModelRelease& r) {
  ReleaseRuntime out;
  out.pin = r.status.runtime;
  if (!env.ready) return out;
  const std::string rte = "RuntimeEnv " + quoted(r.spec.runtimeEnvName);
  // The current revision; a RuntimeEnv from before revisions has none (its
  // current pair is spec.image with the resolved hash, and nothing is pinned).
  std::optional<v1::RuntimePin> current;
  for (const v1::RuntimeRevision& rev : env.revisions) {
    if (rev.number == env.currentRevision)
      current = v1::RuntimePin{rev.number, rev.image, rev.closureHash};
  }
  if (out.pin) {
    const v1::RuntimePin& pin = *out.pin;
    if (!current) {
      out.stale = pin.closureHash != env.closureHash;
      out.staleReason = v1::kReasonClosureHashChanged;
      out.message = rte + " resolves to " + env.closureHash + "; this release is pinned to " +
                    v1::describePin(pin);
      return out;
    }
    out.stale = !(current->image == pin.image && current->closureHash == pin.closureHash);
    out.staleReason = current->closureHash != pin.closureHash ? v1::kReasonClosureHashChanged
                                                              : v1::kReasonRuntimeRevisionChanged;
    out.message = out.stale ? rte + " is at " + v1::describePin(*current) +
                                  "; this release is pinned to " + v1::describePin(pin)
                            : rte + " is at the release's pinned " + v1::describePin(pin);
    return out;
  }
  out.stale = env.closureHash != r.spec.closureHash;
  out.staleReason = v1::kReasonClosureHashChanged;
  out.message = out.stale ? rte + " now resolves to " + env.closureHash +
                                "; this release was packaged for " + r.spec.closureHash
                          : rte + " resolves to " + r.spec.closureHash;
  if (out.stale || !current) return out;
  // The one pin rule (v1::pinFor, as releasePins() applies it): with the
  // current hash being spec.closureHash, it names the current revision.
  std::optional<v1::RuntimePin> chosen =
      v1::pinFor(env.revisions, env.currentRevision, r.spec.closureHash, "");
  if (!chosen || chosen->revision != env.currentRevision) return out;
  if (!r.spec.runtimeImage.empty() && !v1::sameRuntimeImage(r.spec.runtimeImage, chosen->image)) {
    out.mismatch = "spec.runtimeImage " + r.spec.runtimeImage + " is not the image of " + rte +
                   "'s current " + v1::describePin(*chosen) +
                   "; the release was packaged for another runtime image";
    return out;
  }
  out.pin = chosen;
  out.newPin = true;
  return out;
}

std::string advisoryHold(const RuntimeEnvState& env, const ReleaseRuntime& rt,
                         const v1::ModelRelease& r) {
  if (r.spec.maxSeverity.empty() || !env.advisories.is_object()) return "";
  auto max = advisories::parseSeverity(r.spec.maxSeverity);
  if (!max.isOk()) return "";  // the CRD's enum refuses anything else
  const int64_t revision = rt.pin ? rt.pin->revision : env.currentRevision;
  // That revision's match: the top level while it is current, else its revisions[] entry.
  const nlohmann::json ofRevision = v1::advisoriesOfRevision(env.advisories, revision);
  if (!ofRevision.is_object()) return "";
  std::vector<std::string> above;
  for (const nlohmann::json& a : ofRevision.value("items", nlohmann::json::array())) {
    auto severity = advisories::parseSeverity(a.value("severity", ""));
    if (!advisories::exceeds(severity.isOk() ? *severity : advisories::Severity::kUnknown, *max))
      continue;
    above.push_back(a.value("id", "") + " (" + a.value("package", "") + " " +
                    a.value("version", "") + ", " + a.value("severity", "") +
                    (a.value("fixed", "").empty() ? "" : ", fixed in " + a.value("fixed", "")) +
                    ")");
  }
  if (above.empty()) return "";
  std::string list;
  for (size_t i = 0; i < above.size() && i < 3; ++i) list += (i ? ", " : "") + above[i];
  if (above.size() > 3) list += " and " + std::to_string(above.size() - 3) + " more";
  return "RuntimeEnv " + quoted(r.spec.runtimeEnvName) + " revision " + std::to_string(revision) +
         " has " + std::to_string(above.size()) + " advisory(ies) above spec.policy.maxSeverity " +
         r.spec.maxSeverity + ": " + list +
         "; nothing starts until the runtime is fixed (docs/supply-chain.md)";
}

}  // namespace lockstep::controllers
