// InformerNamespaceModes: the cache first; a namespace missing from it is read
// from the API server (scripted transport), never taken as unlabelled.
// InformerRuntimeEnvs: the view admission decides on, with the revisions, from
// the cache alone.
#include "webhooks/informer_lookups.h"

#include <gtest/gtest.h>

#include "tests/support/fake_transport.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::FakeTransport;

kube::ObjectPtr namespaceObject(const std::string& name, const std::string& mode) {
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  if (!mode.empty()) ns["metadata"]["labels"]["lockstep.dev/enforce"] = mode;
  return std::make_shared<const kube::Object>(ns);
}

class InformerNamespaceModesTest : public ::testing::Test {
 protected:
  kube::Indexer cache_;
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  InformerNamespaceModes modes_{cache_, std::make_shared<kube::Client>(transport_)};
};

TEST_F(InformerNamespaceModesTest, CachedNamespaceNeedsNoApiCall) {
  cache_.upsert(namespaceObject("ml", "warn"));
  cache_.upsert(namespaceObject("plain", ""));
  EXPECT_EQ(*modes_.modeOf("ml"), NamespaceMode::kWarn);
  EXPECT_EQ(*modes_.modeOf("plain"), NamespaceMode::kUnset);
  EXPECT_EQ(transport_->requestCount(), 0u);
}

// A GitOps sync creates the namespace and its pods together: the pod may reach
// the webhook before the namespace reaches the cache.
TEST_F(InformerNamespaceModesTest, MissingNamespaceIsReadFromTheApiServer) {
  transport_->push(FakeTransport::ok(*namespaceObject("fresh", "enforce")));
  StatusOr<NamespaceMode> mode = modes_.modeOf("fresh");
  ASSERT_TRUE(mode.isOk()) << mode.status().toString();
  EXPECT_EQ(*mode, NamespaceMode::kEnforce);
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/fresh");
}

TEST_F(InformerNamespaceModesTest, NamespaceTheApiServerDoesNotKnowIsUnlabelled) {
  transport_->push(FakeTransport::status(404, "NotFound", "namespaces \"gone\" not found"));
  StatusOr<NamespaceMode> mode = modes_.modeOf("gone");
  ASSERT_TRUE(mode.isOk()) << mode.status().toString();
  EXPECT_EQ(*mode, NamespaceMode::kUnset);
}

TEST_F(InformerNamespaceModesTest, FailedReadIsAnErrorNamingTheNamespace) {
  transport_->push(FakeTransport::status(503, "ServiceUnavailable", "etcd is down"));
  StatusOr<NamespaceMode> mode = modes_.modeOf("fresh");
  ASSERT_FALSE(mode.isOk());
  EXPECT_NE(mode.status().toString().find("namespace fresh is not in the informer cache"),
            std::string::npos)
      << mode.status().toString();
}

TEST(InformerNamespaceModesWithoutReader, MissingNamespaceIsAnError) {
  kube::Indexer cache;
  InformerNamespaceModes modes(cache);
  StatusOr<NamespaceMode> mode = modes.modeOf("fresh");
  ASSERT_FALSE(mode.isOk());
  EXPECT_EQ(mode.status().code(), Code::kUnavailable);
  EXPECT_NE(mode.status().message().find("namespace fresh"), std::string::npos);
}

json runtimeEnvObject(int64_t generation, int64_t observed, const std::string& ready) {
  const std::string img1 = "registry.example/torch@sha256:" + std::string(64, '1');
  const std::string img2 = "registry.example/torch@sha256:" + std::string(64, '2');
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "RuntimeEnv"},
          {"metadata", {{"name", "torch"}, {"namespace", "ml"}, {"generation", generation}}},
          {"spec", {{"image", img2}, {"lock", {{"inline", "x"}}}}},
          {"status",
           {{"observedGeneration", observed},
            {"closureHash", "sha256:" + std::string(64, 'b')},
            {"currentRevision", 2},
            {"conditions", {{{"type", "Ready"}, {"status", ready}}}},
            {"revisions",
             {{{"number", 1},
               {"image", img1},
               {"closureHash", "sha256:" + std::string(64, 'a')},
               {"pinnedBy", {"v1", "v2"}},
               {"firstResolved", "2026-11-29T10:00:00Z"}},
              {{"number", 2}, {"image", img2}, {"closureHash", "sha256:" + std::string(64, 'b')}},
              {{"image", "malformed: no number"}}}}}}};
}

TEST(InformerRuntimeEnvs, ViewCarriesTheRevisionsFromTheCacheWithoutAnApiCall) {
  kube::Indexer cache;
  cache.upsert(std::make_shared<const kube::Object>(runtimeEnvObject(3, 3, "True")));
  InformerRuntimeEnvs envs(cache);
  std::optional<RuntimeEnvView> v = envs.find("ml", "torch");
  ASSERT_TRUE(v.has_value());
  EXPECT_TRUE(v->ready);
  EXPECT_EQ(v->name, "torch");
  EXPECT_EQ(v->ns, "ml");
  EXPECT_EQ(v->closureHash, "sha256:" + std::string(64, 'b'));
  EXPECT_EQ(v->image, "registry.example/torch@sha256:" + std::string(64, '2'));
  EXPECT_EQ(v->currentRevision, 2);
  ASSERT_EQ(v->revisions.size(), 2u);  // the malformed entry is skipped
  EXPECT_EQ(v->revisions[0].number, 1);
  EXPECT_EQ(v->revisions[0].closureHash, "sha256:" + std::string(64, 'a'));
  EXPECT_EQ(v->revisions[0].pinnedBy, (std::vector<std::string>{"v1", "v2"}));
  EXPECT_TRUE(v->revisions[1].pinnedBy.empty());
  EXPECT_FALSE(envs.find("ml", "other").has_value());
}

TEST(InformerRuntimeEnvs, StatusOfAnOlderGenerationIsNotReadyButKeepsItsRevisions) {
  kube::Indexer cache;
  cache.upsert(std::make_shared<const kube::Object>(runtimeEnvObject(4, 3, "True")));
  std::optional<RuntimeEnvView> v = InformerRuntimeEnvs(cache).find("ml", "torch");
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->ready);
  EXPECT_EQ(v->revisions.size(), 2u);  // pinned revisions stay admissible for their releases
  cache.upsert(std::make_shared<const kube::Object>(runtimeEnvObject(3, 3, "False")));
  EXPECT_FALSE(InformerRuntimeEnvs(cache).find("ml", "torch")->ready);
}

// The model's prod for the Service port rule: the Model's status.prod, its
// spec.port, else the port of Lockstep's Service, else that release's serving port.
kube::ObjectPtr shared(json o) { return std::make_shared<const kube::Object>(std::move(o)); }
json lockstepLabels() {
  return {{"lockstep.dev/model", "gpt2"}, {"app.kubernetes.io/managed-by", "lockstep"}};
}

TEST(InformerModelProds, TheModelNamesTheReleaseAndThePort) {
  kube::Indexer models, services, releases;
  InformerModelProds prods(models, services, releases);
  EXPECT_FALSE(prods.prodOf("ml", "gpt2")) << "no Model: no prod";
  json model = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "Model"},
                {"metadata", {{"name", "gpt2"}, {"namespace", "ml"}}},
                {"status", {{"canary", {{"release", "v1"}}}}}};
  models.upsert(shared(model));
  EXPECT_FALSE(prods.prodOf("ml", "gpt2")) << "nothing promoted yet";
  model["status"]["prod"] = {{"release", "v1"}};
  models.upsert(shared(model));
  json release = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "v1"}, {"namespace", "ml"}}},
      {"spec",
       {{"model", "gpt2"},
        {"stages",
         json::array({{{"name", "prod"}, {"serving", {{"port", 9000}, {"replicas", 2}}}}})}}}};
  releases.upsert(shared(release));
  auto p = prods.prodOf("ml", "gpt2");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->release, "v1");
  EXPECT_EQ(p->port, 9000) << "no Service: the promoted release's port";
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "gpt2"}, {"namespace", "ml"}, {"labels", lockstepLabels()}}},
              {"spec", {{"ports", json::array({{{"port", 8080}}})}}}};
  services.upsert(shared(svc));
  EXPECT_EQ(prods.prodOf("ml", "gpt2")->port, 8080) << "the Service's port wins";
  model["spec"] = {{"port", 7000}};
  models.upsert(shared(model));
  EXPECT_EQ(prods.prodOf("ml", "gpt2")->port, 7000) << "the Model's spec.port wins";
  EXPECT_FALSE(prods.prodOf("other", "gpt2"));
}

TEST(InformerAnalysisProviders, ClusterScopedByName) {
  kube::Indexer cache;
  cache.upsert(shared({{"apiVersion", "lockstep.dev/v1alpha1"},
                       {"kind", "AnalysisProvider"},
                       {"metadata", {{"name", "prometheus-main"}}}}));
  InformerAnalysisProviders providers(cache);
  EXPECT_TRUE(providers.exists("prometheus-main"));
  EXPECT_FALSE(providers.exists("promethues-main"));
}

// The serving label's owner chain: a Deployment the operator has just made (the
// first stable of a model at its handover) can miss the webhook's cache while
// its ReplicaSet's first pod is reviewed; it is read once from the API server,
// never taken as "does not exist" (canary_cluster_test's handovers were refused
// with AdmissionRefused under load). A Model is never read (no get on Models).
TEST(InformerServingObjects, ADeploymentMissingFromTheCacheIsReadFromTheApiServer) {
  kube::Indexer replicaSets, deployments, models;
  auto transport = std::make_shared<FakeTransport>();
  json dep = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", "gpt2-stable"}, {"namespace", "ml"}, {"uid", "dep-1"}}}};
  transport->push(FakeTransport::ok(dep));
  InformerServingObjects objects(replicaSets, deployments, models,
                                 std::make_shared<kube::Client>(transport));
  StatusOr<kube::ObjectPtr> got = objects.find("ml", "Deployment", "gpt2-stable");
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_NE(*got, nullptr) << "a Deployment the API server has exists";
  EXPECT_EQ(kube::uid(**got), "dep-1");
  auto reqs = transport->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/apis/apps/v1/namespaces/ml/deployments/gpt2-stable");

  StatusOr<kube::ObjectPtr> model = objects.find("ml", "Model", "gpt2");
  ASSERT_TRUE(model.isOk());
  EXPECT_EQ(*model, nullptr);
  EXPECT_EQ(transport->requests().size(), 1u) << "no read of a Model";
}

}  // namespace
}  // namespace lockstep::webhooks
