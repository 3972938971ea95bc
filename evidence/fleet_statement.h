// The statements a fleet is coordinated by, through the registry alone
// (docs/fleet.md "Fleet statements"): in-toto Statements v1 whose subject is
// the package digest, as those of evidence/statement.h.
//   - a wave permit (written by the hub): these clusters may start the
//     package's canary; the final open permit (allClusters) lets every
//     cluster, one added later too, promote it once every wave is done;
//   - a fleet abort (written by the hub): failures went past maxFailures; no
//     cluster starts, the clusters that promoted roll back;
//   - the prod record (written by each serving cluster, evidence/statement.h
//     prodRecordStatement), read back here by the hub.
// Builders give the same bytes for the same inputs (times are inputs, whole
// seconds, written as RFC 3339 UTC); parsers read a statement that
// evidence/verify.h has verified and name the field they refuse.
// Pure. Thread-safety: free functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/image_ref.h"
#include "common/status.h"

namespace lockstep::evidence {

inline constexpr char kWavePermitPredicate[] = "https://lockstep.dev/attestation/wave-permit/v1";
inline constexpr char kFleetAbortPredicate[] = "https://lockstep.dev/attestation/fleet-abort/v1";
// The stage a TrustPolicy names to trust a hub's permits and aborts (verify.h
// reports both statements as this stage, and as records: "passed" once signed).
inline constexpr char kFleetStage[] = "fleet";
// The wave name of the final open permit.
inline constexpr char kOpenPermitWave[] = "*";

struct WavePermit {
  api::ImageRef package;              // the subject; pinned by digest
  std::string rollout;                // "namespace/name" of the ModelRollout on the hub
  std::string rolloutUid;             // its uid
  std::string wave;                   // the wave's name; kOpenPermitWave for the open permit
  int64_t waveIndex = 0;              // 0-based; the number of waves for the open permit
  std::vector<std::string> clusters;  // empty when allClusters
  bool allClusters = false;           // the open permit
  int64_t issuedAt = 0;               // seconds since the epoch
  std::string model;                  // the model name the clusters serve it as

  bool operator==(const WavePermit& o) const;
};

// True when `permit` names `cluster`, or is the open permit.
bool permits(const WavePermit& permit, const std::string& cluster);

// A failed cluster in a fleet abort.
inline constexpr char kOutcomeRolledBack[] = "RolledBack";
inline constexpr char kOutcomeTimedOut[] = "TimedOut";
inline constexpr char kOutcomePromoted[] = "Promoted";

struct FleetFailure {
  std::string cluster;
  std::string outcome;  // kOutcomeRolledBack | kOutcomeTimedOut
  int64_t at = 0;       // the RolledBack record's since; the progress deadline
  std::string reason;

  bool operator==(const FleetFailure& o) const;
};

struct FleetAbort {
  api::ImageRef package;  // the subject; pinned by digest
  std::string rollout, rolloutUid;
  std::string wave;  // the wave the rollout was in
  std::vector<FleetFailure> failures;
  int64_t maxFailures = 0;  // as resolved for the rollout's clusters
  int64_t issuedAt = 0;
  std::string model;

  bool operator==(const FleetAbort& o) const;
};

// kInvalidArgument naming the field: a package not pinned by digest, a permit
// naming no cluster (or clusters beside allClusters), an unknown failure outcome.
StatusOr<nlohmann::ordered_json> wavePermitStatement(const WavePermit& permit);
StatusOr<nlohmann::ordered_json> fleetAbortStatement(const FleetAbort& abort);

// From a verified statement; kInvalidArgument naming the field
// ("predicate.clusters[1]: must be a non-empty string").
StatusOr<WavePermit> parseWavePermit(const nlohmann::json& statement);
StatusOr<FleetAbort> parseFleetAbort(const nlohmann::json& statement);

// A serving cluster's prod record (evidence/statement.h kProdRecordPredicate), as
// the hub reads it.
struct ProdRecord {
  api::ImageRef package;  // the subject
  std::string cluster;
  std::string outcome;  // kOutcomePromoted | kOutcomeRolledBack
  int64_t since = 0;    // the cluster's time: served from (Promoted) / until (RolledBack)
  std::string releaseUid;
  std::string closureHash;    // the runtime it served on …
  std::string runtimeImage;   // … REPOSITORY@sha256:…
  std::string reason;         // RolledBack: why
  nlohmann::json failedStep;  // RolledBack: {step, analysis}; null otherwise
};

StatusOr<ProdRecord> parseProdRecord(const nlohmann::json& statement);

// The statements' time format: RFC 3339 UTC in whole seconds ("2026-11-30T09:00:00Z").
std::string statementTime(int64_t unix);
// Seconds since the epoch of an RFC 3339 time (fractions dropped, offsets applied);
// nullopt when malformed.
std::optional<int64_t> parseStatementTime(const std::string& text);

}  // namespace lockstep::evidence
