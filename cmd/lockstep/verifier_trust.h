// What a verifier on the command line trusts (docs/evidence.md "Trust"): the
// public keys of --key files, each trusted for every package and stage, and
// the keys of TrustPolicy files (--policy; `kubectl get trustpolicies -o
// yaml`), each trusted where a rule of its policy says. Shared by `lockstep
// evidence verify` and `lockstep fleet status`.
// Thread-safety: a value; const methods may run concurrently.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "api/v1alpha1/trust_policy.h"
#include "common/status.h"
#include "evidence/verify.h"

namespace lockstep::cli {

struct VerifierTrust {
  std::vector<evidence::TrustedKey> keyFiles;                                    // named by path
  std::vector<std::pair<std::string, api::v1alpha1::TrustPolicySpec>> policies;  // by name
  std::vector<evidence::TrustedKey> policyKeys;  // named "POLICY/KEY"

  bool empty() const { return keyFiles.empty() && policyKeys.empty(); }
  // The keys to verify a statement about `package` ("registry/repository") with:
  // every key file's, and each policy key some rule trusts for it at any stage.
  std::vector<evidence::TrustedKey> keysFor(const std::string& package) const;
  // Whether the key named `keyName` (as keysFor names it) is trusted for `stage`
  // of `package`.
  bool trusts(const std::string& keyName, const std::string& package,
              const std::string& stage) const;
};

// The PEM public keys of a comma-separated list of files, each named by its path.
StatusOr<std::vector<evidence::TrustedKey>> readTrustedKeys(const std::string& list);

// The TrustPolicy objects of `text` (YAML or JSON: one object, or a List), added to
// `trust`; errors name `source`, the line and the field
// ("trust.yaml:12: spec.rules[1].keys[0]: \"old\" is not a name in spec.keys").
Status addTrustPolicies(const std::string& text, const std::string& source, VerifierTrust& trust);

// --key FILES and/or --policy FILE ("" when not given).
StatusOr<VerifierTrust> loadTrust(const std::string& keyList, const std::string& policyFile);

}  // namespace lockstep::cli
