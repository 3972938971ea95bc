// Semantic Versioning 2.0.0 precedence, for OSV ranges of type SEMVER.
//
// MAJOR.MINOR.PATCH, an optional "-" pre-release of dot-separated identifiers and an
// optional "+" build that does not count (semver.org, section 11). A leading "v" is
// accepted, as OSV producers sometimes keep it. Pure; thread-safety: values.
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::advisories {

class SemVer {
 public:
  static StatusOr<SemVer> parse(std::string_view text);
  std::strong_ordering operator<=>(const SemVer& o) const;
  bool operator==(const SemVer& o) const { return std::is_eq(*this <=> o); }

 private:
  std::vector<std::string> core_;  // three numbers, digit strings without leading zeros
  std::vector<std::string> pre_;   // identifiers; numeric ones without leading zeros
};

}  // namespace lockstep::advisories
