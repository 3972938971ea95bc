// What a serving cluster reads from the registry before it starts a fleet
// release's canary, and while the canary runs and after it promoted
// (docs/fleet.md "The serving side"), pure: given the Sigstore bundles found
// among the package's referrers and the TrustPolicy the prod stage names,
//   - the earliest wave permit for this package, signed by a key the policy
//     trusts for stage "fleet", that names this cluster or is the open permit:
//     the canary may start;
//   - a fleet abort for the package under such a key: no canary starts, and
//     the cluster rolls back what this package's canary put in prod when the
//     abort is for the wave that permitted it (or the cluster never had a
//     permit); a cluster of an earlier, finished wave keeps serving;
//   - whether the question is settled for good: the open permit, or a permit
//     of a later wave of the same rollout, means no abort can concern this
//     cluster any more (the hub never aborts a finished wave).
// Statements that do not verify under a trusted key decide nothing; when no
// trusted permit names the cluster, the most telling refusal seen is in the
// message (an untrusted permit says more than none).
// Pure but for the key parsing (OpenSSL). Thread-safety: free functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/trust_policy.h"
#include "common/status.h"
#include "evidence/stage_evidence.h"

namespace lockstep::evidence {

// Reasons (condition Ready's reason on the release).
inline constexpr const char* kReasonWaitingForPermit = "WaitingForPermit";
inline constexpr const char* kReasonFleetAborted = "FleetAborted";

struct FleetPermitRequirement {
  std::string packageName;    // "registry/repository": what the policy's rules match
  std::string packageDigest;  // "sha256:…": the statements' subject
  std::string cluster;        // this cluster's name (the operator's --cluster-name)
  std::string policyName;     // for messages
};

// A trusted statement found, as the release's status records it.
struct FleetStatementFound {
  std::string rollout;  // "namespace/name" on the hub
  std::string wave;     // "*" for the open permit
  int64_t waveIndex = 0;
  int64_t issuedAt = 0;
  std::string referrer;  // the referrer manifest's digest
  std::string signedBy;  // the trusted key's name
  std::string detail;    // an abort: its failures, "b RolledBack (why); c TimedOut"
};

struct FleetPermitResult {
  bool permitted = false;  // a trusted permit names the cluster (or the open permit)
  bool aborted = false;    // a trusted fleet abort for the package
  // The abort concerns this cluster: it is for the wave that permitted it (or
  // no permit ever named it). Only then does a running or promoted canary of
  // the package roll back.
  bool concerned = false;
  bool settled = false;  // the open permit or a later wave's permit: nothing can change now
  // "" when permitted and not aborted; kReasonWaitingForPermit, kReasonFleetAborted,
  // kReasonEvidenceUntrusted or kReasonEvidenceInvalid (the policy itself).
  std::string reason;
  std::string message;
  std::optional<FleetStatementFound> permit;
  std::optional<FleetStatementFound> abort;

  // Whether this cluster may start the package's canary now.
  bool mayStart() const { return permitted && !aborted; }
  // {permitted, aborted, concerned, settled, reason?, message, permit?, abort?}
  nlohmann::json toJson() const;
  static StatusOr<FleetPermitResult> fromJson(const nlohmann::json& j);
};

FleetPermitResult checkFleetPermit(const std::vector<ReferrerBundle>& referrers,
                                   const api::v1alpha1::TrustPolicySpec& policy,
                                   const FleetPermitRequirement& want);

}  // namespace lockstep::evidence
