#include "evidence/fleet_statement.h"

#include <chrono>
#include <set>

#include "evidence/statement.h"
#include "operator/kube/clock.h"

namespace lockstep::evidence {
namespace {

using Json = nlohmann::ordered_json;
using nlohmann::json;

bool sameRef(const api::ImageRef& a, const api::ImageRef& b) {
  return a.domain == b.domain && a.path == b.path && a.tag == b.tag && a.digest == b.digest;
}

StatusOr<Json> subjectOf(const api::ImageRef& package) {
  if (!api::isSha256Digest(package.digest))
    return invalidArgument("subject: package " + package.repository() +
                           " is not pinned by digest (@sha256:…)");
  return Json::array({Json{{"name", package.repository()},
                           {"digest", Json{{"sha256", package.digest.substr(7)}}}}});
}

Json statement(Json subject, const char* predicateType, Json predicate) {
  return Json{{"_type", kStatementType},
              {"subject", std::move(subject)},
              {"predicateType", predicateType},
              {"predicate", std::move(predicate)}};
}

// The string member `key` of `j`; "" when absent or not a string (never throws).
std::string str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Status bad(const std::string& field, const std::string& why) {
  return invalidArgument(field + ": " + why);
}

std::string indexed(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

// The predicate of `s` once its _type and predicateType are the ones wanted; the
// package from its first subject.
StatusOr<const json*> predicateOf(const json& s, const char* predicateType,
                                  api::ImageRef* package) {
  if (!s.is_object()) return invalidArgument("statement: must be a JSON object");
  if (str(s, "_type") != kStatementType)
    return bad("_type", "\"" + str(s, "_type") + "\" is not " + kStatementType);
  if (str(s, "predicateType") != predicateType)
    return bad("predicateType", "\"" + str(s, "predicateType") + "\" is not " + predicateType);
  const json* subjects = s.contains("subject") ? &s.at("subject") : nullptr;
  if (subjects == nullptr || !subjects->is_array() || subjects->empty())
    return bad("subject", "must list the package");
  const json& sub = subjects->at(0);
  if (!sub.is_object() || !sub.contains("name") || !sub.at("name").is_string())
    return bad("subject[0].name", "must be the package's repository");
  const std::string hex = sub.contains("digest") ? str(sub.at("digest"), "sha256") : "";
  if (!api::isSha256Digest("sha256:" + hex))
    return bad("subject[0].digest.sha256", "\"" + hex + "\" is not 64 lowercase hex digits");
  auto ref = api::parseImageRef(sub.at("name").get<std::string>() + "@sha256:" + hex);
  if (!ref.isOk()) return bad("subject[0].name", ref.status().message());
  *package = *ref;
  if (!s.contains("predicate") || !s.at("predicate").is_object())
    return bad("predicate", "must be an object");
  return &s.at("predicate");
}

// Field readers over a predicate; `field` is "predicate.<key>".
StatusOr<std::string> text(const json& p, const std::string& key, bool required) {
  const std::string field = "predicate." + key;
  if (!p.contains(key)) {
    if (required) return bad(field, "is required");
    return std::string();
  }
  const json& v = p.at(key);
  if (!v.is_string() || (required && v.get<std::string>().empty()))
    return bad(field, "must be a non-empty string");
  return v.get<std::string>();
}

StatusOr<int64_t> timeAt(const json& p, const std::string& key, const std::string& field) {
  if (!p.contains(key) || !p.at(key).is_string()) return bad(field, "must be an RFC 3339 time");
  auto t = parseStatementTime(p.at(key).get<std::string>());
  if (!t) return bad(field, "\"" + p.at(key).get<std::string>() + "\" is not an RFC 3339 time");
  return *t;
}

StatusOr<int64_t> count(const json& p, const std::string& key) {
  if (!p.contains(key) || !p.at(key).is_number_integer() || p.at(key).get<int64_t>() < 0)
    return bad("predicate." + key, "must be an integer of at least 0");
  return p.at(key).get<int64_t>();
}

Status checkOutcome(const std::string& outcome, const std::string& field) {
  if (outcome != kOutcomeRolledBack && outcome != kOutcomeTimedOut)
    return bad(field, "\"" + outcome + "\" is not RolledBack or TimedOut");
  return Status::ok();
}

}  // namespace

bool WavePermit::operator==(const WavePermit& o) const {
  return sameRef(package, o.package) && rollout == o.rollout && rolloutUid == o.rolloutUid &&
         wave == o.wave && waveIndex == o.waveIndex && clusters == o.clusters &&
         allClusters == o.allClusters && issuedAt == o.issuedAt && model == o.model;
}

bool FleetFailure::operator==(const FleetFailure& o) const {
  return cluster == o.cluster && outcome == o.outcome && at == o.at && reason == o.reason;
}

bool FleetAbort::operator==(const FleetAbort& o) const {
  return sameRef(package, o.package) && rollout == o.rollout && rolloutUid == o.rolloutUid &&
         wave == o.wave && failures == o.failures && maxFailures == o.maxFailures &&
         issuedAt == o.issuedAt && model == o.model;
}

bool permits(const WavePermit& permit, const std::string& cluster) {
  if (permit.allClusters) return true;
  for (const std::string& c : permit.clusters)
    if (c == cluster) return true;
  return false;
}

std::string statementTime(int64_t unix) {
  return kube::formatTime(kube::Clock::WallTime(std::chrono::seconds(unix)), /*micro=*/false);
}

std::optional<int64_t> parseStatementTime(const std::string& text) {
  kube::Clock::WallTime t;
  if (!kube::parseTime(text, &t)) return std::nullopt;
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

StatusOr<nlohmann::ordered_json> wavePermitStatement(const WavePermit& permit) {
  auto subject = subjectOf(permit.package);
  if (!subject.isOk()) return subject.status();
  if (permit.rollout.empty()) return bad("rollout", "is required");
  if (permit.rolloutUid.empty()) return bad("rolloutUid", "is required");
  if (permit.wave.empty()) return bad("wave", "is required");
  if (permit.waveIndex < 0) return bad("waveIndex", "must be at least 0");
  if (permit.allClusters && !permit.clusters.empty())
    return bad("clusters", "must be empty in the open permit (allClusters)");
  if (!permit.allClusters && permit.clusters.empty())
    return bad("clusters", "must name at least one cluster (or allClusters)");
  std::set<std::string> seen;
  for (size_t i = 0; i < permit.clusters.size(); ++i) {
    if (permit.clusters[i].empty()) return bad(indexed("clusters", i), "is empty");
    if (!seen.insert(permit.clusters[i]).second)
      return bad(indexed("clusters", i), "\"" + permit.clusters[i] + "\" is listed twice");
  }
  Json predicate{{"rollout", permit.rollout},
                 {"rolloutUid", permit.rolloutUid},
                 {"wave", permit.wave},
                 {"waveIndex", permit.waveIndex}};
  if (permit.allClusters) {
    predicate["allClusters"] = true;
  } else {
    predicate["clusters"] = permit.clusters;
  }
  predicate["issuedAt"] = statementTime(permit.issuedAt);
  predicate["model"] = permit.model;
  return statement(*subject, kWavePermitPredicate, predicate);
}

StatusOr<nlohmann::ordered_json> fleetAbortStatement(const FleetAbort& abort) {
  auto subject = subjectOf(abort.package);
  if (!subject.isOk()) return subject.status();
  if (abort.rollout.empty()) return bad("rollout", "is required");
  if (abort.rolloutUid.empty()) return bad("rolloutUid", "is required");
  if (abort.maxFailures < 0) return bad("maxFailures", "must be at least 0");
  Json failures = Json::array();
  for (size_t i = 0; i < abort.failures.size(); ++i) {
    const FleetFailure& f = abort.failures[i];
    if (f.cluster.empty()) return bad(indexed("failures", i) + ".cluster", "is required");
    LOCKSTEP_RETURN_IF_ERROR(checkOutcome(f.outcome, indexed("failures", i) + ".outcome"));
    failures.push_back(Json{{"cluster", f.cluster},
                            {"outcome", f.outcome},
                            {"at", statementTime(f.at)},
                            {"reason", f.reason}});
  }
  Json predicate{{"rollout", abort.rollout},
                 {"rolloutUid", abort.rolloutUid},
                 {"wave", abort.wave},
                 {"failures", failures},
                 {"maxFailures", abort.maxFailures},
                 {"issuedAt", statementTime(abort.issuedAt)},
                 {"model", abort.model}};
  return statement(*subject, kFleetAbortPredicate, predicate);
}

StatusOr<WavePermit> parseWavePermit(const json& statement) {
  WavePermit out;
  auto predicate = predicateOf(statement, kWavePermitPredicate, &out.package);
  if (!predicate.isOk()) return predicate.status();
  const json& p = **predicate;
  auto rollout = text(p, "rollout", true);
  if (!rollout.isOk()) return rollout.status();
  out.rollout = *rollout;
  auto uid = text(p, "rolloutUid", true);
  if (!uid.isOk()) return uid.status();
  out.rolloutUid = *uid;
  auto wave = text(p, "wave", true);
  if (!wave.isOk()) return wave.status();
  out.wave = *wave;
  auto index = count(p, "waveIndex");
  if (!index.isOk()) return index.status();
  out.waveIndex = *index;
  if (p.contains("allClusters")) {
    if (!p.at("allClusters").is_boolean())
      return bad("predicate.allClusters", "must be true or false");
    out.allClusters = p.at("allClusters").get<bool>();
  }
  if (p.contains("clusters")) {
    const json& cs = p.at("clusters");
    if (!cs.is_array()) return bad("predicate.clusters", "must be a list of cluster names");
    if (out.allClusters && !cs.empty())
      return bad("predicate.clusters", "must be absent in the open permit (allClusters)");
    for (size_t i = 0; i < cs.size(); ++i) {
      if (!cs[i].is_string() || cs[i].get<std::string>().empty())
        return bad(indexed("predicate.clusters", i), "must be a non-empty string");
      out.clusters.push_back(cs[i].get<std::string>());
    }
  }
  if (!out.allClusters && out.clusters.empty())
    return bad("predicate.clusters", "must name at least one cluster (or allClusters: true)");
  auto issued = timeAt(p, "issuedAt", "predicate.issuedAt");
  if (!issued.isOk()) return issued.status();
  out.issuedAt = *issued;
  auto model = text(p, "model", false);
  if (!model.isOk()) return model.status();
  out.model = *model;
  return out;
}

StatusOr<FleetAbort> parseFleetAbort(const json& statement) {
  FleetAbort out;
  auto predicate = predicateOf(statement, kFleetAbortPredicate, &out.package);
  if (!predicate.isOk()) return predicate.status();
  const json& p = **predicate;
  auto rollout = text(p, "rollout", true);
  if (!rollout.isOk()) return rollout.status();
  out.rollout = *rollout;
  auto uid = text(p, "rolloutUid", true);
  if (!uid.isOk()) return uid.status();
  out.rolloutUid = *uid;
  auto wave = text(p, "wave", false);
  if (!wave.isOk()) return wave.status();
  out.wave = *wave;
  if (!p.contains("failures") || !p.at("failures").is_array())
    return bad("predicate.failures", "must be a list of {cluster, outcome, at, reason}");
  const json& fs = p.at("failures");
  for (size_t i = 0; i < fs.size(); ++i) {
    const std::string field = indexed("predicate.failures", i);
    const json& f = fs[i];
    if (!f.is_object()) return bad(field, "must be an object {cluster, outcome, at, reason}");
    FleetFailure failure;
    failure.cluster = str(f, "cluster");
    if (failure.cluster.empty()) return bad(field + ".cluster", "must be a non-empty string");
    failure.outcome = str(f, "outcome");
    LOCKSTEP_RETURN_IF_ERROR(checkOutcome(failure.outcome, field + ".outcome"));
    auto at = timeAt(f, "at", field + ".at");
    if (!at.isOk()) return at.status();
    failure.at = *at;
    failure.reason =
        f.contains("reason") && f.at("reason").is_string() ? f.at("reason").get<std::string>() : "";
    out.failures.push_back(std::move(failure));
  }
  auto max = count(p, "maxFailures");
  if (!max.isOk()) return max.status();
  out.maxFailures = *max;
  auto issued = timeAt(p, "issuedAt", "predicate.issuedAt");
  if (!issued.isOk()) return issued.status();
  out.issuedAt = *issued;
  auto model = text(p, "model", false);
  if (!model.isOk()) return model.status();
  out.model = *model;
  return out;
}

StatusOr<ProdRecord> parseProdRecord(const json& statement) {
  ProdRecord out;
  auto predicate = predicateOf(statement, kProdRecordPredicate, &out.package);
  if (!predicate.isOk()) return predicate.status();
  const json& p = **predicate;
  auto cluster = text(p, "cluster", true);
  if (!cluster.isOk()) return cluster.status();
  out.cluster = *cluster;
  auto outcome = text(p, "outcome", true);
  if (!outcome.isOk()) return outcome.status();
  out.outcome = *outcome;
  if (out.outcome != kOutcomePromoted && out.outcome != kOutcomeRolledBack)
    return bad("predicate.outcome", "\"" + out.outcome + "\" is not Promoted or RolledBack");
  auto since = timeAt(p, "since", "predicate.since");
  if (!since.isOk()) return since.status();
  out.since = *since;
  if (p.contains("release")) {
    const json& r = p.at("release");
    if (!r.is_object()) return bad("predicate.release", "must be an object {name, uid}");
    out.releaseUid = str(r, "uid");
  }
  if (p.contains("runtime")) {
    const json& r = p.at("runtime");
    if (!r.is_object()) return bad("predicate.runtime", "must be an object {closureHash, image}");
    out.closureHash = str(r, "closureHash");
    out.runtimeImage = str(r, "image");
  }
  auto reason = text(p, "reason", false);
  if (!reason.isOk()) return reason.status();
  out.reason = *reason;
  if (p.contains("failedStep")) {
    if (!p.at("failedStep").is_object())
      return bad("predicate.failedStep", "must be an object {step, analysis}");
    out.failedStep = p.at("failedStep");
  }
  return out;
}

}  // namespace lockstep::evidence
