// The Model controller's shell: for each Model it reads, from the caches it
// shares with the ModelRelease controller, the model's Service, its two
// Deployments, its serving pods and how many releases name it, plans the
// Model's conditions (prod/model_conditions.h: Ready, Progressing, Degraded)
// and writes them, with status.observedGeneration, by an update of /status
// guarded by the resourceVersion it planned from (the verb the ModelRelease
// controller's record write uses; it keeps the conditions as it read them).
// A write only when something changed; a Warning Event when prod becomes
// Degraded and a Normal one when it serves as recorded again; the gauges
// lockstep_model_ready and lockstep_model_degraded on every reconcile.
//
// It writes no serving object: the ModelRelease controller is the one writer
// of prod (its record first, then the Deployments and the Service, and prod's
// healing from the record once the release object is gone), so two
// controllers never race on a Deployment. A Model no release names is
// reconciled too: Ready=False, NoProd.
//
// Watches: Models (spec, deletion, and the record: status.prod and canary;
// not its own conditions), the Deployments and Services it owns (what the
// conditions read of them: not a Deployment's Ready counts, nor a Service's
// spec; watch_filters.h), and the serving pods of the model (Ready, deletion,
// labels and annotations).
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "controllers/modelrelease/release_metrics.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/kube/informer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

inline constexpr const char* kReasonModelDegraded = "ProdDegraded";
inline constexpr const char* kReasonModelServing = "ProdServing";

class ModelReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& models;
    const kube::Indexer& releases;     // indexed by kReleaseByModelIndex
    const kube::Indexer& deployments;  // label lockstep.dev/model
    const kube::Indexer& services;     // label lockstep.dev/model
    const kube::Indexer& pods;         // label lockstep.dev/release, indexed by model
    const kube::Indexer& replicaSets;  // label lockstep.dev/model, slimmed, indexed by model
  };
  // rollbackRequests: the operator acts on rollback requests written on Models
  // (--model-rollback-requests); then one whose target no release is gets a
  // RollbackRefused Warning on the Model (prod/model_conditions.h unresolvableRollback).
  ModelReconciler(std::shared_ptr<kube::Client> client, Caches caches, kube::EventSink& events,
                  kube::Clock& clock, std::shared_ptr<ReleaseMetrics> metrics = nullptr,
                  bool rollbackRequests = false);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  std::shared_ptr<ReleaseMetrics> metrics_;  // lockstep_model_ready, _degraded; may be null
  bool rollbackRequests_ = false;
  // The unresolvable rollback requests already warned about, per Model key (its
  // uid and the message): one Warning per request, not one per reconcile.
  std::mutex warnedMu_;
  std::map<std::string, std::string> warned_;
};

// The informers' options of the model's objects, as setupModelReleaseController
// registers them (one informer each, shared).
struct ModelInformers {
  kube::InformerOptions deployments, services, pods;
};

// Registers the Model controller on `manager` over the ModelRelease
// controller's caches (setupModelReleaseController calls it).
void setupModelController(runtime::Manager& manager, const ModelReconciler::Caches& caches,
                          const ModelInformers& informers, std::shared_ptr<ReleaseMetrics> metrics,
                          int workers = 1, bool rollbackRequests = false);

}  // namespace lockstep::controllers
