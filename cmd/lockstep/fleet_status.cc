#include "cmd/lockstep/fleet_status.h"

#include <algorithm>
#include <map>
#include <set>

#include "controllers/fleet/wave_plan.h"
#include "evidence/statement.h"
#include "evidence/verify.h"

namespace lockstep::cli {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using nlohmann::ordered_json;

bool isFleetPredicate(const std::string& p) {
  return p == evidence::kWavePermitPredicate || p == evidence::kFleetAbortPredicate ||
         p == evidence::kProdRecordPredicate;
}

std::string joined(const std::vector<std::string>& names, const char* sep = ", ") {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

ordered_json permitJson(const SignedStatement<evidence::WavePermit>& p) {
  ordered_json j{{"wave", p.value.wave}, {"waveIndex", p.value.waveIndex}};
  if (p.value.allClusters) {
    j["allClusters"] = true;
  } else {
    j["clusters"] = p.value.clusters;
  }
  j["issuedAt"] = evidence::statementTime(p.value.issuedAt);
  j["rollout"] = p.value.rollout;
  j["signedBy"] = p.signedBy;
  j["referrer"] = p.referrer;
  return j;
}

ordered_json abortJson(const SignedStatement<evidence::FleetAbort>& a) {
  ordered_json failures = ordered_json::array();
  for (const evidence::FleetFailure& f : a.value.failures)
    failures.push_back({{"cluster", f.cluster},
                        {"outcome", f.outcome},
                        {"at", evidence::statementTime(f.at)},
                        {"reason", f.reason}});
  return {{"wave", a.value.wave},
          {"failures", failures},
          {"maxFailures", a.value.maxFailures},
          {"issuedAt", evidence::statementTime(a.value.issuedAt)},
          {"rollout", a.value.rollout},
          {"signedBy", a.signedBy},
          {"referrer", a.referrer}};
}

ordered_json recordJson(const SignedStatement<evidence::ProdRecord>& r) {
  ordered_json j{{"cluster", r.value.cluster},
                 {"outcome", r.value.outcome},
                 {"since", evidence::statementTime(r.value.since)}};
  if (!r.value.reason.empty()) j["reason"] = r.value.reason;
  j["signedBy"] = r.signedBy;
  j["referrer"] = r.referrer;
  return j;
}

// A planner's cluster entry in the order the view shows its fields.
ordered_json clusterJson(const json& c, const std::string& wave) {
  ordered_json j{{"name", c.value("name", "")}, {"wave", wave}, {"state", c.value("state", "")}};
  for (const char* k : {"permittedAt", "since", "reason"})
    if (c.contains(k)) j[k] = c.at(k);
  return j;
}

// The hub's own decision over what the registry holds, at `now`. What the
// planner would write on this pass is not in the registry: its clusters stay
// Pending here, and `next` says what the hub's next pass writes.
ordered_json rolloutView(const FleetEvidence& ev, const FleetRollout& rollout, int64_t now,
                         ordered_json out) {
  controllers::WavePlanInput in;
  in.rollout = rollout.meta;
  in.spec = rollout.spec;
  // The CLI has no ClusterProfiles: selectors read spec.inventory.
  in.waves = v1::resolveWaves(rollout.spec, v1::rolloutInventory(rollout.spec, {}));
  for (const auto& p : ev.permits) in.permits.push_back(p.value);
  for (const auto& r : ev.records) in.records.push_back(r.value);
  in.abortInRegistry = !ev.aborts.empty();
  in.nowUnix = now;
  const controllers::WavePlan plan = controllers::planWaves(in);

  std::set<std::string> plannedNow;
  std::string next;
  for (const evidence::WavePermit& p : plan.permits) {
    if (p.allClusters) {
      next = "the hub writes the open permit (every wave is done)";
    } else {
      plannedNow.insert(p.clusters.begin(), p.clusters.end());
      next = "the hub permits " + joined(p.clusters) + " (wave " + p.wave + ")";
    }
  }
  if (plan.abort)
    next = "the hub writes the fleet abort (wave " + plan.abort->wave + ", " +
           std::to_string(plan.abort->failures.size()) + " failures, maxFailures " +
           std::to_string(plan.abort->maxFailures) + ")";

  out["rollout"] = rollout.meta.key();
  out["phase"] = plan.phase;
  out["message"] = plan.status.value("message", "");
  if (!next.empty()) out["next"] = next;
  out["currentWave"] = plan.status.value("currentWave", "");
  out["failures"] = plan.status.value("failures", 0);
  out["maxFailures"] = plan.status.value("maxFailures", 0);
  ordered_json waves = ordered_json::array();
  for (size_t w = 0; w < in.waves.size(); ++w) {
    const json& pw = plan.status.at("waves").at(w);
    ordered_json entry{{"name", in.waves[w].name},
                       {"phase", pw.value("phase", "")},
                       {"clusters", in.waves[w].clusters}};
    if (pw.contains("message")) entry["message"] = pw["message"];
    waves.push_back(std::move(entry));
  }
  out["waves"] = waves;
  ordered_json clusters = ordered_json::array();
  for (const json& c : plan.status.at("clusters")) {
    ordered_json j = clusterJson(c, c.value("wave", ""));
    if (plannedNow.count(c.value("name", "")) != 0) {
      j["state"] = controllers::kClusterPending;
      j.erase("permittedAt");
      j["reason"] = "the hub permits it on its next pass";
    }
    clusters.push_back(std::move(j));
  }
  out["clusters"] = clusters;
  return out;
}

// Without the rollout: the clusters the permits and records name, judged by the
// planner's own rules over one wave of them. Soaks and deadlines need the
// rollout's strategy, so a Promoted cluster stays Promoted and none times out.
ordered_json registryView(const std::string& package, const FleetEvidence& ev, int64_t now,
                          ordered_json out) {
  std::vector<std::string> order;
  std::map<std::string, std::string> waveOf;  // the earliest permit naming it
  std::vector<const SignedStatement<evidence::WavePermit>*> permits;
  for (const auto& p : ev.permits) permits.push_back(&p);
  std::stable_sort(permits.begin(), permits.end(),
                   [](auto* a, auto* b) { return a->value.issuedAt < b->value.issuedAt; });
  bool open = false;
  for (const auto* p : permits) {
    open = open || p->value.allClusters;
    for (const std::string& c : p->value.clusters) {
      if (waveOf.count(c) != 0) continue;
      waveOf[c] = p->value.wave;
      order.push_back(c);
    }
  }
  std::set<std::string> recordOnly;
  for (const auto& r : ev.records)
    if (waveOf.count(r.value.cluster) == 0) recordOnly.insert(r.value.cluster);
  order.insert(order.end(), recordOnly.begin(), recordOnly.end());

  controllers::WavePlanInput in;
  auto ref = api::parseImageRef(package);
  if (ref.isOk()) in.spec.packageRef = *ref;
  in.waves.push_back({"registry", order});
  for (const auto& p : ev.permits) in.permits.push_back(p.value);
  for (const auto& r : ev.records) in.records.push_back(r.value);
  in.nowUnix = now;
  const controllers::WavePlan plan = controllers::planWaves(in);

  std::string phase = controllers::kRolloutProgressing;
  std::string message = std::to_string(order.size()) + " cluster" + (order.size() == 1 ? "" : "s") +
                        " in " + std::to_string(ev.permits.size()) + " permit" +
                        (ev.permits.size() == 1 ? "" : "s") + " and " +
                        std::to_string(ev.records.size()) + " prod record" +
                        (ev.records.size() == 1 ? "" : "s") +
                        "; waves, soaks and deadlines come from the ModelRollout (--rollout FILE)";
  if (!ev.aborts.empty()) {
    phase = controllers::kRolloutAborted;
    message = "a fleet abort for this package is in the registry: no cluster starts it";
  } else if (open) {
    phase = controllers::kRolloutSucceeded;
    message = "the open permit is in the registry: every cluster may promote it";
  } else if (ev.permits.empty() && ev.records.empty()) {
    phase = controllers::kWavePending;
    message = "no fleet statement for this package in the registry";
  }
  out["phase"] = phase;
  out["message"] = message;
  ordered_json clusters = ordered_json::array();
  for (const json& c : plan.status.at("clusters")) {
    const std::string name = c.value("name", "");
    ordered_json j = clusterJson(c, waveOf.count(name) != 0 ? waveOf[name] : "");
    if (j["state"] == controllers::kClusterSoaked) j["state"] = controllers::kClusterPromoted;
    clusters.push_back(std::move(j));
  }
  out["clusters"] = clusters;
  return out;
}

// Rows as columns two spaces apart; no line ends in spaces.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

std::string text(const ordered_json& j, const char* key, const char* none = "-") {
  return j.contains(key) && j.at(key).is_string() && !j.at(key).get<std::string>().empty()
             ? j.at(key).get<std::string>()
             : std::string(none);
}

}  // namespace

FleetEvidence readFleetEvidence(const std::vector<FleetReferrer>& referrers,
                                const std::string& packageName, const std::string& digest,
                                const VerifierTrust& trust) {
  FleetEvidence out;
  const std::vector<evidence::TrustedKey> keys = trust.keysFor(packageName);
  for (const FleetReferrer& r : referrers) {
    // The annotation is unverified; it only spares verifying the other evidence.
    if (!r.predicateType.empty() && !isFleetPredicate(r.predicateType)) {
      ++out.otherStatements;
      continue;
    }
    auto refuse = [&](const std::string& reason) {
      out.refused.push_back({r.digest, r.statement, r.predicateType, reason});
    };
    if (!r.error.empty()) {
      refuse(r.error);
      continue;
    }
    if (keys.empty()) {
      refuse("no key given is trusted for " + packageName);
      continue;
    }
    evidence::Expectation want;
    want.subjectDigest = digest;
    want.requirePassed = false;  // a RolledBack record is a true record
    auto v = evidence::verifyBundle(r.bundle, keys, want,
                                    r.statement.empty() ? "the bundle" : r.statement);
    if (!v.isOk()) {
      refuse(v.status().message());
      continue;
    }
    if (!isFleetPredicate(v->predicateType)) {
      ++out.otherStatements;
      continue;
    }
    if (!trust.trusts(v->keyName, packageName, v->stage)) {
      refuse("signed by " + v->keyName + ", which is not trusted for stage \"" + v->stage +
             "\" of " + packageName);
      continue;
    }
    if (v->predicateType == evidence::kWavePermitPredicate) {
      auto p = evidence::parseWavePermit(v->statement);
      if (p.isOk()) {
        out.permits.push_back({*p, v->keyName, r.digest});
      } else {
        refuse("a wave permit that does not parse: " + p.status().message());
      }
    } else if (v->predicateType == evidence::kFleetAbortPredicate) {
      auto a = evidence::parseFleetAbort(v->statement);
      if (a.isOk()) {
        out.aborts.push_back({*a, v->keyName, r.digest});
      } else {
        refuse("a fleet abort that does not parse: " + a.status().message());
      }
    } else {
      auto rec = evidence::parseProdRecord(v->statement);
      if (rec.isOk()) {
        out.records.push_back({*rec, v->keyName, r.digest});
      } else {
        refuse("a prod record that does not parse: " + rec.status().message());
      }
    }
  }
  std::stable_sort(out.permits.begin(), out.permits.end(), [](const auto& a, const auto& b) {
    return a.value.issuedAt < b.value.issuedAt;
  });
  std::stable_sort(out.aborts.begin(), out.aborts.end(), [](const auto& a, const auto& b) {
    return a.value.issuedAt < b.value.issuedAt;
  });
  std::stable_sort(out.records.begin(), out.records.end(),
                   [](const auto& a, const auto& b) { return a.value.since < b.value.since; });
  return out;
}

StatusOr<FleetRollout> decodeRolloutManifest(const ManifestFile& file) {
  const json& o = file.json();
  if (!o.is_object() || o.value("kind", "") != "ModelRollout")
    return invalidArgument(file.at("kind") + ": kind: not a ModelRollout");
  if (!o.contains("spec")) return invalidArgument(file.source() + ": spec: is required");
  FleetRollout out;
  out.meta = v1::decodeMeta(o);
  auto spec = v1::decodeModelRolloutSpec(o.at("spec"));
  if (!spec.isOk()) return invalidArgument(file.locate(spec.status().message()));
  out.spec = std::move(*spec);
  return out;
}

ordered_json fleetStatus(const std::string& package, const FleetEvidence& ev,
                         const FleetRollout* rollout, int64_t nowUnix) {
  ordered_json out{{"package", package}, {"evaluatedAt", evidence::statementTime(nowUnix)}};
  out = rollout != nullptr ? rolloutView(ev, *rollout, nowUnix, std::move(out))
                           : registryView(package, ev, nowUnix, std::move(out));
  ordered_json permits = ordered_json::array(), aborts = ordered_json::array(),
               records = ordered_json::array(), refused = ordered_json::array();
  for (const auto& p : ev.permits) permits.push_back(permitJson(p));
  for (const auto& a : ev.aborts) aborts.push_back(abortJson(a));
  for (const auto& r : ev.records) records.push_back(recordJson(r));
  for (const RefusedStatement& r : ev.refused)
    refused.push_back({{"referrer", r.referrer},
                       {"statement", r.statement},
                       {"predicateType", r.predicateType},
                       {"reason", r.reason}});
  out["permits"] = permits;
  out["aborts"] = aborts;
  out["records"] = records;
  out["refused"] = refused;
  out["otherStatements"] = ev.otherStatements;
  return out;
}

std::string fleetStatusTable(const ordered_json& s) {
  std::string out;
  std::vector<std::vector<std::string>> head{{"PACKAGE", text(s, "package")}};
  if (s.contains("rollout"))
    head.push_back({"ROLLOUT", text(s, "rollout") + " at " + text(s, "evaluatedAt")});
  head.push_back({"PHASE", text(s, "phase") + ": " + text(s, "message")});
  if (s.contains("next")) head.push_back({"NEXT", text(s, "next")});
  out += table(head);

  if (s.contains("waves")) {
    std::vector<std::vector<std::string>> rows{{"WAVE", "PHASE", "CLUSTERS", "MESSAGE"}};
    for (const auto& w : s["waves"]) {
      std::vector<std::string> names;
      for (const auto& c : w["clusters"]) names.push_back(c.get<std::string>());
      rows.push_back({text(w, "name"), text(w, "phase"), names.empty() ? "-" : joined(names, ","),
                      text(w, "message", "")});
    }
    out += "\n" + table(rows);
  }
  if (!s["clusters"].empty()) {
    std::vector<std::vector<std::string>> rows{
        {"CLUSTER", "WAVE", "STATE", "PERMITTED", "SINCE", "REASON"}};
    for (const auto& c : s["clusters"])
      rows.push_back({text(c, "name"), text(c, "wave"), text(c, "state"), text(c, "permittedAt"),
                      text(c, "since"), text(c, "reason", "")});
    out += "\n" + table(rows);
  }
  for (const auto& a : s["aborts"]) {
    std::vector<std::string> failures;
    for (const auto& f : a["failures"])
      failures.push_back(f.value("cluster", "") + " " + f.value("outcome", "") + " at " +
                         f.value("at", ""));
    out += "\nABORT  " + text(a, "issuedAt") + " by " + text(a, "rollout") + " in wave " +
           text(a, "wave") + ": " + joined(failures) + " (maxFailures " +
           std::to_string(a.value("maxFailures", 0)) + "), signed by " + text(a, "signedBy") + "\n";
  }
  if (!s["refused"].empty()) {
    std::vector<std::vector<std::string>> rows{
        {"REFUSED (counted for nothing)", "STATEMENT", "REASON"}};
    for (const auto& r : s["refused"])
      rows.push_back({text(r, "referrer"), text(r, "statement"), text(r, "reason", "")});
    out += "\n" + table(rows);
  }
  const int other = s.value("otherStatements", 0);
  out += "\n" + std::to_string(s["permits"].size()) + " permits, " +
         std::to_string(s["records"].size()) + " prod records, " +
         std::to_string(s["aborts"].size()) + " aborts verified; " +
         std::to_string(s["refused"].size()) + " refused; " + std::to_string(other) +
         " other statement" + (other == 1 ? "" : "s") + " of the package not read\n";
  return out;
}

}  // namespace lockstep::cli
