// The evidence a release's status warrants, pure (docs/evidence.md): for each
// gate stage that Succeeded its test-result statement and its decision (a SLSA
// VSA citing it); for a stage that passed without a gate, its decision; once
// the canary ended, the prod record (Promoted or RolledBack). Every statement
// is built from what the status recorded (times included), never from the
// clock, so the same status gives the same bytes: a retry after a crash
// publishes the statement it meant to, and the registry's referrers show
// whether it already did. Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "closure/closure.h"
#include "common/status.h"
#include "controllers/modelrelease/gates/evidence_stage.h"
#include "evidence/statement.h"

namespace lockstep::controllers {

// One statement to sign and publish.
struct PlannedStatement {
  std::string name;           // "eval/test-result", "eval/decision", "prod/promoted", …
  std::string stage;          // the stage it is about
  std::string predicateType;  // the statement's
  std::string payload;        // the in-toto statement's bytes (the DSSE payload)
  std::string digest;         // "sha256:…" of payload
};

struct EvidenceContext {
  std::string clusterName;  // the operator's --cluster-name
  std::string version;      // the operator's version
};

// Every statement the release's status warrants, in dependency order (an eval
// statement before the decision that cites it, the decisions before the prod
// record). kInvalidArgument naming the stage and field for a status the
// statements cannot be made from (a package not pinned by digest, a
// status.canary the decoder refuses: "prod record: status.canary.step: must be
// an integer"). The prod record is made from status.canary as decoded
// (api/v1alpha1/canary_status.h), whose encoding keeps the bytes of the status
// as the API server gives it.
StatusOr<std::vector<PlannedStatement>> plannedStatements(const nlohmann::json& release,
                                                          const EvidenceContext& context);

inline constexpr const char* kConditionEvidencePublished = "EvidencePublished";

// The in-toto predicate of a CycloneDX BOM (in-toto attestation predicates: cyclonedx).
inline constexpr const char* kCycloneDxPredicate = evidence::kCycloneDxBomPredicate;
inline constexpr const char* kBomStatementName = "bom";

// True once every stage before prod Succeeded (and there is one): the gates the
// ML-BOM's model card and formulation describe are all in.
bool bomDue(const nlohmann::json& release);

// The ML-BOM of the release as a statement ("bom", predicate the CycloneDX 1.6
// document of evidence/ml_bom.h): the package, `closure` (the pinned runtime's, as
// its lock gives it), the runtime image, every passed gate. Its timestamp is the
// last gate's finishedAt: the same status gives the same bytes.
// `advisories`: the RuntimeEnv's status.advisories; its items become the BOM's
// vulnerabilities when it is for the revision the release pinned (else none are known).
StatusOr<PlannedStatement> bomStatement(const nlohmann::json& release,
                                        const closure::Closure& closure,
                                        const EvidenceContext& context,
                                        const nlohmann::json& advisories = nlohmann::json());

// status.evidence[] entries for publishing and their summary condition.
struct EvidenceOutcome {
  std::string name;
  std::string predicateType;
  std::string statementDigest;
  std::string referrer;  // the referrer manifest's digest; "" when not published
  std::string repository;
  bool alreadyThere = false;  // found among the referrers: not pushed again
  std::string error;          // "" published
};

struct EvidenceStatus {
  nlohmann::json entries;         // status.evidence, one per planned statement
  nlohmann::json condition;       // EvidencePublished
  int64_t retryAfterSeconds = 0;  // 0: nothing to retry
};

// Folds this pass's outcomes into the entries recorded before (`status`: the
// release's status, its evidence as last written and its conditions) for `planned`: a published
// entry keeps its first publishedAt; a failed one counts its attempts and is retried with back-off
// (evidenceBackoffSeconds). `setupError`, when not empty (no key, no credentials), fails every
// entry not yet published with that message.
EvidenceStatus foldEvidence(const nlohmann::json& status,
                            const std::vector<PlannedStatement>& planned,
                            const std::vector<EvidenceOutcome>& outcomes,
                            const std::string& setupError, int64_t generation,
                            const std::string& now);

// Back-off after `attempts` failures: 5 s doubling, at most 300 s.
int64_t evidenceBackoffSeconds(int attempts);

// The statements of `planned` to publish now: not recorded as published in
// `evidence` (status.evidence; under any digest: published evidence is
// append-only, a status that changed later publishes no second statement of
// the name), and not failed less than their back-off ago (unless the
// statement changed since). `retryAfterSeconds` gets the wait of the earliest held back.
std::vector<PlannedStatement> dueStatements(const nlohmann::json& evidence,
                                            const std::vector<PlannedStatement>& planned,
                                            int64_t nowUnix, int64_t* retryAfterSeconds);

// The evidence stage of `release` waiting for an answer: the first stage with
// `evidence` that is Running with a request the planner recorded
// (status.stages[].evidenceRequest), rebuilt from the spec and the recorded
// runtime pair; nullopt when there is none, or when the spec no longer gives
// the recorded key (the planner records the new request first).
std::optional<EvidenceCheckRequest> pendingEvidenceRequest(const nlohmann::json& release);

// Whether `answer` says something other than `previous` (another request, outcome,
// reason, message or statements): only then is it written.
bool evidenceAnswerChanged(const std::optional<EvidenceCheckObserved>& previous,
                           const EvidenceCheckObserved& answer);

}  // namespace lockstep::controllers
