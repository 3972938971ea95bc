#include "controllers/runtimeenv/runtimeenv_advisories.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "advisories/name_mapping.h"
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

bool plainField(const std::string& s) { return s.find_first_of(" \n\r\t") == std::string::npos; }

// The outcome of matching one revision's closure against the source.
struct Matched {
  bool known = false;
  std::string reason;  // when not known
  advisories::AdvisoryReport report;
  std::string error;      // the endpoint's last failure, when there is one
  std::string checkedAt;  // the endpoint's last good answer
};

class Planner {
 public:
  Planner(const AdvisoryInput& in, AdvisoryPlan& plan) : in_(in), s_(*in.source), plan_(plan) {}

  Matched match(const RevisionToMatch& r) {
    Matched m;
    if (!r.packages) {
      m.reason = "the closure of revision " + std::to_string(r.revision) +
                 " was not recorded (a revision recorded before the operator kept closures "
                 "for advisories, or one over " +
                 std::to_string(kMaxRevisionPackagesBytes >> 10) +
                 " KiB): its advisories are not known";
      return m;
    }
    if (!s_.endpoint) {
      if (!s_.index) {
        m.reason = "the OSV export is not loaded";
        return m;
      }
      m.known = true;
      m.report = s_.index->match(*r.packages);
      return m;
    }
    auto it = s_.byClosure.find(r.closureHash);
    const AdvisoryAnswer* a = it == s_.byClosure.end() ? nullptr : &it->second;
    const int64_t due = a == nullptr       ? in_.nowUnix
                        : a->error.empty() ? a->checkedAtUnix + s_.refreshSeconds
                                           : a->attemptedAtUnix + s_.retrySeconds;
    if (due <= in_.nowUnix) {
      if (asked_.insert(r.closureHash).second)
        plan_.lookups.push_back({r.closureHash, *r.packages});
    } else {
      const int64_t after = due - in_.nowUnix;
      if (plan_.requeueAfterSeconds == 0 || after < plan_.requeueAfterSeconds)
        plan_.requeueAfterSeconds = after;
    }
    if (a != nullptr) m.error = a->error;
    if (a == nullptr || !a->index) {
      m.reason = a == nullptr ? "waiting for the OSV endpoint's first answer"
                              : "the OSV endpoint has not answered: " + a->error;
      return m;
    }
    m.known = true;
    m.checkedAt = a->checkedAt;
    m.report = a->index->match(*r.packages);
    return m;
  }

  // The status of one revision's match; a revision not known now keeps the last match
  // of the same closure (`previous`), with the endpoint's error.
  json entry(const Matched& m, const RevisionToMatch& r, size_t maxItems, const json& previous) {
    json e;
    if (m.known) {
      e = advisoryStatus(m.report, r.revision, r.closureHash, s_.source, maxItems);
      if (!m.checkedAt.empty()) e["checkedAt"] = m.checkedAt;
    } else if (previous.is_object() && previous.value("closureHash", "") == r.closureHash &&
               previous.contains("count")) {
      e = previous;
      e["revision"] = r.revision;
      for (const char* k : {"error", "revisions", "current"}) e.erase(k);
    } else {
      e = {{"source", s_.source},
           {"revision", r.revision},
           {"closureHash", r.closureHash},
           {"known", false},
           {"reason", m.reason}};
    }
    if (!m.error.empty()) e["error"] = m.error;
    return e;
  }

 private:
  const AdvisoryInput& in_;
  const AdvisorySnapshot& s_;
  AdvisoryPlan& plan_;
  std::set<std::string> asked_;
};

// The previous status of `revision`: its revisions[] entry, else the top level when it
// was that revision (a status from before revisions[] was written).
json previousOf(const json& previous, int64_t revision) {
  if (!previous.is_object()) return nullptr;
  for (const json& e : previous.value("revisions", json::array()))
    if (e.is_object() && e.value("revision", int64_t{-1}) == revision) return e;
  if (previous.value("revision", int64_t{-1}) == revision) return previous;
  return nullptr;
}

}  // namespace

std::optional<std::string> encodeAdvisoryPackages(const std::vector<closure::Package>& packages) {
  std::string out;
  for (const closure::Package& p : packages) {
    if (!plainField(p.ecosystem) || !plainField(p.name) || !plainField(p.version) ||
        p.ecosystem.empty() || p.name.empty())
      return std::nullopt;
    out += p.ecosystem + " " + p.name + " " + p.version;
    if (p.ecosystem == "nix") {
      // The store path the PyPI name is read from, when one is.
      for (const std::string& d : p.digests) {
        if (!plainField(d)) continue;
        if (advisories::osvPackageFor({p.ecosystem, p.name, p.version, {d}}).matched) {
          out += " " + d;
          break;
        }
      }
    }
    out += "\n";
    if (out.size() > kMaxRevisionPackagesBytes) return std::nullopt;
  }
  return out;
}

StatusOr<std::vector<closure::Package>> decodeAdvisoryPackages(const std::string& text) {
  std::vector<closure::Package> out;
  size_t start = 0;
  for (size_t line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string l = text.substr(start, end - start);
    start = end + 1;
    std::vector<std::string> f;
    size_t from = 0;
    while (true) {
      size_t sp = l.find(' ', from);
      f.push_back(l.substr(from, sp == std::string::npos ? sp : sp - from));
      if (sp == std::string::npos) break;
      from = sp + 1;
    }
    if (f.size() < 3 || f.size() > 4 || f[0].empty() || f[1].empty())
      return invalidArgument("packages line " + std::to_string(line) +
                             ": expected \"<ecosystem> <name> <version> [<store path>]\"");
    closure::Package p{f[0], f[1], f[2], {}};
    if (f.size() == 4) p.digests.push_back(f[3]);
    out.push_back(std::move(p));
  }
  return out;
}

json advisoryStatus(const advisories::AdvisoryReport& report, int64_t revision,
                    const std::string& closureHash, const std::string& source, size_t maxItems) {
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
    if (items.size() >= maxItems) continue;
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
  if (findings.size() > maxItems) out["truncated"] = findings.size() - maxItems;
  return out;
}

std::optional<AdvisoryPlan::Event> advisoryEvent(const json& previous, const json& now,
                                                 bool pinned) {
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
    return AdvisoryPlan::Event{kube::kEventTypeWarning, kReasonAdvisoryPublished,
                               "revision " + revision +
                                   ", which releases or prod run, is affected by " +
                                   std::to_string(fresh.size()) + " new advisory(ies): " + list};
  }
  return AdvisoryPlan::Event{kube::kEventTypeNormal, kReasonAdvisoriesFound,
                             "revision " + revision + " is affected by " +
                                 std::to_string(fresh.size()) + " advisory(ies): " + list};
}

AdvisoryPlan planAdvisories(const AdvisoryInput& in) {
  AdvisoryPlan plan;
  Planner planner(in, plan);
  const json& previous = in.previous;
  std::map<int64_t, json> revisions;                           // revisions[] by number
  std::map<std::string, advisories::Severity> pinnedFindings;  // "id package" -> severity
  auto countPinned = [&pinnedFindings](const Matched& m) {
    for (const advisories::Finding& f : m.report.findings)
      pinnedFindings[f.id + " " + f.package.name] = f.severity.severity;
  };

  json top;
  if (in.current) {
    const RevisionToMatch& r = *in.current;
    Matched m = planner.match(r);
    const json before = previous.is_object() ? previous : json();
    top = planner.entry(m, r, kMaxAdvisoryItems, before);
    if (m.known) {
      if (auto e = advisoryEvent(before, top, r.pinned)) plan.events.push_back(std::move(*e));
      if (r.pinned) countPinned(m);
    }
    json e = planner.entry(m, r, kMaxRevisionItems, previousOf(previous, r.revision));
    e.erase("source");
    e["current"] = true;
    revisions[r.revision] = std::move(e);
  } else if (previous.is_object()) {
    top = previous;  // a lock that does not resolve keeps the last match
    if (json e = previousOf(previous, in.currentRevision); e.is_object()) {
      e.erase("source");
      e.erase("revisions");
      e["current"] = true;
      revisions[in.currentRevision] = std::move(e);
    }
  }
  for (const RevisionToMatch& r : in.pinned) {
    Matched m = planner.match(r);
    const json before = previousOf(previous, r.revision);
    json e = planner.entry(m, r, kMaxRevisionItems, before);
    e.erase("source");
    if (r.current) e["current"] = true;
    if (m.known) {
      if (auto ev = advisoryEvent(before, e, true)) plan.events.push_back(std::move(*ev));
      countPinned(m);
    }
    revisions[r.revision] = std::move(e);
  }
  if (!top.is_object()) {
    if (revisions.empty()) return plan;  // nothing matched yet: no status
    top = {{"source", in.source->source}};
  }
  top.erase("revisions");
  if (!revisions.empty()) {
    json list = json::array();
    for (auto& [n, e] : revisions) list.push_back(std::move(e));
    top["revisions"] = std::move(list);
  }
  for (const auto& [key, severity] : pinnedFindings) {
    const std::string name(advisories::severityName(severity));
    plan.pinnedBySeverity[name] = plan.pinnedBySeverity.value(name, 0) + 1;
  }
  plan.status = std::move(top);
  return plan;
}

}  // namespace lockstep::controllers
