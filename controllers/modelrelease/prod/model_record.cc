#include "controllers/modelrelease/prod/model_record.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

// A revision as written ("12"); 0 when it is not a plain number.
int64_t revisionNumber(const std::string& s) {
  if (s.empty() || s.size() > 18) return 0;
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

v1::ProdContent contentOf(const RecordedRelease& r, const std::string& since) {
  v1::ProdContent p;
  p.release = r.name;
  p.uid = r.uid;
  p.contentDigest = r.contentDigest;
  p.package = r.package;
  p.runtime = r.runtime;
  p.since = since;
  return p;
}

v1::ModelHistoryEntry entryOf(const std::string& action, const RecordedRelease& r,
                              const std::string& at) {
  v1::ModelHistoryEntry e;
  e.action = action;
  e.release = r.name;
  e.uid = r.uid;
  e.contentDigest = r.contentDigest;
  e.package = r.package;
  e.runtime = r.runtime;
  e.at = at;
  return e;
}

}  // namespace

int64_t highestRollbackRevision(const kube::Object& release) {
  const std::string prefix = v1::kRollbackAnnotationPrefix;
  int64_t highest = 0;
  const json& annotations =
      v1::decode::object(v1::decode::object(release, "metadata"), "annotations");
  for (const auto& [key, value] : annotations.items()) {
    if (key.starts_with(prefix))
      highest = std::max(highest, revisionNumber(key.substr(prefix.size())));
  }
  const json& rollback = v1::decode::object(v1::decode::object(release, "status"), "rollback");
  return std::max(highest, revisionNumber(v1::decode::string(rollback, "revision")));
}

PlannedApply createModel(const std::string& ns, const std::string& model) {
  json m = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "Model"},
      {"metadata",
       {{"name", model},
        {"namespace", ns},
        {"labels", {{v1::kModelLabel, model}, {"app.kubernetes.io/managed-by", "lockstep"}}}}},
      {"spec", json::object()}};
  PlannedApply a = plannedCreate(v1::kModels, std::move(m), "creating Model " + model);
  a.alreadyExistsIsConflict = true;
  return a;
}

PlannedApply modelStatusWrite(const kube::Object& model, const v1::ModelStatus& status,
                              std::string what) {
  json updated = model;
  updated["status"] = v1::encodeModelStatus(status);
  PlannedApply a = plannedUpdate(v1::kModels, std::move(updated), std::move(what));
  a.statusSubresource = true;
  return a;
}

PlannedApply claimCanary(const kube::Object& model, const std::optional<RecordedRelease>& release,
                         const std::string& now, int64_t revisionFloor) {
  v1::ModelStatus s = v1::decodeModel(model).status;
  if (release) {
    s.canary = contentOf(*release, now);
  } else {
    s.canary.reset();
  }
  s.revision = std::max(s.revision, revisionFloor);
  return modelStatusWrite(model, s,
                          release ? "claiming the canary of Model " + kube::name(model)
                                  : "freeing the canary slot of Model " + kube::name(model));
}

std::optional<PlannedApply> recordCanaryEnd(const kube::Object& model, const CanaryEndRecord& r) {
  const v1::Model m = v1::decodeModel(model);
  const std::string canary = m.canaryHolder();
  const std::string& name = r.release.name;
  // Promoted: prod is not this content yet, or the slot is still held.
  const bool sameProd = m.status.prod && m.status.prod->release == name &&
                        m.status.prod->contentDigest == r.release.contentDigest;
  const bool promotedNow = r.promoted && (!sameProd || canary == name);
  const bool rolledBackNow = !r.promoted && canary == name;
  if (!promotedNow && !rolledBackNow) return std::nullopt;
  v1::ModelStatus s = m.status;
  v1::ModelHistoryEntry entry =
      entryOf(r.promoted ? v1::kModelActionPromoted : v1::kModelActionRolledBack, r.release, r.now);
  if (promotedNow) {
    if (!sameProd) {
      s.revision = m.nextRevision();
      s.prod = contentOf(r.release, r.now);
      v1::recordStages(*s.prod, r.release.stages);
    }
    entry.revision = s.revision;
  } else {
    entry.reason = r.rollbackReason;
    entry.stable = r.stable;
  }
  s.canary.reset();
  bool recorded = false;
  for (const v1::ModelHistoryEntry& h : s.history)
    recorded =
        recorded || (h.release == name && h.uid == r.release.uid && h.action == entry.action);
  if (!recorded) v1::appendHistory(s.history, std::move(entry));
  return modelStatusWrite(model, s, "recording on Model " + kube::name(model));
}

PlannedApply recordRollback(const kube::Object& model, const RollbackRecord& r) {
  const v1::Model m = v1::decodeModel(model);
  v1::ModelStatus s = m.status;
  s.revision = m.nextRevision();
  s.prod = contentOf(r.release, r.now);
  v1::recordStages(*s.prod, r.release.stages);
  v1::ModelHistoryEntry e = entryOf(v1::kModelActionRollback, r.release, r.now);
  e.revision = s.revision;
  e.from = r.from;
  e.by = r.by;
  v1::appendHistory(s.history, std::move(e));
  return modelStatusWrite(model, s, "recording the rollback on Model " + kube::name(model));
}

ProdIdentity prodIdentity(const v1::Model& model, const kube::Object& release) {
  if (!model.status.prod) return ProdIdentity::kNotProd;
  const v1::ProdContent& rec = *model.status.prod;
  const v1::ObjectMeta meta = v1::decodeMeta(release);
  if (rec.release != meta.name) return ProdIdentity::kNotProd;
  if (rec.uid.empty() || rec.uid == meta.uid) return ProdIdentity::kRecorded;
  if (rec.contentDigest.empty()) return ProdIdentity::kOtherContent;
  // Its content on the recorded pair, if it may run on that pair at all.
  const json& spec = v1::decode::object(release, "spec");
  const std::string runtimeImage = v1::decode::string(spec, "runtimeImage");
  if (v1::decode::string(spec, "closureHash") != rec.runtime.closureHash ||
      (!runtimeImage.empty() &&
       v1::referenceDigest(runtimeImage) != v1::referenceDigest(rec.runtime.image)))
    return ProdIdentity::kOtherContent;
  const v1::RuntimePin pin{rec.runtime.revision, rec.runtime.image, rec.runtime.closureHash};
  return v1::contentDigest(v1::releaseContent(release, pin)) == rec.contentDigest
             ? ProdIdentity::kRecreated
             : ProdIdentity::kOtherContent;
}

PlannedApply recordRecognized(const kube::Object& model, const std::string& uid,
                              const std::string& now, const json& stages) {
  const v1::Model m = v1::decodeModel(model);
  v1::ModelStatus s = m.status;
  v1::ModelHistoryEntry e;
  e.action = v1::kModelActionRecognized;
  e.release = s.prod->release;
  e.uid = uid;
  e.contentDigest = s.prod->contentDigest;
  e.package = s.prod->package;
  e.runtime = s.prod->runtime;
  e.revision = s.revision;
  e.at = now;
  e.reason = "release object re-created with the content prod runs (was uid " + s.prod->uid + ")";
  s.prod->uid = uid;
  if (!s.prod->stages.is_array() && stages.is_array() && v1::stagesMatchContent(*s.prod, stages))
    v1::recordStages(*s.prod, stages);
  v1::appendHistory(s.history, std::move(e));
  return modelStatusWrite(model, s,
                          "recording on Model " + kube::name(model) + " that release " +
                              s.prod->release + " (uid " + uid + ") is prod's content");
}

std::optional<PlannedApply> adoptAnchor(const kube::Object& model, const kube::Object& anchor,
                                        const std::string& now,
                                        const std::optional<RecordedRelease>& prod) {
  const v1::Model m = v1::decodeModel(model);
  if (m.status.prod || !m.status.history.empty() || m.status.revision > 0) return std::nullopt;
  const v1::ModelAnchor a = v1::decodeModelAnchor(anchor);
  v1::ModelStatus s = m.status;
  s.revision = revisionNumber(a.prodRevision());
  for (const json& h : a.history) {
    if (!h.is_object()) continue;
    v1::ModelHistoryEntry e;
    e.action = h.value("action", "");
    e.release = h.value("release", "");
    e.package = h.value("package", "");
    e.runtime.closureHash = h.value("closureHash", "");
    e.at = h.value("at", "");
    e.reason = h.value("reason", "");
    e.stable = h.value("stable", "");
    e.from = h.value("from", "");
    e.by = h.value("by", "");
    if (!e.action.empty() && !e.release.empty()) v1::appendHistory(s.history, std::move(e));
  }
  if (!a.promoted.empty()) {
    v1::ProdContent p;
    p.release = a.promoted;
    p.package = a.promotedPackage;
    p.runtime.closureHash = a.promotedClosureHash;
    p.since = now;
    if (prod && prod->name == a.promoted && prod->package == a.promotedPackage &&
        (a.promotedClosureHash.empty() || prod->runtime.closureHash == a.promotedClosureHash)) {
      p = contentOf(*prod, now);
      v1::recordStages(p, prod->stages);
    }
    s.prod = p;
  }
  if (!a.canary.empty()) {
    v1::ProdContent c;
    c.release = a.canary;
    c.since = now;
    s.canary = c;
  }
  v1::ModelHistoryEntry adopted;
  adopted.action = v1::kModelActionAdopted;
  if (s.prod) {
    adopted.release = s.prod->release;
    adopted.uid = s.prod->uid;
    adopted.contentDigest = s.prod->contentDigest;
    adopted.package = s.prod->package;
    adopted.runtime = s.prod->runtime;
  }
  adopted.revision = s.revision;
  adopted.at = now;
  adopted.reason = "built from ConfigMap " + kube::name(anchor) + " (uid " +
                   v1::decodeMeta(anchor).uid + ") of an earlier version";
  v1::appendHistory(s.history, std::move(adopted));
  return modelStatusWrite(model, s,
                          "building Model " + kube::name(model) + " from its anchor ConfigMap");
}

StatusOr<kube::Object> recordedProdRelease(const v1::Model& model) {
  if (!model.status.prod)
    return Status(Code::kNotFound, "Model " + model.meta.name + " records no prod");
  const v1::ProdContent& rec = *model.status.prod;
  if (!rec.stages.is_array()) {
    return Status(Code::kNotFound, !rec.stagesNotRecorded.empty()
                                       ? rec.stagesNotRecorded
                                       : "Model " + model.meta.name +
                                             " records no spec.stages of release " + rec.release +
                                             " (written before the operator recorded them)");
  }
  if (!v1::stagesMatchContent(rec, rec.stages)) {
    return Status(Code::kInvalid,
                  "the spec.stages Model " + model.meta.ns + "/" + model.meta.name +
                      " records for release " + rec.release + " (status.prod.stages) do not " +
                      "hash, with its package and runtime pair, to status.prod.contentDigest " +
                      rec.contentDigest + ": the record is refused and never followed");
  }
  json spec = {{"model", model.meta.name},
               {"package", rec.package},
               {"runtimeEnvRef", {{"name", rec.runtime.runtimeEnv}}},
               {"closureHash", rec.runtime.closureHash},
               {"stages", rec.stages}};
  json status = {{"phase", v1::kPhasePromoted}};
  if (!rec.runtime.image.empty() && !rec.runtime.closureHash.empty()) {
    status["runtime"] =
        v1::encodeRuntimePin({rec.runtime.revision, rec.runtime.image, rec.runtime.closureHash});
  }
  json object = kube::newObject(v1::kModelReleases, model.meta.ns, rec.release);
  object["metadata"]["uid"] = rec.uid;
  object["spec"] = std::move(spec);
  object["status"] = std::move(status);
  return object;
}

}  // namespace lockstep::controllers
