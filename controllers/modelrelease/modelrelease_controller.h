// The ModelRelease controller's shell: observe (informer caches only; and,
// once per release before its first stage, its package from the registry:
// package_reader.h) ->
// plan (modelrelease_plan.h, pure) -> execute (controllers/common/execute.h:
// the Model's record and the serving objects, gate Jobs, Events, then the release's
// status last, by server-side apply on /status guarded by the resourceVersion
// it was planned from). When the plan asks for a canary analysis measurement
// it asks its provider's queue (prod/analysis_querier.h) and plans once more
// with the answer when one landed; else it goes on without it, and the
// provider's executor enqueues the release when the answer lands (queries
// never run on the reconcile workers); when it plans the prod stage it first
// reads each of the model's three serving names its labelled caches miss (one
// GET each: an object without Lockstep's labels is in no cache;
// prod/ownership.h) and plans once more. After a status write it records metrics
// and runs the registry stage tags (tags/stage_tagger.h). Every error is
// mapped by resultFor (operator/runtime/reconciler.h). The contracts are
// docs/modelrelease.md and docs/rollouts.md.
//
// It watches ModelReleases (spec and annotation changes: approvals, abort,
// promote, rollback), the Jobs they own, pods labelled with a release (gate
// pods carry the gate's metrics in their termination message; serving pods
// their readiness), RuntimeEnvs (a moved closure hash makes releases stale),
// and the models' Models, Deployments, Services, ReplicaSets and anchors of
// an earlier version (the releases of the model that read them, on the fields
// they read: watch_filters.h). The
// GPU capacity comes from a cache of the pods that are not finished, indexed
// by node name.
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "controllers/common/execute.h"
#include "controllers/modelrelease/model_windows.h"
#include "controllers/modelrelease/modelrelease_plan.h"
#include "controllers/modelrelease/package_mount_probe.h"
#include "controllers/modelrelease/package_reader.h"
#include "controllers/modelrelease/prod/analysis_querier.h"
#include "controllers/modelrelease/prod/gpu_capacity.h"
#include "controllers/modelrelease/release_metrics.h"
#include "controllers/modelrelease/tags/stage_tagger.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

struct ModelReleaseOptions {
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
  // The lockstep CLI image (--cli-image): RuntimeEnv spec.verify.onStart's init containers.
  std::string cliImage;
  // The platform's approval rules (--allow-service-account-approvers).
  api::v1alpha1::ApprovalRules approvalRules;
  // Act on rollback requests written on Models (--model-rollback-requests): only
  // where the chart's model-rollback policy admits them (verb rollback, the
  // writer's own name, the current revision); off, a Model's request is ignored.
  bool modelRollbackRequests = false;
  // Registry stage tags (tags/stage_tagger.h): the CA bundle registries are
  // verified against (empty: the system roots), and the tagger;
  // setupModelReleaseController makes one when none is given.
  std::string registryCaPem;
  std::shared_ptr<StageTagger> stageTagger;
  // Reads each release's package before its first stage (package_reader.h);
  // setupModelReleaseController makes the registry one (registryCaPem) when none is given.
  std::shared_ptr<PackageReader> packageReader;
  // The analysis providers (shared with the AnalysisProvider controller);
  // setupModelReleaseController makes one refusing release addresses when none is given.
  std::shared_ptr<AnalysisProviders> analysis;
  // A release deleted mid-canary keeps its finalizer at most this long
  // (--release-deletion-deadline; modelrelease_plan.h).
  int64_t releaseDeletionDeadlineSeconds = kDefaultReleaseDeletionDeadlineSeconds;
};

// Index of the Model cache: "<namespace>/<status.prod.release>".
inline constexpr const char* kModelByProdReleaseIndex = "prod-release";

// Index of the GPU pod cache: spec.nodeName.
inline constexpr const char* kPodByNodeIndex = "node";

class ModelReleaseReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& releases;  // indexed by kReleaseByModelIndex
    const kube::Indexer& runtimeEnvs;
    const kube::Indexer& jobs;         // label lockstep.dev/release, indexed by owner uid
    const kube::Indexer& pods;         // label lockstep.dev/release, indexed by owner uid and model
    const kube::Indexer& deployments;  // label lockstep.dev/model
    // Models (the record of each model's prod), indexed by kModelByProdReleaseIndex.
    const kube::Indexer& models;
    const kube::Indexer& anchors;   // ConfigMaps labelled lockstep.dev/model (migration)
    const kube::Indexer& services;  // Services labelled lockstep.dev/model
    const kube::Indexer& nodes;     // Nodes (GPU capacity pre-check)
    const kube::Indexer& gpuPods;   // pods not Succeeded/Failed, indexed by kPodByNodeIndex
    // ReplicaSets labelled lockstep.dev/model, slimmed (api/v1alpha1/serving_pod.h),
    // indexed by model: the link between a serving pod and its Deployment.
    const kube::Indexer& replicaSets;
    // Deployments and Services WITHOUT the lockstep.dev/model label, metadata only
    // (cached_serving_objects.h unlabelledMetadata): with the labelled caches they
    // say what stands at a prod name, so a name neither holds is read with no GET.
    // Null: each name the labelled caches miss is read with a GET.
    const kube::Indexer* unlabelledDeployments = nullptr;
    const kube::Indexer* unlabelledServices = nullptr;
  };
  ModelReleaseReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                         kube::EventSink& events, kube::Clock& clock,
                         std::shared_ptr<ReleaseMetrics> metrics, ModelReleaseOptions options,
                         std::shared_ptr<AnalysisQuerier> querier = nullptr);

  runtime::Result reconcile(const runtime::Request& request) override;
  // The observe step alone: nullopt when there is nothing to reconcile.
  std::optional<ModelReleaseObserved> observe(const runtime::Request& request) const;

 private:
  // rollbackAskedOnModel: observe() found a rollback asked on the Model for this
  // release (modelRollbackRequestsFor), which counts GPUs for a finished one.
  ProdObserved observeProd(const api::v1alpha1::ModelRelease& release,
                           bool rollbackAskedOnModel = false) const;
  // o.modelRollbackBy and o.spentModelRollbackBy: the rollbacks asked on Model
  // `m` whose target is `release` (o.rollbackFrom set first).
  void modelRollbackRequestsFor(const api::v1alpha1::Model& m,
                                const api::v1alpha1::ModelRelease& release,
                                ReleaseObserved& o) const;
  // A release name with no object: when a Model records it as prod, prod heals
  // from that record (prod_plan.h planRecordedProdHealing; Events on the Model).
  runtime::Result healFromRecord(const runtime::Request& request);
  // Each of the model's three serving names the labelled caches miss: one GET (an
  // object without Lockstep's labels is in no cache). A failed read (not
  // NotFound) is p.lookupError: nothing in prod is written then.
  void readProdNames(const api::v1alpha1::ModelRelease& release, ProdObserved& prod) const;
  // A prod write the API server refused (not transiently): said in the
  // release's status (Stalled, ServingApplyFailed: the object and the server's
  // message), not only in the log; the Event is the write's failure Event.
  void reportServingWriteFailure(const ModelReleaseObserved& observed, const ModelReleasePlan& plan,
                                 const ExecutionOutcome& outcome);
  void recordMetrics(const runtime::Request& request, const ModelReleasePlan& plan,
                     const kube::Object& release, bool statusWritten);

  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  std::shared_ptr<ReleaseMetrics> metrics_;
  ModelReleaseOptions options_;
  std::shared_ptr<AnalysisQuerier> querier_;
  std::unique_ptr<PackageDescriber> packages_;  // null without options_.packageReader
  // The Models' change windows, compiled once per generation (observe is const).
  mutable ModelWindows windows_;
  // The canary's progress clock of each release in its canary, by namespace/name
  // (prod/canary_progress.h): the last plan's, kept here so that a pod turning
  // Ready is no status write. Gone with the process: a restarted operator or a
  // new leader resumes each clock from the written one (a deadline only later).
  struct ProgressRecord {
    std::string uid;  // the release object it was taken for
    CanaryProgress progress;
  };
  std::mutex progressMu_;
  std::unordered_map<std::string, ProgressRecord> progress_;
  std::optional<CanaryProgress> progressOf(const runtime::Request& request, const std::string& uid);
  void keepProgress(const runtime::Request& request, const std::string& uid,
                    const std::optional<CanaryProgress>& progress);
  // The last GPU count per minimum driver, taken again only when the node or
  // GPU pod cache moved (prod/gpu_capacity.h).
  mutable GpuCountMemo gpuCounts_;
  // What the count reads of each node and GPU pod, read again only for an object
  // that changed (prod/gpu_capacity.h GpuTally).
  mutable GpuTally gpuTally_;
};

// Registers informers, indexes, watches, metrics and the controller on `manager`.
void setupModelReleaseController(runtime::Manager& manager, ModelReleaseOptions options,
                                 int workers = 2);

}  // namespace lockstep::controllers
