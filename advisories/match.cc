#include "advisories/match.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "advisories/pep440.h"
#include "advisories/semver.h"

namespace lockstep::advisories {
namespace {

// Compares a bound with the package's version: -1, 0, 1, or nullopt when either is
// not a version of the range's kind.
using Compare = std::function<std::optional<int>(const std::string& bound)>;

int sign(std::strong_ordering o) { return std::is_lt(o) ? -1 : std::is_gt(o) ? 1 : 0; }

Compare pep440Against(const std::string& version) {
  auto v = Pep440Version::parse(version);
  std::optional<Pep440Version> pub;
  if (v.isOk()) pub = v->publicVersion();
  return [pub](const std::string& bound) -> std::optional<int> {
    if (!pub) return std::nullopt;
    auto b = Pep440Version::parse(bound);
    if (!b.isOk()) return std::nullopt;
    return sign(*pub <=> *b);
  };
}

Compare semverAgainst(const std::string& version, const Compare& fallback) {
  auto v = SemVer::parse(version);
  std::optional<SemVer> sv;
  if (v.isOk()) sv = *v;
  return [sv, fallback](const std::string& bound) -> std::optional<int> {
    if (sv) {
      auto b = SemVer::parse(bound);
      if (b.isOk()) return sign(*sv <=> *b);
    }
    // A PyPI version that SemVer cannot read ("2.0", "1.0rc1"): PEP 440 orders X.Y.Z
    // releases as SemVer does.
    return fallback ? fallback(bound) : std::nullopt;
  };
}

// Orders two bounds of one range ("0" before everything); nullopt if not comparable.
std::optional<int> compareBounds(const std::string& a, const std::string& b, RangeType type,
                                 bool pypi) {
  if (a == b) return 0;
  if (a == "0") return -1;
  if (b == "0") return 1;
  if (type == RangeType::kSemver) {
    auto x = SemVer::parse(a);
    auto y = SemVer::parse(b);
    if (x.isOk() && y.isOk()) return sign(*x <=> *y);
  }
  if (pypi) {
    auto x = Pep440Version::parse(a);
    auto y = Pep440Version::parse(b);
    if (x.isOk() && y.isOk()) return sign(*x <=> *y);
  }
  return std::nullopt;
}

struct RangeVerdict {
  bool affected = false;
  std::string fixed;
  std::string note;
};

// The schema's IncludedInRanges for one range (docs/schema.md, "Evaluation").
RangeVerdict evaluateRange(const OsvRange& r, bool pypi, const Compare& cmp) {
  RangeVerdict out;
  auto notComparable = [&](const std::string& bound) {
    out.affected = true;
    out.note = r.typeName + " bound \"" + bound + "\" not comparable with the version";
    return out;
  };
  std::vector<const OsvEvent*> events;
  bool anyLimit = false;
  bool beforeLimit = false;
  for (const OsvEvent& e : r.events) {
    if (e.kind != OsvEvent::Kind::kLimit) {
      events.push_back(&e);
      continue;
    }
    anyLimit = true;
    if (e.version.find('*') != std::string::npos) {
      beforeLimit = true;
      continue;
    }
    auto c = cmp(e.version);
    if (!c) return notComparable(e.version);
    if (*c < 0) beforeLimit = true;
  }
  if (anyLimit && !beforeLimit) return out;
  // Every bound must compare with the version before the events are ordered.
  for (const OsvEvent* e : events) {
    if (e->version != "0" && !cmp(e->version)) return notComparable(e->version);
  }
  std::stable_sort(events.begin(), events.end(), [&](const OsvEvent* a, const OsvEvent* b) {
    auto c = compareBounds(a->version, b->version, r.type, pypi);
    return c && *c < 0;
  });
  bool vulnerable = false;
  for (const OsvEvent* e : events) {
    if (e->kind == OsvEvent::Kind::kIntroduced) {
      if (e->version == "0") {
        vulnerable = true;
        continue;
      }
      auto c = cmp(e->version);
      if (!c) return notComparable(e->version);
      if (*c >= 0) vulnerable = true;
    } else if (e->kind == OsvEvent::Kind::kFixed) {
      auto c = cmp(e->version);
      if (!c) return notComparable(e->version);
      if (*c >= 0) vulnerable = false;
    } else if (e->kind == OsvEvent::Kind::kLastAffected) {
      auto c = cmp(e->version);
      if (!c) return notComparable(e->version);
      if (*c > 0) vulnerable = false;
    }
  }
  if (!vulnerable) return out;
  out.affected = true;
  for (const OsvEvent* e : events) {
    if (e->kind != OsvEvent::Kind::kFixed) continue;
    auto c = cmp(e->version);
    if (c && *c < 0) {
      out.fixed = e->version;
      break;
    }
  }
  return out;
}

std::string indexName(const std::string& ecosystem, const std::string& name) {
  return ecosystem == "PyPI" ? closure::normalizePypiName(name) : name;
}

// The higher of two fixed versions (PEP 440 where both parse, else the first given).
std::string higherFixed(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  auto x = Pep440Version::parse(a);
  auto y = Pep440Version::parse(b);
  if (x.isOk() && y.isOk()) return *y > *x ? b : a;
  return a;
}

// The lower of two known fixed versions; a missing one ("") is no candidate.
std::string lowerFixed(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return higherFixed(a, b) == a ? b : a;
}

}  // namespace

AffectedVerdict evaluateAffected(const OsvAffected& a, const std::string& ecosystem,
                                 const std::string& version) {
  AffectedVerdict out;
  const bool pypi = ecosystem == "PyPI";
  Compare ecosystemCmp = pypi ? pep440Against(version) : Compare();
  // Versions list: PEP 440 equality for PyPI (public versions), else the exact string.
  for (const std::string& listed : a.versions) {
    if (listed == version || (ecosystemCmp && ecosystemCmp(listed) == 0)) {
      out.affected = true;
      break;
    }
  }
  for (const OsvRange& r : a.ranges) {
    Compare cmp;
    if (r.type == RangeType::kSemver) {
      cmp = semverAgainst(version, ecosystemCmp);
    } else if (r.type == RangeType::kEcosystem) {
      cmp = ecosystemCmp;
    } else {
      continue;  // GIT (commits) and unknown types
    }
    if (!cmp) {
      out.affected = true;
      out.notes.push_back(r.typeName + " range of ecosystem \"" + ecosystem + "\" not evaluated");
      continue;
    }
    RangeVerdict v = evaluateRange(r, pypi, cmp);
    if (!v.note.empty()) out.notes.push_back(v.note);
    if (!v.affected) continue;
    out.affected = true;
    // The lowest fix above the version among the affecting ranges.
    out.fixed = lowerFixed(out.fixed, v.fixed);
  }
  return out;
}

void AdvisoryIndex::add(OsvRecord record) {
  if (record.withdrawn) {
    ++withdrawn_;
    return;
  }
  const size_t r = records_.size();
  for (size_t a = 0; a < record.affected.size(); ++a) {
    const OsvAffected& aff = record.affected[a];
    if (aff.ecosystem.empty() || aff.name.empty()) continue;
    auto& list = byPackage_[{aff.ecosystem, indexName(aff.ecosystem, aff.name)}];
    list.emplace_back(r, a);
  }
  records_.push_back(std::move(record));
}

AdvisoryReport AdvisoryIndex::match(const std::vector<closure::Package>& packages) const {
  AdvisoryReport report;
  report.records = records_.size();
  report.withdrawn = withdrawn_;
  for (const closure::Package& p : packages) {
    PackageMapping m = osvPackageFor(p);
    if (!m.matched) {
      report.notMatched.push_back({p, m.reason});
      continue;
    }
    if (m.ref.ecosystem == "PyPI" && !Pep440Version::parse(m.ref.version).isOk()) {
      report.notMatched.push_back(
          {p, "version \"" + m.ref.version + "\" is not a PEP 440 version"});
      continue;
    }
    ++report.packagesChecked;
    auto it = byPackage_.find({m.ref.ecosystem, m.ref.name});
    if (it == byPackage_.end()) continue;

    // Per record: affected if any of its entries for this package is.
    struct Hit {
      size_t record;
      std::string fixed;
      std::vector<std::string> notes;
      RatedSeverity severity;
    };
    std::vector<Hit> hits;
    for (const auto& entry : it->second) {
      const size_t ri = entry.first;
      const size_t ai = entry.second;
      const OsvRecord& rec = records_[ri];
      AffectedVerdict v = evaluateAffected(rec.affected[ai], m.ref.ecosystem, m.ref.version);
      if (!v.affected) continue;
      RatedSeverity sev = rateSeverity(rec, &rec.affected[ai]);
      auto h = std::find_if(hits.begin(), hits.end(), [&](const Hit& x) { return x.record == ri; });
      if (h == hits.end()) {
        hits.push_back({ri, v.fixed, {}, sev});
        h = hits.end() - 1;
      } else {
        h->fixed = lowerFixed(h->fixed, v.fixed);
        if (sev.severity > h->severity.severity) h->severity = sev;
      }
      for (auto& n : v.notes) h->notes.push_back(rec.id + ": " + n);
    }
    if (hits.empty()) continue;

    // Group the records of one vulnerability: a shared id or alias links them.
    std::vector<size_t> parent(hits.size());
    for (size_t i = 0; i < hits.size(); ++i) parent[i] = i;
    std::function<size_t(size_t)> root = [&](size_t i) {
      return parent[i] == i ? i : parent[i] = root(parent[i]);
    };
    std::map<std::string, size_t> keyOwner;
    for (size_t i = 0; i < hits.size(); ++i) {
      const OsvRecord& rec = records_[hits[i].record];
      std::vector<std::string> keys = rec.aliases;
      keys.push_back(rec.id);
      for (const std::string& k : keys) {
        auto [o, inserted] = keyOwner.emplace(k, i);
        if (!inserted) parent[root(i)] = root(o->second);
      }
    }
    std::map<size_t, Finding> groups;
    for (size_t i = 0; i < hits.size(); ++i) {
      const OsvRecord& rec = records_[hits[i].record];
      Finding& f = groups[root(i)];
      f.package = p;
      f.osv = m.ref;
      f.ids.push_back(rec.id);
      f.aliases.insert(f.aliases.end(), rec.aliases.begin(), rec.aliases.end());
      if (f.summary.empty()) f.summary = rec.summary;
      if (f.ids.size() == 1 || hits[i].severity.severity > f.severity.severity)
        f.severity = hits[i].severity;
      f.fixed = higherFixed(f.fixed, hits[i].fixed);
      f.notes.insert(f.notes.end(), hits[i].notes.begin(), hits[i].notes.end());
    }
    for (auto& [_, f] : groups) {
      std::sort(f.ids.begin(), f.ids.end());
      f.ids.erase(std::unique(f.ids.begin(), f.ids.end()), f.ids.end());
      std::set<std::string> aliases(f.aliases.begin(), f.aliases.end());
      for (const auto& id : f.ids) aliases.erase(id);
      f.aliases.assign(aliases.begin(), aliases.end());
      f.id = f.ids.front();
      report.findings.push_back(std::move(f));
    }
  }
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     if (a.package.name != b.package.name) return a.package.name < b.package.name;
                     if (a.package.version != b.package.version)
                       return a.package.version < b.package.version;
                     if (a.severity.severity != b.severity.severity)
                       return a.severity.severity > b.severity.severity;
                     return a.id < b.id;
                   });
  return report;
}

}  // namespace lockstep::advisories
