// Advisories against a runtime closure: which OSV records affect which of its entries.
//
// An AdvisoryIndex holds parsed records by (ecosystem, normalised name); match() takes
// a closure's packages, maps each to an OSV package (advisories/name_mapping.h), and
// evaluates every record that names it with the schema's algorithm (versions list, then
// ECOSYSTEM/SEMVER ranges with limit events; GIT ranges are left out: a closure has
// versions, not commits). PyPI versions compare by PEP 440, without their local label
// ("2.3.1+cu121" is a build of 2.3.1, which is what advisories describe).
//
// A record whose bounds cannot be compared with the package's version (a bound that
// is not a version of the range's type) counts as affecting, with a note: a record
// that names a package is never dropped in silence. Records of one vulnerability
// (linked by id or alias, e.g. PYSEC-2024-60 and GHSA-jjg7-2v4v-x38h) are one finding
// per package, with the highest severity and the highest fixed version among them.
// Pure; thread-safety: an index is immutable after building; match() is const.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "advisories/name_mapping.h"
#include "advisories/osv.h"
#include "closure/closure.h"

namespace lockstep::advisories {

struct Finding {
  std::string id;                // the group's first id, bytewise ("GHSA-..." before "PYSEC-...")
  std::vector<std::string> ids;  // every record id of the group, sorted
  std::vector<std::string> aliases;  // the group's aliases that are not ids of it, sorted
  std::string summary;               // the first record's with a summary
  RatedSeverity severity;            // the group's highest (unknown only when all are)
  closure::Package package;          // the closure entry
  OsvPackageRef osv;                 // where it was looked up
  std::string fixed;  // a version that fixes every record of the group; "" if none known
  std::vector<std::string> notes;  // "GHSA-x: bound \"...\" not comparable: counted as affecting"
};

struct NotMatched {
  closure::Package package;
  std::string reason;
};

struct AdvisoryReport {
  std::vector<Finding> findings;       // by package name, then severity (highest first), then id
  std::vector<NotMatched> notMatched;  // closure order
  size_t packagesChecked = 0;          // entries that were looked up
  size_t records = 0;                  // records in the index
  size_t withdrawn = 0;                // withdrawn records left out of the index
};

class AdvisoryIndex {
 public:
  // Adds one record; a withdrawn record is only counted.
  void add(OsvRecord record);
  size_t size() const { return records_.size(); }
  size_t withdrawn() const { return withdrawn_; }

  AdvisoryReport match(const std::vector<closure::Package>& packages) const;

 private:
  std::vector<OsvRecord> records_;
  size_t withdrawn_ = 0;
  // (ecosystem, normalised name) -> (record, affected entry) pairs.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<size_t, size_t>>> byPackage_;
};

// The outcome of evaluating one affected entry against one version, for tests.
struct AffectedVerdict {
  bool affected = false;
  std::string fixed;               // the lowest fixed event above the version in an affecting range
  std::vector<std::string> notes;  // bounds that could not be compared
};
AffectedVerdict evaluateAffected(const OsvAffected& a, const std::string& ecosystem,
                                 const std::string& version);

}  // namespace lockstep::advisories
