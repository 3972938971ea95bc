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

// `lockstep runtime advisories NAME`: status.advisories (docs/supply-chain.md
// "Advisories of a RuntimeEnv") as one block per revision, the current one and each
// pinned one, newest first: its counts, or why its match is not known, then
// ADVISORY PACKAGE VERSION SEVERITY FIXED SUMMARY. "" when the RuntimeEnv has no
// status.advisories (the operator has no advisory source: not known, never clean).
std::string renderRuntimeAdvisories(const nlohmann::json& runtimeEnv);

// The exit code of `lockstep runtime advisories`: 0 when every listed revision's match
// is known and holds no advisory, 1 otherwise (an advisory, a match not known, or no
// status.advisories at all).
bool runtimeAdvisoriesClean(const nlohmann::json& runtimeEnv);

}  // namespace lockstep::cli
