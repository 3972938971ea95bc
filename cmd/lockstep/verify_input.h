// What verify-env and verify-host share in the CLI: the closure a runtime is
// checked against (from --lock, --runtime-json or both) and the report's output.
// Thread-safety: run from main only.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "closure/closure.h"
#include "common/status.h"
#include "verify/difference.h"
#include "verify/runtime_spec.h"

namespace lockstep::cli {

struct VerifyInput {
  std::string lockPath;                       // --lock, "" when not given
  std::string runtimeJsonPath;                // --runtime-json, "" when not given
  std::string format, platform, environment;  // --format / --platform / --environment
  bool allowUnhashed = false;
};

struct ResolvedRuntime {
  std::string closureHash;
  std::string source;  // "requirements.txt", "runtime.json", "requirements.txt + runtime.json"
  std::string cuda;
  bool rdma = false;
  // nullopt when only a runtime.json without `packages` was given (enough for verify-host).
  std::optional<std::vector<closure::Package>> packages;
};

// Reads the lock and/or runtime.json. With both, the lock's closure hash must be
// runtime.json's closureHash. Errors name the file (and line / field).
StatusOr<ResolvedRuntime> resolveRuntime(const VerifyInput& in);

nlohmann::ordered_json differenceJson(const verify::Difference& d);

// Splits "a,b,,c" into {"a","b","c"}.
std::vector<std::string> splitComma(const std::string& s);

// The error of a verb, as JSON ({"result":"error","error":...}) on `out` or a line on `err`.
int reportError(std::ostream& out, std::ostream& err, const std::string& verb, bool json,
                const std::string& message);

}  // namespace lockstep::cli
