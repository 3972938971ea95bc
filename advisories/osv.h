// OSV records (https://ossf.github.io/osv-schema/): the fields that matching and
// reporting need, parsed from one record's JSON text with nlohmann_json.
//
// Unknown fields are ignored (the schema grows); a field of the wrong type, an event
// with other than exactly one of introduced/fixed/last_affected/limit, or a record
// without an id is an error "<source>: <field>: <reason>" (a JSON syntax error names the
// line). Pure: text in, values out. Thread-safety: free functions over values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "advisories/severity.h"
#include "common/status.h"

namespace lockstep::advisories {

// Bounds one record's parse may not exceed (a record is a few KB; the largest in
// osv.dev's PyPI export are under 1 MB).
inline constexpr size_t kMaxRecordBytes = size_t{8} << 20;
inline constexpr int kMaxRecordDepth = 64;

enum class RangeType { kEcosystem, kSemver, kGit, kOther };

struct OsvEvent {
  enum class Kind { kIntroduced, kFixed, kLastAffected, kLimit };
  Kind kind = Kind::kIntroduced;
  std::string version;
};

struct OsvRange {
  RangeType type = RangeType::kOther;
  std::string typeName;  // as written: "ECOSYSTEM", "SEMVER", "GIT"
  std::vector<OsvEvent> events;
};

struct OsvSeverity {
  std::string type;   // "CVSS_V2", "CVSS_V3", "CVSS_V4", "Ubuntu", ...
  std::string score;  // the vector or the word
};

struct OsvAffected {
  std::string ecosystem;  // "PyPI"
  std::string name;       // as the record spells it
  std::string purl;
  std::vector<OsvRange> ranges;
  std::vector<std::string> versions;
  std::vector<OsvSeverity> severity;  // affected[].severity (schema 1.7)
  // A "severity" string in ecosystem_specific or database_specific, if any.
  std::string ecosystemSeverity;
  std::string databaseSeverity;
};

struct OsvRecord {
  std::string id;
  std::vector<std::string> aliases;
  std::string summary;
  std::string modified;
  bool withdrawn = false;
  std::vector<OsvSeverity> severity;
  std::string databaseSeverity;  // database_specific.severity (GitHub: LOW/MODERATE/HIGH/CRITICAL)
  std::vector<OsvAffected> affected;
  std::string source;  // where it was read from, for messages
};

StatusOr<OsvRecord> parseOsvRecord(std::string_view text, std::string_view source);

// An advisory's severity and what it was taken from.
struct RatedSeverity {
  Severity severity = Severity::kUnknown;
  double score = -1;  // CVSS base score when computed from a vector, else -1
  std::string basis;  // "CVSS:3.1/AV:N/...", "database_specific.severity MODERATE", ...
};

// The severity of `record` for one of its affected entries (nullptr: the record's own):
// a CVSS v3 vector's base score first (the entry's, then the record's), then a CVSS v2
// vector's, then the words of ecosystem_specific / database_specific (the entry's, then
// the record's); a CVSS v4 vector alone, or nothing, is kUnknown, with the reason in basis.
RatedSeverity rateSeverity(const OsvRecord& record, const OsvAffected* affected);

}  // namespace lockstep::advisories
