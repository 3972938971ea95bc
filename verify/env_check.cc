#include "verify/env_check.h"

#include <algorithm>
#include <map>

namespace lockstep::verify {
namespace {

using closure::Package;

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string joinDigests(const std::vector<std::string>& digests) {
  std::string out;
  for (const auto& d : digests) {
    if (!out.empty()) out += " or ";
    out += d;
  }
  return out;
}

std::vector<std::string> digestsWithPrefix(const Package& p, std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& d : p.digests) {
    if (startsWith(d, prefix)) out.push_back(d);
  }
  return out;
}

// The version a missing package's line names.
std::string lockedText(const Package& p) {
  return p.version.empty() ? std::string("(no version)") : p.version;
}

void compareConda(const std::multimap<std::string, const Package*>& locked, const Inventory& inv,
                  const EnvCheckOptions& options, EnvReport& report) {
  std::multimap<std::string, const CondaRecord*> installed;
  for (const auto& r : inv.conda) installed.emplace(r.name, &r);
  const std::string metaDir = inv.prefix + "/conda-meta";
  for (const auto& [name, pkg] : locked) {
    if (options.ignore.count(name)) continue;
    ++report.condaChecked;
    auto [lo, hi] = installed.equal_range(name);
    if (lo == hi) {
      report.differences.push_back(
          {DiffKind::kMissing, "conda", name, lockedText(*pkg), "not installed", metaDir});
      continue;
    }
    const CondaRecord* match = nullptr;
    for (auto it = lo; it != hi; ++it) {
      if (it->second->version == pkg->version) match = it->second;
    }
    if (match == nullptr) {
      report.differences.push_back({DiffKind::kVersion, "conda", name, pkg->version,
                                    lo->second->version, lo->second->where});
      continue;
    }
    const std::vector<std::string> want = digestsWithPrefix(*pkg, "sha256:");
    if (want.empty()) continue;  // a weak closure's unhashed entry: nothing to compare
    if (match->sha256.empty()) {
      report.differences.push_back({DiffKind::kDigest, "conda", name, joinDigests(want),
                                    "no sha256 in the record", match->where});
    } else if (std::find(want.begin(), want.end(), match->sha256) == want.end()) {
      report.differences.push_back(
          {DiffKind::kDigest, "conda", name, joinDigests(want), match->sha256, match->where});
    }
  }
  for (const auto& r : inv.conda) {
    if (locked.count(r.name) || options.ignore.count(r.name)) continue;
    report.differences.push_back({DiffKind::kExtra, "conda", r.name, "",
                                  r.version + (r.build.empty() ? "" : " " + r.build), r.where});
  }
}

// The locked entry an installed distribution is compared with: the one with its
// version, else the first (its version then differs).
const Package* pickLocked(const std::multimap<std::string, const Package*>& locked,
                          const PythonDist& d) {
  auto [lo, hi] = locked.equal_range(d.name);
  if (lo == hi) return nullptr;
  for (auto it = lo; it != hi; ++it) {
    if (it->second->version == d.version || it->second->version.empty()) return it->second;
  }
  return lo->second;
}

void comparePython(const std::multimap<std::string, const Package*>& locked, const Inventory& inv,
                   const EnvCheckOptions& options, EnvReport& report) {
  std::set<std::string> installedNames;
  for (const PythonDist& d : inv.python) {
    if (inv.condaOwnedDists.count(d.where)) continue;  // conda's, compared as a conda package
    installedNames.insert(d.name);
    if (options.ignore.count(d.name)) continue;
    const Package* pkg = pickLocked(locked, d);
    if (pkg == nullptr) {
      if (d.editable) {
        report.ignored.push_back("pypi " + d.name + " " + d.version +
                                 " (editable: " + (d.url.empty() ? d.where : d.url) + ")");
      } else if (!options.strict && kSeededInstallers.count(d.name)) {
        report.ignored.push_back("pypi " + d.name + " " + d.version + " (seeded installer)");
      } else {
        report.differences.push_back({DiffKind::kExtra, "pypi", d.name, "", d.version, d.where});
      }
      continue;
    }
    if (!pkg->version.empty() && pkg->version != d.version) {
      report.differences.push_back(
          {DiffKind::kVersion, "pypi", d.name, pkg->version, d.version, d.where});
      continue;
    }
    const std::vector<std::string> commits = digestsWithPrefix(*pkg, "git:");
    const std::vector<std::string> shas = digestsWithPrefix(*pkg, "sha256:");
    if (!commits.empty()) {
      if (d.commit.empty()) {
        report.differences.push_back({DiffKind::kCommit, "pypi", d.name, joinDigests(commits),
                                      "no VCS commit recorded (direct_url.json)", d.where});
      } else if (std::find(commits.begin(), commits.end(), "git:" + d.commit) == commits.end()) {
        report.differences.push_back(
            {DiffKind::kCommit, "pypi", d.name, joinDigests(commits), "git:" + d.commit, d.where});
      }
      continue;
    }
    if (!d.commit.empty() && !shas.empty()) {
      report.differences.push_back({DiffKind::kDigest, "pypi", d.name, joinDigests(shas),
                                    "git:" + d.commit + " (installed from a VCS source)", d.where});
      continue;
    }
    if (!d.archiveSha256.empty() && !shas.empty() &&
        std::find(shas.begin(), shas.end(), d.archiveSha256) == shas.end()) {
      report.differences.push_back(
          {DiffKind::kDigest, "pypi", d.name, joinDigests(shas), d.archiveSha256, d.where});
    }
  }
  std::set<std::string> counted;
  for (const auto& [name, pkg] : locked) {
    if (options.ignore.count(name)) continue;
    if (counted.insert(name).second) ++report.pypiChecked;
    if (installedNames.count(name)) continue;
    // Several locked versions of one name (a universal lock's forks) are one missing line.
    if (counted.count(name + "\n")) continue;
    counted.insert(name + "\n");
    std::string where = inv.sitePackages.empty() ? inv.prefix : inv.sitePackages.front();
    report.differences.push_back(
        {DiffKind::kMissing, "pypi", name, lockedText(*pkg), "not installed", where});
  }
}

}  // namespace

EnvReport compareEnv(const std::vector<Package>& locked, const Inventory& installed,
                     const EnvCheckOptions& options) {
  EnvReport report;
  std::multimap<std::string, const Package*> conda, pypi;
  std::vector<const Package*> nix;
  for (const Package& p : locked) {
    if (p.ecosystem == "conda") conda.emplace(p.name, &p);
    if (p.ecosystem == "pypi") pypi.emplace(p.name, &p);
    if (p.ecosystem == "nix") nix.push_back(&p);
  }
  // A pip or uv lock installed into a conda prefix covers the Python distributions, not
  // the conda packages beneath them: conda records are compared for conda closures only.
  if (!conda.empty()) compareConda(conda, installed, options, report);
  if (!pypi.empty() || !installed.python.empty()) comparePython(pypi, installed, options, report);
  for (const Package* p : nix) {
    if (options.ignore.count(p->name)) continue;
    ++report.nixChecked;
    for (const auto& path : p->digests) {
      auto it = installed.storePaths.find(path);
      if (it == installed.storePaths.end() || !it->second) {
        report.differences.push_back(
            {DiffKind::kMissing, "nix", p->name, path, "store path does not exist", ""});
      }
    }
  }
  std::stable_sort(report.differences.begin(), report.differences.end(),
                   [](const Difference& a, const Difference& b) {
                     return std::tie(a.ecosystem, a.package) < std::tie(b.ecosystem, b.package);
                   });
  return report;
}

}  // namespace lockstep::verify
