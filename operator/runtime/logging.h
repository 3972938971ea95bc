// Process-wide structured logging on spdlog: one line per event, plain text
// or JSON ({"ts","level","logger","msg"}). Nothing in Lockstep logs tokens,
// keys or Authorization headers; requests are logged by Request::describe(),
// which has neither headers nor bodies.
// Thread-safety: call configureLogging once at startup, before threads log.
#pragma once

#include <memory>
#include <string>

#include <spdlog/formatter.h>

#include "common/status.h"

namespace lockstep::runtime {

struct LogOptions {
  bool json = false;
  std::string level = "info";  // trace, debug, info, warn, error, critical, off
};

Status configureLogging(const LogOptions& options);

// Formats records as one JSON object per line (exposed for tests).
std::unique_ptr<spdlog::formatter> makeJsonFormatter();

}  // namespace lockstep::runtime
