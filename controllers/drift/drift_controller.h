// The drift scan's shell (docs/supply-chain.md "Drift of running pods"): every
// namespace is scanned from the shared pod cache (controllers/common/cached_pods.h),
// the namespace cache and the RuntimeEnv cache (drift/pod_drift.h), at each
// `interval` and whenever the namespace or one of its RuntimeEnvs changes.
//  - Where the PolicyReport kind (wgpolicyk8s.io/v1alpha2) is served, the
//    namespace's report `lockstep-runtime-drift` is applied (field manager
//    lockstep-drift) when its content changed, never on an unchanged scan. A
//    namespace with nothing under policy and no report gets none.
//  - Else each new finding is a Warning Event `RuntimeDrift` on its pod, once.
//  - Either way, the metric lockstep_runtime_drift_pods{namespace} counts the pods
//    with drift, and lockstep_drift_scan_seconds times each scan.
// API requests: none for a scan whose report is unchanged; one apply for a
// changed one; one GET of a namespace's report per operator start (first-seen
// times), and one probe of the kind per interval (at most a minute apart).
// Thread-safety: reconcile() may run on several workers for different namespaces.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/event_sink.h"
#include "operator/kube/indexer.h"
#include "operator/runtime/manager.h"
#include "operator/runtime/reconciler.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace lockstep::controllers {

struct DriftOptions {
  std::string trustedInitImage;  // the operator's --cli-image ("" = none)
  std::chrono::seconds interval{300};
  size_t maxResults = 1000;  // results per report; the summary counts every pod
  // A namespaced install scans only these (the manager's watchNamespaces); empty: every one.
  std::vector<std::string> namespaces;
};

class DriftMetrics {
 public:
  virtual ~DriftMetrics() = default;
  virtual void scanned(const std::string& ns, int64_t driftingPods, double seconds) = 0;
  virtual void forget(const std::string& ns) = 0;
};
std::shared_ptr<DriftMetrics> makePrometheusDriftMetrics(::prometheus::Registry& registry);

class DriftReconciler final : public runtime::Reconciler {
 public:
  struct Caches {
    const kube::Indexer& pods;  // controllers::unfinishedPods()
    const kube::Indexer& namespaces;
    const kube::Indexer& runtimeEnvs;
  };
  DriftReconciler(std::shared_ptr<kube::Client> client, Caches caches, kube::EventSink& events,
                  kube::Clock& clock, std::shared_ptr<DriftMetrics> metrics, DriftOptions options);
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  struct NamespaceState {
    bool seeded = false;        // the standing report's first-seen times were read
    bool reportExists = false;  // a report stands (read or written)
    std::string written;        // the last report applied, as JSON
    std::map<std::string, int64_t> since;
    std::set<std::string> announced;  // finding keys already sent as Events
  };
  // Whether the PolicyReport kind is served (asked at most once a minute).
  bool reportsServed(const std::string& ns);

  std::shared_ptr<kube::Client> client_;
  Caches caches_;
  kube::EventSink& events_;
  kube::Clock& clock_;
  std::shared_ptr<DriftMetrics> metrics_;
  DriftOptions options_;
  std::mutex mu_;
  std::map<std::string, NamespaceState> states_;
  bool served_ = false;
  kube::Clock::TimePoint servedCheckedAt_{};
  bool servedChecked_ = false;
};

// Registers the shared pod cache, the namespace and RuntimeEnv caches and the
// controller ("drift") on `manager`.
void setupDriftController(runtime::Manager& manager, DriftOptions options);

}  // namespace lockstep::controllers
