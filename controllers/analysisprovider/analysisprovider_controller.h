// The AnalysisProvider controller's shell: for each provider it decodes the
// spec (api/v1alpha1/analysis_provider.h), reads the CA ConfigMap and the
// bearer-token Secret it names in the operator's namespace (one GET each, no
// list or watch: RBAC grants get only), configures the provider's query
// executor in AnalysisProviders (shared with the ModelRelease controller),
// asks the health check `vector(1)` once a minute on that executor, and
// writes status (provider_status.h: Ready, its reason, query counters).
// Every provider is reconciled again every kProviderResync, so a rotated
// token or CA is picked up within a minute. A deleted provider's executor is
// removed; releases naming it then measure errors.
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "controllers/modelrelease/prod/analysis_querier.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

inline constexpr std::chrono::seconds kProviderResync{60};

class AnalysisProviderReconciler final : public runtime::Reconciler {
 public:
  AnalysisProviderReconciler(std::shared_ptr<kube::Client> client, const kube::Indexer& providers,
                             kube::EventSink& events, kube::Clock& clock,
                             std::shared_ptr<AnalysisProviders> analysis,
                             std::string operatorNamespace);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  std::shared_ptr<kube::Client> client_;
  const kube::Indexer& providers_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  std::shared_ptr<AnalysisProviders> analysis_;
  std::string ns_;
};

// Registers the informer and the controller on `manager`; `analysis` is the
// ModelRelease controller's (ModelReleaseOptions::analysis).
void setupAnalysisProviderController(runtime::Manager& manager,
                                     const std::shared_ptr<AnalysisProviders>& analysis,
                                     const std::string& operatorNamespace, int workers = 1);

}  // namespace lockstep::controllers
