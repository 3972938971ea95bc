#include "api/v1alpha1/serving_pod.h"

#include <map>

#include <gtest/gtest.h>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

json ownerRef(const std::string& apiVersion, const std::string& kind, const std::string& name,
              const std::string& uid, bool controller = true) {
  return {{"apiVersion", apiVersion},
          {"kind", kind},
          {"name", name},
          {"uid", uid},
          {"controller", controller}};
}

// The model gpt2 as the operator builds it: the Model, the stable Deployment it
// owns, that Deployment's ReplicaSet (template with the serving label) and a pod.
class ServingPodTest : public ::testing::Test {
 protected:
  ServingPodTest() {
    put("Model", {{"metadata", {{"name", "gpt2"}, {"uid", "model-uid"}}}});
    put("Deployment",
        {{"metadata",
          {{"name", "gpt2-stable"},
           {"uid", "dep-uid"},
           {"labels", {{kModelLabel, "gpt2"}, {"app.kubernetes.io/managed-by", "lockstep"}}},
           {"ownerReferences", json::array({modelOwnerReference("gpt2", "model-uid")})}}}});
    put("ReplicaSet",
        {{"metadata",
          {{"name", "gpt2-stable-5d9"},
           {"uid", "rs-uid"},
           {"ownerReferences",
            json::array({ownerRef("apps/v1", "Deployment", "gpt2-stable", "dep-uid")})}}},
         {"spec",
          {{"template", {{"metadata", {{"labels", {{kServingLabel, kServingLabelValue}}}}}}}}}});
  }
  void put(const std::string& kind, json o) {
    const std::string key = kind + "/" + o["metadata"]["name"].get<std::string>();
    objects_[key] = std::make_shared<const kube::Object>(std::move(o));
  }
  NamespacedLookup lookup() const {
    return [this](std::string_view kind, const std::string& name) -> kube::ObjectPtr {
      auto it = objects_.find(std::string(kind) + "/" + name);
      return it == objects_.end() ? nullptr : it->second;
    };
  }
  static json pod(bool servingLabel = true, const std::string& rsUid = "rs-uid") {
    json labels = {{kModelLabel, "gpt2"}, {kTrackLabel, "stable"}, {kReleaseLabel, "v1"}};
    if (servingLabel) labels[kServingLabel] = kServingLabelValue;
    return {{"metadata",
             {{"name", "gpt2-stable-5d9-abcde"},
              {"labels", labels},
              {"ownerReferences",
               json::array({ownerRef("apps/v1", "ReplicaSet", "gpt2-stable-5d9", rsUid)})}}}};
  }
  std::map<std::string, kube::ObjectPtr> objects_;
};

TEST_F(ServingPodTest, APodOfTheOperatorsDeploymentIsServingOnItsTrack) {
  const ServingOwner owner = servingOwnerOf(pod(), "gpt2", lookup());
  EXPECT_TRUE(owner.ok()) << owner.why;
  EXPECT_EQ(owner.track, "stable");
  EXPECT_TRUE(countsAsServing(pod(), "gpt2", "stable", lookup()));
  EXPECT_FALSE(countsAsServing(pod(), "gpt2", "canary", lookup())) << "its chain ends at stable";
  EXPECT_FALSE(countsAsServing(pod(), "llama", "stable", lookup())) << "another model";
}

TEST_F(ServingPodTest, AHandMadePodWithProdsLabelsIsNotServing) {
  json p = pod();
  p["metadata"].erase("ownerReferences");
  const ServingOwner owner = servingOwnerOf(p, "gpt2", lookup());
  EXPECT_FALSE(owner.ok());
  EXPECT_EQ(owner.why, "it has no controller owner reference to a ReplicaSet");
  EXPECT_FALSE(countsAsServing(p, "gpt2", "stable", lookup()));
}

TEST_F(ServingPodTest, EveryLinkIsCheckedAgainstTheObjectItNames) {
  // A forged uid for the operator's ReplicaSet.
  ServingOwner o = servingOwnerOf(pod(true, "forged"), "gpt2", lookup());
  EXPECT_NE(o.why.find("ReplicaSet gpt2-stable-5d9 (uid forged) is not the ReplicaSet of that "
                       "name (uid rs-uid)"),
            std::string::npos)
      << o.why;
  // A ReplicaSet of the pod's own making, owned by nothing of the operator's.
  put("ReplicaSet", {{"metadata", {{"name", "gpt2-stable-5d9"}, {"uid", "rs-uid"}}}});
  o = servingOwnerOf(pod(), "gpt2", lookup());
  EXPECT_NE(o.why.find("is not owned by the Deployment gpt2-stable or gpt2-canary"),
            std::string::npos)
      << o.why;
  // Owned by a Deployment of that name, but not the one that exists (re-created by a tenant).
  put("ReplicaSet",
      {{"metadata",
        {{"name", "gpt2-stable-5d9"},
         {"uid", "rs-uid"},
         {"ownerReferences",
          json::array({ownerRef("apps/v1", "Deployment", "gpt2-stable", "old-dep")})}}}});
  o = servingOwnerOf(pod(), "gpt2", lookup());
  EXPECT_NE(o.why.find("Deployment gpt2-stable (uid old-dep) is not the Deployment"),
            std::string::npos)
      << o.why;
  // A Deployment of that name that the Model does not own.
  put("ReplicaSet",
      {{"metadata",
        {{"name", "gpt2-stable-5d9"},
         {"uid", "rs-uid"},
         {"ownerReferences",
          json::array({ownerRef("apps/v1", "Deployment", "gpt2-stable", "dep-uid")})}}}});
  put("Deployment",
      {{"metadata",
        {{"name", "gpt2-stable"},
         {"uid", "dep-uid"},
         {"labels", {{kModelLabel, "gpt2"}, {"app.kubernetes.io/managed-by", "lockstep"}}}}}});
  o = servingOwnerOf(pod(), "gpt2", lookup());
  EXPECT_EQ(o.why, "Deployment gpt2-stable is not owned by the Model gpt2 (uid model-uid)");
}

// A pod may forge the first link (an owner reference to the operator's
// ReplicaSet, uid and all): without the serving label, which only pods the
// ReplicaSet controller creates may carry, it does not count once that
// ReplicaSet's template carries the label. A pod of a template an earlier
// version built (no serving label in it) counts by its chain.
TEST_F(ServingPodTest, APodWithoutTheServingLabelCountsOnlyOnATemplateWithoutIt) {
  EXPECT_FALSE(countsAsServing(pod(false), "gpt2", "stable", lookup()));
  put("ReplicaSet",
      {{"metadata",
        {{"name", "gpt2-stable-5d9"},
         {"uid", "rs-uid"},
         {"ownerReferences",
          json::array({ownerRef("apps/v1", "Deployment", "gpt2-stable", "dep-uid")})}}},
       {"spec", {{"template", {{"metadata", {{"labels", {{kTrackLabel, "stable"}}}}}}}}}});
  EXPECT_TRUE(countsAsServing(pod(false), "gpt2", "stable", lookup()));
}

TEST(SlimReplicaSet, KeepsTheLinksTemplateLabelsAndReplicasOnly) {
  json rs = {{"apiVersion", "apps/v1"},
             {"kind", "ReplicaSet"},
             {"metadata",
              {{"name", "gpt2-stable-5d9"},
               {"namespace", "ml"},
               {"uid", "u"},
               {"labels", {{kModelLabel, "gpt2"}}},
               {"ownerReferences", json::array({ownerRef("apps/v1", "Deployment", "d", "x")})},
               {"annotations", {{"deployment.kubernetes.io/revision", "3"}}},
               {"managedFields", json::array({json::object()})}}},
             {"spec",
              {{"replicas", 2},
               {"template",
                {{"metadata", {{"labels", {{kServingLabel, "true"}}}}},
                 {"spec", {{"containers", json::array({{{"name", "srv"}}})}}}}}}},
             {"status", {{"replicas", 1}, {"readyReplicas", 1}}}};
  slimReplicaSet(rs);
  EXPECT_EQ(rs, json::parse(R"({"apiVersion": "apps/v1", "kind": "ReplicaSet",
    "metadata": {"name": "gpt2-stable-5d9", "namespace": "ml", "uid": "u",
                 "labels": {"lockstep.dev/model": "gpt2"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
                                      "uid": "x", "controller": true}]},
    "spec": {"replicas": 2, "template": {"metadata": {"labels": {"lockstep.dev/serving": "true"}}}},
    "status": {"replicas": 1}})"));
  EXPECT_TRUE(templateServes(rs));
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
