#include "cmd/lockstep-operator/flags.h"

namespace lockstep::operator_main {

std::vector<FlagSpec> operatorFlagSpecs(const std::string& podNamespace) {
  using T = FlagType;
  return {
      {"kubeconfig", "",
       "kubeconfig file; default $KUBECONFIG, then in-cluster, then ~/.kube/config"},
      {"context", "", "kubeconfig context; default the current context"},
      {"namespace", podNamespace.empty() ? "lockstep-system" : podNamespace,
       "the operator's namespace (lease, certificate Secret)"},
      {"watch-namespaces", "",
       "comma-separated namespaces to manage (namespaced install; the chart's watchNamespaces); "
       "empty: all namespaces"},
      {"bind-address", "0.0.0.0", "address for the metrics, health and webhook servers"},
      {"metrics-port", "8080", "Prometheus /metrics port (0 picks one)", T::kInt},
      {"metrics-secure", "true",
       "serve /metrics over HTTPS, each request authenticated by a TokenReview and authorized "
       "by a SubjectAccessReview (get on the non-resource URL /metrics); false: plain HTTP to "
       "anyone, for local use only",
       T::kBool},
      {"metrics-cert-dir", "",
       "directory with tls.crt and tls.key for /metrics (reloaded on change); empty: a "
       "self-signed certificate made at start-up"},
      {"health-port", "8081", "/healthz and /readyz port (0 picks one)", T::kInt},
      {"webhook-port", "9443", "admission webhook HTTPS port (0 picks one)", T::kInt},
      {"webhook-threads", "2", "admission server threads", T::kInt},
      {"webhook-max-connections", "512",
       "admission connections served at once; more wait in the listen backlog", T::kInt},
      {"authorization-timeout", "3s",
       "deadline of the webhook's API calls: the SubjectAccessReview behind an approve/abort and "
       "the read of a namespace not yet in the cache (whole seconds; keep it "
       "under the webhook's timeoutSeconds); past it the write is refused",
       T::kDuration},
      {"webhook-service", "lockstep", "Service name the serving certificate is issued for"},
      {"webhook-config", "",
       "ValidatingWebhookConfiguration whose caBundle the operator keeps (self mode)"},
      {"mutating-webhook-config", "",
       "MutatingWebhookConfiguration (the ModelRelease creator webhook) whose caBundle the "
       "operator keeps too (self mode, with --webhook-config)"},
      {"webhook-ip", "",
       "extra IP SAN for the serving certificate (e.g. 127.0.0.1 for local runs)"},
      {"cert-mode",
       "self",
       "self: make and rotate certificates; file: read --cert-dir, reload on change",
       T::kChoice,
       {"self", "file"}},
      {"cert-secret", "lockstep-webhook-tls", "Secret holding self-managed certificates"},
      {"cert-check-interval", "10s",
       "self mode: longest time between two reads of the certificate Secret and the webhook "
       "configuration (picks up a CA rotated by another replica; repairs a caBundle emptied by "
       "a replace of the configuration); whole seconds, at least 1s",
       T::kDuration},
      {"cert-ca-propagation-delay", "30s",
       "self mode: after the CA changed, how long a replica keeps serving its still-valid "
       "certificate of the previous CA so the API server sees the new caBundle first",
       T::kDuration},
      {"cert-dir", "/etc/lockstep/tls", "directory with tls.crt and tls.key (file mode)"},
      {"port-file", "", "write the bound webhook port to this file once serving (tests)"},
      {"leader-elect", "false", "elect a leader through a Lease before running controllers",
       T::kBool},
      {"leader-elect-lease-duration", "15s", "lease duration", T::kDuration},
      {"leader-elect-renew-deadline", "10s", "renew deadline", T::kDuration},
      {"leader-elect-retry-period", "2s", "retry period", T::kDuration},
      {"workers", "2", "reconcile workers per controller", T::kInt},
      {"controllers", "runtimeenv,modelrelease",
       "controllers to run, comma-separated, of runtimeenv, modelrelease and modelrollout (a "
       "fleet's hub: docs/fleet.md); the webhooks always run"},
      {"osv-export", "",
       "a local OSV export (a directory of OSV JSON records, or osv.dev's all.zip) the "
       "platform refreshes: each RuntimeEnv's status.advisories lists the records that affect "
       "its current and pinned revisions (reloaded when the files change; docs/supply-chain.md)"},
      {"osv-url", "",
       "instead of --osv-export, an OSV-compatible HTTP endpoint (the OSV API v1: POST "
       "/v1/querybatch, GET /v1/vulns/{id}), e.g. https://api.osv.dev or the platform's mirror; "
       "looked up off the reconcile workers (docs/supply-chain.md)"},
      {"osv-ca-file", "",
       "PEM bundle the --osv-url endpoint's certificate is verified against (default: the "
       "system roots)"},
      {"osv-refresh", "30m",
       "how old an --osv-url answer for a closure may grow before it is looked up again "
       "(a failed lookup is retried after a minute, or this when shorter)",
       T::kDuration},
      {"drift-scan-interval", "5m",
       "how often every namespace's running pods are scanned for drift from their RuntimeEnvs "
       "(PolicyReports where wgpolicyk8s.io/v1alpha2 is served, else Events; "
       "docs/supply-chain.md); 0 turns the scan off",
       T::kDuration},
      {"fleet-poll-interval", "15s",
       "modelrollout: how often the hub reads each rollout's package's referrers for new prod "
       "records (whole seconds, at least 1s)",
       T::kDuration},
      {"admission-mode",
       "webhook",
       "how pods are admitted: webhook (the API server calls /validate/pods) or policy (the "
       "chart's ValidatingAdmissionPolicy checks them inside the API server against the "
       "per-namespace RuntimeAdmission tables this operator then keeps; docs/security.md)",
       T::kChoice,
       {"webhook", "policy"}},
      {"package-mount",
       "auto",
       "how gate pods mount the checkpoint package: image-volume, init-container, or auto "
       "(a server-side dry run at start-up tells whether the API server keeps image volumes)",
       T::kChoice,
       {"auto", "image-volume", "init-container"}},
      {"package-fetch-command", "oras pull \"$LOCKSTEP_PACKAGE\" -o \"$LOCKSTEP_MODEL_DIR\"",
       "init-container mode: shell command, run by sh -c on the runtime image, that fetches "
       "$LOCKSTEP_PACKAGE (by digest) into $LOCKSTEP_MODEL_DIR"},
      {"cli-image", "",
       "the lockstep CLI image, by digest (repo@sha256:...; a tag is refused at start), that "
       "verification init containers run verify-env and verify-host from (RuntimeEnv "
       "spec.verify.schedule and onStart); pod admission admits init containers on exactly this "
       "reference; empty: such RuntimeEnvs get Verified=False, reason NoCliImage"},
      {"release-deletion-deadline", "15m",
       "how long a ModelRelease deleted mid-canary keeps its finalizer while its canary rolls "
       "back to the known-good; past it the finalizer goes anyway, with a Warning Event "
       "ReleaseDeletionDeadline (whole seconds, at least 1s)",
       T::kDuration},
      {"cluster-name", "",
       "this cluster's name in the prod records of the evidence (docs/evidence.md); "
       "\"unnamed\" when empty: set it per cluster of a fleet"},
      {"registry-ca-file", "",
       "registry stage tags, evidence and the mirror check: PEM CA bundle registries' "
       "certificates are verified against "
       "(empty: the system roots)"},
      {"allow-release-prometheus-address", "false",
       "let a ModelRelease's analysis give its own prometheus.address instead of naming an "
       "AnalysisProvider (the operator then calls URLs tenants write, from inside the cluster: "
       "server-side request forgery); off by default",
       T::kBool},
      {"allow-service-account-approvers", "false",
       "let ServiceAccounts approve release stages and count toward minApprovers (anyone who may "
       "create a ServiceAccount and its token in a namespace then approves as many times as they "
       "like: this weakens separation of duties); off by default: approvers are people",
       T::kBool},
      {"model-rollback-requests", "false",
       "act on manual rollbacks requested on Models (annotations rollback.lockstep.dev/<revision> "
       "and rollback-to.lockstep.dev/<revision>); set only where the chart's model-rollback "
       "ValidatingAdmissionPolicy admits them (verb rollback on models, the writer's own name): "
       "without it anyone who may edit a Model could roll prod back",
       T::kBool},
      {"log-format", "text", "text or json", T::kChoice, {"text", "json"}},
      {"log-level",
       "info",
       "trace, debug, info, warn, error, critical, off",
       T::kChoice,
       {"trace", "debug", "info", "warn", "warning", "error", "err", "critical", "off"}},
  };
}

}  // namespace lockstep::operator_main
