// One evidence stage (pure; docs/fleet.md "Evidence stages"): the stage passes
// when the package's registry holds trusted decisions for the stages it names,
// made on the pinned runtime pair, and it never creates a Job. The registry is
// read by the evidence controller (controllers/evidence), off the release's
// worker, and the two talk through the release's status: the planner records
// its request in status.stages[].evidenceRequest (and ReleasePlan::evidenceCheck),
// the evidence controller answers in status.evidenceChecks[] under its own
// field manager, and the next pass reads the answer (ReleaseObserved::evidence
// overrides it in tests). An answer for another request (the pin, the policy,
// the stages changed: another key) is not used.
// Passed: the stage Succeeded with the statements it rests on in
// status.stages[].evidence. Held: the stage stays Running with the reason
// (EvidenceMissing, EvidenceUntrusted, EvidenceMismatch, EvidenceInvalid,
// RegistryUnavailable) and the message naming what is missing.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "evidence/stage_evidence.h"

namespace lockstep::controllers {

// What the shell must read from the registry for one evidence stage.
struct EvidenceCheckRequest {
  std::string stage;    // the release's stage
  std::string package;  // repo@sha256:…
  evidence::EvidenceRequirement requirement;
  // The request's identity ("sha256:…" of its fields): an answer is used only
  // for the request it answers.
  std::string key() const;
};

// The shell's answer (status.evidenceChecks[]).
struct EvidenceCheckObserved {
  std::string key;  // EvidenceCheckRequest::key() it answers
  evidence::StageEvidenceResult result;
  std::string checkedAt;           // RFC 3339
  int64_t retryAfterSeconds = 30;  // when a held stage is read again
};

// status.evidenceChecks[] (a list keyed by stage, written by the evidence
// controller under its own field manager): the answer for one stage, or
// nullopt when there is none (or it is malformed).
nlohmann::json evidenceAnswerJson(const std::string& stage, const EvidenceCheckObserved& answer);
std::optional<EvidenceCheckObserved> evidenceAnswerOf(const nlohmann::json& status,
                                                      const std::string& stage);

// status.stages[].evidenceRequest: what the planner asked, for the evidence
// controller to read the registry for ({key, closureHash, image}).
nlohmann::json evidenceRequestJson(const EvidenceCheckRequest& request,
                                   const std::string& runtimeImage);

// The request of `stage` (an evidence stage) of `release`, on the pinned pair.
// kInvalidArgument for a package not pinned by digest.
StatusOr<EvidenceCheckRequest> evidenceCheckRequest(const api::v1alpha1::ModelRelease& release,
                                                    const api::v1alpha1::Stage& stage,
                                                    const std::string& closureHash,
                                                    const std::string& runtimeImage);

// Reason when the registry could not be read (the shell's, not the check's).
inline constexpr const char* kReasonRegistryUnavailable = "RegistryUnavailable";

}  // namespace lockstep::controllers
