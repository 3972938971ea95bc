// RFC 3339 UTC timestamps as the ModelRelease planners read and write them
// in status ("2026-11-30T09:00:00Z"), as seconds since the epoch.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lockstep::controllers {

// Seconds since the epoch of an RFC 3339 UTC timestamp; nullopt when malformed.
std::optional<int64_t> parseRfc3339(const std::string& text);

// The RFC 3339 UTC form of `unix` (seconds since the epoch).
std::string formatRfc3339(int64_t unix);

}  // namespace lockstep::controllers
