// rbac/permissions: expansion for both installs, reading rendered RBAC, and the
// docs table. The chart itself is compared with the table against a real API
// server in tests/helm/rbac_cluster_test.cc.
#include "rbac/permissions.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#ifndef LOCKSTEP_SOURCE_DIR
#error "LOCKSTEP_SOURCE_DIR must be defined"
#endif

namespace lockstep::rbac {
namespace {

using nlohmann::json;

bool has(const std::set<Grant>& s, const Grant& g) { return s.count(g) > 0; }

TEST(Permissions, ClusterInstallGrantsWatchedRowsClusterWide) {
  auto g = expectedGrants(operatorPermissions(), {"lockstep", "lockstep-system", {}});
  EXPECT_TRUE(has(g, {"*", "lockstep.dev", "runtimeenvs/status", "patch", ""}));
  EXPECT_TRUE(has(g, {"*", "admissionregistration.k8s.io", "validatingwebhookconfigurations",
                      "update", "lockstep"}));
  EXPECT_TRUE(has(g, {"*", "admissionregistration.k8s.io", "mutatingwebhookconfigurations",
                      "update", "lockstep"}));
  EXPECT_FALSE(
      has(g, {"*", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "update", ""}));
  EXPECT_TRUE(has(g, {"lockstep-system", "", "secrets", "update", "lockstep-webhook-tls"}));
  // AnalysisProviders' token Secrets: get (never list) in the operator's namespace only; it
  // covers the serving certificate's get by name.
  EXPECT_TRUE(has(g, {"lockstep-system", "", "secrets", "get", ""}));
  EXPECT_FALSE(has(g, {"lockstep-system", "", "secrets", "get", "lockstep-webhook-tls"}));
  EXPECT_FALSE(has(g, {"*", "", "secrets", "get", ""}));
  EXPECT_TRUE(has(g, {"*", "lockstep.dev", "analysisproviders", "watch", ""}));
  EXPECT_FALSE(has(g, {"*", "lockstep.dev", "analysisproviders", "patch", ""}));
  EXPECT_TRUE(has(g, {"*", "lockstep.dev", "analysistemplates", "watch", ""}));
  EXPECT_FALSE(has(g, {"*", "lockstep.dev", "analysistemplates", "patch", ""}));
  EXPECT_TRUE(
      has(g, {"lockstep-system", "coordination.k8s.io", "leases", "update", "lockstep-operator"}));
  // The start-up probe's Job create is covered by the cluster-wide one.
  EXPECT_FALSE(has(g, {"lockstep-system", "batch", "jobs", "create", ""}));
  // Never: the spec of Lockstep's kinds, pods, any Secret by list.
  EXPECT_FALSE(has(g, {"*", "lockstep.dev", "runtimeenvs", "update", ""}));
  EXPECT_FALSE(has(g, {"*", "", "pods", "create", ""}));
  EXPECT_FALSE(has(g, {"lockstep-system", "", "secrets", "list", ""}));
}

TEST(Permissions, NamespacedInstallGrantsWatchedRowsPerNamespace) {
  auto g = expectedGrants(operatorPermissions(), {"lockstep", "lockstep-system", {"ml-a", "ml-b"}});
  for (const char* ns : {"ml-a", "ml-b"}) {
    EXPECT_TRUE(has(g, {ns, "apps", "deployments", "create", ""})) << ns;
    EXPECT_TRUE(has(g, {ns, "batch", "jobs", "delete", ""})) << ns;
  }
  for (const Grant& x : g) {
    if (x.where == "*") {
      EXPECT_TRUE(x.resource == "nodes" || x.resource == "namespaces" ||
                  x.resource == "validatingwebhookconfigurations" ||
                  x.resource == "mutatingwebhookconfigurations" ||
                  x.resource == "subjectaccessreviews" || x.resource == "tokenreviews" ||
                  x.resource == "signingconfigs" || x.resource == "trustpolicies" ||
                  x.resource == "clusterprofiles" || x.resource == "analysisproviders" ||
                  x.resource == "analysisproviders/status" || x.resource == "analysistemplates")
          << toString(x);
    }
  }
  EXPECT_TRUE(has(g, {"lockstep-system", "batch", "jobs", "create", ""}));
  EXPECT_TRUE(has(g, {"lockstep-system", "", "secrets", "get", ""}));
  EXPECT_TRUE(has(g, {"lockstep-system", "", "configmaps", "get", ""}));
}

// Registry stage tags: get on Secrets only when the chart value turns it on.
TEST(Permissions, SecretReadForRegistryTagsIsOptIn) {
  auto off = expectedGrants(operatorPermissions(), {"lockstep", "lockstep-system", {}});
  EXPECT_FALSE(has(off, {"*", "", "secrets", "get", ""}));
  auto on = expectedGrants(operatorPermissions(),
                           {"lockstep", "lockstep-system", {}, {"registryTags.enabled"}});
  EXPECT_TRUE(has(on, {"*", "", "secrets", "get", ""}));
  EXPECT_FALSE(has(on, {"*", "", "secrets", "list", ""}));
  auto namespaced = expectedGrants(
      operatorPermissions(), {"lockstep", "lockstep-system", {"ml-a"}, {"registryTags.enabled"}});
  EXPECT_TRUE(has(namespaced, {"ml-a", "", "secrets", "get", ""}));
  EXPECT_FALSE(has(namespaced, {"*", "", "secrets", "get", ""}));
}

TEST(Permissions, MinimiseDropsCoveredGrantsOnly) {
  std::set<Grant> in = {{"*", "", "pods", "list", ""},
                        {"ns", "", "pods", "list", ""},
                        {"ns", "", "secrets", "get", ""},
                        {"ns", "", "secrets", "get", "tls"},
                        {"other", "", "secrets", "get", "tls"}};
  std::set<Grant> want = {{"*", "", "pods", "list", ""},
                          {"ns", "", "secrets", "get", ""},
                          {"other", "", "secrets", "get", "tls"}};
  EXPECT_EQ(minimise(in), want);
}

TEST(Permissions, ReadsOnlyWhatIsBoundToTheServiceAccount) {
  json sa = {{"kind", "ServiceAccount"}, {"name", "lockstep"}, {"namespace", "sys"}};
  std::vector<json> objects = {
      {{"kind", "ClusterRole"},
       {"metadata", {{"name", "cr"}}},
       {"rules", {{{"apiGroups", {""}}, {"resources", {"nodes"}}, {"verbs", {"list"}}}}}},
      {{"kind", "ClusterRoleBinding"},
       {"metadata", {{"name", "crb"}}},
       {"roleRef", {{"kind", "ClusterRole"}, {"name", "cr"}}},
       {"subjects", {sa}}},
      {{"kind", "Role"},
       {"metadata", {{"name", "r"}, {"namespace", "ml"}}},
       {"rules",
        {{{"apiGroups", {""}},
          {"resources", {"secrets"}},
          {"resourceNames", {"a", "b"}},
          {"verbs", {"get"}}}}}},
      {{"kind", "RoleBinding"},
       {"metadata", {{"name", "rb"}, {"namespace", "ml"}}},
       {"roleRef", {{"kind", "Role"}, {"name", "r"}}},
       {"subjects", {sa}}},
      // Bound to someone else: not the operator's.
      {{"kind", "ClusterRole"},
       {"metadata", {{"name", "other"}}},
       {"rules", {{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}}}}},
      {{"kind", "ClusterRoleBinding"},
       {"metadata", {{"name", "other"}}},
       {"roleRef", {{"kind", "ClusterRole"}, {"name", "other"}}},
       {"subjects", {{{"kind", "ServiceAccount"}, {"name", "lockstep"}, {"namespace", "x"}}}}},
      // A built-in role the chart does not render: reported, so it never matches.
      {{"kind", "RoleBinding"},
       {"metadata", {{"name", "admin"}, {"namespace", "ml"}}},
       {"roleRef", {{"kind", "ClusterRole"}, {"name", "admin"}}},
       {"subjects", {sa}}},
  };
  std::set<Grant> want = {{"*", "", "nodes", "list", ""},
                          {"ml", "", "secrets", "get", "a"},
                          {"ml", "", "secrets", "get", "b"},
                          {"ml", "?", "ClusterRole/admin", "?", ""}};
  EXPECT_EQ(grantedTo(objects, "lockstep", "sys"), want);
}

// docs/security.md carries the table as generated from the code.
TEST(Permissions, SecurityDocListsTheTable) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/security.md");
  ASSERT_TRUE(in) << "docs/security.md missing";
  std::stringstream doc;
  doc << in.rdbuf();
  std::string table = markdownTable(operatorPermissions());
  EXPECT_NE(doc.str().find(table), std::string::npos)
      << "docs/security.md's RBAC table differs from rbac/permissions.cc; paste:\n"
      << table;
}

}  // namespace
}  // namespace lockstep::rbac
