#include "advisories/pep440.h"

#include <algorithm>
#include <array>
#include <optional>

namespace lockstep::advisories {
namespace {

bool isDigitPep440(char c) { return c >= '0' && c <= '9'; }
bool isAlnum(char c) { return isDigitPep440(c) || (c >= 'a' && c <= 'z'); }
bool isSep(char c) { return c == '-' || c == '_' || c == '.'; }
bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string stripZeros(std::string_view digits) {
  size_t i = 0;
  while (i + 1 < digits.size() && digits[i] == '0') ++i;
  return std::string(digits.substr(i));
}

// Numbers as digit strings without leading zeros: longer is larger, else bytewise.
std::strong_ordering compareNumbers(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() <=> b.size();
  int c = a.compare(b);
  return c <=> 0;
}

bool allDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), isDigitPep440);
}

// A label and what PEP 440 normalises it to; longest spellings first so that "alpha"
// is not read as "a" followed by "lpha".
struct Label {
  std::string_view text;
  int kind;
};
constexpr std::array<Label, 8> kPreLabels{{{"alpha", 0},
                                           {"beta", 1},
                                           {"preview", 2},
                                           {"pre", 2},
                                           {"rc", 2},
                                           {"c", 2},
                                           {"a", 0},
                                           {"b", 1}}};
constexpr std::array<std::string_view, 3> kPostLabels{"post", "rev", "r"};

}  // namespace

// The grammar of PEP 440 Appendix B, read left to right over the lowercased text.
class Pep440Parser {
 public:
  explicit Pep440Parser(std::string s) : s_(std::move(s)) {}

  StatusOr<Pep440Version> run(std::string_view original) {
    Pep440Version v;
    auto bad = [&](const std::string& why) -> Status {
      return invalidArgument("\"" + std::string(original) + "\" is not a PEP 440 version: " + why);
    };
    if (peek() == 'v') ++pos_;
    std::string first = digits();
    if (first.empty()) return bad("expected a number at offset " + std::to_string(pos_));
    if (peek() == '!') {
      ++pos_;
      v.epoch_ = stripZeros(first);
      first = digits();
      if (first.empty()) return bad("expected a release number after the epoch");
    }
    v.release_.push_back(stripZeros(first));
    while (peek() == '.' && isDigitPep440(peek(1))) {
      ++pos_;
      v.release_.push_back(stripZeros(digits()));
    }
    // Pre-release: [sep] label [sep] [number].
    {
      size_t save = pos_;
      if (isSep(peek())) ++pos_;
      bool found = false;
      for (const Label& l : kPreLabels) {
        if (s_.compare(pos_, l.text.size(), l.text) == 0) {
          pos_ += l.text.size();
          v.hasPre_ = true;
          v.preKind_ = l.kind;
          v.pre_ = optionalNumber();
          found = true;
          break;
        }
      }
      if (!found) pos_ = save;
    }
    // Post-release: "-N", or [sep] label [sep] [number].
    {
      size_t save = pos_;
      if (peek() == '-' && isDigitPep440(peek(1))) {
        ++pos_;
        v.hasPost_ = true;
        v.post_ = stripZeros(digits());
      } else {
        if (isSep(peek())) ++pos_;
        bool found = false;
        for (std::string_view l : kPostLabels) {
          if (s_.compare(pos_, l.size(), l) == 0) {
            pos_ += l.size();
            v.hasPost_ = true;
            v.post_ = optionalNumber();
            found = true;
            break;
          }
        }
        if (!found) pos_ = save;
      }
    }
    // Development release: [sep] "dev" [sep] [number].
    {
      size_t save = pos_;
      if (isSep(peek())) ++pos_;
      if (s_.compare(pos_, 3, "dev") == 0) {
        pos_ += 3;
        v.hasDev_ = true;
        v.dev_ = optionalNumber();
      } else {
        pos_ = save;
      }
    }
    // Local version: "+" segments of [a-z0-9] separated by [-_.].
    if (peek() == '+') {
      ++pos_;
      while (true) {
        size_t start = pos_;
        while (isAlnum(peek())) ++pos_;
        if (pos_ == start) return bad("empty local version segment");
        std::string seg = s_.substr(start, pos_ - start);
        v.local_.push_back(allDigits(seg) ? stripZeros(seg) : seg);
        if (!isSep(peek())) break;
        ++pos_;
      }
    }
    if (pos_ != s_.size()) {
      return bad("unexpected \"" + s_.substr(pos_, 12) + "\" at offset " + std::to_string(pos_));
    }
    return v;
  }

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  std::string digits() {
    size_t start = pos_;
    while (isDigitPep440(peek())) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // "[sep] digits" after a label, or nothing (the number is then 0): a separator not
  // followed by a digit belongs to what comes next ("1.0a.dev1").
  std::string optionalNumber() {
    if (isSep(peek()) && isDigitPep440(peek(1))) ++pos_;
    std::string d = digits();
    return d.empty() ? "0" : stripZeros(d);
  }

  std::string s_;
  size_t pos_ = 0;
};

StatusOr<Pep440Version> Pep440Version::parse(std::string_view text) {
  size_t b = 0;
  size_t e = text.size();
  while (b < e && isSpace(text[b])) ++b;
  while (e > b && isSpace(text[e - 1])) --e;
  std::string s(text.substr(b, e - b));
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return Pep440Parser(std::move(s)).run(text);
}

std::string Pep440Version::normalized() const {
  std::string out;
  if (epoch_ != "0") out += epoch_ + "!";
  for (size_t i = 0; i < release_.size(); ++i) {
    if (i) out += '.';
    out += release_[i];
  }
  if (hasPre_) out += std::string(preKind_ == 0 ? "a" : preKind_ == 1 ? "b" : "rc") + pre_;
  if (hasPost_) out += ".post" + post_;
  if (hasDev_) out += ".dev" + dev_;
  for (size_t i = 0; i < local_.size(); ++i) out += (i ? "." : "+") + local_[i];
  return out;
}

std::strong_ordering Pep440Version::operator<=>(const Pep440Version& o) const {
  if (auto c = compareNumbers(epoch_, o.epoch_); std::is_neq(c)) return c;
  // Release: trailing zeros do not count (1.0 == 1.0.0).
  size_t n = std::max(release_.size(), o.release_.size());
  static const std::string kZero = "0";
  for (size_t i = 0; i < n; ++i) {
    const std::string& a = i < release_.size() ? release_[i] : kZero;
    const std::string& b = i < o.release_.size() ? o.release_[i] : kZero;
    if (auto c = compareNumbers(a, b); std::is_neq(c)) return c;
  }
  // Pre-release: a dev release of the final version sorts before its pre-releases
  // (1.0.dev0 < 1.0a0); no pre-release sorts after all of them.
  auto preRank = [](const Pep440Version& v) {
    if (v.hasPre_) return 1;
    if (!v.hasPost_ && v.hasDev_) return 0;
    return 2;
  };
  if (auto c = preRank(*this) <=> preRank(o); std::is_neq(c)) return c;
  if (hasPre_) {
    if (auto c = preKind_ <=> o.preKind_; std::is_neq(c)) return c;
    if (auto c = compareNumbers(pre_, o.pre_); std::is_neq(c)) return c;
  }
  // Post-release: none sorts first.
  if (auto c = hasPost_ <=> o.hasPost_; std::is_neq(c)) return c;
  if (hasPost_) {
    if (auto c = compareNumbers(post_, o.post_); std::is_neq(c)) return c;
  }
  // Development release: none sorts last.
  if (auto c = o.hasDev_ <=> hasDev_; std::is_neq(c)) return c;
  if (hasDev_) {
    if (auto c = compareNumbers(dev_, o.dev_); std::is_neq(c)) return c;
  }
  // Local version: none sorts first; segment by segment, a numeric segment sorts after
  // an alphanumeric one, numbers by value, strings bytewise; a longer local version
  // with an equal prefix sorts after.
  size_t m = std::min(local_.size(), o.local_.size());
  for (size_t i = 0; i < m; ++i) {
    bool an = allDigits(local_[i]);
    bool bn = allDigits(o.local_[i]);
    if (auto c = an <=> bn; std::is_neq(c)) return c;
    auto c = an ? compareNumbers(local_[i], o.local_[i]) : (local_[i].compare(o.local_[i]) <=> 0);
    if (std::is_neq(c)) return c;
  }
  return local_.size() <=> o.local_.size();
}

}  // namespace lockstep::advisories
