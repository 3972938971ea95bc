// Shared body of the closure fuzz targets: parse once, and when parsing succeeds
// check the invariants of the canonical form (a violation aborts the fuzzer).
//
// One computeClosure() per input keeps the targets fast (docs/fuzzing.md): the
// options come from the input's last byte, so a lock file is a seed as it is
// (its final LF selects the defaults) and the fuzzer reaches the other options
// by mutating that byte:
//   bit 0       allow unhashed packages
//   bits 1-2    platform: default, osx-arm64, linux-64, x86_64-linux
//   bit 3       the family's other format, when detection does not name one of the family
//   bit 4       pixi environment "cuda" instead of the default
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "closure/closure.h"

namespace lockstep::closure::fuzz {

inline void checkInvariants(const StatusOr<Closure>& r) {
  if (!r.isOk()) {
    const Code code = r.status().code();
    if (code != Code::kInvalidArgument && code != Code::kResourceExhausted) std::abort();
    if (r.status().message().empty() || r.status().message().size() > 1100) std::abort();
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

struct Input {
  std::string_view text;
  ClosureOptions options;
};

// Splits off the selector byte and turns it into options. `family` lists the
// formats a target covers; an input detected as one of them is parsed as such.
inline Input decode(const uint8_t* data, size_t size, std::initializer_list<LockFormat> family) {
  Input in;
  if (size == 0) return in;
  const unsigned sel = data[size - 1] ^ '\n';  // a text file's final LF: all defaults
  in.text = std::string_view(reinterpret_cast<const char*>(data), size - 1);
  static const char* const kPlatforms[] = {"", "osx-arm64", "linux-64", "x86_64-linux"};
  in.options.allowUnhashed = (sel & 1) != 0;
  in.options.platform = kPlatforms[(sel >> 1) & 3];
  const std::vector<LockFormat> formats(family);
  LockFormat format = formats[((sel >> 3) & 1) % formats.size()];
  if (formats.size() > 1) {
    auto detected = detectFormat(in.text);
    for (LockFormat f : formats) {
      if (detected.isOk() && *detected == f) format = f;
    }
  }
  in.options.format = format;
  if (format == LockFormat::kPixi && (sel & 16)) in.options.environment = "cuda";
  return in;
}

inline void run(const uint8_t* data, size_t size, std::initializer_list<LockFormat> family) {
  Input in = decode(data, size, family);
  static const MapIncludeReader kIncludes(std::map<std::string, std::string>{
      {"base.txt", "six==1.16.0 --hash=sha256:" + std::string(64, 'a') + "\n"},
      {"loop.txt", "-r loop.txt\n"}});
  in.options.includes = &kIncludes;
  checkInvariants(computeClosure(in.text, in.options));
}

}  // namespace lockstep::closure::fuzz
