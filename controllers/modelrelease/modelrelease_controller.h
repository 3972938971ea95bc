// The ModelRelease controller's shell: observe (informer caches) -> plan
// (controllers/modelrelease/release_plan.h, pure) -> execute (delete Jobs,
// create Jobs, Events, then the release's status last, by server-side apply
// on /status). The contract is docs/modelrelease.md.
//
// It watches ModelReleases (spec and annotation changes: approvals, abort),
// the Jobs they own, those Jobs' pods (the termination message carries the
// gate's metrics) and RuntimeEnvs (a moved closure hash makes releases stale).
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "controllers/modelrelease/release_plan.h"
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
};

struct ModelReleaseOptions {
  PackageMount mount = PackageMount::kImageVolume;
  std::vector<std::string> fetchCommand;  // InitContainer mode
};

class ModelReleaseReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& releases;
    const kube::Indexer& runtimeEnvs;
    const kube::Indexer& jobs;  // label lockstep.dev/release, indexed by owner uid
    const kube::Indexer& pods;  // label lockstep.dev/release, indexed by owner uid
  };
  ModelReleaseReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                         kube::EventRecorder& events, kube::Clock& clock,
                         std::shared_ptr<ReleaseMetrics> metrics, ModelReleaseOptions options);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  kube::EventRecorder& events_;
  kube::Clock& clock_;
  std::shared_ptr<ReleaseMetrics> metrics_;
  ModelReleaseOptions options_;
};

// Asks the API server (server-side dry run of a Job in `ns`) whether it keeps
// image volumes: servers without the ImageVolume feature silently drop them.
StatusOr<PackageMount> probePackageMount(kube::Client& client, const std::string& ns);

// Registers informers, indexes, watches, metrics and the controller on `manager`.
void setupModelReleaseController(runtime::Manager& manager, ModelReleaseOptions options,
                                 int workers = 2);

}  // namespace lockstep::controllers
