#include "controllers/evidence/evidence_plan.h"

#include <algorithm>
#include <map>

#include "api/image_ref.h"
#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/modelrelease/timestamps.h"
#include "evidence/ml_bom.h"
#include "evidence/statement.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
namespace decode = api::v1alpha1::decode;
using nlohmann::json;

std::string revisionText(const json& status) {
  const json& runtime = decode::object(status, "runtime");
  const int64_t revision = decode::integer(runtime, "revision", 0);
  return revision > 0 ? std::to_string(revision) : std::string();
}

// What a passed gate stage measured, from its status (evidence, metrics, times)
// and the thresholds of its spec.
evidence::GateResult gateResultOf(const json& stage, const json& st,
                                  const std::string& specDigest) {
  const json& ev = decode::object(st, "evidence");
  evidence::GateResult g;
  g.stage = decode::string(stage, "name");
  g.stageSpecDigest = specDigest;
  g.jobUid = decode::string(ev, "jobUID");
  g.image = decode::string(ev, "image");
  for (const json& c : decode::array(ev, "command"))
    if (c.is_string()) g.command.push_back(c.get<std::string>());
  g.startedAt = decode::string(st, "startedAt");
  g.finishedAt = decode::string(st, "finishedAt");
  // Every metric the gate reported (sorted by name), with the spec's thresholds.
  const json& measured = decode::object(st, "metrics");
  for (const auto& [metric, value] : measured.items()) {
    if (!value.is_number()) continue;
    evidence::MetricResult r;
    r.name = metric;
    r.value = value.get<double>();
    for (const json& m : decode::array(decode::object(stage, "gate"), "metrics")) {
      if (decode::string(m, "name") != metric) continue;
      if (auto mn = m.find("min"); mn != m.end() && mn->is_number()) r.min = mn->get<double>();
      if (auto mx = m.find("max"); mx != m.end() && mx->is_number()) r.max = mx->get<double>();
    }
    g.metrics.push_back(r);
  }
  return g;
}

bool servingStage(const json& stage) {
  return stage.contains("serving") || stage.contains("canary");
}

PlannedStatement planned(const std::string& name, const std::string& stage,
                         const std::string& predicateType, const nlohmann::ordered_json& st) {
  PlannedStatement p;
  p.name = name;
  p.stage = stage;
  p.predicateType = predicateType;
  p.payload = st.dump();
  p.digest = evidence::sha256Digest(p.payload);
  return p;
}

}  // namespace

StatusOr<std::vector<PlannedStatement>> plannedStatements(const json& release,
                                                          const EvidenceContext& context) {
  std::vector<PlannedStatement> out;
  const json& spec = decode::object(release, "spec");
  const json& status = decode::object(release, "status");
  auto package = api::parseImageRef(decode::string(spec, "package"));
  if (!package.isOk() || !package->pinned()) {
    return invalidArgument("spec.package: \"" + decode::string(spec, "package") +
                           "\" is not pinned by digest: no evidence is made for it");
  }
  const json& runtime = decode::object(status, "runtime");
  const std::string revision = revisionText(status);
  std::map<std::string, const json*> stageStatus;
  for (const json& st : decode::array(status, "stages"))
    if (st.is_object()) stageStatus[decode::string(st, "name")] = &st;

  std::vector<evidence::InputAttestation> decisions;
  for (const json& stage : decode::array(spec, "stages")) {
    if (!stage.is_object()) continue;
    const std::string name = decode::string(stage, "name");
    auto it = stageStatus.find(name);
    if (it == stageStatus.end() || decode::string(*it->second, "phase") != v1::kStageSucceeded)
      continue;
    const json& st = *it->second;
    if (servingStage(stage)) continue;  // the prod record
    const json& ev = decode::object(st, "evidence");
    std::string specDigest = decode::string(ev, "specDigest");
    if (specDigest.empty()) specDigest = evidence::stageSpecDigest(stage);
    const std::string closureHash = decode::string(ev, "closureHash").empty()
                                        ? decode::string(runtime, "closureHash")
                                        : decode::string(ev, "closureHash");
    const std::string runtimeImage = decode::string(runtime, "image");
    std::vector<evidence::InputAttestation> inputs;
    if (stage.contains("gate") && !decode::string(ev, "jobUID").empty()) {
      evidence::EvalStatementInput in;
      in.package = *package;
      in.gate = gateResultOf(stage, st, specDigest);
      in.closureHash = closureHash;
      in.runtimeImage = runtimeImage;
      auto statement = evidence::evalStatement(in);
      if (!statement.isOk()) return statement.status().withContext("stage " + name);
      PlannedStatement p =
          planned(name + "/test-result", name, evidence::kTestResultPredicate, *statement);
      inputs.push_back({name, p.digest});
      out.push_back(std::move(p));
    }
    evidence::DecisionInput d;
    d.package = *package;
    d.stage = name;
    d.stageSpecDigest = specDigest;
    d.passed = true;
    d.inputs = inputs;
    // Each approver with the groups recorded when they approved (status approvals); a
    // status written before groups were recorded names the approvers only.
    if (st.contains("approvals")) {
      for (const json& a : decode::array(st, "approvals")) {
        evidence::Approver who{decode::string(a, "user"), {}, "", a.contains("groups")};
        for (const json& g : decode::array(a, "groups"))
          if (g.is_string()) who.groups.push_back(g.get<std::string>());
        if (!who.user.empty()) d.approvers.push_back(std::move(who));
      }
    } else {
      for (const json& u : decode::array(st, "approvers"))
        if (u.is_string()) d.approvers.push_back({u.get<std::string>(), {}, "", false});
    }
    d.closureHash = closureHash;
    d.runtimeImage = runtimeImage;
    d.revision = revision;
    d.timeVerified = decode::string(st, "finishedAt");
    d.verifierVersion = context.version;
    auto statement = evidence::decisionStatement(d);
    if (!statement.isOk()) return statement.status().withContext("stage " + name);
    PlannedStatement p =
        planned(name + "/decision", name, evidence::kVerificationSummaryPredicate, *statement);
    decisions.push_back({name, p.digest});
    out.push_back(std::move(p));
  }

  // The prod record, once the canary ended; an unreadable status.canary
  // cannot tell whether it did, nor give the record's bytes.
  const v1::CanaryStatusRead read = v1::readReleaseCanary(release);
  if (!read.error.empty())
    return invalidArgument("prod record: " + read.error + ": the canary's end cannot be read");
  const v1::CanaryStatus& canary = read.orEmpty();
  const std::string canaryPhase = canary.phase.value_or("");
  const std::string finishedAt = canary.finishedAt.value_or("");
  if ((canaryPhase == v1::kPhasePromoted || canaryPhase == v1::kPhaseRolledBack) &&
      !finishedAt.empty()) {
    const v1::ObjectMeta meta = v1::decodeMeta(release);
    evidence::ProdRecordInput in;
    in.package = *package;
    in.outcome = canaryPhase;
    in.cluster = context.clusterName;
    in.ns = meta.ns;
    in.model = decode::string(spec, "model");
    in.release = meta.name;
    in.releaseUid = meta.uid;
    in.since = finishedAt;
    in.closureHash = decode::string(runtime, "closureHash");
    in.runtimeImage = decode::string(runtime, "image");
    in.revision = revision;
    // The bytes are those of the status as read (canary_status.h keeps the
    // members it does not know and each number's form): the same status, the
    // same statement.
    if (canaryPhase == v1::kPhaseRolledBack) {
      in.reason = canary.reason.value_or("");
      in.message = canary.message.value_or("");
      json failed = {{"step", canary.step.value_or(0)}};
      if (canary.analysis) {
        // The step's counters and measurements, not its phase or message.
        v1::CanaryAnalysisStatus counted;
        counted.count = canary.analysis->count;
        counted.successful = canary.analysis->successful;
        counted.failed = canary.analysis->failed;
        counted.errors = canary.analysis->errors;
        counted.measurements = canary.analysis->measurements;
        v1::CanaryStatus only;
        only.analysis = std::move(counted);
        failed["analysis"] = v1::encodeCanaryStatus(only)["analysis"];
      }
      in.failedStep = failed;
      in.restoredPackage = canary.knownGood ? canary.knownGood->package.value_or("") : "";
    }
    v1::CanaryStatus passed;
    passed.passedSteps = canary.passedSteps;
    in.canarySteps = v1::encodeCanaryStatus(passed).value("passedSteps", json::array());
    in.inputs = decisions;
    auto statement = evidence::prodRecordStatement(in);
    if (!statement.isOk()) return statement.status().withContext("prod record");
    std::string stage = "prod";
    for (const json& s : decode::array(spec, "stages"))
      if (s.is_object() && servingStage(s)) stage = decode::string(s, "name");
    out.push_back(planned(
        std::string("prod/") + (canaryPhase == v1::kPhasePromoted ? "promoted" : "rolled-back"),
        stage, evidence::kProdRecordPredicate, *statement));
  }
  return out;
}

bool bomDue(const json& release) {
  std::map<std::string, std::string> phases;
  for (const json& st : decode::array(decode::object(release, "status"), "stages"))
    if (st.is_object()) phases[decode::string(st, "name")] = decode::string(st, "phase");
  int gates = 0;
  for (const json& stage : decode::array(decode::object(release, "spec"), "stages")) {
    if (!stage.is_object() || servingStage(stage)) continue;
    ++gates;
    if (phases[decode::string(stage, "name")] != v1::kStageSucceeded) return false;
  }
  return gates > 0;
}

StatusOr<PlannedStatement> bomStatement(const json& release, const closure::Closure& closure,
                                        const EvidenceContext& context, const json& advisories) {
  const json& spec = decode::object(release, "spec");
  const json& status = decode::object(release, "status");
  auto package = api::parseImageRef(decode::string(spec, "package"));
  if (!package.isOk() || !package->pinned())
    return invalidArgument("spec.package: not pinned by digest: no BOM is made for it");
  std::map<std::string, const json*> stageStatus;
  for (const json& st : decode::array(status, "stages"))
    if (st.is_object()) stageStatus[decode::string(st, "name")] = &st;
  evidence::MlBomInput in;
  in.package = *package;
  in.modelName = decode::string(spec, "model");
  in.closure = &closure;
  if (auto image = api::parseImageRef(decode::string(decode::object(status, "runtime"), "image"));
      image.isOk() && image->pinned())
    in.runtimeImage = *image;
  for (const json& stage : decode::array(spec, "stages")) {
    if (!stage.is_object() || !stage.contains("gate")) continue;
    auto it = stageStatus.find(decode::string(stage, "name"));
    if (it == stageStatus.end() || decode::string(*it->second, "phase") != v1::kStageSucceeded)
      continue;
    std::string specDigest = decode::string(decode::object(*it->second, "evidence"), "specDigest");
    if (specDigest.empty()) specDigest = evidence::stageSpecDigest(stage);
    in.gates.push_back(gateResultOf(stage, *it->second, specDigest));
    in.timestamp = std::max(in.timestamp, in.gates.back().finishedAt);
  }
  in.toolVersion = context.version;
  if (const json* described = decode::member(status, "package"))
    in.packageInfo = v1::decodePackageInfo(*described);
  const int64_t pinned = decode::integer(decode::object(status, "runtime"), "revision", -1);
  // The pinned revision's advisories: the top level while it is current, else its
  // entry of revisions[].
  if (const json ofPinned = v1::advisoriesOfRevision(advisories, pinned); ofPinned.is_object()) {
    for (const json& a : decode::array(ofPinned, "items")) {
      evidence::BomVulnerability v;
      v.id = decode::string(a, "id");
      for (const json& alias : decode::array(a, "aliases"))
        if (alias.is_string()) v.aliases.push_back(alias.get<std::string>());
      v.package = decode::string(a, "package");
      v.version = decode::string(a, "version");
      v.severity = decode::string(a, "severity");
      if (a.contains("score") && a["score"].is_number()) v.score = a["score"].get<double>();
      v.fixed = decode::string(a, "fixed");
      in.vulnerabilities.push_back(std::move(v));
    }
  }
  auto bom = evidence::makeMlBom(in);
  if (!bom.isOk()) return bom.status().withContext("ML-BOM");
  nlohmann::ordered_json statement = {
      {"_type", evidence::kStatementType},
      {"subject",
       nlohmann::ordered_json::array({{{"name", package->repository()},
                                       {"digest", {{"sha256", package->digest.substr(7)}}}}})},
      {"predicateType", kCycloneDxPredicate},
      {"predicate", *bom}};
  return planned(kBomStatementName, "bom", kCycloneDxPredicate, statement);
}

int64_t evidenceBackoffSeconds(int attempts) {
  int64_t wait = 5;
  for (int i = 1; i < attempts && wait < 300; ++i) wait *= 2;
  return std::min<int64_t>(wait, 300);
}

std::vector<PlannedStatement> dueStatements(const json& evidence,
                                            const std::vector<PlannedStatement>& planned,
                                            int64_t nowUnix, int64_t* retryAfterSeconds) {
  std::map<std::string, const json*> recorded;
  if (evidence.is_array()) {
    for (const json& e : evidence)
      if (e.is_object()) recorded[decode::string(e, "name")] = &e;
  }
  std::vector<PlannedStatement> due;
  for (const PlannedStatement& p : planned) {
    auto it = recorded.find(p.name);
    if (it == recorded.end()) {
      due.push_back(p);
      continue;
    }
    const json& e = *it->second;
    // Published evidence is append-only: a status that changed since (a
    // superseded release's canary end) never publishes a second statement of
    // the name.
    if (decode::string(e, "phase") == "Published") continue;
    if (decode::string(e, "statementDigest") != p.digest) {
      due.push_back(p);
      continue;
    }
    auto last = parseRfc3339(decode::string(e, "lastAttemptAt"));
    const int64_t wait =
        evidenceBackoffSeconds(static_cast<int>(decode::integer(e, "attempts", 1)));
    if (last && nowUnix < *last + wait) {
      const int64_t left = *last + wait - nowUnix;
      if (retryAfterSeconds && (*retryAfterSeconds == 0 || left < *retryAfterSeconds))
        *retryAfterSeconds = left;
      continue;
    }
    due.push_back(p);
  }
  return due;
}

EvidenceStatus foldEvidence(const json& status, const std::vector<PlannedStatement>& planned,
                            const std::vector<EvidenceOutcome>& outcomes,
                            const std::string& setupError, int64_t generation,
                            const std::string& now) {
  std::map<std::string, json> before;
  for (const json& e : decode::array(status, "evidence"))
    if (e.is_object()) before[decode::string(e, "name")] = e;
  std::map<std::string, const EvidenceOutcome*> byName;
  for (const EvidenceOutcome& o : outcomes) byName[o.name] = &o;

  EvidenceStatus out;
  out.entries = json::array();
  int published = 0;
  std::string firstError;
  for (const PlannedStatement& p : planned) {
    json e = {{"name", p.name}, {"predicateType", p.predicateType}, {"statementDigest", p.digest}};
    auto prev = before.find(p.name);
    if (prev != before.end() && decode::string(prev->second, "phase") == "Published" &&
        byName.count(p.name) == 0) {
      out.entries.push_back(prev->second);  // published: as recorded, whatever the status says now
      ++published;
      continue;
    }
    const bool sameStatement =
        prev != before.end() && decode::string(prev->second, "statementDigest") == p.digest;
    const int priorAttempts =
        sameStatement ? static_cast<int>(decode::integer(prev->second, "attempts", 0)) : 0;
    auto o = byName.find(p.name);
    if (o != byName.end() && o->second->error.empty()) {
      e["phase"] = "Published";
      e["referrer"] = o->second->referrer;
      e["repository"] = o->second->repository;
      e["publishedAt"] = sameStatement && prev->second.contains("publishedAt")
                             ? prev->second["publishedAt"]
                             : json(now);
      e["attempts"] = priorAttempts + 1;
      e["lastAttemptAt"] = now;
      ++published;
    } else if (o != byName.end() ||
               (!setupError.empty() &&
                !(sameStatement && decode::string(prev->second, "phase") == "Published"))) {
      const std::string error = o != byName.end() ? o->second->error : setupError;
      e["phase"] = "Failed";
      e["message"] = error;
      e["attempts"] = priorAttempts + 1;
      e["lastAttemptAt"] = now;
      if (firstError.empty()) firstError = p.name + ": " + error;
      const int64_t wait = evidenceBackoffSeconds(priorAttempts + 1);
      if (out.retryAfterSeconds == 0 || wait < out.retryAfterSeconds) out.retryAfterSeconds = wait;
    } else if (sameStatement) {
      e = prev->second;  // untouched this pass: as recorded
      if (decode::string(e, "phase") == "Published") {
        ++published;
      } else if (firstError.empty()) {
        firstError = p.name + ": " + decode::string(e, "message");
      }
    } else {
      e["phase"] = "Pending";
    }
    out.entries.push_back(std::move(e));
  }
  kube::Condition c;
  c.type = kConditionEvidencePublished;
  if (!firstError.empty()) {
    c.status = "False";
    c.reason = setupError.empty() ? "PublishFailed" : "SigningUnavailable";
    c.message = std::to_string(published) + " of " + std::to_string(planned.size()) +
                " statements published; " + firstError +
                " (retrying; the release is not held back)";
  } else if (published < static_cast<int>(planned.size())) {
    c.status = "False";
    c.reason = "Pending";
    c.message = std::to_string(published) + " of " + std::to_string(planned.size()) +
                " statements published";
  } else {
    c.status = "True";
    c.reason = "Published";
    c.message = std::to_string(published) + " statements published as referrers of the package";
  }
  json conditions = decode::array(status, "conditions");
  if (!conditions.is_array()) conditions = json::array();
  kube::setCondition(conditions, c, generation, now);
  out.condition = *kube::findCondition(conditions, kConditionEvidencePublished);
  return out;
}

std::optional<EvidenceCheckRequest> pendingEvidenceRequest(const json& release) {
  const api::v1alpha1::ModelRelease r = api::v1alpha1::decodeModelRelease(release);
  const json& status = decode::object(release, "status");
  for (const api::v1alpha1::Stage& s : r.spec.stages) {
    if (!s.evidence) continue;
    const json* st = nullptr;
    for (const json& e : decode::array(status, "stages"))
      if (decode::string(e, "name") == s.name) st = &e;
    if (st == nullptr || decode::string(*st, "phase") != api::v1alpha1::kStageRunning) continue;
    const json& recorded = decode::object(*st, "evidenceRequest");
    const std::string key = decode::string(recorded, "key");
    if (key.empty()) continue;
    auto request = evidenceCheckRequest(r, s, decode::string(recorded, "closureHash"),
                                        decode::string(recorded, "image"));
    if (!request.isOk() || request->key() != key) return std::nullopt;
    return *request;
  }
  return std::nullopt;
}

bool evidenceAnswerChanged(const std::optional<EvidenceCheckObserved>& previous,
                           const EvidenceCheckObserved& answer) {
  if (!previous) return true;
  return previous->key != answer.key || previous->result.passed != answer.result.passed ||
         previous->result.reason != answer.result.reason ||
         previous->result.message != answer.result.message ||
         previous->result.toJson()["statements"] != answer.result.toJson()["statements"];
}

}  // namespace lockstep::controllers
