// The API permissions lockstep-operator needs: one table, one row per
// (component, group, resources, verbs, scope, resourceNames), each naming the
// code that uses it. The chart's RBAC (helm/lockstep/templates/rbac.yaml) is
// checked against this table both ways (tests/helm/rbac_cluster_test.cc), and
// docs/security.md's RBAC table is generated from it (tests/rbac). A change to
// what the code reads or writes changes this table first.
// Pure: nlohmann only. Thread-safety: constants and functions.
#pragma once

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::rbac {

enum class Scope {
  kCluster,            // a cluster-scoped resource (or a review): always the ClusterRole
  kWatchedNamespaces,  // every namespace (cluster install) or each of --watch-namespaces
  kOperatorNamespace,  // the operator's own namespace (the Helm release namespace)
};

struct Permission {
  std::string component;  // runtimeenv-controller, modelrelease-controller, webhooks, ...
  std::string group;      // "" for the core group
  std::vector<std::string> resources;
  std::vector<std::string> verbs;
  Scope scope = Scope::kWatchedNamespaces;
  // Templates: "{fullname}" is the Helm release's full name (the chart's
  // `lockstep.fullname`). Empty: any name (list, watch and create cannot be
  // restricted by name).
  std::vector<std::string> resourceNames;
  std::string usedBy;  // the code that makes the call
  // Empty: always granted. Else the chart value that turns the row on
  // ("registryTags.enabled"); the install lists the values it set in `features`.
  std::string feature{};
};

// Every permission the operator's ServiceAccount holds, and nothing else.
const std::vector<Permission>& operatorPermissions();

// One grant, expanded: `where` is "*" for cluster-wide (a ClusterRole bound by a
// ClusterRoleBinding) or a namespace; `name` is "" for any name.
struct Grant {
  std::string where;
  std::string group;
  std::string resource;
  std::string verb;
  std::string name;
  auto tie() const { return std::tie(where, group, resource, verb, name); }
  bool operator<(const Grant& o) const { return tie() < o.tie(); }
  bool operator==(const Grant& o) const { return tie() == o.tie(); }
};
std::string toString(const Grant& g);

struct Install {
  std::string fullname;                      // the chart's lockstep.fullname
  std::string releaseNamespace;              // the operator's namespace
  std::vector<std::string> watchNamespaces;  // empty: cluster install
  std::set<std::string> features{};          // chart values set to true (Permission::feature)
};

// The table expanded for one install, minimised (a grant another grant covers
// is dropped: cluster-wide covers every namespace, any name covers one name).
std::set<Grant> expectedGrants(const std::vector<Permission>& table, const Install& install);

// What `objects` (rendered Roles, ClusterRoles and their bindings, as JSON)
// grant the ServiceAccount `serviceAccount` in `saNamespace`, minimised the
// same way. A rule with a wildcard ("*") is kept verbatim so it never matches
// the table.
std::set<Grant> grantedTo(const std::vector<nlohmann::json>& objects,
                          const std::string& serviceAccount, const std::string& saNamespace);

// Drops every grant covered by another one.
std::set<Grant> minimise(const std::set<Grant>& grants);

// The table as Markdown (docs/security.md, section RBAC).
std::string markdownTable(const std::vector<Permission>& table);

}  // namespace lockstep::rbac
