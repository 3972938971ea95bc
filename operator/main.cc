// lockstep-operator: flags and wiring only.
//
// One process runs the controllers (on the elected leader) and the admission
// webhooks (on every replica). Admission reads the same informer caches the
// controllers use: no API call on the admission path, except the
// SubjectAccessReview behind an approval or abort. Any setup failure exits
// non-zero with a message naming what was wrong.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "controllers/shell/lockstep_resources.h"
#include "controllers/shell/modelrelease_controller.h"
#include "controllers/shell/runtimeenv_controller.h"
#include "operator/flags.h"
#include "operator/kube/connect.h"
#include "operator/runtime/logging.h"
#include "operator/runtime/manager.h"
#include "webhooks/admission/handler.h"
#include "webhooks/admission/recorder.h"
#include "webhooks/certs/cert_file_watcher.h"
#include "webhooks/certs/cert_upkeep.h"
#include "webhooks/certs/self_managed.h"
#include "webhooks/informer_lookups.h"
#include "webhooks/kube_authorizer.h"
#include "webhooks/kube_cert_store.h"
#include "webhooks/metrics/prometheus_recorder.h"
#include "webhooks/server/beast_server.h"
#include "webhooks/webhook_routes.h"

namespace {

using lockstep::Status;
namespace lw = lockstep::webhooks;
namespace lr = lockstep::runtime;

std::vector<lockstep::FlagSpec> flagSpecs() {
  const char* podNs = std::getenv("POD_NAMESPACE");
  return {
      {"kubeconfig", "",
       "kubeconfig file; default $KUBECONFIG, then in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context; default the current context"},
      {"namespace", podNs ? podNs : "lockstep-system",
       "the operator's namespace (lease, certificate Secret)"},
      {"bind-address", "0.0.0.0", "address for the metrics, health and webhook servers"},
      {"metrics-port", "8080", "Prometheus /metrics port (0 picks one)"},
      {"health-port", "8081", "/healthz and /readyz port (0 picks one)"},
      {"webhook-port", "9443", "admission webhook HTTPS port (0 picks one)"},
      {"webhook-threads", "2", "admission server threads"},
      {"authorization-timeout", "3s",
       "deadline of the SubjectAccessReview behind an approve/abort (whole seconds; keep it "
       "under the webhook's timeoutSeconds); past it the write is refused"},
      {"webhook-service", "lockstep", "Service name the serving certificate is issued for"},
      {"webhook-config", "",
       "ValidatingWebhookConfiguration whose caBundle the operator keeps (self mode)"},
      {"webhook-ip", "",
       "extra IP SAN for the serving certificate (e.g. 127.0.0.1 for local runs)"},
      {"cert-mode", "self",
       "self: make and rotate certificates; file: read --cert-dir, reload on change"},
      {"cert-secret", "lockstep-webhook-tls", "Secret holding self-managed certificates"},
      {"cert-dir", "/etc/lockstep/tls", "directory with tls.crt and tls.key (file mode)"},
      {"port-file", "", "write the bound webhook port to this file once serving (tests)"},
      {"leader-elect", "false", "elect a leader through a Lease before running controllers", true},
      {"leader-elect-lease-duration", "15s", "lease duration"},
      {"leader-elect-renew-deadline", "10s", "renew deadline"},
      {"leader-elect-retry-period", "2s", "retry period"},
      {"workers", "2", "reconcile workers per controller"},
      {"controllers", "runtimeenv,modelrelease",
       "controllers to run, comma-separated (the webhooks always run)"},
      {"package-mount", "auto",
       "how gate pods mount the checkpoint package: image-volume, init-container, or auto "
       "(a server-side dry run at start-up tells whether the API server keeps image volumes)"},
      {"package-fetch-command", "oras pull \"$LOCKSTEP_PACKAGE\" -o \"$LOCKSTEP_MODEL_DIR\"",
       "init-container mode: shell command, run by sh -c on the runtime image, that fetches "
       "$LOCKSTEP_PACKAGE (by digest) into $LOCKSTEP_MODEL_DIR"},
      {"log-format", "text", "text or json"},
      {"log-level", "info", "trace, debug, info, warn, error"},
  };
}

int fail(const std::string& message) {
  std::cerr << "lockstep-operator: " << message << std::endl;
  return 1;
}

// Forwards certificates to the server once it exists; keeps the latest.
struct CertificateForwarder final : lw::CertificateSink {
  std::mutex mu;
  lw::Server* server = nullptr;
  lw::TlsCertificate latest;
  Status setCertificate(const lw::TlsCertificate& c) override {
    std::lock_guard<std::mutex> lock(mu);
    latest = c;
    return server != nullptr ? server->setCertificate(c) : Status::ok();
  }
};

// Keeps no caBundle anywhere: for runs without a webhook configuration to patch.
struct NoCaBundlePatcher final : lw::CaBundlePatcher {
  Status patchCaBundle(const std::string&) override { return Status::ok(); }
};

}  // namespace

int main(int argc, char** argv) {
  lockstep::Flags flags(flagSpecs());
  if (Status s = flags.parse(argc, argv); !s.isOk()) {
    std::cerr << s.message() << "\n" << flags.usage("lockstep-operator");
    return 2;
  }
  if (flags.helpRequested()) {
    std::cout << flags.usage("lockstep-operator");
    return 0;
  }
  if (Status s = lr::configureLogging({flags.get("log-format") == "json", flags.get("log-level")});
      !s.isOk()) {
    return fail(s.toString());
  }
  const std::string ns = flags.get("namespace");
  const std::string bind = flags.get("bind-address");
  auto metricsPort = flags.getInt("metrics-port");
  auto healthPort = flags.getInt("health-port");
  auto webhookPort = flags.getInt("webhook-port");
  auto webhookThreads = flags.getInt("webhook-threads");
  auto workers = flags.getInt("workers");
  auto lease = flags.getDuration("leader-elect-lease-duration");
  auto renew = flags.getDuration("leader-elect-renew-deadline");
  auto retry = flags.getDuration("leader-elect-retry-period");
  auto authzTimeout = flags.getDuration("authorization-timeout");
  for (const Status* s : {&metricsPort.status(), &healthPort.status(), &webhookPort.status(),
                          &webhookThreads.status(), &workers.status(), &lease.status(),
                          &renew.status(), &retry.status(), &authzTimeout.status()}) {
    if (!s->isOk()) return fail(s->message());
  }
  const std::string certMode = flags.get("cert-mode");
  if (certMode != "self" && certMode != "file") {
    return fail("--cert-mode must be self or file, got \"" + certMode + "\"");
  }

  // Signals go to the manager's handler thread; block them before any thread starts.
  lr::blockTerminationSignals();

  lockstep::kube::ConnectOptions connect;
  connect.kubeconfigPath = flags.get("kubeconfig");
  connect.context = flags.get("context");
  connect.client.fieldManager = "lockstep-operator";
  auto kubeConfig = lockstep::kube::resolveConfig(connect);
  if (!kubeConfig.isOk()) return fail(kubeConfig.status().toString());
  auto client = lockstep::kube::connect(*kubeConfig, connect.rest, connect.client);
  if (!client.isOk()) return fail(client.status().toString());
  // The webhook's SubjectAccessReviews: same identity, a short deadline (fail closed).
  lockstep::kube::RestOptions authzRest = connect.rest;
  authzRest.requestTimeout = std::max(
      std::chrono::seconds(1), std::chrono::duration_cast<std::chrono::seconds>(*authzTimeout));
  auto authzClient = lockstep::kube::connect(*kubeConfig, authzRest, connect.client);
  if (!authzClient.isOk()) return fail(authzClient.status().toString());
  lw::SubjectAccessReviewAuthorizer authorizer(*authzClient);

  lr::ManagerOptions mo;
  mo.leaderElection = flags.getBool("leader-elect");
  mo.leaderElectionConfig.name = "lockstep-operator";
  mo.leaderElectionConfig.ns = ns;
  mo.leaderElectionConfig.leaseDuration = *lease;
  mo.leaderElectionConfig.renewDeadline = *renew;
  mo.leaderElectionConfig.retryPeriod = *retry;
  mo.healthAddress = bind + ":" + std::to_string(*healthPort);
  mo.metricsAddress = bind + ":" + std::to_string(*metricsPort);
  lr::Manager manager(*client, mo);

  lockstep::controllers::setupRuntimeEnvController(manager, *workers);

  lockstep::controllers::ModelReleaseOptions releaseOptions;
  releaseOptions.fetchCommand = {"sh", "-c", flags.get("package-fetch-command")};
  if (std::string mount = flags.get("package-mount"); mount == "image-volume") {
    releaseOptions.mount = lockstep::controllers::PackageMount::kImageVolume;
  } else if (mount == "init-container") {
    releaseOptions.mount = lockstep::controllers::PackageMount::kInitContainer;
  } else if (mount == "auto") {
    auto probed = lockstep::controllers::probePackageMount(**client, ns);
    if (probed.isOk()) {
      releaseOptions.mount = *probed;
    } else {
      spdlog::warn("{}; assuming image volumes are kept (Kubernetes >= 1.35)",
                   probed.status().toString());
    }
  } else {
    return fail("--package-mount must be auto, image-volume or init-container, got \"" + mount +
                "\"");
  }
  spdlog::info("gate pods mount the package as {}",
               lockstep::controllers::packageMountName(releaseOptions.mount));
  const std::string controllers = "," + flags.get("controllers") + ",";
  if (controllers.find(",modelrelease,") != std::string::npos) {
    lockstep::controllers::setupModelReleaseController(manager, releaseOptions, *workers);
  } else {
    spdlog::warn("--controllers: the ModelRelease controller is off");
  }

  // Admission reads the caches the controllers share.
  lockstep::kube::Informer& rteInformer = manager.informer(lockstep::controllers::kRuntimeEnvs);
  lockstep::kube::Informer& nsInformer = manager.informer(lockstep::kube::resources::kNamespaces);
  lw::InformerRuntimeEnvs envs(rteInformer.cache());
  lw::InformerNamespaceModes modes(nsInformer.cache());
  lw::PrometheusRecorder promRecorder(*manager.metrics().registry());
  lw::LogRecorder logRecorder;
  lw::FanoutRecorder recorder{&promRecorder, &logRecorder};
  lw::SteadyClock admissionClock;
  lw::PodWebhook podWebhook(envs, modes, recorder, admissionClock);
  lw::ModelReleaseWebhook releaseWebhook(envs, authorizer, recorder, admissionClock);

  // Serving certificate.
  CertificateForwarder forward;
  std::unique_ptr<lw::SecretCertStore> store;
  std::unique_ptr<lw::CaBundlePatcher> patcher;
  std::unique_ptr<lw::SelfManagedCertificates> selfManaged;
  std::unique_ptr<lw::CertFileWatcher> watcher;
  if (certMode == "self") {
    store = std::make_unique<lw::SecretCertStore>(*client, ns, flags.get("cert-secret"));
    if (std::string vwc = flags.get("webhook-config"); !vwc.empty()) {
      patcher = std::make_unique<lw::WebhookConfigCaBundlePatcher>(*client, vwc);
    } else {
      // No webhook configuration to keep (local runs): the CA stays in the Secret only.
      patcher = std::make_unique<NoCaBundlePatcher>();
      spdlog::warn("--webhook-config not set: the CA bundle is kept in Secret {}/{} only", ns,
                   flags.get("cert-secret"));
    }
    lw::SelfManagedOptions so;
    so.service = flags.get("webhook-service");
    so.ns = ns;
    if (std::string ip = flags.get("webhook-ip"); !ip.empty()) so.ipAddresses = {ip};
    selfManaged = std::make_unique<lw::SelfManagedCertificates>(so, *store, *patcher, forward);
    auto r = selfManaged->reconcile(std::chrono::system_clock::now());
    if (!r.isOk()) return fail("webhook certificates: " + r.status().toString());
  } else {
    const std::string dir = flags.get("cert-dir");
    watcher = std::make_unique<lw::CertFileWatcher>(dir + "/tls.crt", dir + "/tls.key", forward);
    auto r = watcher->poll(std::chrono::steady_clock::now());
    if (!r.isOk()) return fail("webhook certificates: " + r.status().toString());
  }

  lw::ServerOptions so;
  so.address = bind;
  so.port = static_cast<uint16_t>(*webhookPort);
  so.threads = *webhookThreads;
  auto made = lw::makeBeastServer(so, forward.latest);
  if (!made.isOk()) return fail("webhook server: " + made.status().toString());
  std::unique_ptr<lw::Server> server = std::move(made).value();
  lw::mountWebhook(*server, podWebhook);
  lw::mountWebhook(*server, releaseWebhook);
  manager.health().addReadyCheck("informers", [&]() -> Status {
    return rteInformer.hasSynced() && nsInformer.hasSynced()
               ? Status::ok()
               : Status(lockstep::Code::kUnavailable, "informer caches not synced");
  });

  // The webhook starts serving only once the caches it reads are synced: an
  // empty cache would deny every pod whose RuntimeEnv it has not seen yet.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread webhookThread([&] {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (stopping) return;
      }
      if (rteInformer.waitForSync(std::chrono::seconds(1)) &&
          nsInformer.waitForSync(std::chrono::seconds(1)))
        break;
    }
    if (Status s = server->start(); !s.isOk()) {
      spdlog::critical("webhook server: {}", s.toString());
      manager.stop();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(forward.mu);
      forward.server = server.get();
    }
    spdlog::info("admission webhooks serving on {}:{}", bind, server->port());
    if (std::string pf = flags.get("port-file"); !pf.empty()) {
      std::ofstream(pf + ".tmp") << server->port() << "\n";
      std::rename((pf + ".tmp").c_str(), pf.c_str());
    }
    // Certificate upkeep: renew (self) or reload changed files (file mode).
    lw::CertificateUpkeep upkeep = watcher ? lw::CertificateUpkeep(*watcher, flags.get("cert-dir"))
                                           : lw::CertificateUpkeep(*selfManaged);
    std::unique_lock<std::mutex> lock(mu);
    auto wait = std::chrono::seconds(10);
    while (!stopping) {
      cv.wait_for(lock, wait);
      if (stopping) break;
      wait = upkeep.tick(std::chrono::system_clock::now(), std::chrono::steady_clock::now());
    }
  });

  manager.stopOnSignals();
  Status result = manager.run();
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  cv.notify_all();
  webhookThread.join();
  {
    std::lock_guard<std::mutex> lock(forward.mu);
    forward.server = nullptr;
  }
  server->stop();
  if (!result.isOk()) return fail(result.toString());
  spdlog::info("stopped");
  return 0;
}
