// in-toto Statement v1 (https://github.com/in-toto/attestation, spec/v1) for a
// release's stages. The subject is the package digest. Predicates:
//   - an eval gate: test-result v0.1 (what the gate measured: metrics against
//     thresholds, the gate Job's image, command and uid);
//   - the decision of a stage: SLSA Verification Summary v1, whose policy is
//     the stage spec (its digest, committed before the Job ran) and whose
//     inputAttestations are the eval statements.
// Lockstep's own fields sit in a `lockstep` object inside each predicate (the
// in-toto parsing rules make consumers ignore fields they do not know);
// docs/evidence.md maps them to the proposed eval-result predicate.
// Pure: times are inputs. Thread-safety: free functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "api/image_ref.h"
#include "common/status.h"
#include "evidence/gate_result.h"

namespace lockstep::evidence {

inline constexpr char kStatementType[] = "https://in-toto.io/Statement/v1";
inline constexpr char kTestResultPredicate[] = "https://in-toto.io/attestation/test-result/v0.1";
inline constexpr char kVerificationSummaryPredicate[] = "https://slsa.dev/verification_summary/v1";
// The DSSE payload type of an in-toto statement.
inline constexpr char kInTotoPayloadType[] = "application/vnd.in-toto+json";
// The media type of a stage spec, named in the statements' descriptors.
inline constexpr char kStageSpecMediaType[] = "application/vnd.lockstep.stage-spec.v1+json";
// in-toto's predicate for a CycloneDX document (the ML-BOM as a statement).
inline constexpr char kCycloneDxBomPredicate[] = "https://cyclonedx.org/bom";
// Lockstep's own predicate: which content served in which cluster, from when.
inline constexpr char kProdRecordPredicate[] = "https://lockstep.dev/attestation/prod-record/v1";
inline constexpr char kVerifierId[] = "https://lockstep.dev/operator";

// "sha256:" + hex of the stage spec serialized as compact JSON with every object's
// keys sorted (nlohmann::json's order): the same spec always gives the same digest,
// whatever order its YAML or JSON had.
std::string stageSpecDigest(const nlohmann::json& stageSpec);

// What an eval statement says beyond the gate's result.
struct EvalStatementInput {
  api::ImageRef package;     // the subject; pinned by digest
  GateResult gate;           // stage, stage spec digest, metrics, Job
  std::string closureHash;   // the runtime the gate ran on
  std::string runtimeImage;  // REPOSITORY@sha256:…
};

struct Approver {
  std::string user;
  std::vector<std::string> groups;  // as the API server authenticated the approver
  std::string approvedAt;           // RFC 3339
  bool groupsRecorded = true;       // false: unknown (the approval recorded none): omitted
};

// A statement this decision rests on (an eval statement): its payload's digest.
struct InputAttestation {
  std::string name;           // "eval"
  std::string payloadDigest;  // "sha256:…" of the statement's bytes (the DSSE payload)
};

struct DecisionInput {
  api::ImageRef package;        // the subject; pinned by digest
  std::string stage;            // "eval"
  std::string stageSpecDigest;  // the policy: "sha256:…"
  bool passed = false;
  std::vector<InputAttestation> inputs;
  std::vector<Approver> approvers;
  std::string closureHash;      // the pinned runtime: closure hash …
  std::string runtimeImage;     // … and image, REPOSITORY@sha256:…
  std::string revision;         // the RuntimeEnv revision the release pins
  std::string timeVerified;     // RFC 3339
  std::string verifierVersion;  // the lockstep version
};

// A prod record: the release's canary ended (Promoted: it serves from `since`;
// RolledBack: it served as a canary until `since` and the prior release serves).
struct ProdRecordInput {
  api::ImageRef package;  // the subject; pinned by digest
  std::string outcome;    // "Promoted" | "RolledBack"
  std::string cluster;    // the serving cluster's name (the operator's --cluster-name)
  std::string ns, model, release, releaseUid;
  std::string since;         // RFC 3339
  std::string closureHash;   // the runtime it served on …
  std::string runtimeImage;  // … REPOSITORY@sha256:…
  std::string revision;
  std::string reason, message;  // why it was rolled back
  nlohmann::json canarySteps;   // status.canary.passedSteps as recorded
  // RolledBack: the step that failed ({step, analysis} as status.canary records
  // them: counts and the last measurements) and what prod went back to.
  nlohmann::json failedStep;
  std::string restoredPackage;
  std::vector<InputAttestation> inputs;  // the decisions of the stages before prod
};

// kInvalidArgument naming the field when the package is not pinned by digest or a
// digest is not sha256:<64 hex>.
StatusOr<nlohmann::ordered_json> evalStatement(const EvalStatementInput& in);
StatusOr<nlohmann::ordered_json> decisionStatement(const DecisionInput& in);
StatusOr<nlohmann::ordered_json> prodRecordStatement(const ProdRecordInput& in);

// "sha256:…" of bytes (a statement's payload, a spec).
std::string sha256Digest(std::string_view bytes);

}  // namespace lockstep::evidence
