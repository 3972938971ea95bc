#include "controllers/modelrelease/prod/analysis_querier.h"

#include <atomic>
#include <chrono>
#include <utility>

#include "api/v1alpha1/analysis_template.h"
#include "controllers/modelrelease/prod/measurement_executor.h"
#include "controllers/modelrelease/release_status.h"
#include "operator/prometheus/client.h"

namespace lockstep::controllers {
namespace {

constexpr const char* kReleaseWaker = "mr:";
constexpr const char* kProviderWaker = "ap:";
constexpr const char* kProbeQuery = "vector(1)";

int64_t steadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What a release's own address answered that says where it led, not what a
// Prometheus computed: one kind for all (no port-scan oracle).
bool revealsTheAddress(prometheus::ErrorKind k) {
  return k == prometheus::ErrorKind::kUnreachable || k == prometheus::ErrorKind::kTimeout ||
         k == prometheus::ErrorKind::kHttp || k == prometheus::ErrorKind::kBadResponse;
}

bool sameConnection(const ProviderConfig& a, const ProviderConfig& b) {
  return a.spec.address == b.spec.address && a.caPem == b.caPem &&
         a.spec.timeoutSeconds == b.spec.timeoutSeconds &&
         a.spec.maxConcurrentQueries == b.spec.maxConcurrentQueries;
}

}  // namespace

struct AnalysisProviders::Provider {
  std::string label;  // "AnalysisProvider \"x\"" for messages
  std::mutex mu;      // guards token and disabled
  std::string token;
  std::string disabled;  // why it is unusable; "" when usable
  ProviderConfig config;
  std::unique_ptr<MeasurementExecutor> executor;
  int64_t probeRound = -1;  // guarded by mu: the last probe answer and its round
  QueryAnswer probeAnswer;
  bool address = false;  // a release's own address (not an AnalysisProvider)
  std::atomic<int64_t> lastAskMs{0};
};

AnalysisProviders::AnalysisProviders(AnalysisProvidersOptions options)
    : options_(std::move(options)) {}

AnalysisProviders::~AnalysisProviders() {
  std::map<std::string, std::shared_ptr<Provider>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone.swap(providers_);
  }
  gone.clear();  // joins the executors' threads
}

void AnalysisProviders::setWakeRelease(
    std::function<void(const std::string&, const std::string&)> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  wakeRelease_ = std::move(wake);
}

void AnalysisProviders::setWakeProvider(std::function<void(const std::string&)> wake) {
  std::lock_guard<std::mutex> lock(mu_);
  wakeProvider_ = std::move(wake);
}

void AnalysisProviders::setProviderExists(std::function<bool(const std::string&)> exists) {
  std::lock_guard<std::mutex> lock(mu_);
  providerExists_ = std::move(exists);
}

void AnalysisProviders::setNamespaceLabels(NamespaceLabels labels) {
  std::lock_guard<std::mutex> lock(mu_);
  namespaceLabels_ = std::move(labels);
}

void AnalysisProviders::setTemplates(
    std::function<std::optional<nlohmann::json>(const std::string&)> templates) {
  std::lock_guard<std::mutex> lock(mu_);
  templates_ = std::move(templates);
}

void AnalysisProviders::wakeWaitingFor(const std::string& name) {
  std::set<std::string> waiting;
  std::function<void(const std::string&, const std::string&)> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waitingForConfig_.find(name);
    if (it == waitingForConfig_.end()) return;
    waiting = std::move(it->second);
    waitingForConfig_.erase(it);
    release = wakeRelease_;
  }
  if (!release) return;
  for (const std::string& key : waiting) {
    size_t slash = key.find('/');
    release(key.substr(0, slash), key.substr(slash + 1));
  }
}

void AnalysisProviders::wake(const std::string& waker) const {
  std::function<void(const std::string&, const std::string&)> release;
  std::function<void(const std::string&)> provider;
  {
    std::lock_guard<std::mutex> lock(mu_);
    release = wakeRelease_;
    provider = wakeProvider_;
  }
  if (waker.rfind(kReleaseWaker, 0) == 0) {
    std::string key = waker.substr(3);
    size_t slash = key.find('/');
    if (release && slash != std::string::npos) release(key.substr(0, slash), key.substr(slash + 1));
  } else if (waker.rfind(kProviderWaker, 0) == 0 && provider) {
    provider(waker.substr(3));
  }
}

std::shared_ptr<AnalysisProviders::Provider> AnalysisProviders::find(
    const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = providers_.find(name);
  return it == providers_.end() ? nullptr : it->second;
}

std::unique_ptr<MeasurementExecutor> AnalysisProviders::makeExecutor(
    const std::string& label, const std::string& metricName, const ProviderConfig& config,
    const std::shared_ptr<Provider>& p, std::string& error) {
  prometheus::ClientConfig cc;
  cc.address = config.spec.address;
  cc.caPem = config.caPem;
  cc.timeout = std::chrono::seconds(config.spec.timeoutSeconds);
  if (config.spec.address.rfind("https://", 0) == 0) {
    std::weak_ptr<Provider> weak = p;
    cc.bearerToken = [weak]() -> std::string {
      auto provider = weak.lock();
      if (!provider) return "";
      std::lock_guard<std::mutex> lock(provider->mu);
      return provider->token;
    };
  }
  auto client = prometheus::Client::connect(cc);
  if (!client.isOk()) {
    error = client.status().message();
    return nullptr;
  }
  std::shared_ptr<const prometheus::Client> shared(std::move(*client));
  QuerySchedulerOptions so;
  so.provider = label;
  so.maxInFlight = static_cast<int>(config.spec.maxConcurrentQueries);
  so.maxQueued = options_.maxQueued;
  // The client gives up kTransportGrace after the timeout it sends Prometheus.
  so.timeoutMs = (config.spec.timeoutSeconds + prometheus::kTransportGrace.count()) * 1000;
  const bool opaque = p->address;
  so.opaqueTimeouts = opaque;
  auto runner = [shared, opaque, label](const std::string& promql, int64_t atUnix) {
    QueryAnswer a;
    prometheus::QueryResult r = shared->query(promql, atUnix);
    if (r.value) {
      a.value = *r.value;
    } else if (opaque && revealsTheAddress(r.kind)) {
      a.error = label + ": analysis provider unreachable";
      a.timedOut = r.kind == prometheus::ErrorKind::kTimeout;
    } else {
      a.error = r.error.empty() ? std::string("no value") : r.error;
      a.timedOut = r.kind == prometheus::ErrorKind::kTimeout;
    }
    return a;
  };
  MeasurementExecutor::Report report;
  if (options_.metrics) {
    auto reporter = std::make_shared<QueryStatsReporter>(options_.metrics, metricName);
    report = [reporter](const QueryStats& s) { reporter->report(s); };
  }
  return std::make_unique<MeasurementExecutor>(
      so, runner, [this](const std::string& w) { wake(w); }, std::move(report));
}

Status AnalysisProviders::configure(const std::string& name, const ProviderConfig& config) {
  std::shared_ptr<Provider> p = find(name);
  if (p && p->executor && sameConnection(p->config, config)) {
    std::lock_guard<std::mutex> lock(p->mu);
    p->token = config.token;
    p->disabled.clear();
    p->config = config;
    return Status::ok();
  }
  auto fresh = std::make_shared<Provider>();
  fresh->label = "AnalysisProvider " + quote(name);
  fresh->token = config.token;
  fresh->config = config;
  std::string error;
  fresh->executor = makeExecutor(fresh->label, name, config, fresh, error);
  if (!fresh->executor) fresh->disabled = error;
  std::shared_ptr<Provider> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::exchange(providers_[name], fresh);
  }
  wakeWaitingFor(name);
  if (!error.empty()) return Status(Code::kInvalidArgument, error);
  return Status::ok();  // `old` goes here: its threads finish their queries and join
}

void AnalysisProviders::disable(const std::string& name, const std::string& why) {
  std::shared_ptr<Provider> p = find(name);
  if (!p) {
    p = std::make_shared<Provider>();
    p->label = "AnalysisProvider " + quote(name);
    std::lock_guard<std::mutex> lock(mu_);
    providers_.emplace(name, p);
  }
  {
    std::lock_guard<std::mutex> lock(p->mu);
    p->disabled = why;
  }
  wakeWaitingFor(name);
}

void AnalysisProviders::remove(const std::string& name) {
  std::shared_ptr<Provider> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = providers_.find(name);
    if (it == providers_.end()) return;
    old = std::move(it->second);
    providers_.erase(it);
  }
  old.reset();  // its threads are joined: nothing reports after this
  if (options_.metrics) options_.metrics->queueDepth(name, 0);
}

std::optional<QueryAnswer> AnalysisProviders::probe(const std::string& name, int64_t round,
                                                    int64_t atUnix) {
  std::shared_ptr<Provider> p = find(name);
  if (!p || !p->executor) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(p->mu);
    if (p->probeRound == round) return p->probeAnswer;  // one probe per round
  }
  QueryKey key{"probe", 0, static_cast<int>(round % 1000000)};
  QueryScheduler::Ask a = p->executor->ask(key, kProbeQuery, atUnix, kProviderWaker + name);
  if (a.answer) {
    std::lock_guard<std::mutex> lock(p->mu);
    p->probeRound = round;
    p->probeAnswer = *a.answer;
  }
  return a.answer;
}

size_t AnalysisProviders::addressExecutors() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [name, p] : providers_) n += p->address ? 1 : 0;
  return n;
}

void AnalysisProviders::evictIdleAddresses() {
  const int64_t now = steadyMs();
  std::vector<std::shared_ptr<Provider>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = providers_.begin(); it != providers_.end();) {
      const Provider& p = *it->second;
      const int64_t idleMs = now - p.lastAskMs.load();
      if (p.address && p.executor && idleMs >= options_.addressIdleSeconds * 1000) {
        // Idle: nothing queued or in flight, and no answer waiting to be
        // taken (unless nobody asked for longer than an answer is kept).
        QueryStats s = p.executor->stats();
        if (s.inFlight == 0 && s.queued == 0 &&
            (s.answered == 0 || idleMs > p.executor->answerTtlMs())) {
          gone.push_back(std::move(it->second));
          it = providers_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  gone.clear();  // their threads are joined here, outside the lock
}

StatusOr<std::string> AnalysisProviders::queryFor(const MeasurementAsk& ask, Provider& p) const {
  namespace v1 = api::v1alpha1;
  const PrometheusAnalysis& a = ask.analysis;
  NamespaceLabels nsLabels;
  std::function<std::optional<nlohmann::json>(const std::string&)> templates;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nsLabels = namespaceLabels_;
    templates = templates_;
  }
  if (!p.address) {
    v1::AnalysisProviderSpec spec;
    {
      std::lock_guard<std::mutex> lock(p.mu);
      spec = p.config.spec;
    }
    // Who may use it: checked at every ask, so a namespace relabelled after
    // the release was admitted is refused from then on.
    std::optional<std::map<std::string, std::string>> labels;
    if (nsLabels) labels = nsLabels(ask.ns);
    if (!labels)
      return Status(Code::kUnavailable,
                    "namespace " + quote(ask.ns) + " is not known to the operator (yet); " +
                        p.label + " is used only by namespaces its spec.namespaceSelector matches");
    if (!v1::providerServes(spec, *labels))
      return Status(Code::kForbidden, v1::providerRefusal(a.provider, spec, ask.ns));
    if (!a.query.empty() && !spec.allowFreeFormQueries)
      return Status(Code::kForbidden,
                    "analysis.prometheus.query: " + p.label +
                        " does not run free-form queries (its spec.allowFreeFormQueries is not "
                        "true); name an AnalysisTemplate in analysis.prometheus.template");
  }
  if (a.templateName.empty()) return a.query;
  std::optional<nlohmann::json> spec;
  if (templates) spec = templates(a.templateName);
  if (!spec)
    return Status(Code::kNotFound, "AnalysisTemplate " + quote(a.templateName) +
                                       " not found (kubectl get analysistemplates)");
  auto t = v1::decodeAnalysisTemplateSpec(*spec);
  if (!t.isOk())
    return Status(Code::kInvalidArgument, "AnalysisTemplate " + quote(a.templateName) +
                                              " is not usable: " + t.status().message());
  auto args = v1::checkTemplateArgs(*t, a.args, "analysis.prometheus");
  if (!args.isOk()) return args.status();
  return v1::renderAnalysisTemplate(*t, *args, {ask.ns, ask.model, ask.name, "canary"});
}

std::optional<QueryStats> AnalysisProviders::stats(const std::string& name) const {
  std::shared_ptr<Provider> p = find(name);
  if (!p || !p->executor) return std::nullopt;
  return p->executor->stats();
}

std::optional<Measurement> AnalysisProviders::measure(const MeasurementAsk& ask) {
  const PrometheusAnalysis& a = ask.analysis;
  auto error = [&](const std::string& why) {
    Measurement m;
    m.atUnix = ask.atUnix;
    m.error = why;
    return m;
  };
  std::string name = a.provider;
  if (name.empty()) {
    if (!options_.allowReleaseAddresses) {
      return error("analysis.prometheus.address " + quote(a.address) +
                   " is refused: this operator does not call addresses a release chooses "
                   "(--allow-release-prometheus-address is off); name an AnalysisProvider in "
                   "analysis.prometheus.provider");
    }
    name = "address " + a.address;
    evictIdleAddresses();
    if (!find(name)) {
      ProviderConfig c;
      c.spec.address = a.address;
      c.spec.allowInsecureHttp = true;
      c.spec.timeoutSeconds = options_.addressTimeoutSeconds;
      c.spec.maxConcurrentQueries = options_.addressConcurrency;
      auto fresh = std::make_shared<Provider>();
      fresh->label = "prometheus " + a.address;
      fresh->config = c;
      fresh->address = true;
      fresh->lastAskMs = steadyMs();
      std::string why;
      fresh->executor = makeExecutor(fresh->label, kReleaseAddressProvider, c, fresh, why);
      if (!fresh->executor) return error(why);
      std::lock_guard<std::mutex> lock(mu_);
      providers_.emplace(name, fresh);  // another thread may have won: its executor stays
    }
  }
  std::shared_ptr<Provider> p = find(name);
  if (!p) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = providers_.find(name); it != providers_.end()) {
      p = it->second;  // configured meanwhile
    } else if (providerExists_ && providerExists_(name)) {
      // Not configured yet (the operator just started): wait for configure().
      waitingForConfig_[name].insert(ask.ns + "/" + ask.name);
      return std::nullopt;
    } else {
      return error("AnalysisProvider " + quote(name) +
                   " not found (kubectl get analysisproviders)");
    }
  }
  {
    std::lock_guard<std::mutex> lock(p->mu);
    if (!p->disabled.empty()) return error(p->label + " is not usable: " + p->disabled);
  }
  if (!p->executor) return error(p->label + " is not configured yet");
  p->lastAskMs = steadyMs();
  auto promql = queryFor(ask, *p);
  if (!promql.isOk()) {
    Measurement refused = error(promql.status().message());
    refused.refused = promql.status().code() == Code::kForbidden;
    return refused;
  }
  QueryScheduler::Ask got = p->executor->ask(ask.key, *promql, ask.atUnix,
                                             kReleaseWaker + ask.ns + "/" + ask.name, ask.ns);
  if (!got.answer) return std::nullopt;
  Measurement m;
  m.atUnix = got.answer->atUnix;
  m.value = got.answer->value;
  m.error = got.answer->error;
  return m;
}

// A backstop only: the executor wakes the release when its answer lands.
int64_t AnalysisProviders::pendingRetrySeconds() const { return 10; }

}  // namespace lockstep::controllers
