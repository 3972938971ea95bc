// The SubjectAccessReview adapter against a scripted transport: the request
// it sends (golden path and body) and how answers and failures map.
#include "webhooks/kube_authorizer.h"

#include <gtest/gtest.h>

#include "tests/support/fake_transport.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::FakeTransport;

AccessRequest aliceApproves() {
  AccessRequest q;
  q.user = {"alice", "u-1", {"team-a"}, {{"scopes", {"x"}}}};
  q.verb = "approve";
  q.group = "lockstep.dev";
  q.resource = "modelreleases";
  q.ns = "ml";
  q.name = "gpt2-v7";
  return q;
}

class KubeAuthorizerTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  SubjectAccessReviewAuthorizer authorizer_{std::make_shared<kube::Client>(transport_)};
};

TEST_F(KubeAuthorizerTest, PostsASubjectAccessReviewFromTheUserInfo) {
  transport_->push(
      FakeTransport::ok({{"status", {{"allowed", true}, {"reason", "RBAC: allowed"}}}}));
  auto d = authorizer_.authorize(aliceApproves());
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_TRUE(d->allowed);
  EXPECT_EQ(d->reason, "RBAC: allowed");
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  json body = json::parse(reqs[0].body);
  EXPECT_EQ(body, (json{{"apiVersion", "authorization.k8s.io/v1"},
                        {"kind", "SubjectAccessReview"},
                        {"spec",
                         {{"user", "alice"},
                          {"uid", "u-1"},
                          {"groups", {"team-a"}},
                          {"extra", {{"scopes", {"x"}}}},
                          {"resourceAttributes",
                           {{"namespace", "ml"},
                            {"verb", "approve"},
                            {"group", "lockstep.dev"},
                            {"resource", "modelreleases"},
                            {"name", "gpt2-v7"}}}}}}));
}

TEST_F(KubeAuthorizerTest, DeniedAndEvaluationErrors) {
  transport_->push(FakeTransport::ok(
      {{"status", {{"allowed", false}, {"evaluationError", "role \"x\" not found"}}}}));
  auto d = authorizer_.authorize(aliceApproves());
  ASSERT_TRUE(d.isOk());
  EXPECT_FALSE(d->allowed);
  EXPECT_EQ(d->evaluationError, "role \"x\" not found");
  // An explicit deny wins over allowed (webhook authorizers may set both).
  transport_->push(FakeTransport::ok({{"status", {{"allowed", true}, {"denied", true}}}}));
  EXPECT_FALSE(authorizer_.authorize(aliceApproves())->allowed);
}

TEST_F(KubeAuthorizerTest, FailuresAreErrorsNotDenials) {
  transport_->push(Status(Code::kDeadlineExceeded, "POST …: timed out"));
  auto timedOut = authorizer_.authorize(aliceApproves());
  ASSERT_FALSE(timedOut.isOk());
  EXPECT_EQ(timedOut.status().code(), Code::kDeadlineExceeded);
  transport_->push(FakeTransport::status(
      403, "Forbidden",
      "subjectaccessreviews.authorization.k8s.io is forbidden: User \"system:serviceaccount:"
      "lockstep-system:lockstep\" cannot create resource \"subjectaccessreviews\""));
  auto forbidden = authorizer_.authorize(aliceApproves());
  ASSERT_FALSE(forbidden.isOk());
  EXPECT_EQ(forbidden.status().code(), Code::kForbidden);
  EXPECT_NE(forbidden.status().message().find("cannot create resource"), std::string::npos);
  transport_->push(FakeTransport::ok({{"kind", "SubjectAccessReview"}}));
  EXPECT_EQ(authorizer_.authorize(aliceApproves()).status().code(), Code::kInternal);
}

TEST(SubjectAccessReviewFor, OmitsEmptyOptionalFields) {
  AccessRequest q = aliceApproves();
  q.user = {"bob", "", {}, {}};
  json spec = subjectAccessReviewFor(q)["spec"];
  EXPECT_FALSE(spec.contains("uid"));
  EXPECT_FALSE(spec.contains("groups"));
  EXPECT_FALSE(spec.contains("extra"));
  EXPECT_EQ(spec["user"], "bob");
}

}  // namespace
}  // namespace lockstep::webhooks
