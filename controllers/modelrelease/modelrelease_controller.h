// The ModelRelease controller's shell: observe (informer caches) -> plan
// (controllers/modelrelease/release_plan.h, pure) -> execute (delete Jobs,
// create Jobs, Events, then the release's status last, by server-side apply
// on /status). The contract is docs/modelrelease.md.
//
// At the prod stage it also observes the model's serving objects (the anchor
// ConfigMap `lockstep-model-<model>`, the Deployments `<model>-stable` and
// `<model>-canary`, their pods), takes a Prometheus measurement when the
// canary planner asks for one (canary_plan.h), applies the Service and both
// Deployments, records promotions and rollbacks on the anchor, and folds the
// canary's plan into the release's status (prod_plan.h). The contract is
// docs/rollouts.md.
//
// It watches ModelReleases (spec and annotation changes: approvals, abort,
// promote), the Jobs they own, pods labelled with a release (gate pods carry
// the gate's metrics in their termination message; serving pods their
// readiness), RuntimeEnvs (a moved closure hash makes releases stale), and
// the models' Deployments and anchors (every release of the model).
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "controllers/modelrelease/canary_plan.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/stage_tagger.h"
#include "operator/kube/client.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

// Counts stage results and their durations (Prometheus in production).
class ReleaseMetrics {
 public:
  virtual ~ReleaseMetrics() = default;
  virtual void stageResult(const std::string& stage, const std::string& result,
                           double durationSeconds) = 0;
  virtual void promotion(const std::string& model) = 0;
  virtual void rollback(const std::string& model, const std::string& reason) = 0;
  // A release in its prod stage is at canary step `step` (index) whose target
  // weight is `weight` percent; forgetRelease drops its series once it is
  // finished (Promoted, RolledBack, Superseded, Failed) or deleted.
  virtual void canaryStep(const std::string& ns, const std::string& release,
                          const std::string& model, int step, int weight) = 0;
  virtual void forgetRelease(const std::string& ns, const std::string& release) = 0;
};

// Takes one canary analysis measurement (Prometheus in production; a fake
// with knobs in tests). Never throws: failures are Measurement errors.
class AnalysisQuerier {
 public:
  virtual ~AnalysisQuerier() = default;
  virtual Measurement measure(const PrometheusAnalysis& analysis, int64_t nowUnix) = 0;
};

// Queries Prometheus (operator/prometheus/client.h), one client per address.
std::shared_ptr<AnalysisQuerier> makePrometheusQuerier();

struct ModelReleaseOptions {
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
  // Where the GPU pre-check sees pods: empty = every namespace (cluster
  // install), else the watched namespaces of a namespaced install.
  std::vector<std::string> podNamespaces;
  // Registry stage tags (stage_tagger.h): the CA bundle registries are verified
  // against (empty: the system roots), and the tagger; setupModelReleaseController
  // makes one when none is given.
  std::string registryCaPem;
  std::shared_ptr<StageTagger> stageTagger;
};

class ModelReleaseReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& releases;
    const kube::Indexer& runtimeEnvs;
    const kube::Indexer& jobs;         // label lockstep.dev/release, indexed by owner uid
    const kube::Indexer& pods;         // label lockstep.dev/release, indexed by owner uid and model
    const kube::Indexer& deployments;  // label lockstep.dev/model
    const kube::Indexer& anchors;      // ConfigMaps labelled lockstep.dev/model
    const kube::Indexer& nodes;        // Nodes (GPU capacity pre-check)
  };
  ModelReleaseReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                         kube::EventSink& events, kube::Clock& clock,
                         std::shared_ptr<ReleaseMetrics> metrics, ModelReleaseOptions options,
                         std::shared_ptr<AnalysisQuerier> querier = nullptr);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  std::shared_ptr<ReleaseMetrics> metrics_;
  ModelReleaseOptions options_;
  std::shared_ptr<AnalysisQuerier> querier_;

  // The prod stage: observes, plans the canary, applies the serving objects
  // and folds the result into `plan`. A non-empty result ends the reconcile.
  std::optional<runtime::Result> runProdStage(const runtime::Request& request,
                                              const kube::Object& release,
                                              const ReleaseObserved& observed, ReleasePlan& plan);
  // A manual rollback (plan.modelRollback): the stable track takes this
  // release's serving template, the canary goes to zero, the anchor records it.
  std::optional<runtime::Result> runModelRollback(const runtime::Request& request,
                                                  const kube::Object& release,
                                                  const ReleaseObserved& observed,
                                                  const ReleasePlan& plan);
  // Puts the model's `track` Deployment on release `who` (empty: scaled to
  // zero) with `replicas`: a scale when it already runs `who`, else a
  // server-side apply built from that release's serving template (`self` is
  // the release being reconciled). kInvalidArgument: the template cannot run.
  Status placeTrack(const ServingObjectsInput& in, const kube::Object& self,
                    const std::string& track, const std::string& who, int replicas,
                    const kube::Object* current);
};

// Asks the API server (server-side dry run of a Job in `ns`) whether it keeps
// image volumes: servers without the ImageVolume feature silently drop them.
StatusOr<PackageMount> probePackageMount(kube::Client& client, const std::string& ns);

// Registers informers, indexes, watches, metrics and the controller on `manager`.
void setupModelReleaseController(runtime::Manager& manager, ModelReleaseOptions options,
                                 int workers = 2);

}  // namespace lockstep::controllers
