#include "advisories/severity.h"

#include <string>

namespace lockstep::advisories {

std::string_view severityName(Severity s) {
  switch (s) {
    case Severity::kNone:
      return "none";
    case Severity::kLow:
      return "low";
    case Severity::kMedium:
      return "medium";
    case Severity::kHigh:
      return "high";
    case Severity::kCritical:
      return "critical";
    case Severity::kUnknown:
      break;
  }
  return "unknown";
}

StatusOr<Severity> parseSeverity(std::string_view word) {
  std::string w(word);
  for (char& c : w) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (w == "none") return Severity::kNone;
  if (w == "low") return Severity::kLow;
  if (w == "medium" || w == "moderate") return Severity::kMedium;
  if (w == "high") return Severity::kHigh;
  if (w == "critical") return Severity::kCritical;
  return invalidArgument("severity \"" + std::string(word) +
                         "\": expected none, low, medium (moderate), high or critical");
}

Severity severityOfScore(double score) {
  if (score <= 0.0) return Severity::kNone;
  if (score < 4.0) return Severity::kLow;
  if (score < 7.0) return Severity::kMedium;
  if (score < 9.0) return Severity::kHigh;
  return Severity::kCritical;
}

bool exceeds(Severity s, Severity max) { return s == Severity::kUnknown || s > max; }

}  // namespace lockstep::advisories
