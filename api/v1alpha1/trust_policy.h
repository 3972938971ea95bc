// TrustPolicy (cluster-scoped, written by the platform): whose evidence is
// accepted for which packages and stages (docs/evidence.md "Trust"). Read by
// `lockstep evidence verify --policy` today and by evidence stages of the
// fleet (issue 31).
//
//   spec:
//     keys:
//     - {name: lockstep-prod-2026, publicKey: "-----BEGIN PUBLIC KEY-----…"}
//     rules:
//     - repositories: [registry.example/models/]   # prefixes; [] every package
//       stages: [eval, ci, prod]                   # [] every stage
//       keys: [lockstep-prod-2026]
//
// A key is trusted for a package's stage when a rule lists it and matches both.
// Pure: the keys stay PEM text here (evidence/ecdsa_p256.h parses them).
// Thread-safety: values and pure functions.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

struct TrustPolicyKey {
  std::string name;
  std::string publicKey;  // PEM SubjectPublicKeyInfo
};

struct TrustRule {
  std::vector<std::string> repositories;  // prefixes of "registry/repository"; empty: all
  std::vector<std::string> stages;        // empty: all
  std::vector<std::string> keys;          // names of spec.keys
};

struct TrustPolicySpec {
  std::vector<TrustPolicyKey> keys;
  std::vector<TrustRule> rules;
};

// kInvalidArgument naming the field: "spec.rules[0].keys[1]: \"old\" is not a name in spec.keys".
StatusOr<TrustPolicySpec> decodeTrustPolicySpec(const nlohmann::json& spec);

// The names of the keys trusted for `stage` of `packageName` ("registry/repository");
// `stage` "" asks for the keys trusted for any stage of it.
std::set<std::string> trustedKeyNames(const TrustPolicySpec& policy, const std::string& packageName,
                                      const std::string& stage);

}  // namespace lockstep::api::v1alpha1
