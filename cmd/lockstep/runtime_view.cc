#include "cmd/lockstep/runtime_view.h"

#include <algorithm>
#include <vector>

#include "api/v1alpha1/meta.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_env.h"
#include "cmd/lockstep/release_view.h"
#include "operator/kube/conditions.h"

namespace lockstep::cli {

namespace v1 = api::v1alpha1;

std::string renderRuntimeHistory(const nlohmann::json& object, kube::Clock::WallTime now) {
  const v1::RuntimeEnv rte = v1::decodeRuntimeEnv(object);
  std::string out = "RuntimeEnv " + rte.meta.key() + ": current revision ";
  out += rte.status.currentRevision > 0 ? std::to_string(rte.status.currentRevision) : "-";
  if (auto ready = kube::findCondition(rte.status.conditions, v1::kConditionReady)) {
    out += " (Ready=" + v1::decode::string(*ready, "status") + ", " +
           v1::decode::string(*ready, "reason") + ")";
  }
  out += "; history limit " + std::to_string(rte.spec.revisionHistoryLimit) + "\n";
  if (rte.status.revisions.empty()) return out + "no revisions recorded\n";
  std::vector<std::vector<std::string>> rows = {{"REVISION", "CURRENT", "IMAGE", "CLOSURE-HASH",
                                                 "CUDA", "FIRST-RESOLVED", "LAST-RESOLVED",
                                                 "PINNED-BY"}};
  for (auto it = rte.status.revisions.rbegin(); it != rte.status.revisions.rend(); ++it) {
    std::string pinned;
    for (const std::string& p : it->pinnedBy) pinned += (pinned.empty() ? "" : ",") + p;
    rows.push_back({std::to_string(it->number), it->number == rte.status.currentRevision ? "*" : "",
                    it->image, it->closureHash, it->cuda,
                    it->firstResolved.empty()
                        ? ""
                        : it->firstResolved + " (" + formatAge(it->firstResolved, now) + ")",
                    it->lastResolved, pinned});
  }
  return out + renderTable(rows);
}

namespace {

// One revision's match: the block `renderRuntimeAdvisories` prints for it.
struct RevisionMatch {
  int64_t revision = 0;
  bool current = false;
  const nlohmann::json* match = nullptr;  // the top level, or an entry of revisions[]
};

std::vector<RevisionMatch> revisionMatches(const nlohmann::json& advisories) {
  std::vector<RevisionMatch> out;
  const int64_t current = v1::decode::integer(advisories, "revision", 0);
  for (const nlohmann::json& r : v1::decode::array(advisories, "revisions")) {
    if (!r.is_object()) continue;
    const int64_t n = v1::decode::integer(r, "revision", 0);
    // The current revision's full list is the top level's (100 items, not 50).
    if (n == current && n > 0) continue;
    out.push_back({n, false, &r});
  }
  if (current > 0 || out.empty()) out.push_back({current, true, &advisories});
  std::sort(out.begin(), out.end(),
            [](const RevisionMatch& a, const RevisionMatch& b) { return a.revision > b.revision; });
  return out;
}

bool matchKnown(const nlohmann::json& m) { return v1::decode::boolean(m, "known", true); }

}  // namespace

std::string renderRuntimeAdvisories(const nlohmann::json& object) {
  const nlohmann::json& status = v1::decode::object(object, "status");
  const nlohmann::json& advisories = v1::decode::object(status, "advisories");
  const nlohmann::json& meta = v1::decode::object(object, "metadata");
  const std::string name =
      v1::decode::string(meta, "namespace") + "/" + v1::decode::string(meta, "name");
  if (advisories.empty()) {
    return "RuntimeEnv " + name +
           ": no advisories recorded (the operator has no advisory source, --osv-export or "
           "--osv-url, or has not matched this runtime yet): not known, not clean\n";
  }
  std::string out =
      "RuntimeEnv " + name + ": advisories from " + v1::decode::string(advisories, "source") + "\n";
  for (const RevisionMatch& r : revisionMatches(advisories)) {
    const nlohmann::json& m = *r.match;
    out += "\nrevision " + (r.revision > 0 ? std::to_string(r.revision) : std::string("-")) +
           (r.current ? " (current)" : " (pinned)");
    if (std::string hash = v1::decode::string(m, "closureHash"); !hash.empty())
      out += ", closure " + hash;
    out += ": ";
    if (!matchKnown(m)) {
      out += "not known: " + v1::decode::string(m, "reason") + "\n";
      continue;
    }
    const int64_t count = v1::decode::integer(m, "count", 0);
    out += std::to_string(count) + (count == 1 ? " advisory" : " advisories");
    if (count > 0) out += ", highest " + v1::decode::string(m, "highest");
    out += "; " + std::to_string(v1::decode::integer(m, "packagesLookedUp", 0)) +
           " packages looked up, " + std::to_string(v1::decode::integer(m, "notMatched", 0)) +
           " not matched\n";
    if (std::string error = v1::decode::string(m, "error"); !error.empty())
      out += "  the last lookup failed (counts are the last good answer's): " + error + "\n";
    const nlohmann::json& items = v1::decode::array(m, "items");
    if (items.empty()) continue;
    std::vector<std::vector<std::string>> rows = {
        {"ADVISORY", "PACKAGE", "VERSION", "SEVERITY", "FIXED", "SUMMARY"}};
    for (const nlohmann::json& a : items) {
      if (!a.is_object()) continue;
      rows.push_back({v1::decode::string(a, "id"), v1::decode::string(a, "package"),
                      v1::decode::string(a, "version"), v1::decode::string(a, "severity"),
                      v1::decode::string(a, "fixed"), v1::decode::string(a, "summary")});
    }
    out += renderTable(rows);
    if (const int64_t more = v1::decode::integer(m, "truncated", 0); more > 0)
      out += "… and " + std::to_string(more) + " more (count has all)\n";
  }
  return out;
}

bool runtimeAdvisoriesClean(const nlohmann::json& object) {
  const nlohmann::json& advisories =
      v1::decode::object(v1::decode::object(object, "status"), "advisories");
  if (advisories.empty()) return false;
  for (const RevisionMatch& r : revisionMatches(advisories)) {
    if (!matchKnown(*r.match) || v1::decode::integer(*r.match, "count", 0) > 0) return false;
  }
  return true;
}

}  // namespace lockstep::cli
