// A metav1.LabelSelector (matchLabels and matchExpressions) and its one
// decoder: a ModelRollout's clusterSelector over its inventory, an
// AnalysisProvider's namespaceSelector over namespaces.
// Thread-safety: values and pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// One matchExpressions entry, as metav1.LabelSelectorRequirement.
struct LabelRequirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
};

// Every matchLabels pair and every requirement must hold; an empty selector
// ({}) matches everything (as in Kubernetes).
struct LabelSelector {
  std::map<std::string, std::string> matchLabels;
  std::vector<LabelRequirement> matchExpressions;
};

bool selectorMatches(const LabelSelector& selector,
                     const std::map<std::string, std::string>& labels);

// `s` decoded; InvalidArgument naming `field` (the full path, e.g.
// "spec.namespaceSelector.matchExpressions[0].operator") for a malformed one.
StatusOr<LabelSelector> decodeLabelSelector(const nlohmann::json& s, const std::string& field);

// "kubernetes.io/metadata.name=b,team in (x, y)": for messages.
std::string describeSelector(const LabelSelector& selector);

}  // namespace lockstep::api::v1alpha1
