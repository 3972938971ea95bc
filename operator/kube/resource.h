// Resource: the identity of an API resource (group, version, plural, kind,
// scope) and the URL path of its collection. A handful of well-known
// resources are predefined; CRDs build their own value.
// Thread-safety: a value.
#pragma once

#include <string>

namespace lockstep::kube {

struct Resource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lowercase: "pods"
  std::string kind;      // "Pod"
  bool namespaced = true;

  // "v1" or "apps/v1"
  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "core/v1/pods" style identity for logs and metric labels: "pods.v1." / "deployments.v1.apps"
  std::string id() const { return resource + "." + version + "." + group; }
  bool operator==(const Resource& o) const {
    return group == o.group && version == o.version && resource == o.resource;
  }
};

namespace resources {
inline const Resource kNamespaces{"", "v1", "namespaces", "Namespace", false};
inline const Resource kNodes{"", "v1", "nodes", "Node", false};
inline const Resource kPods{"", "v1", "pods", "Pod", true};
inline const Resource kServices{"", "v1", "services", "Service", true};
inline const Resource kConfigMaps{"", "v1", "configmaps", "ConfigMap", true};
inline const Resource kSecrets{"", "v1", "secrets", "Secret", true};
inline const Resource kEvents{"", "v1", "events", "Event", true};
inline const Resource kDeployments{"apps", "v1", "deployments", "Deployment", true};
inline const Resource kReplicaSets{"apps", "v1", "replicasets", "ReplicaSet", true};
inline const Resource kJobs{"batch", "v1", "jobs", "Job", true};
inline const Resource kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true};
inline const Resource kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false};
inline const Resource kValidatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                       "validatingwebhookconfigurations",
                                                       "ValidatingWebhookConfiguration", false};
}  // namespace resources

}  // namespace lockstep::kube
