// The canary's analysis measurements, the one side effect of the analysis:
// an interface (a fake with knobs in tests) and the real one, AnalysisProviders.
//
// A measurement is asked, never awaited: measure() answers at once with a
// measurement that landed (or an error it can tell now: an unknown provider,
// a refused address, a full queue), or with nullopt — the query is queued on
// the provider's own threads (measurement_executor.h) and the release is
// reconciled again (`wakeRelease`) when its answer lands or its deadline
// passes. So a provider that never answers delays only the releases that
// query it, and every ask ends as a value or an error within the provider's
// timeout; a timeout is an error, never a pass.
// Answers are keyed by (release uid, canary step, measurement index): a
// deleted or moved-on release never takes an answer asked for another state.
// Thread-safety: every member is safe for concurrent use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "api/v1alpha1/analysis_provider.h"
#include "api/v1alpha1/model_release.h"
#include "common/status.h"
#include "controllers/modelrelease/prod/analysis.h"
#include "controllers/modelrelease/prod/analysis_metrics.h"
#include "controllers/modelrelease/prod/query_scheduler.h"

namespace lockstep::controllers {

class MeasurementExecutor;

struct MeasurementAsk {
  PrometheusAnalysis analysis;
  QueryKey key;
  int64_t atUnix = 0;
  std::string ns, name;  // the release, reconciled again when the answer lands
  std::string model;     // the release's model (a template's {{model}} and {{selector}})
};

// Takes canary analysis measurements. Never throws: failures are Measurement errors.
class AnalysisQuerier {
 public:
  virtual ~AnalysisQuerier() = default;
  // The measurement, or nullopt while it is being taken (the release is woken).
  virtual std::optional<Measurement> measure(const MeasurementAsk& ask) = 0;
  // The latest a pending ask is answered (a backstop requeue).
  virtual int64_t pendingRetrySeconds() const { return 15; }
};

// What an AnalysisProvider's controller resolved: the checked spec, the CA
// bundle (inline or from its ConfigMap) and the bearer token (from its Secret).
struct ProviderConfig {
  api::v1alpha1::AnalysisProviderSpec spec;
  std::string caPem;
  std::string token;  // secret: kept in memory only, sent in a header, never in a message
};

struct AnalysisProvidersOptions {
  // A release's own `prometheus.address` (not a provider): refused unless the
  // platform opts in (--allow-release-prometheus-address).
  bool allowReleaseAddresses = false;
  // A release address's queue (when allowed): timeout and concurrency.
  int64_t addressTimeoutSeconds = 10;
  int addressConcurrency = 2;
  // A release address's executor (threads and queue) is removed once it has
  // had nothing queued or in flight and no ask for this long.
  int64_t addressIdleSeconds = 600;
  int maxQueued = 256;  // per namespace, per provider
  // lockstep_analysis_* (analysis_metrics.h); null: none.
  std::shared_ptr<AnalysisMetrics> metrics;
};

// Every AnalysisProvider's executor, configured by the AnalysisProvider
// controller; the ModelRelease controller asks measurements of it.
class AnalysisProviders final : public AnalysisQuerier {
 public:
  explicit AnalysisProviders(AnalysisProvidersOptions options = {});
  ~AnalysisProviders() override;

  // Who to tell when an answer lands. Set before the controllers start.
  void setWakeRelease(std::function<void(const std::string& ns, const std::string& name)> wake);
  void setWakeProvider(std::function<void(const std::string& name)> wake);
  // Whether an AnalysisProvider of that name exists (the provider informer's
  // cache). One that exists but is not configured yet (the operator just
  // started; its controller has not reconciled it) makes an ask wait, not
  // fail: the release is woken when configure() sets it up.
  void setProviderExists(std::function<bool(const std::string& name)> exists);
  // A namespace's labels (the namespace informer's cache; nullopt: not known),
  // matched against a provider's spec.namespaceSelector at every ask.
  using NamespaceLabels =
      std::function<std::optional<std::map<std::string, std::string>>(const std::string& ns)>;
  void setNamespaceLabels(NamespaceLabels labels);
  // An AnalysisTemplate's spec (the template informer's cache; nullopt: none).
  void setTemplates(
      std::function<std::optional<nlohmann::json>(const std::string& name)> templates);

  // (Re)configures a provider: its executor is re-created when the address,
  // CA, timeout or concurrency changed; a new token is used from the next
  // query on. InvalidArgument (a bad CA bundle, ...) leaves it unusable.
  Status configure(const std::string& name, const ProviderConfig& config);
  // Unusable: asks get an error naming the provider and `why`.
  void disable(const std::string& name, const std::string& why);
  void remove(const std::string& name);

  // The provider's health check: `vector(1)` once per `round`.
  std::optional<QueryAnswer> probe(const std::string& name, int64_t round, int64_t atUnix);
  std::optional<QueryStats> stats(const std::string& name) const;
  // Executors of release addresses that exist now (idle ones are evicted).
  size_t addressExecutors() const;

  std::optional<Measurement> measure(const MeasurementAsk& ask) override;
  int64_t pendingRetrySeconds() const override;

 private:
  struct Provider;
  std::shared_ptr<Provider> find(const std::string& name) const;
  // `metricName`: the provider label of its metrics.
  std::unique_ptr<MeasurementExecutor> makeExecutor(const std::string& label,
                                                    const std::string& metricName,
                                                    const ProviderConfig& config,
                                                    const std::shared_ptr<Provider>& p,
                                                    std::string& error);
  void wake(const std::string& waker) const;
  void wakeWaitingFor(const std::string& name);
  // Removes release-address executors idle for addressIdleSeconds.
  void evictIdleAddresses();
  // The PromQL to send for `ask` on provider `p`, or the error (a refusal).
  StatusOr<std::string> queryFor(const MeasurementAsk& ask, Provider& p) const;

  AnalysisProvidersOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Provider>> providers_;  // name, or "address <url>"
  std::function<void(const std::string&, const std::string&)> wakeRelease_;
  std::function<void(const std::string&)> wakeProvider_;
  std::function<bool(const std::string&)> providerExists_;
  NamespaceLabels namespaceLabels_;
  std::function<std::optional<nlohmann::json>(const std::string&)> templates_;
  // Releases ("ns/name") whose ask met a provider that exists but is not
  // configured yet, by provider name; woken by configure().
  std::map<std::string, std::set<std::string>> waitingForConfig_;
};

}  // namespace lockstep::controllers
