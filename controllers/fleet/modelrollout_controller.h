// The hub's ModelRollout controller (docs/fleet.md "Running the hub"): the
// shell around the wave planner (wave_plan.h). Each pass resolves the waves
// (the hub's ClusterProfiles when that API is served and has any, else
// spec.inventory), reads the package's bundle referrers from the registry
// (with the credentials of the SigningConfig that signs for the hub, else
// anonymously), keeps the prod records the rollout's TrustPolicy trusts for
// stage prod and the permits and aborts it trusts for stage fleet or that the
// hub's own key signed (fleet_referrers.h), plans, signs and pushes the
// planned permit or abort (RegistryPublisher), and writes status
// (rollout_status.h) through /status under kFleetFieldManager when it
// changed. A permit it pushed is fed to the next passes until the registry
// lists it. A registry it cannot read: WaitingForRegistry, nothing written
// to the registry, back-off. It looks again at the planner's next soak end
// or deadline, at most `pollSeconds` later (records arrive by polling). A
// deleted ModelRollout writes nothing: the statements are append-only.
// Thread-safety: reconcile() may run on several workers for different keys.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "api/v1alpha1/model_rollout.h"
#include "controllers/evidence/registry_publisher.h"
#include "evidence/fleet_statement.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/registry/bundle_referrers.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace lockstep::controllers {

inline constexpr const char* kFleetFieldManager = "lockstep-fleet";

struct ModelRolloutOptions {
  std::string operatorNamespace;  // where SigningConfigs' Secrets are read
  RegistryOpener opener;          // default: connectingOpener(registryCaPem)
  std::string registryCaPem;
  int64_t pollSeconds = 15;  // the registry is read again at least this often
};

class ModelRolloutReconciler final : public runtime::Reconciler {
 public:
  ModelRolloutReconciler(std::shared_ptr<kube::Client> client, const kube::Indexer& rollouts,
                         const kube::Indexer& signingConfigs, const kube::Indexer& trustPolicies,
                         kube::EventSink& events, kube::Clock& clock, ModelRolloutOptions options);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  // What this replica pushed for a rollout and the registry did not list yet.
  // What this hub pushed that the registry did not list yet, with the reads
  // since that did not list it: past kForgetAfterMisses the statement is
  // forgotten and planned (and pushed) again, so a write the registry lost is
  // never taken for done.
  struct Pushed {
    std::vector<std::pair<evidence::WavePermit, int>> permits;
    bool abort = false;
    int abortMisses = 0;
  };
  static constexpr int kForgetAfterMisses = 3;
  // The ClusterProfiles' inventory; none when the API is not served.
  StatusOr<std::vector<api::v1alpha1::InventoryCluster>> clusterProfiles();

  std::shared_ptr<kube::Client> client_;
  const kube::Indexer& rollouts_;
  const kube::Indexer& signingConfigs_;
  const kube::Indexer& trustPolicies_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  ModelRolloutOptions options_;
  RegistryPublisher publisher_;
  std::mutex mu_;
  std::map<std::string, Pushed> pushed_;  // by rollout uid
  // Bundles read before, by referrer digest: a poll reads only the referrers list again.
  registry::BundleCache bundles_;
  std::map<std::string, int> registryErrors_;  // failures in a row, by rollout uid
};

void setupModelRolloutController(runtime::Manager& manager, ModelRolloutOptions options,
                                 int workers = 1);

}  // namespace lockstep::controllers
