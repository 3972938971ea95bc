// The RuntimeEnv controller's shell: observe (informer caches) -> plan
// (controllers/runtimeenv/runtimeenv_plan.h, pure) -> execute (writes; the
// RuntimeEnv's status last, by server-side apply on /status).
//
// It watches RuntimeEnvs (spec changes), the ConfigMaps they read their lock
// from, Nodes (driver labels decide compatibleNodes) and ModelReleases (a new
// release referencing a RuntimeEnv gets its Stale condition computed).
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <memory>

#include "operator/kube/client.h"
#include "operator/kube/event_recorder.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

// Index names this controller adds to the shared caches.
inline constexpr const char* kRuntimeEnvByConfigMapIndex = "runtimeenv-configmap";  // "ns/cm"
inline constexpr const char* kReleaseByRuntimeEnvIndex = "release-runtimeenv";      // "ns/rte"

class RuntimeEnvReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& runtimeEnvs;
    const kube::Indexer& configMaps;
    const kube::Indexer& nodes;
    const kube::Indexer& releases;
  };
  // `client` writes RuntimeEnv status; `releaseClient` (its own field manager)
  // applies only the Stale condition to ModelRelease status.
  RuntimeEnvReconciler(std::shared_ptr<kube::Client> client,
                       std::shared_ptr<kube::Client> releaseClient, Caches caches,
                       kube::EventRecorder& events, kube::Clock& clock);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  std::shared_ptr<kube::Client> client_;
  std::shared_ptr<kube::Client> releaseClient_;
  Caches caches_;
  kube::EventRecorder& events_;
  kube::Clock& clock_;
};

// Registers the informers, indexes, watches and the controller on `manager`.
void setupRuntimeEnvController(runtime::Manager& manager, int workers = 2);

}  // namespace lockstep::controllers
