#include "advisories/cvss.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace lockstep::advisories {
namespace {

using Metrics = std::map<std::string, std::string, std::less<>>;

// "K:V/K:V" -> map; a repeated metric or a part without ':' is an error.
StatusOr<Metrics> splitVector(std::string_view vector, std::string_view body,
                              const std::set<std::string, std::less<>>& known) {
  Metrics m;
  size_t start = 0;
  while (start <= body.size()) {
    size_t slash = body.find('/', start);
    std::string_view part = body.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    size_t colon = part.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == part.size()) {
      return invalidArgument("CVSS vector \"" + std::string(vector) + "\": bad part \"" +
                             std::string(part) + "\"");
    }
    std::string key(part.substr(0, colon));
    if (!known.contains(key)) {
      return invalidArgument("CVSS vector \"" + std::string(vector) + "\": unknown metric \"" +
                             key + "\"");
    }
    if (!m.emplace(key, std::string(part.substr(colon + 1))).second) {
      return invalidArgument("CVSS vector \"" + std::string(vector) + "\": metric \"" + key +
                             "\" given twice");
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return m;
}

// The weight of a base metric's value, or an error naming both.
StatusOr<double> weight(std::string_view vector, const Metrics& m, const std::string& key,
                        const std::map<std::string, double, std::less<>>& values) {
  auto it = m.find(key);
  if (it == m.end()) {
    return invalidArgument("CVSS vector \"" + std::string(vector) + "\": base metric \"" + key +
                           "\" missing");
  }
  auto v = values.find(it->second);
  if (v == values.end()) {
    return invalidArgument("CVSS vector \"" + std::string(vector) + "\": " + key + " value \"" +
                           it->second + "\" is not defined");
  }
  return v->second;
}

// CVSS v3.1 Appendix A: the smallest one-decimal number >= x, without the floating
// point surprises of ceil(x * 10) / 10.
double roundup31(double x) {
  auto i = static_cast<long long>(std::llround(x * 100000.0));
  if (i % 10000 == 0) return static_cast<double>(i) / 100000.0;
  const long long tenths = i / 10000 + 1;  // floor, then one tenth up
  return static_cast<double>(tenths) / 10.0;
}

// CVSS v3.0 section 7.4: "round up to one decimal place".
double roundup30(double x) { return std::ceil(x * 10.0) / 10.0; }

}  // namespace

StatusOr<CvssScore> cvss3BaseScore(std::string_view vector) {
  std::string_view body = vector;
  bool v30 = false;
  if (body.starts_with("CVSS:3.1/")) {
    body.remove_prefix(9);
  } else if (body.starts_with("CVSS:3.0/")) {
    body.remove_prefix(9);
    v30 = true;
  } else {
    return invalidArgument("CVSS vector \"" + std::string(vector) +
                           "\": expected the prefix CVSS:3.0/ or CVSS:3.1/");
  }
  static const std::set<std::string, std::less<>> kKnown{
      "AV", "AC", "PR", "UI",  "S",   "C",   "I",   "A",  "E",  "RL", "RC",
      "CR", "IR", "AR", "MAV", "MAC", "MPR", "MUI", "MS", "MC", "MI", "MA"};
  auto m = splitVector(vector, body, kKnown);
  if (!m.isOk()) return m.status();
  auto scope = weight(vector, *m, "S", {{"U", 0}, {"C", 1}});
  if (!scope.isOk()) return scope.status();
  const bool changed = *scope == 1;
  auto av = weight(vector, *m, "AV", {{"N", 0.85}, {"A", 0.62}, {"L", 0.55}, {"P", 0.2}});
  auto ac = weight(vector, *m, "AC", {{"L", 0.77}, {"H", 0.44}});
  auto pr = weight(vector, *m, "PR",
                   {{"N", 0.85}, {"L", changed ? 0.68 : 0.62}, {"H", changed ? 0.5 : 0.27}});
  auto ui = weight(vector, *m, "UI", {{"N", 0.85}, {"R", 0.62}});
  const std::map<std::string, double, std::less<>> cia{{"H", 0.56}, {"L", 0.22}, {"N", 0}};
  auto c = weight(vector, *m, "C", cia);
  auto i = weight(vector, *m, "I", cia);
  auto a = weight(vector, *m, "A", cia);
  for (const auto* w : {&av, &ac, &pr, &ui, &c, &i, &a}) {
    if (!w->isOk()) return w->status();
  }
  const double iss = 1 - ((1 - *c) * (1 - *i) * (1 - *a));
  const double impact =
      changed ? 7.52 * (iss - 0.029) - 3.25 * std::pow(iss - 0.02, 15) : 6.42 * iss;
  const double exploitability = 8.22 * *av * *ac * *pr * *ui;
  double score = 0;
  if (impact > 0) {
    const double raw = changed ? std::min(1.08 * (impact + exploitability), 10.0)
                               : std::min(impact + exploitability, 10.0);
    score = v30 ? roundup30(raw) : roundup31(raw);
  }
  return CvssScore{score, severityOfScore(score)};
}

StatusOr<CvssScore> cvss2BaseScore(std::string_view vector) {
  std::string_view body = vector;
  if (body.starts_with("(") && body.ends_with(")")) body = body.substr(1, body.size() - 2);
  if (body.starts_with("CVSS:2.0/")) body.remove_prefix(9);
  static const std::set<std::string, std::less<>> kKnown{"AV", "AC", "Au",  "C",  "I",  "A",  "E",
                                                         "RL", "RC", "CDP", "TD", "CR", "IR", "AR"};
  auto m = splitVector(vector, body, kKnown);
  if (!m.isOk()) return m.status();
  auto av = weight(vector, *m, "AV", {{"L", 0.395}, {"A", 0.646}, {"N", 1.0}});
  auto ac = weight(vector, *m, "AC", {{"H", 0.35}, {"M", 0.61}, {"L", 0.71}});
  auto au = weight(vector, *m, "Au", {{"M", 0.45}, {"S", 0.56}, {"N", 0.704}});
  const std::map<std::string, double, std::less<>> cia{{"N", 0}, {"P", 0.275}, {"C", 0.660}};
  auto c = weight(vector, *m, "C", cia);
  auto i = weight(vector, *m, "I", cia);
  auto a = weight(vector, *m, "A", cia);
  for (const auto* w : {&av, &ac, &au, &c, &i, &a}) {
    if (!w->isOk()) return w->status();
  }
  const double impact = 10.41 * (1 - (1 - *c) * (1 - *i) * (1 - *a));
  const double exploitability = 20 * *av * *ac * *au;
  const double f = impact == 0 ? 0 : 1.176;
  double score = std::round(((0.6 * impact) + (0.4 * exploitability) - 1.5) * f * 10.0) / 10.0;
  score = std::max(score, 0.0);
  Severity rating = score < 4.0   ? Severity::kLow
                    : score < 7.0 ? Severity::kMedium
                                  : Severity::kHigh;
  if (score == 0) rating = Severity::kNone;
  return CvssScore{score, rating};
}

}  // namespace lockstep::advisories
