// Shared body of the closure fuzz targets: parse, and when parsing succeeds
// check the invariants of the canonical form (a violation aborts the fuzzer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "closure/closure.h"

namespace lockstep::closure::fuzz {

inline void checkInvariants(const StatusOr<Closure>& r) {
  if (!r.isOk()) {
    if (r.status().code() != Code::kInvalidArgument || r.status().message().empty()) std::abort();
    return;
  }
  const Closure& c = *r;
  if (c.closureHash != closureHashOfCanonicalText(c.canonicalText)) std::abort();
  if (canonicalText(c.packages) != c.canonicalText) std::abort();
  size_t lines = 0;
  size_t tabs = 0;
  for (char ch : c.canonicalText) {
    if (ch == '\n') {
      if (tabs != 3) std::abort();
      ++lines;
      tabs = 0;
    } else if (ch == '\t') {
      ++tabs;
    }
  }
  if (lines != c.packageCount()) std::abort();
  if (c.weak == c.unhashed.empty()) std::abort();
}

inline void run(const uint8_t* data, size_t size, LockFormat format) {
  std::string text(reinterpret_cast<const char*>(data), size);
  static const MapIncludeReader kIncludes(std::map<std::string, std::string>{
      {"base.txt", "six==1.16.0 --hash=sha256:" + std::string(64, 'a') + "\n"},
      {"loop.txt", "-r loop.txt\n"}});
  for (bool allowUnhashed : {false, true}) {
    ClosureOptions o;
    o.format = format;
    o.allowUnhashed = allowUnhashed;
    o.includes = &kIncludes;
    checkInvariants(computeClosure(text, o));
  }
  // A second platform spelling exercises selection on per-platform locks.
  ClosureOptions o;
  o.format = format;
  o.platform = "osx-arm64";
  checkInvariants(computeClosure(text, o));
}

}  // namespace lockstep::closure::fuzz
