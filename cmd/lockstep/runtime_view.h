// The pure side of `lockstep runtime history`: a RuntimeEnv's revisions
// (status.revisions, docs/contracts.md "Runtime revisions") as a table. No
// I/O; the clock is an argument. Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "operator/kube/clock.h"

namespace lockstep::cli {

// A first line naming the current revision and the resolved state, then
// REVISION CURRENT IMAGE CLOSURE-HASH CUDA FIRST-RESOLVED LAST-RESOLVED PINNED-BY,
// newest first.
std::string renderRuntimeHistory(const nlohmann::json& runtimeEnv, kube::Clock::WallTime now);

}  // namespace lockstep::cli
