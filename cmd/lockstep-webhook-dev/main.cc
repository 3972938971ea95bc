// lockstep-webhook-dev: serves the admission webhooks (pods, ModelReleases,
// the ModelRelease creator) from in-memory lookups (a JSON file; see
// webhooks/admission/static_lookups.h) over TLS, with a self-signed CA
// generated at start (written to --ca-out for the caBundle) or a mounted
// certificate pair (--cert-file/--key-file, reloaded on change).
// For the benchmark and local cluster smoke tests. Flags and wiring only: the
// server is the same WebhookServer Runnable the operator adds to its Manager.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "common/flags.h"
#include "operator/kube/clock.h"
#include "operator/kube/connect.h"
#include "operator/runtime/manager.h"
#include "webhooks/admission/handler.h"
#include "webhooks/admission/static_lookups.h"
#include "webhooks/certs/cert_file_watcher.h"
#include "webhooks/certs/cert_upkeep.h"
#include "webhooks/certs/in_memory_cert_store.h"
#include "webhooks/certs/self_managed.h"
#include "webhooks/metrics/kube_metrics_reviews.h"
#include "webhooks/metrics/metrics_server.h"
#include "webhooks/metrics/prometheus_recorder.h"
#include "webhooks/webhook_server.h"

namespace lw = lockstep::webhooks;
using lockstep::FlagType;

namespace {

std::vector<lockstep::FlagSpec> flagSpecs() {
  return {
      {"config", "",
       "lookups JSON {\"runtimeEnvs\":[...],\"namespaces\":{...},\"authorization\":{...}} "
       "(default: empty; approvals allowed)"},
      {"address", "127.0.0.1", "listen address"},
      {"port", "9443", "listen port, 0 = any", FlagType::kInt},
      {"port-file", "", "write the bound port here once listening"},
      {"threads", "2", "server threads", FlagType::kInt},
      {"ca-out", "webhook-ca.crt", "write the generated CA bundle here (self-managed mode)"},
      {"cert-validity-hours", "2160", "serving certificate validity", FlagType::kInt},
      {"cert-file", "", "use a mounted certificate instead (reloaded on change); with --key-file"},
      {"key-file", "", "the mounted certificate's key"},
      {"metrics-port", "0", "serve Prometheus /metrics on port N (0 = off)", FlagType::kInt},
      {"metrics-secure", "true",
       "/metrics over HTTPS on --address, each request authenticated by a TokenReview and "
       "authorized by a SubjectAccessReview (get /metrics) through --kubeconfig; false: plain "
       "HTTP on 127.0.0.1 to anyone (local use)",
       FlagType::kBool},
      {"metrics-cert-dir", "",
       "tls.crt and tls.key for /metrics (reloaded on change); empty: self-signed at start-up"},
      {"kubeconfig", "",
       "the API server that reviews metrics tokens (default $KUBECONFIG, in-cluster, "
       "~/.kube/config); only with --metrics-port and --metrics-secure"},
      {"cli-image", "",
       "the lockstep CLI image, by digest (repo@sha256:...; a tag is refused at start): init "
       "containers on exactly this image (the operator's verification containers) are "
       "admitted, as the operator's --cli-image"},
      {"log-level",
       "info",
       "trace|debug|info|warn|error|off",
       FlagType::kChoice,
       {"trace", "debug", "info", "warn", "warning", "error", "err", "critical", "off"}},
  };
}

int fail(const std::string& m) {
  std::cerr << "lockstep-webhook-dev: " << m << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  lockstep::Flags flags(flagSpecs());
  if (auto rc = flags.parseCommandLine(argc, argv, "lockstep-webhook-dev", std::cout, std::cerr)) {
    return *rc;
  }
  spdlog::set_level(spdlog::level::from_str(flags.get("log-level")));
  // Before any thread starts (the kube client's): signals go to runUntilSignal's thread.
  lockstep::runtime::blockTerminationSignals();
  lockstep::kube::Clock& clock = lockstep::kube::SystemClock::instance();

  lw::StaticLookups lookups;
  if (std::string path = flags.get("config"); !path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("cannot read --config " + path);
    std::ostringstream text;
    text << in.rdbuf();
    auto loaded = lw::loadStaticLookups(text.str());
    if (!loaded.isOk()) return fail(loaded.status().toString());
    lookups = std::move(loaded).value();
  }

  lw::ServerOptions opts;
  opts.address = flags.get("address");
  opts.port = static_cast<uint16_t>(flags.getInt("port"));
  opts.threads = flags.getInt("threads");
  auto server = std::make_shared<lw::WebhookServer>(opts, clock);
  server->setPortFile(flags.get("port-file"));

  // Certificates: a mounted pair (cert-manager mode) or generated in memory.
  const std::string certFile = flags.get("cert-file"), keyFile = flags.get("key-file");
  lw::InMemoryCertStore store;
  lw::CaBundleFile caOut(flags.get("ca-out"));
  std::unique_ptr<lw::SelfManagedCertificates> selfManaged;
  std::unique_ptr<lw::CertFileWatcher> watcher;
  if (!certFile.empty() || !keyFile.empty()) {
    watcher = std::make_unique<lw::CertFileWatcher>(certFile, keyFile, server->certificates());
    auto r = watcher->poll(clock.now());
    if (!r.isOk()) return fail(r.status().toString());
    server->setUpkeep(lw::CertificateUpkeep(*watcher, certFile));
  } else {
    lw::SelfManagedOptions so;
    so.ipAddresses = {"127.0.0.1"};
    if (opts.address != "127.0.0.1" && opts.address != "0.0.0.0")
      so.ipAddresses.push_back(opts.address);
    so.servingValidity = std::chrono::hours(flags.getInt("cert-validity-hours"));
    selfManaged =
        std::make_unique<lw::SelfManagedCertificates>(so, store, caOut, server->certificates());
    auto r = selfManaged->reconcile(clock.wallNow());
    if (!r.isOk()) return fail(r.status().toString());
    server->setUpkeep(lw::CertificateUpkeep(*selfManaged));
  }

  auto registry = std::make_shared<prometheus::Registry>();
  lw::PrometheusRecorder prom(*registry);
  lw::LogRecorder logs;
  lw::FanoutRecorder recorder{&prom, &logs};
  lw::PodWebhook pods(*lookups.envs, *lookups.namespaces, recorder, clock);
  if (lockstep::Status s = pods.trustInitImage(flags.get("cli-image")); !s.isOk())
    return fail("--cli-image: " + s.message());
  lw::ModelReleaseWebhook releases(*lookups.envs, *lookups.authorizer, recorder, clock);
  lw::ModelReleaseCreatorWebhook creator(recorder, clock);
  server->mount(pods);
  server->mount(releases);
  server->mount(creator);

  std::unique_ptr<prometheus::Exposer> exposer;
  std::unique_ptr<lw::KubeTokenReviewer> tokenReviewer;
  std::unique_ptr<lw::KubeNonResourceAuthorizer> metricsAuthorizer;
  std::unique_ptr<lw::MetricsAuthFilter> metricsFilter;
  std::shared_ptr<lw::MetricsServer> metricsServer;
  const int metricsPort = flags.getInt("metrics-port");
  if (metricsPort > 0 && flags.getBool("metrics-secure")) {
    lockstep::kube::ConnectOptions connect;
    connect.kubeconfigPath = flags.get("kubeconfig");
    connect.rest.requestTimeout = std::chrono::seconds(3);
    auto config = lockstep::kube::resolveConfig(connect);
    if (!config.isOk()) {
      return fail("--metrics-port with --metrics-secure needs an API server for TokenReviews (" +
                  config.status().toString() + "); or --metrics-secure=false for local use");
    }
    auto client = lockstep::kube::connect(*config, connect.rest, connect.client);
    if (!client.isOk()) return fail("metrics: " + client.status().toString());
    tokenReviewer = std::make_unique<lw::KubeTokenReviewer>(*client);
    metricsAuthorizer = std::make_unique<lw::KubeNonResourceAuthorizer>(*client);
    metricsFilter = std::make_unique<lw::MetricsAuthFilter>(*tokenReviewer, *metricsAuthorizer);
    lw::MetricsServerOptions mso;
    mso.server.address = opts.address;
    mso.server.port = static_cast<uint16_t>(metricsPort);
    mso.server.threads = 1;
    mso.server.requestTimeout = std::chrono::seconds(12);
    mso.certDir = flags.get("metrics-cert-dir");
    if (opts.address != "127.0.0.1" && opts.address != "0.0.0.0") mso.ipAddresses = {opts.address};
    metricsServer = std::make_shared<lw::MetricsServer>(
        mso, [registry] { return lockstep::runtime::Metrics::serialize(*registry); },
        *metricsFilter, clock);
    if (auto s = metricsServer->prepare(); !s.isOk()) return fail("metrics: " + s.toString());
  } else if (metricsPort > 0) {
    spdlog::warn("--metrics-secure=false: /metrics on 127.0.0.1:{} is open to anyone", metricsPort);
    try {
      exposer = std::make_unique<prometheus::Exposer>("127.0.0.1:" + std::to_string(metricsPort));
      exposer->RegisterCollectable(registry);
    } catch (const std::exception& e) {
      return fail(std::string("metrics: ") + e.what());
    }
  }

  std::vector<std::shared_ptr<lockstep::runtime::Runnable>> runnables = {server};
  if (metricsServer) runnables.push_back(metricsServer);
  lockstep::Status s = lockstep::runtime::runUntilSignal(runnables);
  if (!s.isOk()) return fail(s.toString());
  return 0;
}
