// Tests of the model's serving objects (controllers/modelrelease/prod/serving_objects.h).
#include "controllers/modelrelease/prod/serving_objects.h"

#include <ctime>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons, CanarySpec
using nlohmann::json;

const std::string kHash = "sha256:" + std::string(64, 'a');
const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');

ServingRelease servingRelease() {
  return {"gpt2-v2",
          kPackage,
          kHash,
          "torch",
          kImage,
          {{"spec",
            {{"containers", json::array({{{"name", "server"}, {"args", {"--port", "8080"}}}})}}}}};
}

TEST(CanaryObjects, DeploymentRunsThePackageByDigestOnTheValidatedRuntime) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  auto built = buildServingDeployment(in, kTrackCanary, servingRelease(), 3);
  ASSERT_TRUE(built.isOk()) << built.status().toString();
  const json& d = *built;
  EXPECT_EQ(d["metadata"]["name"], "gpt2-canary");
  EXPECT_EQ(d["metadata"]["labels"]["lockstep.dev/track"], "canary");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["kind"], "Model");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["apiVersion"], "lockstep.dev/v1alpha1");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["name"], "gpt2");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["uid"], "model-uid");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(d["spec"]["replicas"], 3);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
  EXPECT_EQ(d["spec"]["selector"]["matchLabels"]["lockstep.dev/track"], "canary");
  const json& t = d["spec"]["template"];
  EXPECT_EQ(t["metadata"]["labels"]["lockstep.dev/model"], "gpt2");
  EXPECT_EQ(t["metadata"]["labels"]["lockstep.dev/release"], "gpt2-v2");
  EXPECT_EQ(t["metadata"]["labels"]["lockstep.dev/runtime-env"], "torch");
  EXPECT_EQ(t["metadata"]["annotations"]["lockstep.dev/closure-hash"], kHash);
  const json& c = t["spec"]["containers"][0];
  EXPECT_EQ(c["image"], kImage);
  EXPECT_EQ(c["volumeMounts"][0]["readOnly"], true);
  EXPECT_EQ(t["spec"]["volumes"][0]["image"]["reference"], kPackage);
  // Every selector label is on the pods.
  for (const auto& [k, v] : d["spec"]["selector"]["matchLabels"].items())
    EXPECT_EQ(t["metadata"]["labels"][k], v) << k;
  json svc = buildModelService(in);
  EXPECT_EQ(svc["metadata"]["name"], "gpt2");
  for (const auto& [k, v] : svc["spec"]["selector"].items())
    EXPECT_EQ(t["metadata"]["labels"][k], v) << k;
  EXPECT_FALSE(svc["spec"]["selector"].contains("lockstep.dev/track")) << "both tracks serve";
}

// The Service as the API server returns it: what was applied, plus defaulted fields.
json storedService(json applied) {
  applied["metadata"]["uid"] = "svc-uid";
  applied["metadata"]["resourceVersion"] = "42";
  applied["spec"]["clusterIP"] = "10.0.0.17";
  applied["spec"]["type"] = "ClusterIP";
  applied["spec"]["sessionAffinity"] = "None";
  applied["status"] = {{"loadBalancer", json::object()}};
  return applied;
}

TEST(CanaryObjects, AServiceThatHoldsEverythingWantedIsNotWrittenAgain) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  const json want = buildModelService(in);
  EXPECT_TRUE(serviceHolds(want, storedService(want)));

  json edited = storedService(want);
  edited["spec"]["selector"]["app.kubernetes.io/component"] = "other";
  EXPECT_FALSE(serviceHolds(want, edited)) << "an edited selector is put back";
  edited = storedService(want);
  edited["spec"]["ports"][0]["targetPort"] = 9000;
  EXPECT_FALSE(serviceHolds(want, edited));
  edited = storedService(want);
  edited["spec"]["ports"].push_back({{"name", "extra"}, {"port", 9090}});
  EXPECT_FALSE(serviceHolds(want, edited)) << "a port added by hand goes";
  edited = storedService(want);
  edited["metadata"]["labels"].erase("app.kubernetes.io/managed-by");
  EXPECT_FALSE(serviceHolds(want, edited));

  // Written before the Model existed (no owner reference): the Model's reference is added.
  ServingObjectsInput before = in;
  before.modelUid.clear();
  const json early = storedService(buildModelService(before));
  EXPECT_TRUE(serviceHolds(buildModelService(before), early));
  EXPECT_FALSE(serviceHolds(want, early));
  // A re-created Model (another uid) is not this Service's owner.
  ServingObjectsInput other = in;
  other.modelUid = "another-model";
  EXPECT_FALSE(serviceHolds(buildModelService(other), storedService(want)));
  // Owned by the Model, but another owner was added: ours is compared, the list differs.
  json twoOwners = storedService(want);
  twoOwners["metadata"]["ownerReferences"].push_back({{"kind", "ConfigMap"}, {"uid", "x"}});
  EXPECT_FALSE(serviceHolds(want, twoOwners));
}

TEST(CanaryObjects, DrainStrategyInitContainerModeAndForeignImage) {
  ServingObjectsInput in{
      "gpt2", "ml", 8080, CapacityMode::kDrain, PackageMount::kInitContainer, {"sh", "-c", "fetch"},
      ""};
  auto built = buildServingDeployment(in, kTrackStable, servingRelease(), 4);
  ASSERT_TRUE(built.isOk()) << built.status().toString();
  const json& d = *built;
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1);
  EXPECT_TRUE(d["metadata"]["ownerReferences"].empty());
  EXPECT_EQ(d["spec"]["template"]["spec"]["initContainers"][0]["name"], "lockstep-fetch-package");
  EXPECT_EQ(d["spec"]["template"]["spec"]["initContainers"][0]["image"], kImage);
  auto r = servingRelease();
  r.podTemplate["spec"]["containers"][0]["image"] = "docker.io/library/python:3.12";
  auto bad = buildServingDeployment(in, kTrackStable, r, 4);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("names image"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace lockstep::controllers

namespace lockstep::controllers {
namespace {

// The serving label (docs/rollouts.md "Which pods are prod"): on every pod
// template, never in a Deployment's (immutable) selector; in the Service's
// selector once selectServingLabel says no pod would lose its traffic by it.
TEST(ServingLabel, OnTheTemplatesAndInTheServiceSelectorWhenSelectable) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  auto built = buildServingDeployment(in, kTrackStable, servingRelease(), 2);
  ASSERT_TRUE(built.isOk());
  EXPECT_EQ((*built)["spec"]["template"]["metadata"]["labels"]["lockstep.dev/serving"], "true");
  EXPECT_FALSE((*built)["spec"]["selector"]["matchLabels"].contains("lockstep.dev/serving"));
  EXPECT_EQ(buildModelService(in)["spec"]["selector"]["lockstep.dev/serving"], "true");
  in.selectServingLabel = false;
  const json legacy = buildModelService(in);
  EXPECT_FALSE(legacy["spec"]["selector"].contains("lockstep.dev/serving"));
  // Either way the selector is held exactly: the label is added, and dropped again.
  in.selectServingLabel = true;
  const json labelled = buildModelService(in);
  EXPECT_FALSE(serviceHolds(labelled, storedService(legacy)));
  EXPECT_FALSE(serviceHolds(legacy, storedService(labelled)));
  EXPECT_NE(serviceDrift(legacy, storedService(labelled)).find("spec.selector"), std::string::npos);
}

// An upgrade re-templates nothing for the serving label alone (no pod restarts).
TEST(ServingLabel, ATemplateWithoutItIsNoDrift) {
  ServingObjectsInput in{"gpt2", "ml",       8080, CapacityMode::kSurge, PackageMount::kImageVolume,
                         {},     "model-uid"};
  auto built = buildServingDeployment(in, kTrackStable, servingRelease(), 2);
  ASSERT_TRUE(built.isOk());
  json earlier = *built;
  earlier["spec"]["template"]["metadata"]["labels"].erase("lockstep.dev/serving");
  EXPECT_EQ(deploymentDrift(*built, earlier), "");
  earlier["spec"]["template"]["metadata"]["labels"]["lockstep.dev/serving"] = "no";
  EXPECT_NE(deploymentDrift(*built, earlier), "");
}

}  // namespace
}  // namespace lockstep::controllers
