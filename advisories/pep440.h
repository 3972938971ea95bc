// PEP 440 versions of Python packages: parsing, normalisation and ordering.
//
// Debian packages no C or C++ implementation of PEP 440 (packaging, the reference one,
// is Python), so this is a small one written for Lockstep from the PEP's text: the
// grammar of its Appendix B (epoch, release, pre/post/dev releases with their alternate
// spellings, local versions) and the ordering of "Summary of permitted suffixes and
// relative ordering". Numbers are kept as digit strings, so no version overflows.
// The tests take their vectors from the PEP and from packaging's test suite.
// Pure; thread-safety: values.
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::advisories {

class Pep440Version {
 public:
  // Accepts every spelling PEP 440 normalises ("1.0-RC1", "v1.0", "1.0-r5", "1.0+AbC"),
  // surrounding ASCII whitespace included; anything else is kInvalidArgument naming the text.
  static StatusOr<Pep440Version> parse(std::string_view text);

  // The normal form: "1!2.0rc1.post3.dev4+abc.5".
  std::string normalized() const;
  // Ordering of PEP 440 (1.0.dev0 < 1.0a1 < 1.0 < 1.0+local < 1.0.post1); 1.0 == 1.0.0.
  std::strong_ordering operator<=>(const Pep440Version& o) const;
  bool operator==(const Pep440Version& o) const { return std::is_eq(*this <=> o); }

  bool isPrerelease() const { return hasPre_ || hasDev_; }
  bool hasLocal() const { return !local_.empty(); }
  // The same version without its local label ("2.3.1+cu121" -> "2.3.1").
  Pep440Version publicVersion() const {
    Pep440Version v = *this;
    v.local_.clear();
    return v;
  }

 private:
  std::string epoch_ = "0";           // digits, no leading zeros
  std::vector<std::string> release_;  // idem, as written (trailing zeros kept)
  bool hasPre_ = false;
  int preKind_ = 0;  // 0 a, 1 b, 2 rc
  std::string pre_;
  bool hasPost_ = false;
  std::string post_;
  bool hasDev_ = false;
  std::string dev_;
  std::vector<std::string> local_;  // lowercase; numeric segments without leading zeros

  friend class Pep440Parser;
};

}  // namespace lockstep::advisories
