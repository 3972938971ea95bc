#include "rbac/permissions.h"

#include <map>
#include <sstream>

namespace lockstep::rbac {
namespace {

using nlohmann::json;
constexpr Scope kC = Scope::kCluster;
constexpr Scope kW = Scope::kWatchedNamespaces;
constexpr Scope kO = Scope::kOperatorNamespace;

std::string substitute(std::string s, const Install& install) {
  const std::string key = "{fullname}";
  for (auto at = s.find(key); at != std::string::npos; at = s.find(key))
    s.replace(at, key.size(), install.fullname);
  return s;
}

bool covers(const Grant& a, const Grant& b) {
  if (a == b || a.group != b.group || a.resource != b.resource || a.verb != b.verb) return false;
  bool placeCovers = a.where == "*" || a.where == b.where;
  bool nameCovers = a.name.empty() || a.name == b.name;
  return placeCovers && nameCovers;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array()) {
    for (const auto& v : j[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string scopeName(Scope s) {
  switch (s) {
    case Scope::kCluster:
      return "cluster";
    case Scope::kWatchedNamespaces:
      return "watched namespaces";
    case Scope::kOperatorNamespace:
      return "operator namespace";
  }
  return "";
}

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

const std::vector<Permission>& operatorPermissions() {
  static const std::vector<Permission> table = {
      // RuntimeEnv controller (controllers/runtimeenv/runtimeenv_controller.cc).
      {"runtimeenv-controller",
       "lockstep.dev",
       {"runtimeenvs"},
       {"list", "watch"},
       kW,
       {},
       "informer: the RuntimeEnvs it reconciles"},
      {"runtimeenv-controller",
       "lockstep.dev",
       {"runtimeenvs/status"},
       {"patch"},
       kW,
       {},
       "server-side apply of status (controllers/common/execute.cc)"},
      {"runtimeenv-controller",
       "lockstep.dev",
       {"runtimeenvs"},
       {"patch"},
       kW,
       {},
       "server-side apply of metadata.finalizers: in-use protection while a release pins a "
       "revision"},
      {"runtimeenv-controller",
       "lockstep.dev",
       {"modelreleases"},
       {"list", "watch"},
       kW,
       {},
       "informer: the releases pinning revisions (status.revisions[].pinnedBy)"},
      {"runtimeenv-controller",
       "lockstep.dev",
       {"models"},
       {"list", "watch"},
       kW,
       {},
       "informer: the Models' records of prod pin the pairs prod, the canary and the rollback "
       "targets run (status.revisions[].pinnedBy), whether or not a release object exists"},
      {"runtimeenv-controller",
       "",
       {"configmaps"},
       {"list", "watch"},
       kW,
       {},
       "informer: locks kept in ConfigMaps (spec.lock.configMapRef)"},
      {"runtimeenv-controller",
       "",
       {"nodes"},
       {"list", "watch"},
       kC,
       {},
       "informer: GPU driver labels (status.compatibleNodes)"},
      {"runtimeenv-controller",
       "",
       {"events"},
       {"create", "patch"},
       kW,
       {},
       "operator/kube/event_recorder.cc: Events on the RuntimeEnv"},
      {"runtimeenv-controller",
       "batch",
       {"jobs"},
       {"list", "watch", "create", "delete"},
       kW,
       {},
       "verification Jobs of spec.verify.schedule (label lockstep.dev/verify-runtime-env): "
       "informer, create, delete of a superseded run's Jobs"},
      {"runtimeenv-controller",
       "",
       {"pods"},
       {"list", "watch"},
       kW,
       {},
       "informer: the verification Jobs' pods (a failed check's termination message)"},
      {"runtimeenv-controller",
       "",
       {"configmaps"},
       {"create", "patch", "delete"},
       kW,
       {},
       "spec.verify: server-side apply of the closure ConfigMaps lockstep-closure-<runtimeenv>-"
       "<revision> (the lock and runtime.json the verification init containers check against); "
       "delete those of revisions no longer current or pinned"},
      {"runtimeenv-controller",
       "",
       {"secrets"},
       {"get"},
       kW,
       {},
       "spec.mirror, only with the chart value mirror.credentials: the dockerconfigjson Secret "
       "of spec.mirror.credentialsSecretRef (controllers/runtimeenv/mirror_checker.cc), read when "
       "a check starts and used only when its annotation lockstep.dev/mirror-repositories lends "
       "it to the repository; never listed or watched",
       "mirror.credentials"},
      // RuntimeAdmission controller (controllers/runtimeadmission/), admission.mode=policy.
      {"runtimeadmission-controller",
       "lockstep.dev",
       {"runtimeadmissions"},
       {"list", "watch", "create", "patch"},
       kW,
       {},
       "admission.mode=policy: the pod policy's table lockstep-runtimes per namespace "
       "(informer; server-side apply, whose first apply creates it)"},
      // The drift scan (controllers/drift/drift_controller.cc).
      {"drift-scan",
       "wgpolicyk8s.io",
       {"policyreports"},
       {"get", "list", "create", "patch"},
       kW,
       {},
       "the PolicyReport lockstep-runtime-drift per namespace: server-side apply (whose first "
       "apply creates it), get of its first-seen times after a restart, a list of one to "
       "learn whether the kind is served"},
      {"drift-scan",
       "",
       {"pods"},
       {"list", "watch"},
       kW,
       {},
       "informer: the unfinished pods, slimmed (controllers/common/cached_pods.h; shared with "
       "the GPU pre-check)"},
      {"drift-scan",
       "",
       {"events"},
       {"create", "patch"},
       kW,
       {},
       "where PolicyReports are not served: a Warning Event RuntimeDrift on each drifting pod"},
      // ModelRelease controller (controllers/modelrelease/modelrelease_controller.cc).
      {"modelrelease-controller",
       "lockstep.dev",
       {"modelreleases", "runtimeenvs"},
       {"list", "watch"},
       kW,
       {},
       "informers: releases and the RuntimeEnvs they name"},
      {"modelrelease-controller",
       "lockstep.dev",
       {"modelreleases/status"},
       {"patch"},
       kW,
       {},
       "server-side apply of status"},
      {"modelrelease-controller",
       "lockstep.dev",
       {"modelreleases"},
       {"patch"},
       kW,
       {},
       "the finalizer lockstep.dev/release-cleanup (merge patch of metadata.finalizers, guarded "
       "by the resourceVersion): a release deleted mid-canary rolls back first "
       "(controllers/modelrelease/modelrelease_plan.cc)"},
      {"modelrelease-controller",
       "batch",
       {"jobs"},
       {"list", "watch", "create", "delete"},
       kW,
       {},
       "gate Jobs (eval, ci): informer, create, delete on retry"},
      {"modelrelease-controller",
       "batch",
       {"jobs"},
       {"create"},
       kO,
       {},
       "probePackageMount: a server-side dry run at start-up (--package-mount=auto)"},
      {"modelrelease-controller",
       "",
       {"pods"},
       {"list", "watch"},
       kW,
       {},
       "informer: the gate Jobs' pods (label lockstep.dev/release); the canary's GPU "
       "pre-check lists the pods bound to each compatible GPU node (docs/rollouts.md)"},
      {"modelrelease-controller",
       "",
       {"events"},
       {"create", "patch"},
       kW,
       {},
       "operator/kube/event_recorder.cc: Events on the release"},
      {"modelrelease-controller",
       "",
       {"nodes"},
       {"list", "watch"},
       kC,
       {},
       "informer: GPU nodes for the canary's capacity pre-check (docs/rollouts.md)"},
      // ModelRelease prod stage (docs/rollouts.md): the model's serving objects.
      {"modelrelease-controller",
       "apps",
       {"deployments"},
       {"get", "list", "watch", "create", "patch"},
       kW,
       {},
       "prod stage: informer on <model>-stable/-canary; a metadata-only informer on the "
       "Deployments without the label lockstep.dev/model (what stands at such a name: a foreign "
       "object is a NameConflict; get only where that cache is not set up); server-side apply "
       "(create: the first apply) and replica patches"},
      {"modelrelease-controller",
       "apps",
       {"replicasets"},
       {"list", "watch"},
       kW,
       {},
       "prod stage: informer on the ReplicaSets labelled lockstep.dev/model (slimmed to their "
       "owner references, template labels and replicas): a pod counts as prod only when its "
       "owner chain leads to the model's Deployment (api/v1alpha1/serving_pod.h)"},
      {"modelrelease-controller",
       "",
       {"services"},
       {"get", "list", "watch", "create", "patch"},
       kW,
       {},
       "prod stage: informer on the models' Services (label lockstep.dev/model), and a "
       "metadata-only one on the Services without that label (a foreign object at the name "
       "<model>: NameConflict); server-side apply of the model's Service (create: its first "
       "apply)"},
      {"modelrelease-controller",
       "lockstep.dev",
       {"models"},
       {"list", "watch", "create"},
       kW,
       {},
       "prod stage: the Model of each model (informer; create with defaults for a release naming "
       "a model that has none; controllers/modelrelease/prod/model_record.cc)"},
      {"modelrelease-controller",
       "lockstep.dev",
       {"models/status"},
       {"update"},
       kW,
       {},
       "prod stage: the record of prod (canary slot, promotions, rollbacks), an update of /status "
       "guarded by the resourceVersion, written before the serving objects change; the Model "
       "controller's conditions (Ready, Progressing, Degraded), the same guarded update"},
      {"modelrelease-controller",
       "",
       {"configmaps"},
       {"list", "watch", "delete"},
       kW,
       {},
       "migration: the anchor lockstep-model-<model> of an earlier version (informer on the label "
       "lockstep.dev/model; deleted, uid-guarded, once the Model is built from it and owns the "
       "serving objects)"},
      {"modelrelease-controller",
       "",
       {"secrets"},
       {"get"},
       kW,
       {},
       "registry stage tags, only with the chart value registryTags.enabled: the "
       "dockerconfigjson Secret of spec.registryTags.secretRef "
       "(controllers/modelrelease/tags/stage_tagger.cc), read when a tag is due and when the "
       "package is read before the first stage (package_reader.cc); never listed or watched",
       "registryTags.enabled"},
      // AnalysisProvider controller (controllers/analysisprovider/analysisprovider_controller.cc).
      {"analysisprovider-controller",
       "lockstep.dev",
       {"analysisproviders"},
       {"list", "watch"},
       kC,
       {},
       "informer: the platform's Prometheus providers canary analysis queries"},
      {"analysisprovider-controller",
       "lockstep.dev",
       {"analysisproviders/status"},
       {"patch"},
       kC,
       {},
       "server-side apply of status (Ready: the CA, the token, the health-check query)"},
      {"analysisprovider-controller",
       "lockstep.dev",
       {"analysistemplates"},
       {"list", "watch"},
       kC,
       {},
       "informer: the platform's PromQL templates a release's analysis names (filled with the "
       "release's own selectors at each measurement)"},
      {"analysisprovider-controller",
       "",
       {"namespaces"},
       {"list", "watch"},
       kC,
       {},
       "informer: namespaces' labels, matched against a provider's spec.namespaceSelector at "
       "each measurement"},
      {"analysisprovider-controller",
       "",
       {"secrets"},
       {"get"},
       kO,
       {},
       "a provider's spec.bearerTokenSecretRef, read once a minute (never listed or watched, "
       "never logged or put in status); only in the operator's namespace"},
      {"analysisprovider-controller",
       "",
       {"configmaps"},
       {"get"},
       kO,
       {},
       "a provider's spec.caConfigMapRef (the CA bundle), read once a minute"},
      // Evidence publisher (controllers/evidence/evidence_controller.cc).
      {"evidence-controller",
       "lockstep.dev",
       {"signingconfigs"},
       {"list", "watch"},
       kC,
       {},
       "informer: which key signs which packages' evidence (the platform's, cluster-scoped)"},
      {"evidence-controller",
       "lockstep.dev",
       {"trustpolicies"},
       {"list", "watch"},
       kC,
       {},
       "informer: whose evidence an evidence stage accepts (the platform's, cluster-scoped)"},
      {"evidence-controller",
       "",
       {"secrets"},
       {"get"},
       kO,
       {},
       "a SigningConfig's key and registry credentials, read when statements are due (never "
       "listed or watched, never logged or put in status); only in the operator's namespace"},
      // The hub's ModelRollout controller (controllers/fleet/modelrollout_controller.cc).
      {"modelrollout-controller",
       "lockstep.dev",
       {"modelrollouts"},
       {"list", "watch"},
       kW,
       {},
       "informer: the hub's rollouts of a package to a fleet in waves (only with "
       "--controllers=...,modelrollout)"},
      {"modelrollout-controller",
       "lockstep.dev",
       {"modelrollouts/status"},
       {"patch"},
       kW,
       {},
       "server-side apply of status (phase, waves, clusters, failures, Ready, Stalled)"},
      {"modelrollout-controller",
       "multicluster.x-k8s.io",
       {"clusterprofiles"},
       {"list"},
       kC,
       {},
       "the fleet's inventory (ClusterProfiles, KEP-4322, in any namespace), listed each pass "
       "when the API is served (never watched: it may not be); else spec.inventory"},
      // Admission (webhooks/, cmd/lockstep-operator/main.cc).
      {"webhooks",
       "lockstep.dev",
       {"runtimeenvs"},
       {"list", "watch"},
       kW,
       {},
       "informer: pods.lockstep.dev checks pods against RuntimeEnv status"},
      {"webhooks",
       "lockstep.dev",
       {"models"},
       {"list", "watch"},
       kW,
       {},
       "informer: a model's prod and port (the Service port rule of modelreleases.lockstep.dev)"},
      {"webhooks",
       "apps",
       {"deployments", "replicasets"},
       {"list", "watch"},
       kW,
       {},
       "informers (the ModelRelease controller's): the owner chain of a pod carrying the serving "
       "label lockstep.dev/serving (webhooks/admission/serving_pod_rule.h)"},
      {"webhooks",
       "apps",
       {"replicasets"},
       {"get"},
       kW,
       {},
       "webhooks/informer_lookups.cc: a serving pod's ReplicaSet not yet in the cache (created "
       "a moment before its first pod) is read once"},
      {"webhooks",
       "",
       {"namespaces"},
       {"list", "watch"},
       kC,
       {},
       "informer: the lockstep.dev/enforce label of namespaces; their labels against an "
       "AnalysisProvider's spec.namespaceSelector"},
      {"webhooks",
       "",
       {"namespaces"},
       {"get"},
       kC,
       {},
       "webhooks/informer_lookups.cc: a namespace not yet in the cache is read (fail closed)"},
      {"webhooks",
       "authorization.k8s.io",
       {"subjectaccessreviews"},
       {"create"},
       kC,
       {},
       "webhooks/kube_authorizer.cc: may this user approve/abort a release, and get the Secret "
       "its spec.registryTags names?"},
      // /metrics over HTTPS (webhooks/metrics/kube_metrics_reviews.cc).
      {"metrics",
       "authentication.k8s.io",
       {"tokenreviews"},
       {"create"},
       kC,
       {},
       "KubeTokenReviewer: whose is the bearer token of a /metrics request?"},
      {"metrics",
       "authorization.k8s.io",
       {"subjectaccessreviews"},
       {"create"},
       kC,
       {},
       "KubeNonResourceAuthorizer: may that user get /metrics?"},
      // Serving certificate, --cert-mode=self (webhooks/kube_cert_store.cc).
      {"certificates",
       "",
       {"secrets"},
       {"get", "update"},
       kO,
       {"{fullname}-webhook-tls"},
       "SecretCertStore: the CA and serving certificate (--cert-secret)"},
      {"certificates",
       "",
       {"secrets"},
       {"create"},
       kO,
       {},
       "SecretCertStore: first start (create cannot be restricted by name)"},
      {"certificates",
       "admissionregistration.k8s.io",
       {"validatingwebhookconfigurations"},
       {"get", "update"},
       kC,
       {"{fullname}"},
       "WebhookConfigCaBundlePatcher: caBundle of --webhook-config"},
      {"certificates",
       "admissionregistration.k8s.io",
       {"mutatingwebhookconfigurations"},
       {"get", "update"},
       kC,
       {"{fullname}"},
       "WebhookConfigCaBundlePatcher: caBundle of --mutating-webhook-config (the ModelRelease "
       "creator webhook)"},
      // Leader election (operator/runtime/leader_election.cc).
      {"leader-election",
       "coordination.k8s.io",
       {"leases"},
       {"get", "update"},
       kO,
       {"lockstep-operator"},
       "LeaderElector: acquire, renew, release"},
      {"leader-election",
       "coordination.k8s.io",
       {"leases"},
       {"create"},
       kO,
       {},
       "LeaderElector: first start (create cannot be restricted by name)"},
  };
  return table;
}

std::string toString(const Grant& g) {
  return (g.where == "*" ? std::string("cluster-wide") : "namespace " + g.where) + ": " +
         (g.group.empty() ? "core" : g.group) + "/" + g.resource + " " + g.verb +
         (g.name.empty() ? "" : " (name " + g.name + ")");
}

std::set<Grant> minimise(const std::set<Grant>& grants) {
  std::set<Grant> out;
  for (const Grant& g : grants) {
    bool covered = false;
    for (const Grant& other : grants) {
      if (covers(other, g)) {
        covered = true;
        break;
      }
    }
    if (!covered) out.insert(g);
  }
  return out;
}

std::set<Grant> expectedGrants(const std::vector<Permission>& table, const Install& install) {
  std::set<Grant> all;
  for (const Permission& p : table) {
    if (!p.feature.empty() && install.features.count(p.feature) == 0) continue;
    std::vector<std::string> places;
    switch (p.scope) {
      case Scope::kCluster:
        places = {"*"};
        break;
      case Scope::kWatchedNamespaces:
        places = install.watchNamespaces.empty() ? std::vector<std::string>{"*"}
                                                 : install.watchNamespaces;
        break;
      case Scope::kOperatorNamespace:
        places = {install.releaseNamespace};
        break;
    }
    std::vector<std::string> names;
    for (const auto& n : p.resourceNames) names.push_back(substitute(n, install));
    if (names.empty()) names.emplace_back();
    for (const auto& where : places)
      for (const auto& r : p.resources)
        for (const auto& v : p.verbs)
          for (const auto& n : names) all.insert({where, p.group, r, v, n});
  }
  return minimise(all);
}

std::set<Grant> grantedTo(const std::vector<json>& objects, const std::string& serviceAccount,
                          const std::string& saNamespace) {
  auto nsOf = [&](const json& o) {
    std::string ns = o.value("/metadata/namespace"_json_pointer, std::string());
    return ns.empty() ? saNamespace : ns;  // rendered without one: the release namespace
  };
  // Roles by (namespace, name), ClusterRoles by name.
  std::map<std::pair<std::string, std::string>, const json*> roles;
  std::map<std::string, const json*> clusterRoles;
  for (const json& o : objects) {
    std::string kind = o.value("kind", "");
    std::string name = o.value("/metadata/name"_json_pointer, std::string());
    if (kind == "Role") roles[{nsOf(o), name}] = &o;
    if (kind == "ClusterRole") clusterRoles[name] = &o;
  }
  std::set<Grant> all;
  for (const json& b : objects) {
    std::string kind = b.value("kind", "");
    if (kind != "RoleBinding" && kind != "ClusterRoleBinding") continue;
    std::string bindingNs = kind == "RoleBinding" ? nsOf(b) : "";
    bool bound = false;
    for (const json& s : b.value("subjects", json::array())) {
      std::string sns = s.value("namespace", bindingNs);
      if (s.value("kind", "") == "ServiceAccount" && s.value("name", "") == serviceAccount &&
          sns == saNamespace)
        bound = true;
    }
    if (!bound) continue;
    const json ref = b.value("roleRef", json::object());
    std::string refKind = ref.value("kind", "");
    std::string refName = ref.value("name", "");
    const json* role = nullptr;
    if (refKind == "ClusterRole" && clusterRoles.count(refName)) role = clusterRoles[refName];
    if (refKind == "Role" && roles.count({bindingNs, refName})) role = roles[{bindingNs, refName}];
    std::string where = kind == "ClusterRoleBinding" ? "*" : bindingNs;
    if (!role) {
      // A role the chart does not render (a built-in one): never in the table.
      all.insert({where, "?", refKind + "/" + refName, "?", ""});
      continue;
    }
    for (const json& rule : role->value("rules", json::array())) {
      auto groups = strings(rule, "apiGroups");
      auto resources = strings(rule, "resources");
      auto verbs = strings(rule, "verbs");
      auto names = strings(rule, "resourceNames");
      if (names.empty()) names.emplace_back();
      if (rule.contains("nonResourceURLs")) {
        for (const auto& u : strings(rule, "nonResourceURLs"))
          for (const auto& v : verbs) all.insert({where, "nonResourceURL", u, v, ""});
      }
      for (const auto& g : groups)
        for (const auto& r : resources)
          for (const auto& v : verbs)
            for (const auto& n : names) all.insert({where, g, r, v, n});
    }
  }
  return minimise(all);
}

std::string markdownTable(const std::vector<Permission>& table) {
  std::ostringstream out;
  out << "| component | API group | resources | verbs | scope | resourceNames | used by |\n";
  out << "|---|---|---|---|---|---|---|\n";
  for (const Permission& p : table) {
    out << "| " << p.component << " | " << (p.group.empty() ? "core" : p.group) << " | "
        << joined(p.resources, ", ") << " | " << joined(p.verbs, ", ") << " | "
        << scopeName(p.scope) << " | "
        << (p.resourceNames.empty() ? "any" : "`" + joined(p.resourceNames, "`, `") + "`") << " | "
        << p.usedBy << " |\n";
  }
  return out.str();
}

}  // namespace lockstep::rbac
