#include "controllers/modelrelease/prod/anchor_plan.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/resources.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

void trim(json& history) {
  while (history.size() > v1::kAnchorHistoryKept) history.erase(history.begin());
}

json& dataOf(json& anchor) {
  json& data = anchor["data"];
  if (!data.is_object()) data = json::object();
  return data;
}

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

PlannedApply createAnchor(const std::string& ns, const std::string& model,
                          const std::string& release, const std::string& revision) {
  json cm = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", v1::modelAnchorName(model)},
        {"namespace", ns},
        {"labels", {{v1::kModelLabel, model}, {"app.kubernetes.io/managed-by", "lockstep"}}}}},
      {"data", {{v1::kAnchorCanary, release}}}};
  if (!revision.empty() && revision != "0") cm["data"][v1::kAnchorRevision] = revision;
  PlannedApply a =
      plannedCreate(v1::kConfigMaps, std::move(cm), "creating the model's anchor ConfigMap");
  a.alreadyExistsIsConflict = true;
  return a;
}

PlannedApply claimCanary(const kube::Object& anchor, const std::string& release) {
  json claimed = anchor;
  dataOf(claimed)[v1::kAnchorCanary] = release;
  return plannedUpdate(v1::kConfigMaps, std::move(claimed), "claiming the canary");
}

std::optional<PlannedApply> recordCanaryEnd(const kube::Object& anchor, const AnchorRecord& r) {
  const v1::ModelAnchor a = v1::decodeModelAnchor(anchor);
  const bool promotedNow = r.promoted && (a.promoted != r.release || a.canary == r.release);
  const bool rolledBackNow = !r.promoted && a.canary == r.release;
  if (!promotedNow && !rolledBackNow) return std::nullopt;
  json updated = anchor;
  json& data = dataOf(updated);
  json history = a.history;
  json entry = {{"release", r.release},
                {"package", r.package},
                {"closureHash", r.closureHash},
                {"at", r.now}};
  if (promotedNow) {
    if (a.promoted != r.release) data[v1::kAnchorRevision] = a.nextRevision();
    data[v1::kAnchorPromoted] = r.release;
    data[v1::kAnchorPromotedPackage] = r.package;
    data[v1::kAnchorPromotedClosureHash] = r.closureHash;
    entry["action"] = v1::kHistoryPromoted;
  } else {
    entry["action"] = v1::kHistoryRolledBack;
    entry["reason"] = r.rollbackReason;
    entry["stable"] = r.stable;
  }
  data[v1::kAnchorCanary] = "";
  bool recorded = false;
  for (const json& h : history)
    recorded = recorded || (h.value("release", "") == r.release &&
                            h.value("action", "") == entry["action"].get<std::string>());
  if (!recorded) history.push_back(entry);
  trim(history);
  data[v1::kAnchorHistory] = history.dump();
  return plannedUpdate(v1::kConfigMaps, std::move(updated), "recording on the anchor");
}

PlannedApply recordRollback(const kube::Object& anchor, const RollbackRecord& r) {
  const v1::ModelAnchor a = v1::decodeModelAnchor(anchor);
  json updated = anchor;
  json& data = dataOf(updated);
  data[v1::kAnchorPromoted] = r.release;
  data[v1::kAnchorRevision] = a.nextRevision();
  data[v1::kAnchorPromotedPackage] = r.package;
  data[v1::kAnchorPromotedClosureHash] = r.closureHash;
  json history = a.history;
  history.push_back({{"action", v1::kHistoryRollback},
                     {"release", r.release},
                     {"from", r.from},
                     {"by", r.by},
                     {"package", r.package},
                     {"closureHash", r.closureHash},
                     {"at", r.now}});
  trim(history);
  data[v1::kAnchorHistory] = history.dump();
  return plannedUpdate(v1::kConfigMaps, std::move(updated), "recording the rollback");
}

}  // namespace lockstep::controllers
