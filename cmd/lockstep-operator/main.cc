// lockstep-operator: flags and wiring only.
//
// One process runs the controllers (on the elected leader) and the admission
// webhooks (on every replica, a Runnable of the Manager). Admission reads the
// same informer caches the controllers use: no API call on the admission
// path, except the SubjectAccessReview behind an approval or abort. A bad flag exits 2; any other
// setup failure exits 1 with a message naming what was wrong.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "api/v1alpha1/serving_pod.h"
#include "cmd/lockstep-operator/flags.h"
#include "cmd/lockstep/uninstall_cleanup.h"
#include "controllers/analysisprovider/analysisprovider_controller.h"
#include "controllers/common/cached_serving_objects.h"
#include "controllers/drift/drift_controller.h"
#include "controllers/evidence/evidence_controller.h"
#include "controllers/fleet/modelrollout_controller.h"
#include "controllers/modelrelease/modelrelease_controller.h"
#include "controllers/runtimeadmission/runtimeadmission_controller.h"
#include "controllers/runtimeenv/runtimeenv_controller.h"
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
#include "webhooks/metrics/kube_metrics_reviews.h"
#include "webhooks/metrics/metrics_server.h"
#include "webhooks/metrics/prometheus_recorder.h"
#include "webhooks/webhook_server.h"

namespace {

using lockstep::Status;
namespace lw = lockstep::webhooks;
namespace lr = lockstep::runtime;
namespace v1 = lockstep::api::v1alpha1;

int fail(const std::string& message) {
  std::cerr << "lockstep-operator: " << message << std::endl;
  return 1;
}

// Keeps no caBundle anywhere: for runs without a webhook configuration to patch.
struct NoCaBundlePatcher final : lw::CaBundlePatcher {
  lockstep::StatusOr<bool> patchCaBundle(const std::string&) override { return false; }
};

}  // namespace

int main(int argc, char** argv) {
  // The chart's post-delete hook (templates/uninstall-cleanup.yaml) runs the operator image,
  // which every install has: `lockstep-operator uninstall-cleanup …` is the CLI's verb.
  if (argc > 1 && std::string(argv[1]) == "uninstall-cleanup") {
    return lockstep::cli::uninstallCleanupMain(std::vector<std::string>(argv + 2, argv + argc),
                                               std::cout, std::cerr, "lockstep-operator");
  }
  const char* podNs = std::getenv("POD_NAMESPACE");
  lockstep::Flags flags(lockstep::operator_main::operatorFlagSpecs(podNs ? podNs : ""));
  if (auto rc = flags.parseCommandLine(argc, argv, "lockstep-operator", std::cout, std::cerr)) {
    return *rc;
  }
  if (Status s = lr::configureLogging({flags.get("log-format") == "json", flags.get("log-level")});
      !s.isOk()) {
    return fail(s.toString());
  }
  const std::string ns = flags.get("namespace");
  const std::string bind = flags.get("bind-address");
  const std::string watch = flags.get("watch-namespaces");

  // Signals go to the manager's handler thread; block them before any thread starts.
  lr::blockTerminationSignals();

  lockstep::kube::ConnectOptions connect;
  connect.kubeconfigPath = flags.get("kubeconfig");
  connect.context = flags.get("context");
  connect.client.fieldManager = v1::kOperatorFieldManager;
  auto kubeConfig = lockstep::kube::resolveConfig(connect);
  if (!kubeConfig.isOk()) return fail(kubeConfig.status().toString());
  auto client = lockstep::kube::connect(*kubeConfig, connect.rest, connect.client);
  if (!client.isOk()) return fail(client.status().toString());
  // The webhook's API calls (SubjectAccessReviews, namespaces missing from the
  // cache): same identity, a short deadline (fail closed).
  lockstep::kube::RestOptions authzRest = connect.rest;
  authzRest.requestTimeout = std::max(
      std::chrono::seconds(1),
      std::chrono::duration_cast<std::chrono::seconds>(flags.getDuration("authorization-timeout")));
  auto authzClient = lockstep::kube::connect(*kubeConfig, authzRest, connect.client);
  if (!authzClient.isOk()) return fail(authzClient.status().toString());
  lw::SubjectAccessReviewAuthorizer authorizer(*authzClient);

  lr::ManagerOptions mo;
  mo.leaderElection = flags.getBool("leader-elect");
  mo.leaderElectionConfig.name = "lockstep-operator";
  mo.leaderElectionConfig.ns = ns;
  mo.leaderElectionConfig.leaseDuration = flags.getDuration("leader-elect-lease-duration");
  mo.leaderElectionConfig.renewDeadline = flags.getDuration("leader-elect-renew-deadline");
  mo.leaderElectionConfig.retryPeriod = flags.getDuration("leader-elect-retry-period");
  for (size_t at = 0; at <= watch.size();) {
    size_t comma = std::min(watch.find(',', at), watch.size());
    if (comma > at) mo.watchNamespaces.push_back(watch.substr(at, comma - at));
    at = comma + 1;
  }
  if (!mo.watchNamespaces.empty()) spdlog::info("watching namespaces {}", watch);
  mo.healthAddress = bind + ":" + std::to_string(flags.getInt("health-port"));
  const bool metricsSecure = flags.getBool("metrics-secure");
  // Plain /metrics from the Manager only when asked for; else the MetricsServer below.
  mo.metricsAddress =
      metricsSecure ? "" : bind + ":" + std::to_string(flags.getInt("metrics-port"));
  lr::Manager manager(*client, mo);

  // Private registries' CA (stage tags, evidence, the mirror check); "": the system roots.
  std::string registryCaPem;
  if (std::string ca = flags.get("registry-ca-file"); !ca.empty()) {
    std::ifstream in(ca, std::ios::binary);
    std::stringstream pem;
    pem << in.rdbuf();
    if (!in || pem.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos)
      return fail("--registry-ca-file " + ca + ": not a readable PEM certificate bundle");
    registryCaPem = pem.str();
  }
  lockstep::controllers::RuntimeEnvOptions runtimeEnvOptions;
  runtimeEnvOptions.registryCaPem = registryCaPem;
  runtimeEnvOptions.cliImage = flags.get("cli-image");
  // Advisories against every RuntimeEnv's closures (docs/supply-chain.md), from a local OSV
  // export or an OSV-compatible endpoint.
  const std::string osvExport = flags.get("osv-export");
  const std::string osvUrl = flags.get("osv-url");
  if (!osvExport.empty() && !osvUrl.empty())
    return fail("--osv-export and --osv-url: give one advisory source, not both");
  if (!flags.get("osv-ca-file").empty() && osvUrl.empty())
    return fail("--osv-ca-file goes with --osv-url");
  if (!osvExport.empty()) {
    auto source =
        std::make_shared<lockstep::controllers::OsvExportSource>(osvExport, manager.clock());
    if (Status s = source->load(); !s.isOk()) return fail("--osv-export: " + s.toString());
    runtimeEnvOptions.advisories = std::move(source);
  } else if (!osvUrl.empty()) {
    lockstep::advisories::OsvClientConfig osv;
    osv.url = osvUrl;
    osv.caFile = flags.get("osv-ca-file");
    auto client = lockstep::advisories::OsvClient::connect(osv);
    if (!client.isOk()) return fail("--osv-url: " + client.status().message());
    lockstep::controllers::OsvEndpointOptions endpoint;
    endpoint.refresh = std::max<std::chrono::seconds>(
        std::chrono::seconds(1),
        std::chrono::duration_cast<std::chrono::seconds>(flags.getDuration("osv-refresh")));
    endpoint.retry = std::min<std::chrono::seconds>(endpoint.refresh, std::chrono::minutes(1));
    runtimeEnvOptions.advisories = std::make_shared<lockstep::controllers::OsvEndpointSource>(
        std::move(*client), manager.clock(), endpoint);
    spdlog::info("advisories: from the OSV endpoint {}", osvUrl);
  }
  lockstep::controllers::setupRuntimeEnvController(manager, flags.getInt("workers"),
                                                   runtimeEnvOptions);

  // Policy mode: the pod ValidatingAdmissionPolicy reads a table per namespace.
  if (flags.get("admission-mode") == "policy") {
    lockstep::controllers::setupRuntimeAdmissionController(manager, flags.get("cli-image"));
    spdlog::info("admission mode policy: keeping the RuntimeAdmission tables");
  }

  // Drift of running pods against their RuntimeEnvs (docs/supply-chain.md), from the caches.
  if (const auto every = std::chrono::duration_cast<std::chrono::seconds>(
          flags.getDuration("drift-scan-interval"));
      every.count() > 0) {
    lockstep::controllers::DriftOptions driftOptions;
    driftOptions.trustedInitImage = flags.get("cli-image");
    driftOptions.interval = every;
    lockstep::controllers::setupDriftController(manager, std::move(driftOptions));
  } else {
    spdlog::warn("--drift-scan-interval=0: running pods are not scanned for drift");
  }

  lockstep::controllers::ModelReleaseOptions releaseOptions;
  releaseOptions.fetchCommand = {"sh", "-c", flags.get("package-fetch-command")};
  releaseOptions.cliImage = flags.get("cli-image");
  const auto deletionDeadline = std::chrono::duration_cast<std::chrono::seconds>(
      flags.getDuration("release-deletion-deadline"));
  if (deletionDeadline.count() < 1) return fail("--release-deletion-deadline must be at least 1s");
  releaseOptions.releaseDeletionDeadlineSeconds = deletionDeadline.count();
  if (std::string mount = flags.get("package-mount"); mount == "image-volume") {
    releaseOptions.mount = lockstep::controllers::PackageMount::kImageVolume;
  } else if (mount == "init-container") {
    releaseOptions.mount = lockstep::controllers::PackageMount::kInitContainer;
  } else {
    auto probed = lockstep::controllers::probePackageMount(**client, ns);
    if (probed.isOk()) {
      releaseOptions.mount = *probed;
    } else {
      spdlog::warn("{}; assuming image volumes are kept (Kubernetes >= 1.35)",
                   probed.status().toString());
    }
  }
  releaseOptions.registryCaPem = registryCaPem;
  releaseOptions.approvalRules.serviceAccountsApprove =
      flags.getBool("allow-service-account-approvers");
  if (releaseOptions.approvalRules.serviceAccountsApprove)
    spdlog::warn("--allow-service-account-approvers: ServiceAccounts may approve release stages");
  releaseOptions.modelRollbackRequests = flags.getBool("model-rollback-requests");
  if (!releaseOptions.modelRollbackRequests)
    spdlog::info(
        "rollback requests written on Models are ignored (no --model-rollback-requests: the "
        "chart's model-rollback policy is not installed)");
  spdlog::info("gate pods mount the package as {}",
               lockstep::controllers::packageMountName(releaseOptions.mount));
  // Canary analysis queries the platform's AnalysisProviders, on their own threads.
  const bool allowAddresses = flags.getBool("allow-release-prometheus-address");
  if (allowAddresses)
    spdlog::warn("--allow-release-prometheus-address: releases may name any Prometheus URL");
  lockstep::controllers::AnalysisProvidersOptions analysisOptions;
  analysisOptions.allowReleaseAddresses = allowAddresses;
  analysisOptions.metrics =
      lockstep::controllers::makePrometheusAnalysisMetrics(*manager.metrics().registry());
  releaseOptions.analysis =
      std::make_shared<lockstep::controllers::AnalysisProviders>(analysisOptions);
  const std::string controllers = "," + flags.get("controllers") + ",";
  if (controllers.find(",modelrelease,") != std::string::npos) {
    lockstep::controllers::setupAnalysisProviderController(manager, releaseOptions.analysis, ns);
    lockstep::controllers::setupModelReleaseController(manager, releaseOptions,
                                                       flags.getInt("workers"));
    // Signed evidence as referrers of each package, on a queue of its own.
    lockstep::controllers::EvidenceOptions evidenceOptions;
    evidenceOptions.operatorNamespace = ns;
    evidenceOptions.context.clusterName =
        flags.get("cluster-name").empty() ? "unnamed" : flags.get("cluster-name");
    evidenceOptions.context.version = LOCKSTEP_VERSION;
    evidenceOptions.registryCaPem = releaseOptions.registryCaPem;
    lockstep::controllers::setupEvidenceController(manager, std::move(evidenceOptions), 1);
  } else {
    spdlog::warn("--controllers: the ModelRelease controller is off");
  }
  if (controllers.find(",modelrollout,") != std::string::npos) {
    // The hub (docs/fleet.md "Running the hub"): ModelRollouts, through the registry alone.
    lockstep::controllers::ModelRolloutOptions rolloutOptions;
    rolloutOptions.operatorNamespace = ns;
    rolloutOptions.registryCaPem = releaseOptions.registryCaPem;
    rolloutOptions.pollSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(flags.getDuration("fleet-poll-interval"))
            .count();
    if (rolloutOptions.pollSeconds < 1) return fail("--fleet-poll-interval must be at least 1s");
    lockstep::controllers::setupModelRolloutController(manager, std::move(rolloutOptions),
                                                       flags.getInt("workers"));
  }

  // Admission reads the caches the controllers share.
  lockstep::kube::Informer& rteInformer = manager.informer(v1::kRuntimeEnvs);
  lockstep::kube::Informer& nsInformer = manager.informer(v1::kNamespaces);
  lw::InformerRuntimeEnvs envs(rteInformer.cache());
  lw::InformerNamespaceModes modes(nsInformer.cache(), *authzClient);
  // The model's prod (the Service port rule) from the controller's caches.
  // The controllers' informers, slimmed alike (controllers/common/cached_serving_objects.h).
  const lockstep::kube::InformerOptions serviceOpts = lockstep::controllers::modelServices();
  lw::InformerModelProds prods(manager.informer(v1::kModels).cache(),
                               manager.informer(serviceOpts).cache(),
                               manager.informer(v1::kModelReleases).cache());
  lw::InformerAnalysisProviders providers(manager.informer(v1::kAnalysisProviders).cache(),
                                          &manager.informer(v1::kAnalysisTemplates).cache());
  lw::InformerNamespaceLabels namespaceLabels(nsInformer.cache(), *authzClient);
  lw::PrometheusRecorder promRecorder(*manager.metrics().registry());
  lw::LogRecorder logRecorder;
  lw::FanoutRecorder recorder{&promRecorder, &logRecorder};
  lw::PodWebhook podWebhook(envs, modes, recorder, manager.clock());
  // The serving label's owner chain (webhooks/admission/serving_pod_rule.h):
  // the same ReplicaSet and Deployment informers the ModelRelease controller reads.
  lockstep::kube::InformerOptions replicaSetOpts;
  replicaSetOpts.resource = v1::kReplicaSets;
  replicaSetOpts.labelSelector = v1::kModelLabel;
  replicaSetOpts.transform = v1::slimReplicaSet;
  const lockstep::kube::InformerOptions deploymentOpts = lockstep::controllers::modelDeployments();
  lw::InformerServingObjects servingObjects(manager.informer(replicaSetOpts).cache(),
                                            manager.informer(deploymentOpts).cache(),
                                            manager.informer(v1::kModels).cache(), *authzClient);
  podWebhook.setServingObjects(&servingObjects);
  // The verification init containers run the CLI image: admitted only by digest.
  if (Status s = podWebhook.trustInitImage(flags.get("cli-image")); !s.isOk())
    return fail("--cli-image: " + s.message());
  lw::ModelReleaseWebhook releaseWebhook(envs, authorizer, recorder, manager.clock());
  releaseWebhook.allowPrometheusAddress(allowAddresses);
  releaseWebhook.setApprovalRules(releaseOptions.approvalRules);
  releaseWebhook.setModelProds(&prods);
  releaseWebhook.setAnalysisProviders(&providers);
  releaseWebhook.setNamespaceLabels(&namespaceLabels);
  lw::ModelReleaseCreatorWebhook creatorWebhook(recorder, manager.clock());

  lw::ServerOptions so;
  so.address = bind;
  so.port = static_cast<uint16_t>(flags.getInt("webhook-port"));
  so.threads = flags.getInt("webhook-threads");
  so.maxConnections = flags.getInt("webhook-max-connections");
  auto webhooks = std::make_shared<lw::WebhookServer>(so, manager.clock());
  webhooks->mount(podWebhook);
  webhooks->mount(releaseWebhook);
  webhooks->mount(creatorWebhook);
  webhooks->setPortFile(flags.get("port-file"));

  // Serving certificate: the first one now (a failure is a setup error), then
  // kept current by the server's upkeep rounds.
  std::unique_ptr<lw::SecretCertStore> store;
  std::unique_ptr<lw::CaBundlePatcher> patcher;
  std::unique_ptr<lw::SelfManagedCertificates> selfManaged;
  std::unique_ptr<lw::CertFileWatcher> watcher;
  if (flags.get("cert-mode") == "self") {
    store = std::make_unique<lw::SecretCertStore>(*client, ns, flags.get("cert-secret"));
    if (std::string vwc = flags.get("webhook-config"); !vwc.empty()) {
      patcher = std::make_unique<lw::WebhookConfigCaBundlePatcher>(
          *client, vwc, flags.get("mutating-webhook-config"));
    } else {
      // No webhook configuration to keep (local runs): the CA stays in the Secret only.
      patcher = std::make_unique<NoCaBundlePatcher>();
      spdlog::warn("--webhook-config not set: the CA bundle is kept in Secret {}/{} only", ns,
                   flags.get("cert-secret"));
      if (!flags.get("mutating-webhook-config").empty())
        return fail("--mutating-webhook-config needs --webhook-config");
    }
    lw::SelfManagedOptions smo;
    smo.service = flags.get("webhook-service");
    smo.ns = ns;
    if (std::string ip = flags.get("webhook-ip"); !ip.empty()) smo.ipAddresses = {ip};
    smo.caPropagationDelay = std::chrono::duration_cast<std::chrono::seconds>(
        flags.getDuration("cert-ca-propagation-delay"));
    selfManaged = std::make_unique<lw::SelfManagedCertificates>(smo, *store, *patcher,
                                                                webhooks->certificates());
    auto r = selfManaged->reconcile(manager.clock().wallNow());
    if (!r.isOk()) return fail("webhook certificates: " + r.status().toString());
    lw::CertificateUpkeep::logResult(*r);
    webhooks->setUpkeep(
        lw::CertificateUpkeep(*selfManaged, std::chrono::duration_cast<std::chrono::seconds>(
                                                flags.getDuration("cert-check-interval"))));
  } else {
    const std::string dir = flags.get("cert-dir");
    watcher = std::make_unique<lw::CertFileWatcher>(dir + "/tls.crt", dir + "/tls.key",
                                                    webhooks->certificates());
    auto r = watcher->poll(manager.clock().now());
    if (!r.isOk()) return fail("webhook certificates: " + r.status().toString());
    webhooks->setUpkeep(lw::CertificateUpkeep(*watcher, dir));
  }
  // /metrics: HTTPS, TokenReview + SubjectAccessReview (through the short-deadline client).
  lw::KubeTokenReviewer tokenReviewer(*authzClient);
  lw::KubeNonResourceAuthorizer metricsAuthorizer(*authzClient);
  lw::MetricsAuthFilter metricsFilter(tokenReviewer, metricsAuthorizer);
  if (metricsSecure) {
    lw::MetricsServerOptions mso;
    mso.server.address = bind;
    mso.server.port = static_cast<uint16_t>(flags.getInt("metrics-port"));
    mso.server.threads = 1;
    mso.server.maxConnections = 64;
    // A request may wait for both reviews (each up to --authorization-timeout).
    mso.server.requestTimeout = 2 * authzRest.requestTimeout + std::chrono::seconds(5);
    mso.certDir = flags.get("metrics-cert-dir");
    mso.service = flags.get("webhook-service");  // the chart's one Service has both ports
    mso.ns = ns;
    if (std::string ip = flags.get("webhook-ip"); !ip.empty()) mso.ipAddresses = {ip};
    auto metricsServer = std::make_shared<lw::MetricsServer>(
        mso, [&manager] { return manager.metrics().scrape(); }, metricsFilter, manager.clock());
    if (Status s = metricsServer->prepare(); !s.isOk()) return fail("metrics: " + s.toString());
    manager.add(metricsServer, /*needsLeaderElection=*/false);
  } else {
    spdlog::warn(
        "--metrics-secure=false: /metrics is served over plain HTTP to anyone who can "
        "reach {}:{} (local use only)",
        bind, flags.getInt("metrics-port"));
  }
  manager.health().addReadyCheck("informers", [&]() -> Status {
    return rteInformer.hasSynced() && nsInformer.hasSynced()
               ? Status::ok()
               : Status(lockstep::Code::kUnavailable, "informer caches not synced");
  });
  // Every replica serves admission, once the caches it reads have synced (the
  // Manager starts Runnables after the sync): an empty cache would deny every
  // pod whose RuntimeEnv it has not seen yet.
  manager.add(webhooks, /*needsLeaderElection=*/false);

  manager.stopOnSignals();
  Status result = manager.run();
  if (!result.isOk()) return fail(result.toString());
  spdlog::info("stopped");
  return 0;
}
