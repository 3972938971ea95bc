// CVSS base scores computed from vector strings, as OSV's severity[] carries them.
//
// v3.0 and v3.1 follow the formulas of the FIRST specification documents (section 7,
// with v3.1's Roundup in integer arithmetic, Appendix A); v2 follows the v2 guide's
// base equation. CVSS v4 is not scored here: its score comes from a lookup of macro
// vectors; an advisory that gives only a v4 vector takes the database's word instead
// (advisories/osv.h). Temporal and environmental metrics in a vector are accepted and
// do not change the base score. Pure; thread-safety: free functions.
#pragma once

#include <string_view>

#include "advisories/severity.h"
#include "common/status.h"

namespace lockstep::advisories {

struct CvssScore {
  double baseScore = 0;  // 0.0 .. 10.0, one decimal
  Severity rating = Severity::kUnknown;
};

// "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H" (or "CVSS:3.0/..."). Every base metric
// exactly once; an unknown metric or value is kInvalidArgument naming it.
StatusOr<CvssScore> cvss3BaseScore(std::string_view vector);
// "AV:N/AC:L/Au:N/C:P/I:P/A:P", optionally in parentheses or prefixed "CVSS:2.0/". The
// rating is NVD's for v2: low below 4.0, medium below 7.0, else high.
StatusOr<CvssScore> cvss2BaseScore(std::string_view vector);

}  // namespace lockstep::advisories
