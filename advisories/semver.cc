#include "advisories/semver.h"

#include <algorithm>

namespace lockstep::advisories {
namespace {

bool isDigitSemver(char c) { return c >= '0' && c <= '9'; }
bool numeric(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), isDigitSemver);
}
bool identifierChar(char c) {
  return isDigitSemver(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(
        s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos) return out;
    start = p + 1;
  }
}

std::strong_ordering compareNumbersSemver(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() <=> b.size();
  return a.compare(b) <=> 0;
}

}  // namespace

StatusOr<SemVer> SemVer::parse(std::string_view text) {
  auto bad = [&](const std::string& why) -> Status {
    return invalidArgument("\"" + std::string(text) + "\" is not a semantic version: " + why);
  };
  std::string_view s = text;
  if (!s.empty() && s.front() == 'v') s.remove_prefix(1);
  if (size_t plus = s.find('+'); plus != std::string_view::npos) s = s.substr(0, plus);
  std::string_view pre;
  if (size_t dash = s.find('-'); dash != std::string_view::npos) {
    pre = s.substr(dash + 1);
    s = s.substr(0, dash);
    if (pre.empty()) return bad("empty pre-release");
  }
  SemVer v;
  for (std::string_view part : split(s, '.')) {
    if (!numeric(part)) return bad("expected MAJOR.MINOR.PATCH numbers");
    size_t i = 0;
    while (i + 1 < part.size() && part[i] == '0') ++i;
    v.core_.emplace_back(part.substr(i));
  }
  if (v.core_.size() != 3) return bad("expected MAJOR.MINOR.PATCH");
  if (!pre.empty()) {
    for (std::string_view id : split(pre, '.')) {
      if (id.empty() || !std::all_of(id.begin(), id.end(), identifierChar))
        return bad("bad pre-release identifier");
      if (numeric(id)) {
        size_t i = 0;
        while (i + 1 < id.size() && id[i] == '0') ++i;
        id = id.substr(i);
      }
      v.pre_.emplace_back(id);
    }
  }
  return v;
}

std::strong_ordering SemVer::operator<=>(const SemVer& o) const {
  for (size_t i = 0; i < 3; ++i) {
    if (auto c = compareNumbersSemver(core_[i], o.core_[i]); std::is_neq(c)) return c;
  }
  // A pre-release sorts before its release.
  if (pre_.empty() || o.pre_.empty()) return pre_.empty() <=> o.pre_.empty();
  size_t m = std::min(pre_.size(), o.pre_.size());
  for (size_t i = 0; i < m; ++i) {
    bool an = numeric(pre_[i]);
    bool bn = numeric(o.pre_[i]);
    // Numeric identifiers sort before alphanumeric ones.
    if (an != bn) return bn <=> an;
    auto c = an ? compareNumbersSemver(pre_[i], o.pre_[i]) : (pre_[i].compare(o.pre_[i]) <=> 0);
    if (std::is_neq(c)) return c;
  }
  return pre_.size() <=> o.pre_.size();
}

}  // namespace lockstep::advisories
