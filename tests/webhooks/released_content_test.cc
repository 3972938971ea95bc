// Released content cannot change, and approvals cannot be skipped: the
// ModelRelease webhook's rules of webhooks/admission/release_immutability.h
// and approval_policy.h, through validateModelRelease (the real entry point).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/webhooks/builders.h"
#include "webhooks/admission/model_release_validator.h"
#include "webhooks/admission/release_immutability.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::kEnvHash;
using testing::kEnvImage;
using testing::ReleaseBuilder;

json withPhase(json r, const std::string& phase, int64_t generation = 1) {
  r["status"]["phase"] = phase;
  r["metadata"]["generation"] = generation;
  return r;
}

Verdict review(const json& release, const json* old, const std::string& user = "alice",
               bool approveAllowed = true) {
  ModelReleaseReview r;
  r.operation = old == nullptr ? Operation::kCreate : Operation::kUpdate;
  r.ns = "ml";
  r.name = "gpt2-v7";
  r.release = &release;
  r.oldRelease = old;
  r.runtimeEnv = RuntimeEnvView{"torch", "ml", kEnvHash, kEnvImage, true};
  r.user.username = user;
  r.access.emplace("approve", AccessDecision{approveAllowed, "", ""});
  return validateModelRelease(r);
}

ReleaseBuilder gated() {
  return ReleaseBuilder().gate("eval").gate("ci").manual("ci").serving("prod").annotate(
      "lockstep.dev/created-by", "carol");
}

TEST(ReleasedContent, RemovingAnApprovalPolicyAfterPendingIsRefusedNamingTheField) {
  json old = withPhase(gated().json(), "Testing");
  json now = old;
  now["spec"]["stages"][1].erase("approval");  // the reproduced bypass
  Verdict v = review(now, &old, "bob");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_EQ(v.code, 422);
  EXPECT_NE(v.message.find("spec.stages[1].approval: field is immutable once the release has "
                           "left Pending (phase Testing; was \"Manual\", now <unset>)"),
            std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("create a new ModelRelease"), std::string::npos) << v.message;
}

TEST(ReleasedContent, EveryValidatedFieldIsImmutableAfterPending) {
  struct Row {
    std::string field;
    std::function<void(json&)> edit;
  };
  const std::vector<Row> rows = {
      {"spec.model", [](json& s) { s["model"] = "gpt3"; }},
      {"spec.stages[0].gate.template.spec.containers[0].name",
       [](json& s) { s["stages"][0]["gate"]["template"]["spec"]["containers"][0]["name"] = "x"; }},
      {"spec.stages[0].gate.timeout", [](json& s) { s["stages"][0]["gate"]["timeout"] = "1h"; }},
      {"spec.stages[2].serving.replicas",
       [](json& s) { s["stages"][2]["serving"]["replicas"] = 9; }},
      {"spec.stages[2].serving.port", [](json& s) { s["stages"][2]["serving"]["port"] = 8000; }},
      {"spec.stages[2].canary",
       [](json& s) {
         s["stages"][2]["canary"]["steps"] = {{{"weight", 100}}};
       }},
      {"spec.stages[3]",
       [](json& s) {
         s["stages"].push_back({{"name", "extra"}});
       }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.field);
    json old = withPhase(gated().json(), "Canary");
    json now = old;
    row.edit(now["spec"]);
    Verdict v = review(now, &old, "carol");
    EXPECT_EQ(v.decision, Decision::kDenied);
    EXPECT_NE(v.message.find(row.field + ": field is immutable"), std::string::npos) << v.message;
  }
}

TEST(ReleasedContent, PendingReleasesMayStillBeEdited) {
  for (const char* phase : {"", "Pending"}) {
    SCOPED_TRACE(phase);
    json old = gated().json();
    if (*phase != 0) old = withPhase(old, phase);
    json now = old;
    now["spec"]["stages"][1].erase("approval");
    EXPECT_NE(review(now, &old, "carol").decision, Decision::kDenied);
  }
  // Metadata-only writes of a running release pass (labels, finalizers, annotations).
  json old = withPhase(gated().json(), "Canary");
  json now = old;
  now["metadata"]["labels"]["team"] = "ml";
  EXPECT_NE(review(now, &old, "carol").decision, Decision::kDenied);
}

TEST(ReleasedContent, FirstDifferenceNamesTheLeaf) {
  json a = {{"x", {{"y", json::array({1, 2, {{"z", "a"}}})}}}};
  json b = a;
  EXPECT_EQ(firstDifference(&a, &b, "spec"), "");
  b["x"]["y"][2]["z"] = "b";
  EXPECT_EQ(firstDifference(&a, &b, "spec"), "spec.x.y[2].z");
  b = a;
  b["x"]["y"].push_back(3);
  EXPECT_EQ(firstDifference(&a, &b, "spec"), "spec.x.y[3]");
}

TEST(ReleaseModelName, IsADns1035Label) {
  for (const char* bad : {"7b-chat", "GPT2", "gpt_2", "-gpt2",
                          "a-model-name-that-is-much-too-long-for-its-service-names-xx"}) {
    SCOPED_TRACE(bad);
    Verdict v = review(ReleaseBuilder::good().set("model", bad).json(), nullptr);
    EXPECT_EQ(v.decision, Decision::kDenied);
    EXPECT_NE(v.message.find("spec.model: \"" + std::string(bad) + "\" must be a DNS-1035 label"),
              std::string::npos)
        << v.message;
  }
  EXPECT_NE(review(ReleaseBuilder::good().set("model", "chat-7b").json(), nullptr).decision,
            Decision::kDenied);
}

// ---- the creator and separation of duties ------------------------------------------------------

TEST(ReleaseCreator, RecordedOnCreateOnlyAsTheRequestingUser) {
  Verdict forged = review(gated().json(), nullptr, "mallory");
  EXPECT_EQ(forged.decision, Decision::kDenied);
  EXPECT_EQ(forged.code, 403);
  EXPECT_NE(forged.message.find("metadata.annotations[\"lockstep.dev/created-by\"]: value "
                                "\"carol\" must be your own user name \"mallory\""),
            std::string::npos)
      << forged.message;
  EXPECT_NE(review(gated().json(), nullptr, "carol").decision, Decision::kDenied);
  // No UPDATE may add, change or remove it.
  json old = withPhase(gated().json(), "Testing");
  for (const json& value : {json("mallory"), json()}) {
    json now = old;
    if (value.is_null()) {
      now["metadata"]["annotations"].erase("lockstep.dev/created-by");
    } else {
      now["metadata"]["annotations"]["lockstep.dev/created-by"] = value;
    }
    Verdict v = review(now, &old, "mallory");
    EXPECT_EQ(v.decision, Decision::kDenied);
    EXPECT_NE(v.message.find("[\"lockstep.dev/created-by\"]: field is immutable"),
              std::string::npos)
        << v.message;
  }
  json noCreator = withPhase(ReleaseBuilder().gate("ci").manual("ci").json(), "Testing");
  json added = noCreator;
  added["metadata"]["annotations"]["lockstep.dev/created-by"] = "mallory";
  EXPECT_EQ(review(added, &noCreator, "mallory").decision, Decision::kDenied);
}

TEST(ReleaseCreator, CannotApproveUnlessTheStageAllowsIt) {
  json old = withPhase(gated().waitingForApproval("ci").json(), "Testing");
  json now = old;
  now["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "carol";
  now["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"] = "[]";
  Verdict v = review(now, &old, "carol");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_EQ(v.code, 403);
  EXPECT_NE(v.message.find("user \"carol\" created this release and cannot approve it "
                           "(separation of duties)"),
            std::string::npos)
      << v.message;
  // Another user may.
  json byBob = old;
  byBob["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "bob";
  byBob["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"] = "[]";  // the webhook's
  EXPECT_NE(review(byBob, &old, "bob").decision, Decision::kDenied);
  // allowSelfApproval: the creator may.
  json selfOk = old;
  selfOk["spec"]["stages"][1]["approval"] = {{"policy", "Manual"}, {"allowSelfApproval", true}};
  json selfOkNow = selfOk;
  selfOkNow["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "carol";
  selfOkNow["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"] = "[]";
  EXPECT_NE(review(selfOkNow, &selfOk, "carol").decision, Decision::kDenied)
      << review(selfOkNow, &selfOk, "carol").message;
}

TEST(ReleaseApprovals, SecondApproverUsesTheNextSlotAndMustBeAnotherUser) {
  json old = withPhase(gated().waitingForApproval("ci").json(), "Testing");
  old["spec"]["stages"][1]["approval"] = {{"policy", "Manual"}, {"minApprovers", 2}};
  old["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "alice";
  json again = old;
  again["metadata"]["annotations"]["approve.lockstep.dev/ci.2"] = "alice";
  Verdict v = review(again, &old, "alice");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("user \"alice\" already approved stage \"ci\" "
                           "(approve.lockstep.dev/ci); minApprovers counts distinct users"),
            std::string::npos)
      << v.message;
  json bob = old;
  bob["metadata"]["annotations"]["approve.lockstep.dev/ci.2"] = "bob";
  bob["metadata"]["annotations"]["approver-groups.lockstep.dev/ci.2"] = "[]";
  EXPECT_NE(review(bob, &old, "bob").decision, Decision::kDenied)
      << review(bob, &old, "bob").message;
  // Each approver is RBAC-checked.
  Verdict denied = review(bob, &old, "bob", /*approveAllowed=*/false);
  EXPECT_EQ(denied.decision, Decision::kDenied);
  EXPECT_NE(denied.message.find("may not approve"), std::string::npos) << denied.message;
  // A malformed slot is not a stage.
  json slot = old;
  slot["metadata"]["annotations"]["approve.lockstep.dev/ci.x"] = "bob";
  EXPECT_EQ(review(slot, &old, "bob").decision, Decision::kDenied);
}

TEST(ReleaseApprovals, AManualStageNeedsTheCreatorRecordedOnCreate) {
  // Without the mutating webhook's annotation (not installed), in both forms.
  for (const json& approval : {json("Manual"), json{{"policy", "Manual"}, {"minApprovers", 2}}}) {
    json r = ReleaseBuilder().gate("ci").json();
    r["spec"]["stages"][0]["approval"] = approval;
    Verdict v = review(r, nullptr, "carol");
    EXPECT_EQ(v.decision, Decision::kDenied) << approval;
    EXPECT_NE(
        v.message.find("spec.stages[0].approval: Manual, but the release records no "
                       "creator: metadata.annotations[\"lockstep.dev/created-by\"] is set "
                       "on CREATE by the mutating webhook creator.modelreleases.lockstep.dev"),
        std::string::npos)
        << v.message;
    r["metadata"]["annotations"]["lockstep.dev/created-by"] = "carol";
    EXPECT_NE(review(r, nullptr, "carol").decision, Decision::kDenied);
  }
  // Automatic stages need no creator.
  EXPECT_NE(review(ReleaseBuilder().gate("ci").json(), nullptr, "carol").decision,
            Decision::kDenied);
  json r = ReleaseBuilder().gate("ci").json();
  r["spec"]["stages"][0]["approval"] = {{"policy", "Manual"}, {"minApprovers", 2}};
  r["metadata"]["annotations"]["lockstep.dev/created-by"] = "carol";
  r["spec"]["stages"][0]["approval"] = {{"policy", "Manual"}, {"minApprovers", 0}};
  EXPECT_NE(review(r, nullptr, "carol").message.find("spec.stages[0].approval.minApprovers"),
            std::string::npos);
}

TEST(ReleaseApprovals, AReleaseCreatedBeforeCreatorsWereRecordedIsWarnedOnUpdate) {
  // No annotation on the stored object: created before the mutating webhook.
  json old = withPhase(ReleaseBuilder().gate("ci").json(), "Pending");
  json now = old;
  now["spec"]["stages"][0]["approval"] = "Manual";
  Verdict v = review(now, &old, "bob");
  EXPECT_NE(v.decision, Decision::kDenied) << v.message;
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("spec.stages[0].approval: Manual, but the release records no "
                               "creator (created before Lockstep recorded"),
            std::string::npos)
      << v.warnings[0];
}

// Issue 29: a release created by a ServiceAccount on someone's behalf (CI, Argo CD): the
// person behind it is not known, so a one-approver stage is warned about; two approvers or
// fromGroups are not.
TEST(ReleaseApprovals, AReleaseCreatedByAServiceAccountIsWarnedAboutItsUnknownAuthor) {
  const std::string argocd = "system:serviceaccount:argocd:argocd-application-controller";
  json mr = ReleaseBuilder().gate("eval").gate("ci").manual("ci").json();
  mr["metadata"]["annotations"]["lockstep.dev/created-by"] = argocd;
  Verdict v = review(mr, nullptr, argocd);
  EXPECT_EQ(v.decision, Decision::kWarned) << v.message;
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("spec.stages[1].approval: the release is created by "
                               "ServiceAccount \"" +
                               argocd + "\", so its creator check excludes only that"),
            std::string::npos)
      << v.warnings[0];
  EXPECT_NE(v.warnings[0].find("require minApprovers: 2 or fromGroups"), std::string::npos);
  for (const json& approval : {json{{"policy", "Manual"}, {"minApprovers", 2}},
                               json{{"policy", "Manual"}, {"fromGroups", {"ml-leads"}}}}) {
    mr["spec"]["stages"][1]["approval"] = approval;
    EXPECT_EQ(review(mr, nullptr, argocd).decision, Decision::kAllowed) << approval.dump();
  }
  // A person creating it: no warning.
  mr["spec"]["stages"][1]["approval"] = "Manual";
  mr["metadata"]["annotations"]["lockstep.dev/created-by"] = "alice";
  EXPECT_EQ(review(mr, nullptr, "alice").decision, Decision::kAllowed);
}

TEST(ReleaseApprovals, AnApprovalNeverOutlivesTheContentItApproved) {
  // Pending: the spec may change, but not together with an approval, and not
  // while an approval of the old content is kept.
  json old = gated().json();
  old["metadata"]["generation"] = 3;
  json both = old;
  both["spec"]["stages"][0]["gate"]["timeout"] = "1h";
  both["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "bob";
  Verdict v = review(both, &old, "bob");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("an approval cannot be written together with a change of spec"),
            std::string::npos)
      << v.message;
  json approved = old;
  approved["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "bob";
  json edited = approved;
  edited["spec"]["stages"][0]["gate"]["timeout"] = "1h";
  v = review(edited, &approved, "carol");
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("metadata.annotations[\"approve.lockstep.dev/ci\"]: approves "
                           "generation 3 of the spec, which this write changes"),
            std::string::npos)
      << v.message;
  json cleared = edited;
  cleared["metadata"]["annotations"].erase("approve.lockstep.dev/ci");
  EXPECT_NE(review(cleared, &approved, "carol").decision, Decision::kDenied);
}

}  // namespace
}  // namespace lockstep::webhooks
