#include "webhooks/admission/serving_pod_rule.h"

#include <map>

#include <gtest/gtest.h>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "tests/support/fake_clock.h"
#include "tests/webhooks/builders.h"
#include "tests/webhooks/fakes.h"
#include "webhooks/admission/handler.h"
#include "webhooks/admission/static_lookups.h"

namespace lockstep::webhooks {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

constexpr const char* kReplicaSetController =
    "system:serviceaccount:kube-system:replicaset-controller";

json ref(const std::string& kind, const std::string& name, const std::string& uid) {
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"name", name},
          {"uid", uid},
          {"controller", true}};
}

// The objects of namespace ml with knobs: put an object, fail every read.
class FakeServingObjects final : public ServingObjectLookup {
 public:
  void put(const std::string& kind, json o) {
    const std::string key = kind + "/" + o["metadata"]["name"].get<std::string>();
    objects_[key] = std::make_shared<const kube::Object>(std::move(o));
  }
  void erase(const std::string& kind, const std::string& name) {
    objects_.erase(kind + "/" + name);
  }
  void failWith(Status s) { failure_ = std::move(s); }
  StatusOr<kube::ObjectPtr> find(std::string_view ns, std::string_view kind,
                                 const std::string& name) const override {
    if (!failure_.isOk()) return failure_;
    if (ns != "ml") return kube::ObjectPtr();
    auto it = objects_.find(std::string(kind) + "/" + name);
    return it == objects_.end() ? kube::ObjectPtr() : it->second;
  }

 private:
  std::map<std::string, kube::ObjectPtr> objects_;
  Status failure_;
};

class ServingPodRuleTest : public ::testing::Test {
 protected:
  ServingPodRuleTest() {
    objects_.put("Model", {{"metadata", {{"name", "gpt2"}, {"uid", "model-uid"}}}});
    objects_.put(
        "Deployment",
        {{"metadata",
          {{"name", "gpt2-canary"},
           {"uid", "dep-uid"},
           {"labels", {{v1::kModelLabel, "gpt2"}, {"app.kubernetes.io/managed-by", "lockstep"}}},
           {"ownerReferences", json::array({v1::modelOwnerReference("gpt2", "model-uid")})}}}});
    objects_.put(
        "ReplicaSet",
        {{"metadata",
          {{"name", "gpt2-canary-7f"},
           {"uid", "rs-uid"},
           {"ownerReferences", json::array({ref("Deployment", "gpt2-canary", "dep-uid")})}}}});
  }
  // A pod with prod's labels (the old ones and the serving label) made by the
  // canary's ReplicaSet.
  static json servingPod() {
    return {{"metadata",
             {{"name", "gpt2-canary-7f-x1"},
              {"namespace", "ml"},
              {"labels",
               {{v1::kModelLabel, "gpt2"},
                {v1::kTrackLabel, "canary"},
                {v1::kReleaseLabel, "v2"},
                {"app.kubernetes.io/component", "serving"},
                {v1::kServingLabel, "true"}}},
              {"ownerReferences", json::array({ref("ReplicaSet", "gpt2-canary-7f", "rs-uid")})}}},
            {"spec", {{"containers", json::array({{{"name", "srv"}, {"image", "x"}}})}}}};
  }
  Verdict check(const json& pod, const std::string& user = kReplicaSetController,
                Operation op = Operation::kCreate, const json* oldPod = nullptr) {
    ServingPodReview r;
    r.operation = op;
    r.ns = "ml";
    r.pod = &pod;
    r.oldPod = oldPod;
    r.user.username = user;
    r.objects = &objects_;
    return validateServingPod(r);
  }
  FakeServingObjects objects_;
};

TEST_F(ServingPodRuleTest, ThePodsOfTheOperatorsReplicaSetsAreAdmitted) {
  const Verdict v = check(servingPod());
  EXPECT_TRUE(v.allowed()) << v.message;
  EXPECT_TRUE(v.checked);
  EXPECT_TRUE(check(servingPod(), "system:kube-controller-manager").allowed());
}

TEST_F(ServingPodRuleTest, PodsWithoutTheLabelAreNotThisRulesBusiness) {
  json p = servingPod();
  p["metadata"]["labels"].erase(v1::kServingLabel);
  p["metadata"].erase("ownerReferences");
  const Verdict v = check(p, "alice");
  EXPECT_TRUE(v.allowed());
  EXPECT_FALSE(v.checked);
}

// Must-show 4's pod: prod's labels, made by hand. Refused naming the label.
TEST_F(ServingPodRuleTest, AHandMadePodWithProdsLabelsIsRefusedNamingTheLabel) {
  json p = servingPod();
  p["metadata"].erase("ownerReferences");
  const Verdict v = check(p, "alice");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_EQ(v.code, 403);
  EXPECT_EQ(v.reason, "Forbidden");
  EXPECT_NE(v.message.find("lockstep: pod \"ml/gpt2-canary-7f-x1\": label lockstep.dev/serving "
                           "is reserved for the serving pods Lockstep builds"),
            std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("created by user \"alice\", not by the ReplicaSet controller"),
            std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("it has no controller owner reference to a ReplicaSet"),
            std::string::npos)
      << v.message;
}

// Owner references can be written by anyone who creates a pod: a copy of the
// real one is refused by who asked.
TEST_F(ServingPodRuleTest, AForgedOwnerReferenceIsRefusedByWhoCreatedThePod) {
  const Verdict v = check(servingPod(), "alice");
  EXPECT_EQ(v.decision, Decision::kDenied);
  ASSERT_EQ(v.violations.size(), 1u) << v.message;
  EXPECT_NE(v.violations[0].find("not by the ReplicaSet controller"), std::string::npos);
}

// The ReplicaSet controller creates the pods of any ReplicaSet: one a tenant
// made (or one owned by a Deployment that is not the Model's) does not pass.
TEST_F(ServingPodRuleTest, APodOfATenantsReplicaSetIsRefused) {
  objects_.put("ReplicaSet", {{"metadata", {{"name", "gpt2-canary-7f"}, {"uid", "rs-uid"}}}});
  Verdict v = check(servingPod());
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("its ReplicaSet gpt2-canary-7f is not owned by the Deployment "
                           "gpt2-stable or gpt2-canary"),
            std::string::npos)
      << v.message;
  // A tenant's ReplicaSet claiming the operator's Deployment by a uid that is not its.
  objects_.put("ReplicaSet",
               {{"metadata",
                 {{"name", "gpt2-canary-7f"},
                  {"uid", "rs-uid"},
                  {"ownerReferences", json::array({ref("Deployment", "gpt2-canary", "guess")})}}}});
  v = check(servingPod());
  EXPECT_NE(v.message.find("Deployment gpt2-canary (uid guess) is not the Deployment of that name"),
            std::string::npos)
      << v.message;
  // A ReplicaSet that does not exist.
  objects_.erase("ReplicaSet", "gpt2-canary-7f");
  v = check(servingPod());
  EXPECT_NE(v.message.find("ReplicaSet gpt2-canary-7f (uid rs-uid) does not exist"),
            std::string::npos)
      << v.message;
}

TEST_F(ServingPodRuleTest, APodWithoutItsModelIsRefused) {
  json p = servingPod();
  p["metadata"]["labels"].erase(v1::kModelLabel);
  const Verdict v = check(p);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("no label lockstep.dev/model"), std::string::npos) << v.message;
}

TEST_F(ServingPodRuleTest, TheLabelIsNeverAddedToARunningPod) {
  json old = servingPod();
  old["metadata"]["labels"].erase(v1::kServingLabel);
  Verdict v = check(servingPod(), kReplicaSetController, Operation::kUpdate, &old);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("cannot be added to or changed on a running pod"), std::string::npos)
      << v.message;
  // Kept as it was, or removed: allowed.
  json same = servingPod();
  EXPECT_TRUE(check(servingPod(), "alice", Operation::kUpdate, &same).allowed());
  EXPECT_TRUE(check(old, "alice", Operation::kUpdate, &same).allowed());
}

TEST_F(ServingPodRuleTest, ALookupThatFailsIsAnErrorNotAGuess) {
  objects_.failWith(Status(Code::kUnavailable, "deadline exceeded"));
  const Verdict v = check(servingPod());
  EXPECT_EQ(v.decision, Decision::kError);
  EXPECT_NE(v.message.find("deadline exceeded"), std::string::npos) << v.message;
}

// Through the pod webhook: in every namespace mode (the rule guards prod's
// traffic, not the runtime pair), and refused when the webhook has no lookup.
TEST_F(ServingPodRuleTest, ThePodWebhookRefusesItInEveryModeIncludingOff) {
  StaticRuntimeEnvs envs;
  StaticNamespaceModes modes;
  modes.set("ml", NamespaceMode::kOff);
  testing::FakeRecorder recorder;
  lockstep::testing::FakeClock clock;
  PodWebhook pods(envs, modes, recorder, clock);
  json p = servingPod();
  p["metadata"].erase("ownerReferences");
  auto answer = [&](const json& pod, const std::string& user) {
    return json::parse(
        pods.handle(testing::review("CREATE", pod, nullptr, false, "u-1", "", {{"username", user}}))
            .body)["response"];
  };
  json r = answer(p, "alice");
  EXPECT_EQ(r["allowed"], false);
  EXPECT_NE(r["status"]["message"].get<std::string>().find("label lockstep.dev/serving"),
            std::string::npos)
      << r.dump();
  EXPECT_EQ(answer(servingPod(), kReplicaSetController)["allowed"], false)
      << "no lookup: nothing can be proven";
  pods.setServingObjects(&objects_);
  EXPECT_EQ(answer(servingPod(), kReplicaSetController)["allowed"], true);
}

}  // namespace
}  // namespace lockstep::webhooks
