// `lockstep advisories`: the advisories of a local OSV export, or of an OSV-compatible
// HTTP endpoint, that affect a lock's closure (docs/supply-chain.md).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <map>
#include <ostream>

#include "advisories/match.h"
#include "advisories/osv_client.h"
#include "advisories/osv_export.h"
#include "closure/closure.h"
#include "cmd/lockstep/file_include_reader.h"
#include "cmd/lockstep/path_names.h"
#include "cmd/lockstep/verbs.h"
#include "common/flags.h"

namespace lockstep::cli {
namespace {

using advisories::AdvisoryReport;
using advisories::Finding;
using advisories::Severity;

// Exit codes of this verb (docs/supply-chain.md).
constexpr int kExitNone = 0;        // no advisory above the maximum, every entry looked up
constexpr int kExitFound = 1;       // an advisory above the maximum
constexpr int kExitBadInput = 2;    // bad flags, an unreadable lock or OSV export
constexpr int kExitNotMatched = 3;  // none above the maximum, but entries nothing is known about

std::string scoreText(const Finding& f) {
  std::string s(advisories::severityName(f.severity.severity));
  if (f.severity.score >= 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, " %.1f", f.severity.score);
    s += buf;
  }
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// The group's other ids and its aliases: "PYSEC-2024-60, CVE-2024-3651".
std::string alsoKnownAs(const Finding& f) {
  std::vector<std::string> names(f.ids.begin() + 1, f.ids.end());
  names.insert(names.end(), f.aliases.begin(), f.aliases.end());
  return join(names, ", ");
}

void printText(std::ostream& out, const AdvisoryReport& r, Severity max) {
  std::vector<std::vector<std::string>> rows{
      {"ADVISORY", "PACKAGE", "VERSION", "SEVERITY", "FIXED", "ALSO"}};
  for (const Finding& f : r.findings) {
    std::string pkg = f.package.name;
    if (f.osv.name != f.package.name) pkg += " (PyPI " + f.osv.name + ")";
    std::string sev = scoreText(f);
    if (advisories::exceeds(f.severity.severity, max)) sev += " *";
    rows.push_back(
        {f.id, pkg, f.package.version, sev, f.fixed.empty() ? "-" : f.fixed, alsoKnownAs(f)});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  if (!r.findings.empty()) {
    for (const auto& row : rows) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c) {
        line += row[c];
        if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
    for (const Finding& f : r.findings) {
      for (const std::string& n : f.notes) out << "note: " << n << "\n";
    }
  }
  if (!r.notMatched.empty()) {
    out << "\nnot matched (" << r.notMatched.size()
        << "; nothing is known about them, they are not clean):\n";
    for (const auto& n : r.notMatched) {
      out << "  " << n.package.ecosystem << " " << n.package.name
          << (n.package.version.empty() ? "" : " " + n.package.version) << ": " << n.reason << "\n";
    }
  }
  std::map<Severity, size_t, std::greater<>> bySeverity;  // highest first
  size_t over = 0;
  for (const Finding& f : r.findings) {
    ++bySeverity[f.severity.severity];
    if (advisories::exceeds(f.severity.severity, max)) ++over;
  }
  std::string counts;
  for (const auto& [severity, n] : bySeverity) {
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " +
              std::string(advisories::severityName(severity));
  }
  out << "\n"
      << r.findings.size() << " advisories" << (counts.empty() ? "" : " (" + counts + ")") << ", "
      << over << " above " << advisories::severityName(max) << " (*); " << r.packagesChecked
      << " packages looked up, " << r.notMatched.size() << " not matched; " << r.records
      << " OSV records";
  if (r.withdrawn) out << " (" << r.withdrawn << " withdrawn left out)";
  out << "\n";
}

nlohmann::ordered_json toJson(const AdvisoryReport& r, const closure::Closure& c,
                              const std::string& osvPath, Severity max, int exitCode) {
  nlohmann::ordered_json j;
  j["closureHash"] = c.closureHash;
  j["format"] = std::string(closure::formatName(c.format));
  j["platform"] = c.platform;
  j["osv"] = {{"source", osvPath}, {"records", r.records}, {"withdrawn", r.withdrawn}};
  j["maxSeverity"] = std::string(advisories::severityName(max));
  j["packagesLookedUp"] = r.packagesChecked;
  auto& list = j["advisories"] = nlohmann::ordered_json::array();
  for (const Finding& f : r.findings) {
    nlohmann::ordered_json a;
    a["id"] = f.id;
    a["ids"] = f.ids;
    a["aliases"] = f.aliases;
    a["summary"] = f.summary;
    a["severity"] = std::string(advisories::severityName(f.severity.severity));
    if (f.severity.score >= 0) a["score"] = f.severity.score;
    a["severityBasis"] = f.severity.basis;
    a["aboveMax"] = advisories::exceeds(f.severity.severity, max);
    a["package"] = {{"ecosystem", f.package.ecosystem},
                    {"name", f.package.name},
                    {"version", f.package.version}};
    a["osvPackage"] = {{"ecosystem", f.osv.ecosystem},
                       {"name", f.osv.name},
                       {"version", f.osv.version},
                       {"via", f.osv.via}};
    a["fixed"] = f.fixed;
    if (!f.notes.empty()) a["notes"] = f.notes;
    list.push_back(std::move(a));
  }
  auto& nm = j["notMatched"] = nlohmann::ordered_json::array();
  for (const auto& n : r.notMatched) {
    nm.push_back({{"ecosystem", n.package.ecosystem},
                  {"name", n.package.name},
                  {"version", n.package.version},
                  {"reason", n.reason}});
  }
  j["exitCode"] = exitCode;
  return j;
}

}  // namespace

void advisoriesUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " advisories --lock FILE (--osv DIR|ZIP | --osv-url URL [--osv-ca-file F])\n"
        "                [--format F] [--platform P] [--environment E] [--max-severity S]\n"
        "                [--allow-not-matched] [--json]\n"
        "\n"
        "Prints the advisories of a local OSV export, or of an OSV-compatible HTTP endpoint,\n"
        "that affect the lock's closure, and the entries that could not be looked up\n"
        "(docs/supply-chain.md).\n"
        "  --lock FILE          the lock (uv, pip, conda-lock, pixi, poetry, flox, nix); digests\n"
        "                       are not needed to match advisories, so an unhashed lock is read\n"
        "  --osv DIR|ZIP        a directory of OSV JSON files (recursive) or a zip of them\n"
        "                       (osv.dev's PyPI/all.zip)\n"
        "  --osv-url URL        an OSV API v1 endpoint (https://api.osv.dev or a mirror of it):\n"
        "                       POST /v1/querybatch, then GET /v1/vulns/{id}\n"
        "  --osv-ca-file F      PEM bundle the endpoint's certificate is verified against\n"
        "                       (default: the system roots)\n"
        "  --format, --platform, --environment   as for closure-hash\n"
        "  --max-severity S     none, low, medium, high, critical (default none): advisories\n"
        "                       above it, or of unknown severity, make the exit code 1\n"
        "  --allow-not-matched  exit 0 instead of 3 when entries could not be looked up\n"
        "  --json               one JSON document instead of the table\n"
        "Exit codes: 0 no advisory above the maximum and every entry looked up; 1 an advisory\n"
        "above the maximum; 2 bad flags, lock, OSV export or endpoint; 3 none above the maximum, "
        "but\n"
        "entries were not matched (nothing is known about them).\n";
}

int runAdvisories(const VerbContext& ctx) {
  Flags flags({
      {"lock", "", "the lock file"},
      {"osv", "", "the OSV export: a directory or a zip"},
      {"osv-url", "", "an OSV API endpoint"},
      {"osv-ca-file", "", "the CA bundle of --osv-url"},
      {"format", "", "lock format (default: detect)"},
      {"platform", "", "per-platform locks: the platform"},
      {"environment", "", "pixi environment"},
      {"max-severity",
       "none",
       "the highest severity that passes",
       FlagType::kChoice,
       {"none", "low", "medium", "high", "critical"}},
      {"allow-not-matched", "false", "exit 0 rather than 3 with entries not matched",
       FlagType::kBool},
      {"json", "false", "print JSON", FlagType::kBool},
  });
  std::vector<const char*> argv{"advisories"};
  for (const auto& a : ctx.args) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << "advisories: " << s.message() << "\n";
    advisoriesUsage(ctx.err, ctx.programName);
    return kExitBadInput;
  }
  if (flags.helpRequested()) {
    advisoriesUsage(ctx.out, ctx.programName);
    return kExitNone;
  }
  const std::string lock = flags.get("lock");
  const std::string osv = flags.get("osv");
  const std::string osvUrl = flags.get("osv-url");
  if (lock.empty() || osv.empty() == osvUrl.empty()) {
    ctx.err << "advisories: --lock and one of --osv or --osv-url are required\n";
    advisoriesUsage(ctx.err, ctx.programName);
    return kExitBadInput;
  }
  if (!flags.get("osv-ca-file").empty() && osvUrl.empty()) {
    ctx.err << "advisories: --osv-ca-file goes with --osv-url\n";
    return kExitBadInput;
  }
  const Severity max = *advisories::parseSeverity(flags.get("max-severity"));

  closure::ClosureOptions options;
  if (std::string f = flags.get("format"); !f.empty()) {
    auto fmt = closure::parseFormatName(f);
    if (!fmt.isOk()) {
      ctx.err << "advisories: " << fmt.status().message() << "\n";
      return kExitBadInput;
    }
    options.format = *fmt;
  }
  options.platform = flags.get("platform");
  options.environment = flags.get("environment");
  options.allowUnhashed = true;
  auto text = readFile(lock, options.limits.maxBytes);
  if (!text.isOk()) {
    ctx.err << "advisories: " << text.status().message() << "\n";
    return kExitBadInput;
  }
  FileIncludeReader includes(lock == "-" ? "." : dirName(lock));
  options.includes = &includes;
  options.sourceName = lock == "-" ? "stdin" : baseName(lock);
  auto c = closure::computeClosure(*text, options);
  if (!c.isOk()) {
    ctx.err << "advisories: " << c.status().message() << "\n";
    return kExitBadInput;
  }
  AdvisoryReport report;
  if (!osv.empty()) {
    auto exported = advisories::loadOsvExport(osv);
    if (!exported.isOk()) {
      ctx.err << "advisories: " << exported.status().message() << "\n";
      return kExitBadInput;
    }
    report = exported->index.match(c->packages);
  } else {
    advisories::OsvClientConfig config;
    config.url = osvUrl;
    config.caFile = flags.get("osv-ca-file");
    auto client = advisories::OsvClient::connect(config);
    if (!client.isOk()) {
      ctx.err << "advisories: " << client.status().message() << "\n";
      return kExitBadInput;
    }
    auto found = (*client)->lookup(advisories::osvQueriesFor(c->packages));
    if (!found.isOk()) {
      ctx.err << "advisories: " << found.status().message() << "\n";
      return kExitBadInput;
    }
    report = advisories::indexOf(*found).match(c->packages);
  }

  int rc = kExitNone;
  for (const Finding& f : report.findings) {
    if (advisories::exceeds(f.severity.severity, max)) rc = kExitFound;
  }
  if (rc == kExitNone && !report.notMatched.empty() && !flags.getBool("allow-not-matched")) {
    rc = kExitNotMatched;
  }
  if (flags.getBool("json")) {
    ctx.out << toJson(report, *c, osv.empty() ? osvUrl : osv, max, rc).dump(2) << "\n";
  } else {
    printText(ctx.out, report, max);
  }
  return rc;
}

}  // namespace lockstep::cli
