// ModelRollout (lockstep.dev/v1alpha1, namespaced, on the hub cluster): one
// package promoted to a fleet of serving clusters in ordered waves, with a
// strategy in the vocabulary of Open Cluster Management's RolloutStrategy
// (docs/fleet.md "Waves and strategy"). Field names are those of
// crds/lockstep.dev_modelrollouts.yaml.
//
//   spec:
//     package: registry.example/models/llama@sha256:…   # pinned by digest
//     model: llama
//     waves:
//     - {name: first, clusters: [b]}
//     - {name: rest, clusters: [c], clusterSelector: {matchLabels: {region: eu}}}
//     inventory: [{name: b, labels: {region: eu}}]   # when the hub has no ClusterProfiles
//     strategy: {maxConcurrency: "50%", maxFailures: 1, minSuccessTime: 10m,
//                progressDeadline: 30m}
//     trustPolicy: fleet
//
// The one decoder of the kind: strict, every error names its field. The
// wave planner (controllers/fleet/wave_plan.h) reads waves resolved to
// cluster names by resolveWaves().
// Pure. Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/image_ref.h"
#include "api/v1alpha1/label_selector.h"
#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// A clusterSelector: a metav1.LabelSelector over the inventory's labels; an
// empty selector ({}) matches every cluster.
using ClusterSelector = LabelSelector;

struct RolloutWave {
  std::string name;
  std::vector<std::string> clusters;               // by name, in the order written
  std::optional<ClusterSelector> clusterSelector;  // over the inventory
};

// A cluster of the inventory: a ClusterProfile (KEP-4322) or a spec.inventory entry.
struct InventoryCluster {
  std::string name;
  std::map<std::string, std::string> labels;
};

// An IntOrString strategy field: a count, or a percentage ("20%").
struct IntOrPercent {
  int64_t value = 0;
  bool percent = false;
};

// OCM's RolloutStrategy fields (docs/fleet.md "Waves and strategy").
struct RolloutStrategy {
  std::optional<IntOrPercent> maxConcurrency;      // unset: the whole wave at once
  IntOrPercent maxFailures;                        // default 0: the first failure aborts
  int64_t minSuccessTimeSeconds = 0;               // the soak after a cluster's Promoted record
  std::optional<int64_t> progressDeadlineSeconds;  // unset (or "None"): wait forever
};

struct ModelRolloutSpec {
  std::string package;  // as written
  ImageRef packageRef;  // parsed; pinned by digest
  std::string model;
  std::vector<RolloutWave> waves;
  std::vector<InventoryCluster> inventory;
  RolloutStrategy strategy;
  std::string signingConfig;  // "": the SigningConfig matching the package
  std::string trustPolicy;
};

// kInvalidArgument naming the field: "spec.waves[1].clusters[0]: \"b\" is already in
// spec.waves[0] (first)", "spec.strategy.maxFailures: \"x%\" is not an integer or a
// percentage (\"20%\")".
StatusOr<ModelRolloutSpec> decodeModelRolloutSpec(const nlohmann::json& spec);

// A wave with its clusters by name: the planner's input.
struct ResolvedWave {
  std::string name;
  std::vector<std::string> clusters;
};

// The inventory of the hub's ClusterProfile objects (KEP-4322): each one's
// metadata.name and metadata.labels, sorted by name; a name in several
// namespaces once.
std::vector<InventoryCluster> clusterProfileInventory(const std::vector<nlohmann::json>& profiles);

// The inventory the waves' selectors read: the hub's ClusterProfiles when it has
// any, else spec.inventory.
std::vector<InventoryCluster> rolloutInventory(const ModelRolloutSpec& spec,
                                               const std::vector<InventoryCluster>& profiles);

// Each wave's clusters: its named clusters in the order written, then the
// inventory's clusters its selector matches, sorted by name. A cluster claimed by
// an earlier wave (by name or selector) is not repeated in a later one. A named
// cluster need not be in the inventory. A wave may come out empty (a selector
// that matches nothing).
std::vector<ResolvedWave> resolveWaves(const ModelRolloutSpec& spec,
                                       const std::vector<InventoryCluster>& inventory);

// maxConcurrency for a wave of `waveSize` clusters: the count, or the percentage
// rounded up; at least 1. Unset: the whole wave (at least 1).
int64_t maxConcurrencyFor(const RolloutStrategy& strategy, int64_t waveSize);

// maxFailures over a rollout of `totalClusters`: the count, or the percentage
// rounded down.
int64_t maxFailuresFor(const RolloutStrategy& strategy, int64_t totalClusters);

}  // namespace lockstep::api::v1alpha1
