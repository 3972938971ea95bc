// RuntimeSpec: what verify-env and verify-host read from a runtime.json.
//
// runtime.json is what `lockstep closure-hash --json` writes beside a checkpoint
// (closureHash, format, platform, environment, cuda, minDriver, weak), plus fields
// a team adds by hand: `rdma` (true when the job uses InfiniBand/RoCE through NCCL)
// and `packages` (the closure's canonical lines, `closure-hash --explain` output
// one string each), which makes the file enough for verify-env without the lock.
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "closure/closure.h"
#include "common/status.h"

namespace lockstep::verify {

struct RuntimeSpec {
  std::string closureHash;  // "sha256:<hex>", "" when absent
  std::string format;       // lock format name, "" when absent
  std::string platform;
  std::string environment;
  std::string cuda;  // "12.8", "" for CPU-only
  std::string minDriver;
  bool rdma = false;
  // The canonical entries, when the file lists them (`packages`); their hash is checked
  // against closureHash on parse.
  std::optional<std::vector<closure::Package>> packages;
};

// Errors "<where>: <field>: <reason>"; a `packages` list whose hash is not closureHash is
// an error too (the file was edited or mixed up).
StatusOr<RuntimeSpec> parseRuntimeJson(std::string_view text, const std::string& where);

// Splits one canonical line ("pypi\tidna\t3.11\tsha256:…") into a package.
StatusOr<closure::Package> parseCanonicalLine(std::string_view line, const std::string& where);

}  // namespace lockstep::verify
