#include "controllers/drift/drift_controller.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "controllers/common/cached_pods.h"
#include "drift/pod_drift.h"
#include "operator/runtime/builder.h"
#include "webhooks/informer_lookups.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using runtime::Request;
using runtime::Result;

namespace {

const kube::Resource kPolicyReports{"wgpolicyk8s.io", "v1alpha2", "policyreports", "PolicyReport",
                                    true};
constexpr const char* kFieldManager = "lockstep-drift";
constexpr kube::Clock::Duration kServedRecheckMax = std::chrono::seconds(60);

class PrometheusDriftMetrics final : public DriftMetrics {
 public:
  explicit PrometheusDriftMetrics(::prometheus::Registry& registry)
      : pods_(::prometheus::BuildGauge()
                  .Name("lockstep_runtime_drift_pods")
                  .Help("Pods under policy that run something their RuntimeEnv does not record "
                        "(docs/supply-chain.md), by namespace, at the last scan")
                  .Register(registry)),
        seconds_(::prometheus::BuildHistogram()
                     .Name("lockstep_drift_scan_seconds")
                     .Help("Time to scan one namespace's pods from the cache")
                     .Register(registry)
                     .Add({}, ::prometheus::Histogram::BucketBoundaries{0.0001, 0.001, 0.01, 0.05,
                                                                        0.1, 0.5, 1, 5})) {}
  void scanned(const std::string& ns, int64_t driftingPods, double seconds) override {
    pods_.Add({{"namespace", ns}}).Set(static_cast<double>(driftingPods));
    seconds_.Observe(seconds);
  }
  void forget(const std::string& ns) override {
    auto& g = pods_.Add({{"namespace", ns}});
    pods_.Remove(&g);
  }

 private:
  ::prometheus::Family<::prometheus::Gauge>& pods_;
  ::prometheus::Histogram& seconds_;
};

// A Pod for an Event's involvedObject, from the slim cached pod.
kube::Object podRef(const std::string& ns, const drift::DriftFinding& f) {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", f.pod}, {"namespace", ns}, {"uid", f.uid}}}};
}

int64_t driftingPods(const drift::NamespaceScan& scan) {
  std::set<std::string> pods;
  for (const auto& f : scan.findings) pods.insert(f.uid.empty() ? f.pod : f.uid);
  return static_cast<int64_t>(pods.size());
}

}  // namespace

std::shared_ptr<DriftMetrics> makePrometheusDriftMetrics(::prometheus::Registry& registry) {
  return std::make_shared<PrometheusDriftMetrics>(registry);
}

DriftReconciler::DriftReconciler(std::shared_ptr<kube::Client> client, Caches caches,
                                 kube::EventSink& events, kube::Clock& clock,
                                 std::shared_ptr<DriftMetrics> metrics, DriftOptions options)
    : client_(std::move(client)),
      caches_(caches),
      events_(events),
      clock_(clock),
      metrics_(std::move(metrics)),
      options_(std::move(options)) {}

bool DriftReconciler::reportsServed(const std::string& ns) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const kube::Clock::Duration recheck =
        std::min<kube::Clock::Duration>(kServedRecheckMax, options_.interval);
    if (servedChecked_ && clock_.now() - servedCheckedAt_ < recheck) return served_;
  }
  // A list of one item in the namespace: NotFound only when the kind is not served.
  kube::ListOptions one;
  one.limit = 1;
  std::string ignored;
  auto page = client_->listPage(kPolicyReports, ns, one, &ignored);
  bool served = page.isOk();
  if (!page.isOk() && page.status().code() != Code::kNotFound) {
    // Unknown (a timeout, a refusal): keep the last answer, ask again next time.
    spdlog::warn("drift: cannot tell whether PolicyReports are served: {}",
                 page.status().toString());
    std::lock_guard<std::mutex> lock(mu_);
    return served_;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!servedChecked_ || served != served_) {
    spdlog::info("drift: PolicyReports (wgpolicyk8s.io/v1alpha2) {}; findings go {}",
                 served ? "served" : "not served", served ? "into reports" : "into Events");
  }
  served_ = served;
  servedChecked_ = true;
  servedCheckedAt_ = clock_.now();
  return served_;
}

Result DriftReconciler::reconcile(const Request& request) {
  const std::string& ns = request.name;  // one request per Namespace (cluster-scoped)
  const auto again = [this] { return Result::after(options_.interval); };
  kube::ObjectPtr namespaceObject = caches_.namespaces.get("", ns);
  const bool watched = options_.namespaces.empty() ||
                       std::find(options_.namespaces.begin(), options_.namespaces.end(), ns) !=
                           options_.namespaces.end();
  if (!namespaceObject || !watched) {
    std::lock_guard<std::mutex> lock(mu_);
    states_.erase(ns);
    metrics_->forget(ns);
    return Result::done();
  }
  const auto modeLabel = kube::label(*namespaceObject, std::string(v1::kEnforceLabel));
  const webhooks::NamespaceMode mode = webhooks::parseNamespaceMode(
      modeLabel ? std::optional<std::string_view>(*modeLabel) : std::nullopt);

  const auto started = clock_.now();
  std::vector<kube::ObjectPtr> held = caches_.pods.byIndex(kube::kNamespaceIndex, ns);
  std::vector<const json*> pods;
  pods.reserve(held.size());
  for (const kube::ObjectPtr& p : held) pods.push_back(p.get());
  webhooks::InformerRuntimeEnvs envs(caches_.runtimeEnvs);
  drift::RuntimeEnvFinder find = [&](std::string_view name) { return envs.find(ns, name); };
  drift::NamespaceScan scan = drift::scanNamespace(ns, mode, pods, find, options_.trustedInitImage);
  metrics_->scanned(ns, driftingPods(scan),
                    std::chrono::duration<double>(clock_.now() - started).count());

  if (reportsServed(ns)) {
    NamespaceState state;
    {
      std::lock_guard<std::mutex> lock(mu_);
      state = states_[ns];
    }
    if (!state.seeded) {
      auto standing = client_->get(kPolicyReports, ns, drift::kReportName);
      if (standing.isOk()) {
        state.since = drift::sinceOf(*standing);
        state.reportExists = true;
      } else if (standing.status().code() != Code::kNotFound) {
        return Result::failed(standing.status());
      }
      state.seeded = true;
    }
    if (scan.checked == 0 && scan.findings.empty() && !state.reportExists) {
      std::lock_guard<std::mutex> lock(mu_);
      states_[ns] = std::move(state);
      return again();
    }
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch())
            .count();
    json report = drift::policyReport(scan, state.since, now, options_.maxResults);
    state.since = drift::sinceOf(report);
    std::string body = report.dump();
    if (body != state.written) {
      auto applied =
          client_->apply(kPolicyReports, report, kube::PatchParams::apply(kFieldManager));
      if (!applied.isOk()) {
        spdlog::warn("drift: writing PolicyReport {}/{}: {}", ns, drift::kReportName,
                     applied.status().toString());
        std::lock_guard<std::mutex> lock(mu_);
        states_[ns].seeded = state.seeded;
        states_[ns].since = state.since;
        return Result::failed(applied.status());
      }
      state.written = std::move(body);
      state.reportExists = true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    states_[ns] = std::move(state);
    return again();
  }

  // No PolicyReport kind: each finding once as a Warning Event on its pod.
  std::set<std::string> current;
  std::vector<const drift::DriftFinding*> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    NamespaceState& state = states_[ns];
    for (const drift::DriftFinding& f : scan.findings) {
      std::string key = drift::findingKey(f);
      if (state.announced.count(key) == 0) fresh.push_back(&f);
      current.insert(std::move(key));
    }
    state.announced = current;  // a finding that went away may be announced again
    state.written.clear();      // a report written later starts afresh
  }
  for (const drift::DriftFinding* f : fresh) {
    Status s = events_.warning(
        podRef(ns, *f), "RuntimeDrift",
        "lockstep: " + std::string(drift::driftKindName(f->kind)) + ": " + f->message);
    if (!s.isOk()) spdlog::warn("drift: Event for pod {}/{}: {}", ns, f->pod, s.toString());
  }
  return again();
}

void setupDriftController(runtime::Manager& manager, DriftOptions options) {
  if (options.namespaces.empty()) options.namespaces = manager.watchNamespaces();
  kube::Informer& pods = manager.informer(unfinishedPods());
  kube::Informer& namespaces = manager.informer(v1::kNamespaces);
  kube::Informer& envs = manager.informer(v1::kRuntimeEnvs);
  auto reconciler = std::make_shared<DriftReconciler>(
      manager.sharedClient(),
      DriftReconciler::Caches{pods.cache(), namespaces.cache(), envs.cache()}, manager.events(),
      manager.clock(), makePrometheusDriftMetrics(*manager.metrics().registry()),
      std::move(options));
  runtime::ControllerBuilder(manager, "drift")
      .workers(1)
      // Each namespace is a scan; a label change (the mode) scans it at once.
      .forKind(v1::kNamespaces, nullptr)
      // A RuntimeEnv's new revision, prune or deletion changes what its pods may run.
      .watches(
          v1::kRuntimeEnvs,
          [](const kube::Object& env) {
            return std::vector<Request>{{"", kube::namespaceOf(env)}};
          },
          nullptr)
      .complete(reconciler);
}

}  // namespace lockstep::controllers
