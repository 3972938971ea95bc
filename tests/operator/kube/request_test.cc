// Requests as values: golden URIs, headers and bodies, no socket.
#include "operator/kube/request.h"

#include <gtest/gtest.h>

namespace lockstep::kube {
namespace {

const Resource kWidgets{"test.lockstep.dev", "v1", "widgets", "Widget", true};

TEST(RequestTest, CorePathsForNamespacedAndClusterScoped) {
  EXPECT_EQ(resourcePath(resources::kPods, "ml", "p1"), "/api/v1/namespaces/ml/pods/p1");
  EXPECT_EQ(resourcePath(resources::kPods, "", ""), "/api/v1/pods");
  EXPECT_EQ(resourcePath(resources::kNodes, "ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(resourcePath(resources::kDeployments, "ml", "d", "scale"),
            "/apis/apps/v1/namespaces/ml/deployments/d/scale");
  EXPECT_EQ(resourcePath(kWidgets, "ns", "w", "status"),
            "/apis/test.lockstep.dev/v1/namespaces/ns/widgets/w/status");
}

TEST(RequestTest, PathSegmentsAreEscaped) {
  EXPECT_EQ(escapePathSegment("a/b c%d"), "a%2Fb%20c%25d");
  EXPECT_EQ(escapePathSegment("system:node:x@y"), "system:node:x@y");
  EXPECT_EQ(resourcePath(resources::kConfigMaps, "n s", "a/b"),
            "/api/v1/namespaces/n%20s/configmaps/a%2Fb");
}

TEST(RequestTest, GetGolden) {
  Request r = getRequest(resources::kConfigMaps, "default", "cfg");
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.uri(), "/api/v1/namespaces/default/configmaps/cfg");
  EXPECT_EQ(r.header("accept"), "application/json");
  EXPECT_TRUE(r.body.empty());
  EXPECT_FALSE(r.watch);
}

TEST(RequestTest, ListGoldenWithSelectorsAndPaging) {
  ListOptions o;
  o.labelSelector = "app=web,tier in (a,b)";
  o.fieldSelector = "metadata.name=x";
  o.limit = 500;
  o.resourceVersion = "0";
  Request r = listRequest(resources::kPods, "ml", o);
  EXPECT_EQ(r.uri(),
            "/api/v1/namespaces/ml/pods?fieldSelector=metadata.name%3Dx"
            "&labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&limit=500&resourceVersion=0");
  o.continueToken = "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==";
  r = listRequest(resources::kPods, "ml", o);
  // A continuation carries no resourceVersion (the server rejects both together).
  EXPECT_EQ(
      r.uri(),
      "/api/v1/namespaces/ml/pods?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%3D%3D"
      "&fieldSelector=metadata.name%3Dx&labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&limit=500");
}

TEST(RequestTest, WatchGolden) {
  WatchOptions o;
  o.resourceVersion = "12345";
  o.timeoutSeconds = 300;
  Request r = watchRequest(kWidgets, "", o);
  EXPECT_TRUE(r.watch);
  EXPECT_EQ(r.uri(),
            "/apis/test.lockstep.dev/v1/widgets?allowWatchBookmarks=true&resourceVersion=12345"
            "&timeoutSeconds=300&watch=true");
}

// A metadata-only list or watch asks for PartialObjectMetadata (as client-go's
// metadata informers), with plain JSON as the fallback; a selector without a
// label ("!key") is escaped.
TEST(RequestTest, MetadataOnlyListAndWatchAskForPartialObjectMetadata) {
  ListOptions l;
  l.labelSelector = "!lockstep.dev/model";
  l.metadataOnly = true;
  Request r = listRequest(resources::kConfigMaps, "ml", l);
  EXPECT_EQ(r.uri(), "/api/v1/namespaces/ml/configmaps?labelSelector=%21lockstep.dev%2Fmodel");
  EXPECT_EQ(r.header("Accept"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json");
  WatchOptions w;
  w.metadataOnly = true;
  r = watchRequest(resources::kConfigMaps, "ml", w);
  EXPECT_EQ(r.header("Accept"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  // Not asked: the whole objects.
  EXPECT_EQ(listRequest(resources::kConfigMaps, "ml", {}).header("Accept"), "application/json");
  EXPECT_EQ(watchRequest(resources::kConfigMaps, "ml", {}).header("Accept"), "application/json");
}

TEST(RequestTest, CreateUpdateGolden) {
  nlohmann::json obj = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}};
  Request c = createRequest(resources::kConfigMaps, "ns", obj, {"lockstep"});
  EXPECT_EQ(c.method, "POST");
  EXPECT_EQ(c.uri(), "/api/v1/namespaces/ns/configmaps?fieldManager=lockstep");
  EXPECT_EQ(c.header("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(c.body), obj);
  Request u = updateRequest(kWidgets, "ns", "w", obj, "status");
  EXPECT_EQ(u.method, "PUT");
  EXPECT_EQ(u.uri(), "/apis/test.lockstep.dev/v1/namespaces/ns/widgets/w/status");
}

TEST(RequestTest, DeleteCarriesPreconditionsAndPropagation) {
  DeleteOptions o;
  o.propagationPolicy = "Foreground";
  o.preconditions.uid = "u-1";
  o.preconditions.resourceVersion = "42";
  o.gracePeriodSeconds = 0;
  Request r = deleteRequest(resources::kJobs, "ml", "gate");
  EXPECT_EQ(r.uri(), "/apis/batch/v1/namespaces/ml/jobs/gate");
  r = deleteRequest(resources::kJobs, "ml", "gate", o);
  EXPECT_EQ(r.method, "DELETE");
  auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["kind"], "DeleteOptions");
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["preconditions"]["uid"], "u-1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "42");
  EXPECT_EQ(body["gracePeriodSeconds"], 0);
}

TEST(RequestTest, MergePatchGolden) {
  Request r = mergePatchRequest(kWidgets, "ns", "w", {{"status", {{"phase", "Ready"}}}}, "status",
                                {"lockstep"});
  EXPECT_EQ(r.method, "PATCH");
  EXPECT_EQ(r.uri(),
            "/apis/test.lockstep.dev/v1/namespaces/ns/widgets/w/status?fieldManager=lockstep");
  EXPECT_EQ(r.header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(r.body, R"({"status":{"phase":"Ready"}})");
}

TEST(RequestTest, ServerSideApplyGolden) {
  ApplyOptions o;
  o.fieldManager = "lockstep";
  o.force = true;
  Request r = applyRequest(resources::kDeployments, "ml", "serve",
                           {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}}, o);
  EXPECT_EQ(r.method, "PATCH");
  EXPECT_EQ(r.uri(),
            "/apis/apps/v1/namespaces/ml/deployments/serve?fieldManager=lockstep&force=true");
  EXPECT_EQ(r.header("Content-Type"), "application/apply-patch+yaml");
  o.force = false;
  o.dryRun = true;
  r = applyRequest(resources::kDeployments, "ml", "serve", {}, o);
  EXPECT_EQ(r.uri(),
            "/apis/apps/v1/namespaces/ml/deployments/serve?dryRun=All&fieldManager=lockstep");
}

TEST(RequestTest, DescribeNeverIncludesHeaders) {
  Request r = getRequest(resources::kSecrets, "ns", "s");
  r.headers.emplace_back("Authorization", "Bearer secret-token");
  EXPECT_EQ(r.describe(), "GET /api/v1/namespaces/ns/secrets/s");
}

}  // namespace
}  // namespace lockstep::kube
