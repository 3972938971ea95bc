// The serving stage of a fleet rollout, its request and answer (pure;
// docs/fleet.md "The serving side"): a prod stage with `fleet: {trustPolicy}` starts its canary
// only on a wave permit naming this cluster, and a fleet abort for its wave rolls back what the
// package's canary put in prod. The registry is read by the evidence controller
// (controllers/evidence), off the release's worker, as for evidence stages
// (gates/evidence_stage.h): the planner records its request in status.stages[].fleetRequest, the
// evidence controller answers in status.evidenceChecks[] (the entry of the serving stage's name,
// with `fleet`) under its own field manager, and keeps answering while the canary runs and after it
// promoted until the answer is settled (the open permit or a later wave's permit). An answer for
// another request (another policy or package) is not used.
//   - before the canary: no answer yet, or no permit → the stage waits
//     (WaitingForPermit, EvidenceUntrusted, RegistryUnavailable: nothing
//     starts); an abort → the release fails (FleetAborted), no canary pod is
//     ever made; a permit → the canary starts, the permit recorded in
//     status.stages[].permit;
//   - a running canary: an abort that concerns this cluster rolls it back
//     (canary_observe.h CanaryObserved::fleetAbort); a registry that cannot be
//     read rolls back nothing;
//   - promoted: an abort that concerns this cluster takes prod back to the
//     release the canary replaced, as a manual rollback does, recorded as
//     requested by the fleet abort (rollback_plan.h).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/v1alpha1/model_release.h"
#include "evidence/fleet_permit.h"

namespace lockstep::controllers {

// What the shell must read from the registry for the serving stage of a fleet rollout.
struct FleetCheckRequest {
  std::string stage;    // the serving stage's name
  std::string package;  // repo@sha256:…
  std::string trustPolicy;
  // The request's identity ("sha256:…" of its fields): an answer is used only
  // for the request it answers.
  std::string key() const;
};

// The shell's answer (status.evidenceChecks[] entry of the stage, with `fleet`).
struct FleetCheckObserved {
  std::string key;
  std::string cluster;  // the cluster the answer is for (the operator's --cluster-name)
  evidence::FleetPermitResult result;
  std::string checkedAt;           // RFC 3339
  int64_t retryAfterSeconds = 30;  // when a waiting stage is read again
  // RegistryUnavailable: the shell could not read the registry (result is empty then).
  std::string unavailable;
};

nlohmann::json fleetAnswerJson(const std::string& stage, const FleetCheckObserved& answer);
// nullopt: none for the stage, or malformed, or not a fleet answer.
std::optional<FleetCheckObserved> fleetAnswerOf(const nlohmann::json& status,
                                                const std::string& stage);

// The request of the release's serving stage when it has `fleet`; nullopt otherwise.
std::optional<FleetCheckRequest> fleetCheckRequest(const api::v1alpha1::ModelRelease& release);

// The request recorded in status.stages[] (fleetRequest) of a release whose
// answer the evidence controller must (still) give: before the canary, during
// it, and after it promoted until the answer is settled. nullopt otherwise
// (no fleet stage, a finished release that did not promote, a settled answer,
// a deleted release).
std::optional<FleetCheckRequest> pendingFleetRequest(const nlohmann::json& release);

// The fleet abort that concerns this cluster, from the release's current answer
// (the message to roll back with); nullopt when there is none.
std::optional<std::string> concernedFleetAbort(const api::v1alpha1::ModelRelease& release);

// Who asks prod back to `candidate`: "fleet abort of rollout <ns/name>" when a
// fleet abort concerns `prod` (the release prod runs, promoted by its canary)
// and `candidate` is the release that canary replaced (its
// status.canary.knownGood); "" otherwise.
std::string fleetRollbackBy(const api::v1alpha1::ModelRelease& prod, const std::string& candidate);

}  // namespace lockstep::controllers
