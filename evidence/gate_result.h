// What one gate stage measured and how: the input shared by the ML-BOM (model
// card, formulation) and the stage's test-result statement. A value the caller
// fills from a finished gate Job (or a CLI's flags); nothing here reads a cluster.
// Thread-safety: values.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lockstep::evidence {

// One metric the gate reported, with the thresholds the stage spec set.
struct MetricResult {
  std::string name;
  double value = 0;
  std::optional<double> min;  // the metric must be >= min
  std::optional<double> max;  // the metric must be <= max
  // Every threshold given is met (a metric without thresholds passes).
  bool passed() const;
};

// One gate Job's run.
struct GateResult {
  std::string stage;                 // "eval"
  std::string stageSpecDigest;       // "sha256:…" of the stage spec (stageSpecDigest())
  std::string jobUid;                // the gate Job's metadata.uid ("" if unknown)
  std::string image;                 // the Job's image, pinned by digest
  std::vector<std::string> command;  // the Job's command and args
  std::vector<MetricResult> metrics;
  std::string startedAt;   // RFC 3339, "" if unknown
  std::string finishedAt;  // RFC 3339, "" if unknown
  // Every metric passed.
  bool passed() const;
};

}  // namespace lockstep::evidence
