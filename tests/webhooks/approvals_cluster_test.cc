// Approvals you can trust with prod, against the real control plane: the CRD's
// CEL rules and the operator's ModelRelease webhook (chart RBAC and webhook
// configuration), users impersonated with `kubectl --as` and given RBAC in
// the test namespace, and the ModelRelease controller running gate Jobs on
// KWOK nodes (tests/cluster/kwok/stages.yaml ends them with the termination
// message the template asks for). docs/modelrelease.md "Released content
// cannot change" and "Approval policy and separation of duties".
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000002";
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'b');

class ApprovalsClusterTest : public OperatorSuite<ApprovalsClusterTest> {
 protected:
  void SetUp() override {
    ns_ = uniqueName("approvals");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
    json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "RuntimeEnv"},
                {"metadata", {{"name", "torch"}, {"namespace", ns_}}},
                {"spec", {{"image", kImage}, {"lock", {{"inline", kLock}}}}}};
    ASSERT_EQ(kubectl({"apply", "-f", "-"}, rte.dump()).exitCode, 0);
    ASSERT_EQ(kubectl({"wait", "--for=condition=Ready", "rte/torch", "-n", ns_, "--timeout=30s"})
                  .exitCode,
              0);
    hash_ = kubectlJson({"get", "rte", "torch", "-n", ns_})["status"].value("closureHash", "");
    // Users: everyone may create and edit releases (the chart gives no such
    // role; a team's own); carol, alice and dave may also approve; bob may not.
    json editor = {
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "Role"},
        {"metadata", {{"name", "release-editor"}, {"namespace", ns_}}},
        {"rules",
         json::array({{{"apiGroups", {"lockstep.dev"}},
                       {"resources", {"modelreleases"}},
                       {"verbs", {"create", "get", "list", "watch", "patch", "update"}}}})}};
    ASSERT_EQ(kubectl({"apply", "-f", "-"}, editor.dump()).exitCode, 0);
    for (const char* u : {"carol", "alice", "bob", "dave"}) {
      ASSERT_EQ(kubectl({"create", "rolebinding", std::string("edit-") + u, "-n", ns_,
                         "--role=release-editor", std::string("--user=") + u})
                    .exitCode,
                0);
    }
    for (const char* u : {"carol", "alice", "dave"}) {
      ASSERT_EQ(kubectl({"create", "rolebinding", std::string("approve-") + u, "-n", ns_,
                         "--clusterrole=lockstep-release-approver", std::string("--user=") + u})
                    .exitCode,
                0);
    }
  }
  void TearDown() override {
    printOperatorLogOnFailure();
    kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  CommandResult as(const std::string& user, std::vector<std::string> args,
                   const std::string& input = "") {
    args.insert(args.begin(), "--as=" + user);
    args.push_back("-n");
    args.push_back(ns_);
    return kubectl(args, input);
  }

  // A gate stage that KWOK ends after 1 s reporting accuracy 0.84.
  static json gate(const std::string& name) {
    json g = {{"name", name}};
    g["gate"]["template"]["metadata"]["annotations"] = {
        {"lockstep.dev/test-termination-message", R"({"accuracy":0.84})"},
        {"lockstep.dev/test-duration", "1s"}};
    g["gate"]["template"]["spec"]["containers"] =
        json::array({{{"name", name}, {"command", {"python", "run.py"}}}});
    g["gate"]["timeout"] = "10m";
    return g;
  }

  json manifest(const std::string& name, const json& stages, const std::string& creator) {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}, {"namespace", ns_}}},
               {"spec",
                {{"model", name},
                 {"package", kPackage},
                 {"runtimeEnvRef", {{"name", "torch"}}},
                 {"closureHash", hash_},
                 {"stages", stages}}}};
    if (!creator.empty()) mr["metadata"]["annotations"]["lockstep.dev/created-by"] = creator;
    return mr;
  }

  json release(const std::string& name) { return kubectlJson({"get", "mr", name, "-n", ns_}); }

  static json stageOf(const json& mr, const std::string& name) {
    if (mr.is_discarded() || !mr.contains("status")) return json::object();
    for (const json& s : mr["status"].value("stages", json::array())) {
      if (s["name"] == name) return s;
    }
    return json::object();
  }

  json waitStage(const std::string& name, const std::string& stage, const std::string& phase) {
    json mr;
    EXPECT_TRUE(eventually([&] {
      mr = release(name);
      return stageOf(mr, stage).value("phase", "") == phase;
    })) << "stage "
        << stage << " not " << phase << ": " << mr.dump(2);
    return mr;
  }

  // Creates `name` as carol (recorded as its creator) and waits until `stage` waits.
  void createWaiting(const std::string& name, const json& stages, const std::string& stage) {
    auto r = as("carol", {"create", "-f", "-"}, manifest(name, stages, "carol").dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
    waitStage(name, stage, "WaitingForApproval");
  }

  std::string ns_;
  std::string hash_;
};

TEST_F(ApprovalsClusterTest, RemovingTheWaitingStagesApprovalIsRefusedNamingTheField) {
  json ci = gate("ci");
  ci["approval"] = "Manual";
  createWaiting("bypass", json::array({gate("eval"), ci}), "ci");
  ASSERT_EQ(statusField(release("bypass")), "Testing");
  // bob may patch ModelReleases but holds no approve verb: the reproduced bypass.
  auto r = as("bob", {"patch", "mr", "bypass", "--type=json", "-p",
                      R"([{"op":"remove","path":"/spec/stages/1/approval"}])"});
  EXPECT_NE(r.exitCode, 0) << r.out;
  EXPECT_NE(r.err.find("spec.stages[1].approval: field is immutable once the release has left "
                       "Pending"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("create a new ModelRelease"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("admission webhook"), std::string::npos)
      << "the CRD's CEL rule refuses it, before any webhook: " << r.err;
  // Inside a pod template too (the CEL rule compares the untyped template as well).
  r = as(
      "bob",
      {"patch", "mr", "bypass", "--type=json", "-p",
       R"([{"op":"replace","path":"/spec/stages/1/gate/template/spec/containers/0/name","value":"x"}])"});
  EXPECT_NE(r.exitCode, 0) << r.out;
  EXPECT_NE(r.err.find("spec.stages[1].gate: field is immutable"), std::string::npos) << r.err;
  // The model too; metadata stays writable.
  r = as("bob", {"patch", "mr", "bypass", "--type=merge", "-p", R"({"spec":{"model":"other"}})"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.model"), std::string::npos) << r.err;
  r = as("bob", {"label", "mr", "bypass", "team=ml"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  // Nothing moved: ci still waits, with no approver.
  json mr = release("bypass");
  EXPECT_EQ(stageOf(mr, "ci").value("phase", ""), "WaitingForApproval") << mr.dump(2);
  EXPECT_EQ(mr["spec"]["stages"][1].value("approval", json()), "Manual");
  // Issue 29: so is spec.registryTags (the Secret tags are pushed with), added or changed.
  r = as("bob", {"patch", "mr", "bypass", "--type=merge", "-p",
                 R"({"spec":{"registryTags":{"secretRef":{"name":"someone-elses"}}}})"});
  EXPECT_NE(r.exitCode, 0) << r.out;
  EXPECT_NE(r.err.find("spec.registryTags is immutable once the release has left Pending (phase "
                       "Testing)"),
            std::string::npos)
      << r.err;
}

TEST_F(ApprovalsClusterTest, TheCreatorCannotApproveAnotherApproverCan) {
  json ci = gate("ci");
  ci["approval"] = "Manual";
  // Nobody records another user as the creator.
  auto forged = as("bob", {"create", "-f", "-"},
                   manifest("forged", json::array({gate("eval"), ci}), "carol").dump());
  EXPECT_NE(forged.exitCode, 0);
  EXPECT_NE(forged.err.find("lockstep.dev/created-by\"]: value \"carol\" must be your own user "
                            "name \"bob\""),
            std::string::npos)
      << forged.err;

  createWaiting("sod", json::array({gate("eval"), ci}), "ci");
  // Nor changes it afterwards.
  auto r = as("carol", {"annotate", "--overwrite", "mr", "sod", "lockstep.dev/created-by=alice"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("field is immutable"), std::string::npos) << r.err;
  // carol holds the approve verb, but created the release.
  r = as("carol", {"annotate", "mr", "sod", "approve.lockstep.dev/ci=carol"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("user \"carol\" created this release and cannot approve it (separation of "
                       "duties)"),
            std::string::npos)
      << r.err;
  r = as("alice", {"annotate", "mr", "sod", "approve.lockstep.dev/ci=alice"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  json mr;
  ASSERT_TRUE(eventually([&] {
    mr = release("sod");
    return statusField(mr) == "Validated";
  })) << mr.dump(2);
  EXPECT_EQ(stageOf(mr, "ci")["approvedBy"], "alice");
  EXPECT_EQ(stageOf(mr, "ci")["approvedGeneration"], mr["metadata"]["generation"]);
}

TEST_F(ApprovalsClusterTest, TheMutatingWebhookRecordsTheCreatorWhoCannotApprove) {
  json ci = gate("ci");
  ci["approval"] = "Manual";
  // alice writes no creator: the mutating webhook records her from userInfo.
  json mr = manifest("recorded", json::array({gate("eval"), ci}), "");
  ASSERT_FALSE(mr["metadata"].contains("annotations"));
  auto r = as("alice", {"create", "-f", "-"}, mr.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err.find("records no creator"), std::string::npos) << r.err;
  json stored = release("recorded");
  EXPECT_EQ(stored["metadata"]["annotations"].value("lockstep.dev/created-by", ""), "alice")
      << stored["metadata"].dump(2);
  waitStage("recorded", "ci", "WaitingForApproval");
  // alice holds the approve verb, but created the release.
  r = as("alice", {"annotate", "mr", "recorded", "approve.lockstep.dev/ci=alice"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("user \"alice\" created this release and cannot approve it (separation "
                       "of duties)"),
            std::string::npos)
      << r.err;
  r = as("dave", {"annotate", "mr", "recorded", "approve.lockstep.dev/ci=dave"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(eventually([&] {
    stored = release("recorded");
    return statusField(stored) == "Validated";
  })) << stored.dump(2);
  EXPECT_EQ(stageOf(stored, "ci")["approvedBy"], "dave");

  // Server-side apply (Argo CD, Flux): the creator is recorded on the first
  // apply (next to the manifest's own annotations: the patch's key escaped,
  // lockstep.dev~1created-by) and kept by the next one, whose manifest does
  // not carry it.
  json applied = manifest("applied", json::array({gate("eval")}), "");
  applied["metadata"]["annotations"]["team.example/owner"] = "ml";
  r = as("dave", {"apply", "--server-side", "--field-manager=gitops", "-f", "-"}, applied.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  applied["metadata"]["labels"]["team"] = "ml";
  r = as("dave", {"apply", "--server-side", "--field-manager=gitops", "-f", "-"}, applied.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  stored = release("applied");
  EXPECT_EQ(stored["metadata"]["labels"].value("team", ""), "ml");
  EXPECT_EQ(stored["metadata"]["annotations"].value("lockstep.dev/created-by", ""), "dave")
      << stored["metadata"].dump(2);
  EXPECT_EQ(stored["metadata"]["annotations"].value("team.example/owner", ""), "ml");
}

TEST_F(ApprovalsClusterTest, MinApproversTwoNeedsTwoDistinctUsers) {
  json ci = gate("ci");
  ci["approval"] = {{"policy", "Manual"}, {"minApprovers", 2}};
  createWaiting("two", json::array({gate("eval"), ci}), "ci");
  auto r = as("alice", {"annotate", "mr", "two", "approve.lockstep.dev/ci=alice"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // One approver is not enough: the controller says so and starts nothing.
  json mr;
  ASSERT_TRUE(eventually([&] {
    mr = release("two");
    return conditionField(mr, "Ready", "message").find("1 of 2 distinct approver(s)") !=
           std::string::npos;
  })) << mr.dump(2);
  EXPECT_EQ(stageOf(mr, "ci").value("phase", ""), "WaitingForApproval");
  // alice cannot count twice; bob is not an approver.
  r = as("alice", {"annotate", "mr", "two", "approve.lockstep.dev/ci.2=alice"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("user \"alice\" already approved stage \"ci\""), std::string::npos) << r.err;
  r = as("bob", {"annotate", "mr", "two", "approve.lockstep.dev/ci.2=bob"});
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("may not approve"), std::string::npos) << r.err;
  r = as("dave", {"annotate", "mr", "two", "approve.lockstep.dev/ci.2=dave"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(eventually([&] {
    mr = release("two");
    return statusField(mr) == "Validated";
  })) << mr.dump(2);
  EXPECT_EQ(stageOf(mr, "ci")["approvers"], json::array({"alice", "dave"}));
}

// Issue 29, must-show 2: a namespace admin can create a ServiceAccount, bind it to the
// approver role and mint its token; with minApprovers 2 that would be one person twice. A
// ServiceAccount neither approves nor counts (the chart value approvals.allowServiceAccounts is
// off). fromGroups admits only approvers in the named groups, whatever groups a client writes
// next to its approval (the mutating webhook records the authenticated ones), and the status
// records each approver with their groups.
TEST_F(ApprovalsClusterTest, ApproversArePeopleFromTheNamedGroups) {
  // erin administers the namespace: she creates the ServiceAccount, binds it and mints a token.
  ASSERT_EQ(kubectl({"create", "rolebinding", "admin-erin", "-n", ns_, "--clusterrole=admin",
                     "--user=erin"})
                .exitCode,
            0);
  ASSERT_EQ(as("erin", {"create", "serviceaccount", "approver-bot"}).exitCode, 0);
  const std::string bot = "system:serviceaccount:" + ns_ + ":approver-bot";
  CommandResult bound;
  ASSERT_TRUE(eventually([&] {  // until `admin` has aggregated the approver role
    bound = as("erin",
               {"create", "rolebinding", "approve-bot", "--clusterrole=lockstep-release-approver",
                "--serviceaccount=" + ns_ + ":approver-bot"});
    return bound.exitCode == 0;
  })) << bound.err;
  CommandResult token = as("erin", {"create", "token", "approver-bot", "--duration=10m"});
  ASSERT_EQ(token.exitCode, 0) << token.err;
  std::string tok = token.out;
  while (!tok.empty() && (tok.back() == '\n' || tok.back() == ' ')) tok.pop_back();
  // A kubeconfig that authenticates with the token alone (a client certificate would win).
  json admin = json::parse(kubectl({"config", "view", "--raw", "-o", "json"}).out);
  const json& cluster = admin["clusters"][0]["cluster"];
  const std::string botConfig = "/tmp/" + ns_ + "-bot.kubeconfig";
  std::ofstream(botConfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                           << "    server: " << cluster["server"].get<std::string>()
                           << "\n    certificate-authority-data: "
                           << cluster["certificate-authority-data"].get<std::string>()
                           << "\nusers:\n- name: bot\n  user:\n    token: " << tok
                           << "\ncontexts:\n- name: c\n  context: {cluster: c, user: bot}\n"
                           << "current-context: c\n";
  auto asBot = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {toolsBin().empty() ? "kubectl" : toolsBin() + "/kubectl",
                               "--kubeconfig", botConfig});
    args.insert(args.end(), {"-n", ns_});
    return run(args);
  };
  CommandResult who = asBot({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_EQ(who.out, bot) << who.err;

  json ci = gate("ci");
  ci["approval"] = {{"policy", "Manual"}, {"minApprovers", 2}, {"fromGroups", {"ml-leads"}}};
  createWaiting("people", json::array({gate("eval"), ci}), "ci");
  auto r = as("alice",
              {"--as-group=ml-leads", "annotate", "mr", "people", "approve.lockstep.dev/ci=alice"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The bot's approval is refused, naming the user and the rule.
  r = asBot({"annotate", "mr", "people", "approve.lockstep.dev/ci.2=" + bot});
  EXPECT_NE(r.exitCode, 0) << "a ServiceAccount approved";
  EXPECT_NE(r.err.find("\"" + bot + "\" is a ServiceAccount: approvers are people"),
            std::string::npos)
      << r.err;
  // dave may approve, but not from outside ml-leads, even writing ml-leads as his groups.
  r = as("dave",
         {"--as-group=interns", "annotate", "mr", "people", "approve.lockstep.dev/ci.2=dave",
          R"(approver-groups.lockstep.dev/ci.2=["ml-leads"])"});
  EXPECT_NE(r.exitCode, 0) << "an approver outside fromGroups approved";
  EXPECT_NE(r.err.find("user \"dave\" is in none of the groups stage \"ci\" takes approvals "
                       "from (fromGroups: \"ml-leads\""),
            std::string::npos)
      << r.err;
  // Nobody else counted: the release waits for a second person from ml-leads.
  json mr;
  EXPECT_TRUE(eventually([&] {
    mr = release("people");
    return conditionField(mr, "Ready", "message").find("1 of 2 distinct approver(s)") !=
           std::string::npos;
  })) << mr.dump(2);
  EXPECT_EQ(stageOf(mr, "ci").value("phase", ""), "WaitingForApproval");
  EXPECT_EQ(mr["metadata"]["annotations"].value("approver-groups.lockstep.dev/ci", ""),
            R"(["ml-leads","system:authenticated"])")
      << mr["metadata"].dump(2);
  r = as("dave",
         {"--as-group=ml-leads", "annotate", "mr", "people", "approve.lockstep.dev/ci.2=dave"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(eventually([&] {
    mr = release("people");
    return statusField(mr) == "Validated";
  })) << mr.dump(2);
  EXPECT_EQ(stageOf(mr, "ci")["approvers"], json::array({"alice", "dave"}));
  EXPECT_EQ(stageOf(mr, "ci")["approvals"],
            json::parse(R"([{"user":"alice","groups":["ml-leads","system:authenticated"]},
                            {"user":"dave","groups":["ml-leads","system:authenticated"]}])"))
      << mr["status"].dump(2);
  std::remove(botConfig.c_str());
}

// Issue 29: actions only for the present. An approval written for a stage
// that does not wait for it yet (here the release is Pending: its RuntimeEnv
// does not exist, its spec may still change) is refused, so it can never
// approve content nobody has seen; the spec changes freely. (An approval that
// was admitted is bound to the generation it approved: released_content_test.cc.)
TEST_F(ApprovalsClusterTest, AnApprovalForAStageNotWaitingYetIsRefused) {
  json ci = gate("ci");
  ci["approval"] = "Manual";
  json mr = manifest("early", json::array({gate("eval"), ci}), "carol");
  mr["spec"]["runtimeEnvRef"]["name"] = "not-yet";
  auto r = as("carol", {"create", "-f", "-"}, mr.dump());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(eventually([&] { return statusField(release("early")) == "Pending"; }))
      << release("early").dump(2);
  r = as("alice", {"annotate", "mr", "early", "approve.lockstep.dev/ci=alice"});
  EXPECT_NE(r.exitCode, 0) << "an approval of a stage that does not wait was admitted";
  EXPECT_NE(r.err.find("metadata.annotations[\"approve.lockstep.dev/ci\"]: stage \"ci\""),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("approve it once it waits"), std::string::npos) << r.err;
  // Nothing approved it: the spec may change.
  r = as("bob", {"patch", "mr", "early", "--type=json", "-p",
                 R"([{"op":"replace","path":"/spec/stages/1/gate/timeout","value":"1h"}])"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  json now = release("early");
  EXPECT_EQ(now["spec"]["stages"][1]["gate"]["timeout"], "1h");
  EXPECT_FALSE(
      now["metadata"].value("annotations", json::object()).contains("approve.lockstep.dev/ci"));
}

TEST_F(ApprovalsClusterTest, AManualServingStageWaitsBeforeItsCanary) {
  json prod = {{"name", "prod"}, {"approval", "Manual"}};
  prod["serving"]["template"]["spec"]["containers"] =
      json::array({{{"name", "server"}, {"command", {"python", "serve.py"}}}});
  prod["serving"]["replicas"] = 2;
  prod["canary"]["steps"] = json::array({{{"weight", 50}, {"pause", "Indefinite"}}});
  createWaiting("served", json::array({gate("eval"), prod}), "prod");
  json mr = release("served");
  EXPECT_EQ(conditionField(mr, "Ready", "reason"), "WaitingForApproval") << mr.dump(2);
  EXPECT_FALSE(mr["status"].contains("canary")) << mr["status"].dump(2);
  // Still no prod object a few reconciles later.
  EXPECT_FALSE(eventually(
      [&] {
        return kubectl({"get", "deployment", "served-canary", "-n", ns_}).exitCode == 0;
      },
      std::chrono::seconds(5)));
  auto r = as("carol", {"annotate", "mr", "served", "approve.lockstep.dev/prod=carol"});
  EXPECT_NE(r.exitCode, 0) << "the creator cannot approve prod either";
  r = as("alice", {"annotate", "mr", "served", "approve.lockstep.dev/prod=alice"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  ASSERT_TRUE(eventually([&] {
    return kubectl({"get", "deployment", "served-canary", "-n", ns_}).exitCode == 0;
  })) << release("served").dump(2);
  // The status write follows the canary's apply in the same reconcile.
  EXPECT_TRUE(eventually([&] {
    mr = release("served");
    return stageOf(mr, "prod").value("approvedBy", "") == "alice";
  })) << mr["status"].dump(2);
}

}  // namespace
}  // namespace lockstep::testing
