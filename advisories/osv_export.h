// A local OSV export read into an AdvisoryIndex: a directory of OSV JSON files (searched
// recursively, as GitHub's advisory-database lays them out) or a zip of them (osv.dev's
// per-ecosystem all.zip). The adapter of the file system and of libzip (Debian libzip);
// the records are parsed by the pure library (advisories/osv.h).
//
// A record that does not parse fails the whole load, naming the file (inside a zip:
// "all.zip:GHSA-x.json") and the field: an export is data the platform controls, and a
// partial read would report some packages clean on the strength of records it skipped.
// Thread-safety: a free function; concurrent calls share nothing.
#pragma once

#include <string>

#include "advisories/match.h"
#include "common/status.h"

namespace lockstep::advisories {

struct OsvExportLimits {
  size_t maxRecordBytes = kMaxRecordBytes;  // one record
  size_t maxTotalBytes = size_t{2} << 30;   // all records, uncompressed
  size_t maxRecords = 2'000'000;            // osv.dev's PyPI export has about 20,000
};

struct OsvExport {
  AdvisoryIndex index;
  size_t files = 0;  // JSON files read
  size_t bytes = 0;  // their size, uncompressed
};

// `path` is a directory or a file whose first bytes are a zip's ("PK\3\4"); anything else
// is kInvalidArgument naming it. Limits over are kResourceExhausted.
StatusOr<OsvExport> loadOsvExport(const std::string& path, const OsvExportLimits& limits = {});

}  // namespace lockstep::advisories
