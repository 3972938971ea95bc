// Advice on canary analyses, given as admission warnings (never denials):
// a Prometheus query whose range window ([10s], [5m:1m]) is longer than the
// analysis' initialDelay judges, in its first measurements, samples of pods
// that are not this canary's: the previous canary's on a track selector, none
// at all (an empty vector) on a release selector. docs/rollouts.md
// "initialDelay". And the one analysis rule that is a denial: where the
// queries go (checkAnalysisSources).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::webhooks {

// The longest range of a PromQL expression's range selectors and subqueries,
// in seconds rounded up; nullopt when it has none. Text in string literals
// ("5[0-9]{2}") is not a range.
std::optional<int64_t> longestRangeSeconds(std::string_view promql);

// One warning per analysis of spec.stages[].canary (the default and each
// step's own) whose query's longest range exceeds its initialDelay.
void adviseAnalyses(const nlohmann::json* spec, std::vector<std::string>& warnings);

// One violation per analysis that gives `prometheus.address` (a URL the
// release chose) unless the platform allows it (--allow-release-prometheus-address):
// the operator would call any address a tenant writes, from inside the
// cluster (server-side request forgery). Releases name an AnalysisProvider.
void checkAnalysisSources(const nlohmann::json* spec, bool allowAddresses,
                          std::vector<std::string>& violations);

}  // namespace lockstep::webhooks
