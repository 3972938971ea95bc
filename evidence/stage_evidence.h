// Whether a package's registry holds the evidence an evidence stage asks for
// (docs/fleet.md "Evidence stages"), pure: given the Sigstore bundles found
// among the package's referrers and a TrustPolicy, it looks, for each stage
// asked for, for a decision (SLSA VSA) that
//   - verifies under a key the policy trusts for that stage of the package,
//   - is about this package's digest and PASSED,
//   - is for the stage spec digest asked for (when one is pinned),
//   - was made on the pinned runtime pair: the same closure hash and the same
//     runtime image digest (the repository may differ: a mirror),
// and whose input attestations (the eval statements it cites) are all among
// the referrers, verified under a trusted key and byte-identical (payload
// digest). The first stage without such a decision gives the reason
// (EvidenceMissing, EvidenceUntrusted, EvidenceMismatch, EvidenceInvalid) and a
// message naming the stage and what was found instead.
// Pure but for the key parsing (OpenSSL). Thread-safety: free functions over values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/trust_policy.h"
#include "common/status.h"
#include "evidence/verify.h"

namespace lockstep::evidence {

// Reasons of a stage held for its evidence (condition Ready's reason).
inline constexpr const char* kReasonEvidenceMissing = "EvidenceMissing";
inline constexpr const char* kReasonEvidenceUntrusted = "EvidenceUntrusted";
inline constexpr const char* kReasonEvidenceMismatch = "EvidenceMismatch";
inline constexpr const char* kReasonEvidenceInvalid = "EvidenceInvalid";  // the policy itself

// One referrer of the package as read from the registry.
struct ReferrerBundle {
  std::string manifestDigest;  // the referrer manifest's digest
  std::string statementName;   // its dev.lockstep.statement annotation ("eval/decision"); untrusted
  std::string bundle;          // the Sigstore bundle's bytes
  std::string error;           // why the bundle could not be read ("" when read)
};

struct EvidenceRequirement {
  std::string packageName;          // "registry/repository": what the policy's rules match
  std::string packageDigest;        // "sha256:…": the statements' subject
  std::vector<std::string> stages;  // the stages whose decisions are needed
  std::map<std::string, std::string> specDigests;  // stage → the stage spec digest required
  std::string closureHash;                         // the pinned runtime: closure hash …
  std::string runtimeImageDigest;                  // … and the image digest ("" not checked)
  std::string policyName;                          // for messages
};

// A statement that passed, as the stage status records it.
struct FoundStatement {
  std::string stage;
  std::string predicateType;
  std::string payloadDigest;  // "sha256:…" of the verified statement
  std::string referrer;       // the referrer manifest's digest
  std::string signedBy;       // the trusted key's name
  std::string specDigest;     // the decision's policy digest
};

struct StageEvidenceResult {
  bool passed = false;
  std::string reason;                      // "" when passed
  std::string message;                     // what was verified, or what is missing and where
  std::vector<FoundStatement> statements;  // decisions and the inputs they cite, when passed
  nlohmann::json toJson() const;           // {passed, reason, message, statements[]}
};

// The keys `policy` (named `policyName` in messages) trusts for `stage` of
// `packageName`, parsed; kInvalidArgument naming a key of the policy that does
// not parse (any key: a broken one makes the whole policy invalid).
StatusOr<std::vector<TrustedKey>> trustedKeys(const api::v1alpha1::TrustPolicySpec& policy,
                                              const std::string& packageName,
                                              const std::string& stage,
                                              const std::string& policyName);

StageEvidenceResult checkStageEvidence(const std::vector<ReferrerBundle>& referrers,
                                       const api::v1alpha1::TrustPolicySpec& policy,
                                       const EvidenceRequirement& want);

}  // namespace lockstep::evidence
