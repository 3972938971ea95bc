#include "controllers/runtimeenv/runtimeenv_advisories.h"

#include <algorithm>
#include <set>
#include <vector>

#include "advisories/severity.h"
#include "operator/kube/event_sink.h"

namespace lockstep::controllers {

using nlohmann::json;

namespace {

std::set<std::string> idsOf(const json& advisories) {
  std::set<std::string> out;
  if (!advisories.is_object() || !advisories.contains("items")) return out;
  for (const json& a : advisories["items"]) {
    if (a.contains("id") && a["id"].is_string())
      out.insert(a["id"].get<std::string>() + " " + a.value("package", ""));
  }
  return out;
}

}  // namespace

json advisoryStatus(const advisories::AdvisoryReport& report, int64_t revision,
                    const std::string& closureHash, const std::string& source) {
  std::vector<const advisories::Finding*> findings;
  for (const advisories::Finding& f : report.findings) findings.push_back(&f);
  std::stable_sort(findings.begin(), findings.end(), [](const auto* a, const auto* b) {
    return static_cast<int>(a->severity.severity) > static_cast<int>(b->severity.severity);
  });
  json bySeverity = json::object();
  json items = json::array();
  for (const advisories::Finding* f : findings) {
    const std::string severity(advisories::severityName(f->severity.severity));
    bySeverity[severity] = bySeverity.value(severity, 0) + 1;
    if (items.size() >= kMaxAdvisoryItems) continue;
    json a = {{"id", f->id},
              {"package", f->package.name},
              {"version", f->package.version},
              {"severity", severity},
              {"fixed", f->fixed}};
    std::vector<std::string> aliases;
    for (const std::string& id : f->ids)
      if (id != f->id) aliases.push_back(id);
    for (const std::string& alias : f->aliases) aliases.push_back(alias);
    if (aliases.size() > 16) aliases.resize(16);
    if (!aliases.empty()) a["aliases"] = aliases;
    if (f->severity.score >= 0) a["score"] = f->severity.score;
    if (!f->summary.empty()) a["summary"] = f->summary.substr(0, 256);
    items.push_back(std::move(a));
  }
  json out = {
      {"source", source},
      {"revision", revision},
      {"closureHash", closureHash},
      {"count", findings.size()},
      {"highest", findings.empty()
                      ? std::string("none")
                      : std::string(advisories::severityName(findings.front()->severity.severity))},
      {"bySeverity", std::move(bySeverity)},
      {"packagesLookedUp", report.packagesChecked},
      {"notMatched", report.notMatched.size()},
      {"items", std::move(items)}};
  if (findings.size() > kMaxAdvisoryItems) out["truncated"] = findings.size() - kMaxAdvisoryItems;
  return out;
}

std::optional<RuntimeEnvEvent> advisoryEvent(const json& previous, const json& now, bool pinned) {
  const std::set<std::string> before = idsOf(previous);
  std::vector<std::string> fresh;
  if (now.is_object() && now.contains("items")) {
    for (const json& a : now["items"]) {
      const std::string key = a.value("id", "") + " " + a.value("package", "");
      if (before.count(key) == 0)
        fresh.push_back(a.value("id", "") + " (" + a.value("package", "") + " " +
                        a.value("version", "") + ", " + a.value("severity", "") +
                        (a.value("fixed", "").empty() ? "" : ", fixed in " + a.value("fixed", "")) +
                        ")");
    }
  }
  if (fresh.empty()) return std::nullopt;
  std::string list;
  for (size_t i = 0; i < fresh.size() && i < 5; ++i) list += (i ? ", " : "") + fresh[i];
  if (fresh.size() > 5) list += " and " + std::to_string(fresh.size() - 5) + " more";
  const std::string revision = std::to_string(now.value("revision", int64_t{0}));
  if (pinned) {
    return RuntimeEnvEvent{kube::kEventTypeWarning, kReasonAdvisoryPublished,
                           "revision " + revision +
                               ", which releases or prod run, is affected by " +
                               std::to_string(fresh.size()) + " new advisory(ies): " + list};
  }
  return RuntimeEnvEvent{kube::kEventTypeNormal, kReasonAdvisoriesFound,
                         "revision " + revision + " is affected by " +
                             std::to_string(fresh.size()) + " advisory(ies): " + list};
}

}  // namespace lockstep::controllers
