#include "evidence/fleet_permit.h"

#include <algorithm>
#include <tuple>

#include "evidence/fleet_statement.h"
#include "evidence/verify.h"

namespace lockstep::evidence {
namespace {

using nlohmann::json;

std::string quote(const std::string& s) { return "\"" + s + "\""; }

json foundJson(const FleetStatementFound& f) {
  json out{{"rollout", f.rollout},     {"wave", f.wave},
           {"waveIndex", f.waveIndex}, {"issuedAt", statementTime(f.issuedAt)},
           {"referrer", f.referrer},   {"signedBy", f.signedBy}};
  if (!f.detail.empty()) out["detail"] = f.detail;
  return out;
}

StatusOr<FleetStatementFound> foundOf(const json& j, const std::string& field) {
  if (!j.is_object()) return invalidArgument(field + ": must be an object");
  FleetStatementFound f;
  f.rollout = j.value("rollout", "");
  f.wave = j.value("wave", "");
  f.waveIndex = j.value("waveIndex", int64_t{0});
  auto at = parseStatementTime(j.value("issuedAt", ""));
  if (!at) return invalidArgument(field + ".issuedAt: not an RFC 3339 time");
  f.issuedAt = *at;
  f.referrer = j.value("referrer", "");
  f.signedBy = j.value("signedBy", "");
  f.detail = j.value("detail", "");
  return f;
}

std::string failuresText(const FleetAbort& a) {
  std::string out;
  for (const FleetFailure& f : a.failures) {
    out += (out.empty() ? "" : "; ") + f.cluster + " " + f.outcome;
    if (!f.reason.empty()) out += " (" + f.reason + ")";
  }
  return out;
}

}  // namespace

json FleetPermitResult::toJson() const {
  json out{{"permitted", permitted},
           {"aborted", aborted},
           {"concerned", concerned},
           {"settled", settled},
           {"message", message}};
  if (!reason.empty()) out["reason"] = reason;
  if (permit) out["permit"] = foundJson(*permit);
  if (abort) out["abort"] = foundJson(*abort);
  return out;
}

StatusOr<FleetPermitResult> FleetPermitResult::fromJson(const json& j) {
  if (!j.is_object()) return invalidArgument("fleet: must be an object");
  FleetPermitResult r;
  auto flag = [&](const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
  };
  r.permitted = flag("permitted");
  r.aborted = flag("aborted");
  r.concerned = flag("concerned");
  r.settled = flag("settled");
  r.reason = j.value("reason", "");
  r.message = j.value("message", "");
  if (j.contains("permit")) {
    auto p = foundOf(j.at("permit"), "fleet.permit");
    if (!p.isOk()) return p.status();
    r.permit = *p;
  }
  if (j.contains("abort")) {
    auto a = foundOf(j.at("abort"), "fleet.abort");
    if (!a.isOk()) return a.status();
    r.abort = *a;
  }
  return r;
}

FleetPermitResult checkFleetPermit(const std::vector<ReferrerBundle>& referrers,
                                   const api::v1alpha1::TrustPolicySpec& policy,
                                   const FleetPermitRequirement& want) {
  FleetPermitResult out;
  const std::string policyName = "TrustPolicy " + quote(want.policyName);
  auto keys = trustedKeys(policy, want.packageName, kFleetStage, want.policyName);
  if (!keys.isOk()) {
    out.reason = kReasonEvidenceInvalid;
    out.message = keys.status().message();
    return out;
  }
  if (keys->empty()) {
    out.reason = kReasonEvidenceUntrusted;
    out.message = policyName + " trusts no key for stage \"fleet\" of " + want.packageName +
                  ": no hub's permit can be accepted";
    return out;
  }
  struct Found {
    FleetStatementFound found;
    WavePermit permit;
  };
  std::vector<Found> permits;  // every trusted permit for the package (any cluster)
  std::vector<std::pair<FleetStatementFound, FleetAbort>> aborts;
  std::string refused;     // the most telling refusal of a permit-looking statement
  bool untrusted = false;  // … and it was a key not trusted or a signature that fails
  for (const ReferrerBundle& r : referrers) {
    if (!r.error.empty()) continue;
    const std::string origin = "referrer " + r.manifestDigest;
    Expectation any;
    any.subjectDigest = want.packageDigest;
    any.stage = kFleetStage;
    Refusal why = Refusal::kNone;
    auto v = verifyBundle(r.bundle, *keys, any, origin, &why);
    if (!v.isOk()) {
      const bool fleetClaim = r.statementName.rfind("fleet", 0) == 0;
      if (fleetClaim && (refused.empty() || why != Refusal::kMalformed)) {
        refused = v.status().message();
        untrusted = why == Refusal::kUntrustedKey || why == Refusal::kBadSignature;
      }
      continue;
    }
    FleetStatementFound f;
    f.referrer = r.manifestDigest;
    f.signedBy = v->keyName;
    if (v->predicateType == kWavePermitPredicate) {
      auto p = parseWavePermit(v->statement);
      if (!p.isOk()) {
        refused = origin + ": " + p.status().message();
        untrusted = false;
        continue;
      }
      f.rollout = p->rollout;
      f.wave = p->wave;
      f.waveIndex = p->waveIndex;
      f.issuedAt = p->issuedAt;
      permits.push_back({f, *p});
    } else if (v->predicateType == kFleetAbortPredicate) {
      auto a = parseFleetAbort(v->statement);
      if (!a.isOk()) {
        refused = origin + ": " + a.status().message();
        untrusted = false;
        continue;
      }
      f.rollout = a->rollout;
      f.wave = a->wave;
      f.issuedAt = a->issuedAt;
      f.detail = failuresText(*a);
      aborts.emplace_back(f, *a);
    }
  }
  // The earliest permit naming this cluster (the open permit included); a
  // tie goes to the earlier wave, then the referrer, so the answer is stable.
  auto earlier = [](const FleetStatementFound& a, const FleetStatementFound& b) {
    return std::tie(a.issuedAt, a.waveIndex, a.referrer) <
           std::tie(b.issuedAt, b.waveIndex, b.referrer);
  };
  for (const Found& p : permits) {
    if (!evidence::permits(p.permit, want.cluster)) continue;
    if (!out.permit || earlier(p.found, *out.permit)) out.permit = p.found;
  }
  out.permitted = out.permit.has_value();
  if (!aborts.empty()) {
    auto first = std::min_element(aborts.begin(), aborts.end(), [&](const auto& a, const auto& b) {
      return earlier(a.first, b.first);
    });
    out.aborted = true;
    out.abort = first->first;
    // Concerned: the abort is for the wave (of the same rollout) that permitted
    // this cluster, or no permit ever named it. A cluster whose wave finished
    // before keeps serving.
    out.concerned = !out.permit || (out.permit->rollout == first->first.rollout &&
                                    out.permit->wave == first->first.wave);
  }
  if (out.permit) {
    out.settled = out.permit->wave == kOpenPermitWave;
    for (const Found& p : permits) {
      out.settled =
          out.settled || p.permit.allClusters ||
          (p.found.rollout == out.permit->rollout && p.found.waveIndex > out.permit->waveIndex);
    }
  }
  const std::string package = want.packageName + "@" + want.packageDigest;
  if (out.aborted) {
    const FleetStatementFound& a = *out.abort;
    out.reason = kReasonFleetAborted;
    out.message = "the fleet rollout " + a.rollout + " of " + package + " was aborted in wave " +
                  quote(a.wave) + " at " + statementTime(a.issuedAt) + " (signed by " + a.signedBy +
                  "): " + (a.detail.empty() ? "no failures listed" : a.detail);
    if (!out.concerned)
      out.message += "; cluster " + quote(want.cluster) + " promoted in the earlier wave " +
                     quote(out.permit->wave) + " and keeps serving";
    return out;
  }
  if (out.permit) {
    const FleetStatementFound& p = *out.permit;
    out.message = (p.wave == kOpenPermitWave
                       ? "the open permit of the fleet rollout " + p.rollout
                       : "wave " + quote(p.wave) + " of the fleet rollout " + p.rollout) +
                  " permits cluster " + quote(want.cluster) + " (issued " +
                  statementTime(p.issuedAt) + ", signed by " + p.signedBy + ")";
    return out;
  }
  out.reason = untrusted && permits.empty() ? kReasonEvidenceUntrusted : kReasonWaitingForPermit;
  out.message = "no wave permit signed by a key " + policyName + " trusts names cluster " +
                quote(want.cluster) + " for " + package + " among " +
                std::to_string(referrers.size()) + " referrer" +
                (referrers.size() == 1 ? "" : "s") +
                (permits.empty() ? ""
                                 : " (" + std::to_string(permits.size()) + " trusted permit" +
                                       (permits.size() == 1 ? "" : "s") + " name other clusters)") +
                (refused.empty() ? "" : " (refused: " + refused + ")");
  return out;
}

}  // namespace lockstep::evidence
