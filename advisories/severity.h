// Severity of an advisory, on the qualitative scale of CVSS v3 (none, low, medium,
// high, critical), and how a policy's maximum compares with it.
//
// An advisory whose severity is unknown (no CVSS v2/v3 vector, no database word)
// exceeds every maximum: a severity nobody gave is not below a bar.
// Pure; thread-safety: values and free functions.
#pragma once

#include <string_view>

#include "common/status.h"

namespace lockstep::advisories {

enum class Severity { kUnknown = 0, kNone, kLow, kMedium, kHigh, kCritical };

// "unknown", "none", "low", "medium", "high", "critical".
std::string_view severityName(Severity s);
// A policy's or a database's word, case-insensitive: none, low, medium (or moderate,
// as GitHub's advisories say), high, critical. "unknown" and anything else are errors.
StatusOr<Severity> parseSeverity(std::string_view word);
// The CVSS v3 qualitative rating of a base score: 0 none, 0.1-3.9 low, 4.0-6.9 medium,
// 7.0-8.9 high, 9.0-10.0 critical.
Severity severityOfScore(double score);
// True when an advisory of severity `s` is over a policy's `max`.
bool exceeds(Severity s, Severity max);

}  // namespace lockstep::advisories
