// The one reading of approval policies and approval annotations
// (api/v1alpha1/approval.h), shared by the webhook and the controller.
#include "api/v1alpha1/approval.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

ApprovalPolicy policyOf(const json& approval, std::optional<std::string>* err = nullptr) {
  json stage = {{"name", "ci"}};
  if (!approval.is_null()) stage["approval"] = approval;
  ApprovalPolicy p;
  auto e = decodeApprovalPolicy(stage, "spec.stages[1]", p);
  if (err != nullptr) *err = e;
  return p;
}

TEST(ApprovalPolicy, StringAndObjectForms) {
  EXPECT_FALSE(policyOf(nullptr).manual);
  EXPECT_FALSE(policyOf("Automatic").manual);
  ApprovalPolicy m = policyOf("Manual");
  EXPECT_TRUE(m.manual);
  EXPECT_EQ(m.minApprovers, 1);
  EXPECT_FALSE(m.allowSelfApproval);
  EXPECT_FALSE(m.objectForm);
  ApprovalPolicy o = policyOf({{"policy", "Manual"}, {"minApprovers", 2}});
  EXPECT_TRUE(o.manual);
  EXPECT_EQ(o.minApprovers, 2);
  EXPECT_TRUE(o.objectForm);
  EXPECT_TRUE(policyOf({{"policy", "Manual"}, {"allowSelfApproval", true}}).allowSelfApproval);
  ApprovalPolicy g =
      policyOf({{"policy", "Manual"}, {"minApprovers", 2}, {"fromGroups", {"ml-leads", "sre"}}});
  EXPECT_EQ(g.fromGroups, (std::vector<std::string>{"ml-leads", "sre"}));
  EXPECT_TRUE(policyOf("Manual").fromGroups.empty());
}

TEST(ApprovalPolicy, BadInputNamesTheField) {
  const std::pair<json, std::string> rows[] = {
      {"manual", "spec.stages[1].approval: \"manual\" is not Automatic or Manual"},
      {42, "spec.stages[1].approval: must be Automatic, Manual or {policy: Manual"},
      {json::object(), "spec.stages[1].approval.policy: required"},
      {{{"policy", "Sometimes"}}, "spec.stages[1].approval.policy: \"Sometimes\" is not"},
      {{{"policy", "Manual"}, {"minApprovers", 0}}, "spec.stages[1].approval.minApprovers: must"},
      {{{"policy", "Manual"}, {"minApprovers", 11}}, "spec.stages[1].approval.minApprovers: must"},
      {{{"policy", "Manual"}, {"minApprovers", "2"}}, "spec.stages[1].approval.minApprovers"},
      {{{"policy", "Manual"}, {"allowSelfApproval", "yes"}},
       "spec.stages[1].approval.allowSelfApproval: must be true or false"},
      {{{"policy", "Manual"}, {"approvers", 2}},
       "spec.stages[1].approval.approvers: unknown field"},
      {{{"policy", "Automatic"}, {"minApprovers", 2}}, "need policy Manual"},
      {{{"policy", "Automatic"}, {"fromGroups", {"ml-leads"}}}, "fromGroups need policy Manual"},
      {{{"policy", "Manual"}, {"fromGroups", "ml-leads"}},
       "spec.stages[1].approval.fromGroups: must be a list of 1..10 group names"},
      {{{"policy", "Manual"}, {"fromGroups", json::array()}},
       "spec.stages[1].approval.fromGroups: must be a list of 1..10 group names"},
      {{{"policy", "Manual"}, {"fromGroups", {"ml-leads", ""}}},
       "spec.stages[1].approval.fromGroups[1]: must be a group name"},
      {{{"policy", "Manual"}, {"fromGroups", {"ml-leads", 7}}},
       "spec.stages[1].approval.fromGroups[1]: must be a group name"},
      {{{"policy", "Manual"}, {"fromGroups", {"sre", "ml-leads", "sre"}}},
       "spec.stages[1].approval.fromGroups[2]: \"sre\" is listed twice"},
  };
  for (const auto& [approval, want] : rows) {
    std::optional<std::string> err;
    policyOf(approval, &err);
    ASSERT_TRUE(err.has_value()) << approval.dump();
    EXPECT_NE(err->find(want), std::string::npos) << *err;
  }
}

TEST(ApprovalKeys, StageAndSlot) {
  EXPECT_EQ(parseApprovalKey("ci")->stage, "ci");
  EXPECT_EQ(parseApprovalKey("ci")->slot, 1);
  EXPECT_EQ(parseApprovalKey("ci.2")->stage, "ci");
  EXPECT_EQ(parseApprovalKey("ci.2")->slot, 2);
  EXPECT_EQ(parseApprovalKey("ci.10")->slot, 10);
  for (const char* bad : {"ci.", "ci.1", "ci.0", "ci.02", "ci.x", "ci.11", "ci.2.3"})
    EXPECT_FALSE(parseApprovalKey(bad).has_value()) << bad;
}

json releaseWith(const std::map<std::string, std::string>& annotations) {
  json r = {{"metadata", {{"name", "gpt2-v7"}}}};
  for (const auto& [k, v] : annotations) r["metadata"]["annotations"][k] = v;
  return r;
}

TEST(ApprovalDecision, DistinctApproversNeverTheCreator) {
  json r = releaseWith({{"approve.lockstep.dev/ci", "alice"},
                        {"approve.lockstep.dev/ci.2", "alice"},
                        {"approve.lockstep.dev/ci.3", "bob"},
                        {"approve.lockstep.dev/eval", "carol"},
                        {"lockstep.dev/created-by", "bob"}});
  auto approvals = stageApprovals(r, "ci");
  ASSERT_EQ(approvals.size(), 3u);
  EXPECT_EQ(releaseCreator(r), "bob");
  ApprovalPolicy two = policyOf({{"policy", "Manual"}, {"minApprovers", 2}});
  // alice twice counts once; bob created the release.
  ApprovalDecision d = decideApproval(two, approvals, "bob");
  EXPECT_FALSE(d.approved);
  EXPECT_EQ(d.approvers, std::vector<std::string>{"alice"});
  EXPECT_NE(d.message.find("1 of 2 distinct approver(s)"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("creator \"bob\" cannot approve it"), std::string::npos) << d.message;
  // Self-approval allowed: bob counts.
  ApprovalPolicy self = two;
  self.allowSelfApproval = true;
  EXPECT_TRUE(decideApproval(self, approvals, "bob").approved);
  // Another creator: alice and bob are two distinct approvers.
  EXPECT_TRUE(decideApproval(two, approvals, "dave").approved);
  // A single Manual approval by the creator does not count.
  ApprovalPolicy one = policyOf("Manual");
  EXPECT_FALSE(
      decideApproval(one, stageApprovals(releaseWith({{"approve.lockstep.dev/ci", "bob"}}), "ci"),
                     "bob")
          .approved);
  // Automatic needs nobody.
  EXPECT_TRUE(decideApproval(policyOf("Automatic"), {}, "bob").approved);
}

// Issue 29: a namespace admin can mint ServiceAccount tokens at will, so a ServiceAccount
// neither approves nor counts toward minApprovers unless the platform allows it.
TEST(ApprovalDecision, ServiceAccountsDoNotCountUnlessThePlatformAllows) {
  const std::string bot = "system:serviceaccount:ml:approver-bot";
  json r = releaseWith({{"approve.lockstep.dev/prod", "alice"},
                        {"approve.lockstep.dev/prod.2", bot},
                        {"lockstep.dev/created-by", "bob"}});
  ApprovalPolicy two = policyOf({{"policy", "Manual"}, {"minApprovers", 2}});
  ApprovalDecision d = decideApproval(two, stageApprovals(r, "prod"), "bob");
  EXPECT_FALSE(d.approved);
  EXPECT_EQ(d.approvers, std::vector<std::string>{"alice"});
  EXPECT_NE(d.message.find("ServiceAccount \"" + bot + "\" does not count: approvers are people"),
            std::string::npos)
      << d.message;
  // Alone, a ServiceAccount approves nothing.
  EXPECT_FALSE(decideApproval(
                   policyOf("Manual"),
                   stageApprovals(releaseWith({{"approve.lockstep.dev/prod", bot}}), "prod"), "bob")
                   .approved);
  // The platform allows it (approvals.allowServiceAccounts): it counts.
  ApprovalRules allow;
  allow.serviceAccountsApprove = true;
  d = decideApproval(two, stageApprovals(r, "prod"), "bob", allow);
  EXPECT_TRUE(d.approved);
  EXPECT_EQ(d.approvers, (std::vector<std::string>{"alice", bot}));
  // A user whose name merely contains the prefix elsewhere is a person.
  EXPECT_FALSE(isServiceAccountUser("alice:system:serviceaccount:ml:x"));
  EXPECT_TRUE(isServiceAccountUser(bot));
}

TEST(ApproverGroups, RecordedNextToEachApproval) {
  EXPECT_EQ(approverGroupsKey("approve.lockstep.dev/ci.2"), "approver-groups.lockstep.dev/ci.2");
  EXPECT_EQ(approverGroupsKey("lockstep.dev/abort"), "");
  EXPECT_EQ(encodeApproverGroups({"ml-leads", "system:authenticated"}),
            R"(["ml-leads","system:authenticated"])");
  EXPECT_EQ(decodeApproverGroups(R"(["a","b"])"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(decodeApproverGroups("[]"), std::vector<std::string>{});
  for (const char* bad : {"ml-leads", "[1]", "{\"a\":1}", "[\"a\"", ""})
    EXPECT_FALSE(decodeApproverGroups(bad).has_value()) << bad;
  json r = releaseWith({{"approve.lockstep.dev/ci", "alice"},
                        {"approver-groups.lockstep.dev/ci", R"(["ml-leads"])"},
                        {"approve.lockstep.dev/ci.2", "bob"},
                        {"approver-groups.lockstep.dev/ci.2", "not json"},
                        {"approve.lockstep.dev/ci.3", "dave"}});
  auto approvals = stageApprovals(r, "ci");
  ASSERT_EQ(approvals.size(), 3u);
  EXPECT_TRUE(approvals[0].groupsRecorded);
  EXPECT_EQ(approvals[0].groups, std::vector<std::string>{"ml-leads"});
  EXPECT_FALSE(approvals[1].groupsRecorded);
  EXPECT_FALSE(approvals[2].groupsRecorded);
}

// Issue 29: approval: {policy: Manual, minApprovers: 2, fromGroups: [ml-leads]} counts only
// approvers whose recorded groups include ml-leads.
TEST(ApprovalDecision, FromGroupsCountsOnlyTheirMembers) {
  json r =
      releaseWith({{"approve.lockstep.dev/ci", "alice"},
                   {"approver-groups.lockstep.dev/ci", R"(["ml-leads","system:authenticated"])"},
                   {"approve.lockstep.dev/ci.2", "dave"},
                   {"approver-groups.lockstep.dev/ci.2", R"(["interns"])"},
                   {"approve.lockstep.dev/ci.3", "erin"}});
  ApprovalPolicy leads =
      policyOf({{"policy", "Manual"}, {"minApprovers", 2}, {"fromGroups", {"sre", "ml-leads"}}});
  ApprovalDecision d = decideApproval(leads, stageApprovals(r, "ci"), "carol");
  EXPECT_FALSE(d.approved);
  EXPECT_EQ(d.approvers, std::vector<std::string>{"alice"});
  ASSERT_EQ(d.counted.size(), 1u);
  EXPECT_EQ(d.counted[0].groups, (std::vector<std::string>{"ml-leads", "system:authenticated"}));
  EXPECT_NE(d.message.find("\"dave\" does not count: not in a group the stage takes approvals "
                           "from (fromGroups: \"sre\", \"ml-leads\")"),
            std::string::npos)
      << d.message;
  // erin's approval recorded no groups: she counts only where no groups are named.
  r["metadata"]["annotations"]["approver-groups.lockstep.dev/ci.2"] = R"(["sre"])";
  d = decideApproval(leads, stageApprovals(r, "ci"), "carol");
  EXPECT_TRUE(d.approved);
  EXPECT_EQ(d.approvers, (std::vector<std::string>{"alice", "dave"}));
  ApprovalPolicy three = policyOf({{"policy", "Manual"}, {"minApprovers", 3}});
  d = decideApproval(three, stageApprovals(r, "ci"), "carol");
  EXPECT_TRUE(d.approved);
  ASSERT_EQ(d.counted.size(), 3u);
  EXPECT_EQ(d.counted[2].user, "erin");
  EXPECT_FALSE(d.counted[2].groupsRecorded);
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
