// InformerNamespaceModes: the cache first; a namespace missing from it is read
// from the API server (scripted transport), never taken as unlabelled.
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

}  // namespace
}  // namespace lockstep::webhooks
