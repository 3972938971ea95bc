// Released content cannot change: once a ModelRelease has left Pending
// (status.phase set and not Pending), everything that was or will be
// validated is immutable: spec.model and spec.stages (gate templates,
// thresholds, timeouts, approval policy, serving template, port, replicas,
// canary steps and analysis). package, runtimeEnvRef and closureHash are
// immutable from creation (model_release_validator.h). The CRD carries the
// same rule in CEL; this check names the first field that differs.
// docs/modelrelease.md "Released content cannot change".
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::webhooks {

// Whether `release` (an object as stored, with its status) has left Pending.
bool releaseLeftPending(const nlohmann::json* release);

// The path of the first difference between `now` and `before` below `path`
// ("spec.stages[1].approval"), or "" when they are equal.
std::string firstDifference(const nlohmann::json* now, const nlohmann::json* before,
                            const std::string& path);

// UPDATE of a release that has left Pending: one violation per changed field
// among spec.model and spec.stages, naming it and saying to create a new
// ModelRelease.
void checkReleasedContent(const nlohmann::json* release, const nlohmann::json* oldRelease,
                          std::vector<std::string>& out);

}  // namespace lockstep::webhooks
