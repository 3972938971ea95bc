#include "api/v1alpha1/runtime_env.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/resources.h"
#include "tests/support/builders.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

json readyStatus(int64_t observedGeneration, const std::string& ready) {
  return {{"observedGeneration", observedGeneration},
          {"closureHash", "sha256:" + std::string(64, 'c')},
          {"packageCount", 3},
          {"compatibleNodes", 2},
          {"conditions", {{{"type", "Ready"}, {"status", ready}, {"reason", "Resolved"}}}}};
}

TEST(RuntimeEnvView, DecodesSpecAndStatus) {
  json o = testing::runtimeEnv("torch")
               .image("r/x@sha256:" + std::string(64, 'a'))
               .configMapLock("locks", "uv.lock")
               .allowUnhashed()
               .generation(3)
               .status(readyStatus(3, "True"))
               .build();
  o["spec"]["lock"]["platform"] = "linux-64";
  o["spec"]["accelerator"] = {{"cuda", "12.4"}};
  RuntimeEnv r = decodeRuntimeEnv(o);
  EXPECT_EQ(r.meta.name, "torch");
  EXPECT_EQ(r.meta.ns, "ml");
  EXPECT_EQ(r.meta.generation, 3);
  EXPECT_FALSE(r.spec.lock.inlineText.has_value());
  ASSERT_TRUE(r.spec.lock.configMapRef.has_value());
  EXPECT_EQ(r.spec.lock.configMapRef->key, "uv.lock");
  EXPECT_EQ(r.spec.lock.platform, "linux-64");
  EXPECT_FALSE(r.spec.lock.format.has_value());
  EXPECT_TRUE(r.spec.allowUnhashed);
  EXPECT_EQ(r.spec.accelerator.cuda, "12.4");
  EXPECT_EQ(r.spec.accelerator.minDriver, "");
  EXPECT_EQ(r.status.packageCount, 3);
  EXPECT_EQ(r.status.compatibleNodes, 2);
  EXPECT_EQ(r.configMapKey(), "ml/locks");
  EXPECT_EQ(indexByConfigMap(o), std::vector<std::string>{"ml/locks"});
  EXPECT_TRUE(r.ready());
}

TEST(RuntimeEnvView, ReadyOnlyForTheCurrentGenerationWithAHash) {
  auto ready = [](const json& o) { return decodeRuntimeEnv(o).ready(); };
  EXPECT_TRUE(ready(testing::runtimeEnv("t").generation(2).status(readyStatus(2, "True")).build()));
  EXPECT_FALSE(
      ready(testing::runtimeEnv("t").generation(3).status(readyStatus(2, "True")).build()));
  EXPECT_FALSE(
      ready(testing::runtimeEnv("t").generation(2).status(readyStatus(2, "False")).build()));
  json noHash = readyStatus(2, "True");
  noHash.erase("closureHash");
  EXPECT_FALSE(ready(testing::runtimeEnv("t").generation(2).status(noHash).build()));
  EXPECT_FALSE(ready(testing::runtimeEnv("t").build()));
}

TEST(RuntimeEnvView, ToleratesWrongTypesAndMissingFields) {
  for (const json& o : {json(nullptr), json::array(), json{{"spec", "x"}},
                        json{{"spec", {{"lock", {{"inline", 5}, {"configMapRef", "cm"}}}}},
                             {"status", {{"conditions", "Ready"}, {"packageCount", "3"}}}}}) {
    RuntimeEnv r = decodeRuntimeEnv(o);
    EXPECT_FALSE(r.ready());
    EXPECT_FALSE(r.spec.lock.inlineText.has_value());
    EXPECT_EQ(r.status.packageCount, 0);
    EXPECT_EQ(r.configMapKey(), "");
  }
}

TEST(Resources, PathsOfLockstepKinds) {
  EXPECT_EQ(kRuntimeEnvs.apiVersion(), "lockstep.dev/v1alpha1");
  EXPECT_EQ(kModelReleases.kind, "ModelRelease");
  EXPECT_TRUE(kModelReleases.namespaced);
  EXPECT_EQ(kNodes.kind, "Node");
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
