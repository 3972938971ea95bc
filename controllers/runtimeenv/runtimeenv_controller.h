// The RuntimeEnv controller's shell: observe (informer caches) -> plan
// (runtimeenv_plan.h, pure) -> execute (controllers/common/execute.h: Events,
// then the RuntimeEnv's status last, by server-side apply on /status). It
// writes only RuntimeEnvs — their status and their in-use finalizer
// (metadata.finalizers, by server-side apply): ModelReleases compute their own
// Stale condition from the cached RuntimeEnv (controllers/modelrelease).
//
// It watches RuntimeEnvs (spec changes, and status changes: admission trusts
// status.closureHash, so a status written by anyone else — `kubectl edit
// --subresource=status` by someone allowed to write runtimeenvs/status — is
// re-derived and restored at once), the ConfigMaps they read their lock from,
// ModelReleases (they pin revisions) and Nodes (driver labels decide
// compatibleNodes). Every RuntimeEnv is also reconciled again kRuntimeEnvResync after its last
// reconcile, so a missed event cannot leave a wrong status in place. Thread-safety: reconcile() may
// run on several workers for different keys.
#pragma once

#include <memory>
#include <optional>

#include "controllers/runtimeenv/advisory_source.h"
#include "controllers/runtimeenv/closure_memo.h"
#include "controllers/runtimeenv/derived_memo.h"
#include "controllers/runtimeenv/mirror_checker.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"
#include "controllers/runtimeenv/verification_metrics.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/builder.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

class RuntimeEnvReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& runtimeEnvs;
    const kube::Indexer& configMaps;
    const kube::Indexer& nodes;
    const kube::Indexer& releases;  // ModelReleases: who pins which revision
    // Verification Jobs and their pods (label lockstep.dev/verify-runtime-env).
    const kube::Indexer* verifyJobs = nullptr;
    const kube::Indexer* verifyPods = nullptr;
    // Models (their records of prod pin revisions); null: none read.
    const kube::Indexer* models = nullptr;
  };
  // One client for every write: the field manager is chosen per call.
  RuntimeEnvReconciler(std::shared_ptr<kube::Client> client, Caches caches, kube::EventSink& events,
                       kube::Clock& clock, std::shared_ptr<VerificationMetrics> metrics = nullptr,
                       std::string cliImage = "");

  runtime::Result reconcile(const runtime::Request& request) override;
  // The operator's --osv-export or --osv-url (null: none): status.advisories of each RuntimeEnv.
  void setAdvisorySource(std::shared_ptr<AdvisorySource> source) {
    advisories_ = std::move(source);
  }
  // spec.mirror's checks (null: none run; Mirrored stays MirrorCheckPending).
  const std::shared_ptr<VerificationMetrics>& metrics() const { return metrics_; }
  void setMirrorChecker(std::shared_ptr<MirrorChecker> checker) { mirror_ = std::move(checker); }
  // The observe step alone: nullopt when there is nothing to reconcile.
  // It resolves the lock too, through the memo: observed.lock.
  std::optional<RuntimeEnvObserved> observe(const runtime::Request& request) const;
  // Each RuntimeEnv's last lock resolution; a reconcile that finds one gone drops it.
  const ClosureMemo& closureMemo() const { return closures_; }
  // The namespace's pin facts (derived_memo.h).
  const PinFactsMemo& pinFactsMemo() const { return pinFacts_; }

 private:
  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  std::shared_ptr<VerificationMetrics> metrics_;
  std::string cliImage_;
  std::shared_ptr<AdvisorySource> advisories_;
  std::shared_ptr<MirrorChecker> mirror_;
  mutable ClosureMemo closures_;
  mutable PinFactsMemo pinFacts_;
};

// The longest a RuntimeEnv goes without being re-derived from its spec and lock.
inline constexpr kube::Clock::Duration kRuntimeEnvResync = std::chrono::minutes(10);

// The RuntimeEnv updates that enqueue it: a new generation (spec) or any status change
// (its own status writes then reconcile once more and write nothing).
runtime::UpdateFilter runtimeEnvChanged();

// The ModelRelease updates that can change a pin: phase, status.runtime, model,
// RuntimeEnv, closure hash, prod history, deletion.
runtime::UpdateFilter releasePinChanged();

// The Model updates that can change a pin: the pairs its record of prod holds
// (prod's, the canary's, the history's; modelPins). A canary's steps, its
// conditions and its other status fields do not.
runtime::UpdateFilter modelPinsChanged();

// The lockstep CLI image verification Jobs run verify-env and verify-host from
// (the operator's --cli-image).
struct RuntimeEnvOptions {
  std::string cliImage;
  // --osv-export (loaded) or --osv-url; null: none. Its wake is set to the controller's queue.
  std::shared_ptr<AdvisorySource> advisories;
  // The mirror check (spec.mirror): the registry CA (--registry-ca-file; "" = the system
  // roots) and how many HEAD requests one check runs at once.
  std::string registryCaPem;
  size_t mirrorConcurrency = 8;
};

// Registers the informers, indexes, watches and the controller on `manager`.
void setupRuntimeEnvController(runtime::Manager& manager, int workers = 2,
                               const RuntimeEnvOptions& options = {});

}  // namespace lockstep::controllers
