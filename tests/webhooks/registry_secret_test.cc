// Registry stage tags are not a confused deputy: a release naming a Secret in
// spec.registryTags.secretRef is admitted only when its author may `get` that
// Secret (a SubjectAccessReview, here the fake authorizer).
#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/webhooks/builders.h"
#include "tests/webhooks/fakes.h"
#include "webhooks/admission/handler.h"
#include "webhooks/admission/model_release_validator.h"
#include "webhooks/admission/static_lookups.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::FakeAuthorizer;
using testing::ReleaseBuilder;

class RegistrySecretTest : public ::testing::Test {
 protected:
  RegistrySecretTest() { envs_.put({"torch", "ml", testing::kEnvHash, testing::kEnvImage, true}); }
  static json tagged(const std::string& secret, bool enabled = true) {
    return ReleaseBuilder::good()
        .set("registryTags", {{"enabled", enabled}, {"secretRef", {{"name", secret}}}})
        .json();
  }
  json answer(const std::string& op, const json& release, const json& old = nullptr,
              const std::string& user = "bob") {
    return json::parse(
        releases_.handle(testing::review(op, release, old, false, "u-1", "", {{"username", user}}))
            .body)["response"];
  }
  // The Secret questions the webhook asked.
  std::vector<AccessRequest> secretQuestions() const {
    std::vector<AccessRequest> out;
    for (const AccessRequest& q : authorizer_.asked())
      if (q.resource == "secrets") out.push_back(q);
    return out;
  }
  StaticRuntimeEnvs envs_;
  testing::FakeRecorder recorder_;
  lockstep::testing::FakeClock clock_;
  FakeAuthorizer authorizer_;
  ModelReleaseWebhook releases_{envs_, authorizer_, recorder_, clock_};
};

TEST_F(RegistrySecretTest, AnAuthorWhoCannotReadTheSecretIsRefusedNamingItAndTheVerb) {
  json r = answer("CREATE", tagged("platform-push"));
  EXPECT_EQ(r["allowed"], false) << r.dump();
  EXPECT_EQ(r["status"]["code"], 403);
  const std::string m = r["status"]["message"];
  EXPECT_NE(m.find("spec.registryTags.secretRef.name: user \"bob\" may not get Secret "
                   "\"ml/platform-push\": RBAC verb \"get\" on resource \"secrets\""),
            std::string::npos)
      << m;
  // The question: the requesting user, get, the core group's secrets, that one name.
  std::vector<AccessRequest> asked = secretQuestions();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].user.username, "bob");
  EXPECT_EQ(asked[0].verb, "get");
  EXPECT_EQ(asked[0].group, "");
  EXPECT_EQ(asked[0].ns, "ml");
  EXPECT_EQ(asked[0].name, "platform-push");
}

TEST_F(RegistrySecretTest, AnAuthorWhoMayReadTheSecretIsAdmitted) {
  authorizer_.allow("bob", "get");
  json r = answer("CREATE", tagged("team-push"));
  EXPECT_EQ(r["allowed"], true) << r.dump();
}

TEST_F(RegistrySecretTest, AFailedCheckIsARefusalNotAGuess) {
  authorizer_.failWith(Status(Code::kUnavailable, "deadline exceeded"));
  json r = answer("CREATE", tagged("team-push"));
  EXPECT_EQ(r["allowed"], false);
  EXPECT_NE(r["status"]["message"].get<std::string>().find(
                "cannot check whether user \"bob\" may get Secret \"ml/team-push\" "
                "(SubjectAccessReview failed: deadline exceeded)"),
            std::string::npos)
      << r.dump();
}

TEST_F(RegistrySecretTest, OnlyANewlyNamedSecretIsAsked) {
  // Kept as it was named (by someone who could read it): not asked again.
  EXPECT_EQ(answer("UPDATE", tagged("team-push"), tagged("team-push"))["allowed"], true);
  // No Secret, or the tags off: nothing to push with.
  EXPECT_EQ(answer("CREATE", ReleaseBuilder::good().json())["allowed"], true);
  EXPECT_EQ(answer("CREATE", tagged("platform-push", false))["allowed"], true);
  EXPECT_TRUE(secretQuestions().empty());
  // Turned on, or another Secret named: asked.
  EXPECT_EQ(answer("UPDATE", tagged("platform-push"), tagged("platform-push", false))["allowed"],
            false);
  EXPECT_EQ(answer("UPDATE", tagged("platform-push"), tagged("team-push"))["allowed"], false);
  EXPECT_EQ(secretQuestions().size(), 2u);
}

TEST(RegistrySecretValidator, AnUnaskedQuestionIsRefused) {
  json release =
      ReleaseBuilder::good().set("registryTags", {{"secretRef", {{"name", "s"}}}}).json();
  ModelReleaseReview r;
  r.operation = Operation::kCreate;
  r.ns = "ml";
  r.release = &release;
  r.user.username = "bob";
  r.runtimeEnv = RuntimeEnvView{"torch", "ml", testing::kEnvHash, testing::kEnvImage, true};
  ASSERT_TRUE(secretAccessRequestFor(r).has_value());
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("permission to get Secret \"ml/s\" was not checked"), std::string::npos)
      << v.message;
  r.secretAccess = AccessDecision{true, "", ""};
  EXPECT_TRUE(validateModelRelease(r).allowed()) << validateModelRelease(r).message;
}

}  // namespace
}  // namespace lockstep::webhooks
