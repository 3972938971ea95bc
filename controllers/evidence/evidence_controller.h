// The evidence publisher (docs/evidence.md): a controller of its own over
// ModelReleases, so a slow or absent registry never holds a release's
// worker. For each release it plans the statements its status warrants
// (evidence_plan.h), finds the SigningConfig for the package, reads the key
// and the registry credentials from the operator's namespace, signs each due
// statement into a Sigstore bundle, and pushes it as an OCI 1.1 referrer of
// the package (the tag schema where the registry lacks the referrers API).
// A statement found among the referrers (annotation dev.lockstep.statement-
// digest) is not pushed again: a crash between push and status write
// publishes once. The outcome goes to status.evidence and the
// EvidencePublished condition under the field manager
// kEvidenceFieldManager; failures are retried with back-off and never touch
// the release's phase. A package no SigningConfig matches gets nothing. Once the gates passed, the
// release's ML-BOM (statement "bom") is published the same way, made from the
// pinned runtime's lock (the RuntimeEnv and its lock's ConfigMap, from the caches
// the RuntimeEnv controller shares).
// It also answers evidence stages (docs/fleet.md "Evidence stages"): for a stage
// whose request the release planner recorded (status.stages[].evidenceRequest),
// it reads the package's bundle referrers (anonymously, or with the credentials
// of the SigningConfig that matches the package), checks them against the
// stage's TrustPolicy (evidence/stage_evidence.h) and writes the answer to
// status.evidenceChecks[] under kEvidenceCheckFieldManager when it changed. A
// held stage is read again every recheck interval; an unreadable registry
// answers RegistryUnavailable and is retried with back-off.
// It answers the serving stage of a fleet rollout too (gates/fleet_check.h):
// the wave permit naming this cluster (EvidenceOptions::context.clusterName)
// and any fleet abort, verified under the stage's TrustPolicy for stage
// "fleet", written to the stage's status.evidenceChecks[] entry under
// kFleetCheckFieldManager, and read again every recheck interval while the
// canary waits, runs or has promoted, until the answer is aborted or settled.
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/signing_config.h"
#include "api/v1alpha1/trust_policy.h"
#include "closure/closure.h"
#include "controllers/evidence/evidence_plan.h"
#include "controllers/evidence/registry_publisher.h"
#include "controllers/modelrelease/gates/evidence_stage.h"
#include "controllers/modelrelease/gates/fleet_check.h"
#include "evidence/signer.h"
#include "evidence/stage_evidence.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/registry/bundle_referrers.h"
#include "operator/registry/credentials.h"
#include "operator/registry/distribution.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

inline constexpr const char* kEvidenceFieldManager = "lockstep-evidence";
// The evidence stages' answers (status.evidenceChecks) are applied under their own
// manager: an apply that omits a field it owned removes it.
inline constexpr const char* kEvidenceCheckFieldManager = "lockstep-evidence-check";
// A fleet rollout's wave-permit answers (status.evidenceChecks[] of the serving stage):
// their own manager, so an apply of one kind of answer never removes the other.
inline constexpr const char* kFleetCheckFieldManager = "lockstep-fleet-check";
struct EvidenceOptions {
  std::string operatorNamespace;  // where SigningConfigs' Secrets are read
  EvidenceContext context;        // cluster name, version
  RegistryOpener opener;          // default: connectingOpener(registryCaPem)
  std::string registryCaPem;
  // A held evidence stage is read from the registry again after this long.
  int64_t evidenceRecheckSeconds = 15;
};

class EvidenceReconciler final : public runtime::Reconciler {
 public:
  EvidenceReconciler(std::shared_ptr<kube::Client> client, const kube::Indexer& releases,
                     const kube::Indexer& signingConfigs, const kube::Indexer& trustPolicies,
                     const kube::Indexer& runtimeEnvs, const kube::Indexer& configMaps,
                     kube::EventSink& events, kube::Clock& clock, EvidenceOptions options);
  runtime::Result reconcile(const runtime::Request& request) override;
  // A TrustPolicy changed: every held evidence stage is read again at once.
  void recheckNow();

 private:
  // The publishing half of reconcile().
  runtime::Result publishEvidence(const nlohmann::json& release);
  // The evidence stage half: answers a recorded request (status.evidenceChecks).
  runtime::Result answerEvidenceStage(const nlohmann::json& release);
  // Reads the registry for `request`: the check's result, or RegistryUnavailable.
  evidence::StageEvidenceResult readStageEvidence(const EvidenceCheckRequest& request);
  // The fleet half: answers a serving stage's wave-permit request (gates/fleet_check.h)
  // under kFleetCheckFieldManager, until the answer is aborted or settled.
  runtime::Result answerFleetPermit(const nlohmann::json& release);
  FleetCheckObserved readFleetPermit(const FleetCheckRequest& request);
  // The TrustPolicy `name` (reason: EvidenceUntrusted when missing, EvidenceInvalid when broken).
  StatusOr<api::v1alpha1::TrustPolicySpec> trustPolicy(const std::string& name,
                                                       std::string* reason) const;
  // The package's Sigstore bundle referrers, read with the matching SigningConfig's
  // credentials (else anonymously); an error says why the registry could not be read.
  StatusOr<std::vector<evidence::ReferrerBundle>> readReferrers(const std::string& package);
  // The closure of the runtime the release pinned: from its RuntimeEnv's closure
  // ConfigMap of that revision (kept when spec.verify is set), else its lock as it
  // is now, which must still give the pinned closure hash.
  // The RuntimeEnv's status.advisories (null when none), for the BOM's vulnerabilities.
  nlohmann::json runtimeEnvAdvisories(const nlohmann::json& release) const;
  StatusOr<closure::Closure> pinnedClosure(const nlohmann::json& release);

  std::shared_ptr<kube::Client> client_;
  const kube::Indexer& releases_;
  const kube::Indexer& trustPolicies_;
  const kube::Indexer& runtimeEnvs_;  // the RuntimeEnv controller's caches: no extra RBAC
  const kube::Indexer& configMaps_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  EvidenceOptions options_;
  RegistryPublisher publisher_;  // signs and pushes; finds the SigningConfig for a package
  std::mutex mu_;
  // status.evidence as last written, by release UID (only this controller writes it).
  // status.evidence this controller wrote, by release uid, until the cache delivers it.
  std::map<std::string, nlohmann::json> written_;
  // Why a pinned release's statements cannot be planned (a status the operator cannot
  // read), by release uid: the Warning is raised once per reason, not per reconcile.
  std::map<std::string, std::string> unplanned_;
  // Evidence stages read: by "uid/stage", the request key, when to read again and
  // the registry failures in a row.
  struct Recheck {
    std::string key;
    int64_t nextUnix = 0;
    int failures = 0;
  };
  std::map<std::string, Recheck> rechecks_;
  // Bundles read before, by referrer digest: a poll reads only the referrers list again.
  registry::BundleCache bundles_;
};

void setupEvidenceController(runtime::Manager& manager, EvidenceOptions options, int workers = 1);

}  // namespace lockstep::controllers
