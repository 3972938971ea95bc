// libFuzzer target: an OSV record's parse and its evaluation against a few closure
// entries (the bounds and versions the input holds go through PEP 440 and SemVer), and
// the input as a version and as CVSS vectors.
#include <cstdint>
#include <string>
#include <string_view>

#include "advisories/cvss.h"
#include "advisories/match.h"
#include "advisories/osv.h"
#include "advisories/pep440.h"
#include "advisories/semver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::advisories;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = parseOsvRecord(text, "fuzz.json");
  if (record.isOk()) {
    (void)rateSeverity(*record, record->affected.empty() ? nullptr : &record->affected[0]);
    AdvisoryIndex index;
    std::string name = "p";
    if (!record->affected.empty() && !record->affected[0].name.empty())
      name = record->affected[0].name;
    index.add(std::move(*record));
    (void)index.match({{"pypi", name, "1.0", {"sha256:00"}},
                       {"pypi", name, "2.3.1+cu121", {"sha256:00"}},
                       {"pypi", name, "1!0.0.dev0", {"sha256:00"}},
                       {"conda", "pytorch", "2.1.0", {"sha256:00"}}});
  }
  auto v = Pep440Version::parse(text);
  if (v.isOk()) {
    auto one = Pep440Version::parse("1.0");
    (void)(*v < *one);
    (void)v->normalized();
  }
  auto s = SemVer::parse(text);
  if (s.isOk()) (void)(*s == *s);
  (void)cvss3BaseScore(text);
  (void)cvss2BaseScore(text);
  return 0;
}
