// `lockstep fleet status` without a socket (docs/fleet.md "Seeing a rollout"):
// the fleet statements of a package as its registry holds them, verified, and
// the rollout's state made from them.
//   - readFleetEvidence: each bundle referrer verified under the trust given
//     (permits and aborts must be trusted for stage fleet, prod records for
//     stage prod); what does not verify, is not trusted or does not parse is
//     refused with the reason and counts for nothing;
//   - fleetStatus: with the ModelRollout, the hub's own planner
//     (controllers/fleet/wave_plan.h) run at `nowUnix`, read-only: what the hub
//     would write on its next pass is said, never written; without it, the
//     clusters the permits and records name, as far as the registry alone tells;
//   - fleetStatusTable: the same for a terminal.
// Pure. Thread-safety: free functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_rollout.h"
#include "cmd/lockstep/manifest_file.h"
#include "cmd/lockstep/verifier_trust.h"
#include "evidence/fleet_statement.h"

namespace lockstep::cli {

// A bundle referrer of the package as the registry lists it (the annotations are
// unverified: they only say what the bundle claims to be).
struct FleetReferrer {
  std::string digest;         // the referrer manifest's
  std::string statement;      // annotation dev.lockstep.statement; "" when absent
  std::string predicateType;  // annotation dev.sigstore.bundle.predicateType; "" when absent
  std::string bundle;         // the bundle's bytes
  std::string error;          // why it could not be read ("" when read)
};

template <typename T>
struct SignedStatement {
  T value;
  std::string signedBy;  // the trusted key's name
  std::string referrer;  // the referrer manifest's digest
};

struct RefusedStatement {
  std::string referrer, statement, predicateType, reason;
};

struct FleetEvidence {
  std::vector<SignedStatement<evidence::WavePermit>> permits;
  std::vector<SignedStatement<evidence::FleetAbort>> aborts;
  std::vector<SignedStatement<evidence::ProdRecord>> records;
  std::vector<RefusedStatement> refused;  // fleet statements that count for nothing
  int otherStatements = 0;                // the package's other evidence (eval, bom, …)
};

// `packageName` is "registry/repository", `digest` "sha256:…".
FleetEvidence readFleetEvidence(const std::vector<FleetReferrer>& referrers,
                                const std::string& packageName, const std::string& digest,
                                const VerifierTrust& trust);

struct FleetRollout {
  api::v1alpha1::ObjectMeta meta;
  api::v1alpha1::ModelRolloutSpec spec;
};

// A ModelRollout object from a manifest file (as written, or as `kubectl get
// modelrollout -o yaml` prints it); errors say where: "rollout.yaml:9:
// spec.strategy.maxFailures: …".
StatusOr<FleetRollout> decodeRolloutManifest(const ManifestFile& file);

// The status shown: package, phase, message, waves (with the rollout), clusters,
// the signed permits, aborts and records, what was refused. `package` is
// "registry/repository@sha256:…".
nlohmann::ordered_json fleetStatus(const std::string& package, const FleetEvidence& evidence,
                                   const FleetRollout* rollout, int64_t nowUnix);

std::string fleetStatusTable(const nlohmann::ordered_json& status);

}  // namespace lockstep::cli
