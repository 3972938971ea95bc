// Which of a package's referrers the hub's wave planner counts (docs/fleet.md
// "Running the hub"): prod records that verify under a key the rollout's
// TrustPolicy trusts for stage prod; wave permits and fleet aborts that verify
// under a key it trusts for stage fleet, or under the hub's own signing key.
// Other statements (eval results, decisions, BOMs) are not the hub's concern
// and are skipped. A statement that claims (unverified) to be a prod record,
// permit or abort but does not verify or parse is listed as ignored with the
// reason, so a cluster whose key the policy lacks shows as such, not as a
// cluster that never answered.
// Pure but for the signature checks (OpenSSL). Thread-safety: free functions over values.
#pragma once

#include <string>
#include <vector>

#include "evidence/fleet_statement.h"
#include "evidence/stage_evidence.h"
#include "evidence/verify.h"

namespace lockstep::controllers {

struct FleetKeys {
  std::vector<evidence::TrustedKey> prod;   // trusted for the clusters' prod records
  std::vector<evidence::TrustedKey> fleet;  // trusted for permits and aborts (the hub's own too)
};

struct IgnoredStatement {
  std::string referrer;       // the referrer manifest's digest
  std::string predicateType;  // as the statement claims it ("" when unreadable)
  std::string reason;
};

struct FleetReferrers {
  std::vector<evidence::WavePermit> permits;  // distinct, in registry order
  std::vector<evidence::ProdRecord> records;
  std::vector<evidence::FleetAbort> aborts;
  std::vector<IgnoredStatement> ignored;
};

FleetReferrers readFleetReferrers(const std::vector<evidence::ReferrerBundle>& referrers,
                                  const FleetKeys& keys, const std::string& packageDigest);

}  // namespace lockstep::controllers
