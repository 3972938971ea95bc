// `lockstep release` against the real control plane, with the operator binary
// (ModelRelease controller, the chart's webhooks and RBAC) running gate Jobs
// on KWOK nodes: who may approve and abort, as users the API server really
// authenticates (ServiceAccounts with bound tokens, each given its own
// kubeconfig, as a person would have). KWOK ends gate pods with the
// termination message and after the duration the template's annotations ask
// for (tests/cluster/kwok/stages.yaml).
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/release_world.h"

#ifndef LOCKSTEP_CLI_BIN
#error "LOCKSTEP_CLI_BIN must name the lockstep binary"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kPackage = testPackage('b');

class ReleaseCliClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Every controller: the ModelRelease controller runs the gates these tests
    // approve and abort (no status is written by hand).
    ASSERT_EQ(ReleaseWorld::startOperator(), "");
    char tmpl[] = "/tmp/lockstep-cli-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    run({"rm", "-rf", dir_});
  }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "cli", .enforce = false}), "");
    ns_ = w_.ns();
    hash_ = w_.hash();
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  // eval (ends after `evalDuration` reporting `evalMessage`, accuracy must be
  // >= 0.5) then ci, which needs manual approval. `evalImage` sets eval's image.
  json releaseManifest(const std::string& name, const std::string& evalImage = "",
                       const std::string& evalDuration = "1s",
                       const std::string& evalMessage = R"({"accuracy":0.84})") {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}, {"namespace", ns_}}},
               {"spec",
                {{"model", "gpt2"},
                 {"package", kPackage},
                 {"runtimeEnvRef", {{"name", "torch"}}},
                 {"closureHash", hash_}}}};
    json eval = {{"name", "eval"}, {"command", {"python", "eval.py"}}};
    if (!evalImage.empty()) eval["image"] = evalImage;
    json evalStage = {{"name", "eval"}};
    evalStage["gate"]["template"]["metadata"]["annotations"] = {
        {"lockstep.dev/test-termination-message", evalMessage},
        {"lockstep.dev/test-duration", evalDuration}};
    evalStage["gate"]["template"]["spec"]["containers"] = json::array({eval});
    evalStage["gate"]["metrics"] = json::array({{{"name", "accuracy"}, {"min", 0.5}}});
    evalStage["gate"]["timeout"] = "10m";
    json ciStage = {{"name", "ci"}, {"approval", "Manual"}};
    ciStage["gate"]["template"]["spec"]["containers"] =
        json::array({{{"name", "ci"}, {"command", {"make", "test"}}}});
    mr["spec"]["stages"] = json::array({evalStage, ciStage});
    return mr;
  }

  json release(const std::string& name) { return w_.get("mr", name); }

  static json stageOf(const json& mr, const std::string& name) {
    if (mr.is_discarded() || !mr.contains("status")) return json::object();
    for (const json& s : mr["status"].value("stages", json::array())) {
      if (s["name"] == name) return s;
    }
    return json::object();
  }

  // Creates the release and waits until the controller ran eval and ci waits.
  void createWaiting(const std::string& name) {
    auto r = kubectl({"create", "-f", "-"}, releaseManifest(name).dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
    json mr;
    ASSERT_TRUE(eventually([&] {
      mr = release(name);
      return stageOf(mr, "ci").value("phase", "") == "WaitingForApproval";
    })) << mr.dump(2);
  }

  json waitPhase(const std::string& name, const std::string& phase) {
    return w_.waitPhase(name, phase, std::chrono::seconds(60));
  }

  json jobs(const std::string& release) {
    return kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=" + release});
  }

  // A person `name` (user name userName(name)), bound in the test namespace to
  // `clusterRole` (or to `role`, a Role made here from `rules`), with a client
  // certificate signed by the cluster's CA and a kubeconfig whose context
  // names the namespace. Returns the kubeconfig path.
  std::string user(const std::string& name, const std::string& clusterRole,
                   const json& rules = nullptr) {
    std::string subject = "--user=" + userName(name);
    if (!clusterRole.empty()) {
      EXPECT_EQ(kubectl({"create", "rolebinding", name, "-n", ns_, "--clusterrole=" + clusterRole,
                         subject})
                    .exitCode,
                0);
    } else {
      json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                   {"kind", "Role"},
                   {"metadata", {{"name", name}, {"namespace", ns_}}},
                   {"rules", rules}};
      EXPECT_EQ(kubectl({"apply", "-f", "-"}, role.dump()).exitCode, 0);
      EXPECT_EQ(
          kubectl({"create", "rolebinding", name, "-n", ns_, "--role=" + name, subject}).exitCode,
          0);
    }
    std::string base = dir_ + "/" + ns_ + "-" + name;
    std::string certs = clusterDir() + "/certs";
    auto req = run({"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", base + ".key", "-out", base + ".csr", "-subj",
                    "/CN=" + userName(name)});
    EXPECT_EQ(req.exitCode, 0) << req.err;
    std::ofstream(base + ".ext") << "extendedKeyUsage=clientAuth\n";
    // A serial of its own (not the CA's serial file, which parallel tests share).
    auto sign =
        run({"openssl", "x509", "-req", "-in", base + ".csr", "-CA", certs + "/ca.crt", "-CAkey",
             certs + "/ca.key", "-set_serial", std::to_string(std::random_device{}()), "-days", "1",
             "-extfile", base + ".ext", "-out", base + ".crt"});
    EXPECT_EQ(sign.exitCode, 0) << sign.err;
    json admin = json::parse(kubectl({"config", "view", "--raw", "-o", "json"}).out);
    const json& cluster = admin["clusters"][0]["cluster"];
    std::string path = base + ".kubeconfig";
    std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                        << "    server: " << cluster["server"].get<std::string>() << "\n"
                        << "    certificate-authority-data: "
                        << cluster["certificate-authority-data"].get<std::string>() << "\n"
                        << "users:\n- name: u\n  user:\n    client-certificate: " << base
                        << ".crt\n    client-key: " << base << ".key\n"
                        << "contexts:\n- name: c\n  context: {cluster: c, user: u, namespace: "
                        << ns_ << "}\ncurrent-context: c\n";
    return path;
  }
  // People of different tests are told apart by their namespace.
  std::string userName(const std::string& name) const { return name + "@" + ns_; }

  // The CLI as `kubeconfig`'s user (namespace from its context).
  CommandResult cli(const std::string& kubeconfig, std::vector<std::string> args) {
    args.insert(args.begin(), {LOCKSTEP_CLI_BIN, "release"});
    args.push_back("--kubeconfig=" + kubeconfig);
    return run(args);
  }

  std::string annotation(const std::string& release, const std::string& key) {
    json mr = kubectlJson({"get", "mr", release, "-n", ns_});
    return mr["metadata"].value("annotations", json::object()).value(key, "");
  }

  static std::string dir_;
  ReleaseWorld w_;
  std::string ns_;
  std::string hash_;
};

std::string ReleaseCliClusterTest::dir_;

const json kReadPatchNoVerbs = json::array({{{"apiGroups", {"lockstep.dev"}},
                                             {"resources", {"modelreleases"}},
                                             {"verbs", {"get", "list", "watch", "patch"}}}});

TEST_F(ReleaseCliClusterTest, ApproverApprovesOthersAreRefusedWithAReason) {
  createWaiting("gpt2");
  std::string alice = user("alice", "lockstep-release-approver");
  std::string bob = user("bob", "", kReadPatchNoVerbs);
  std::string carol = user("carol", "lockstep-release-viewer");

  // bob may patch releases but lacks the verb: the webhook refuses and says why.
  auto r = cli(bob, {"approve", "gpt2"});
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("approving stage \"ci\" of release \"" + ns_ +
                       "/gpt2\": admission webhook \"modelreleases.lockstep.dev\" denied the "
                       "request"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("user \"" + userName("bob") + "\" may not approve ModelRelease \"" + ns_ +
                       "/gpt2\": RBAC verb \"approve\" on resource \"modelreleases\" in API group "
                       "\"lockstep.dev\" is required"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(annotation("gpt2", "approve.lockstep.dev/ci"), "");

  // carol may only read: RBAC refuses the patch itself.
  r = cli(carol, {"approve", "gpt2", "ci"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("cannot patch resource \"modelreleases\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lockstep-release-approver"), std::string::npos) << r.err;

  // alice cannot write someone else's name, not even with the verb.
  auto forged = kubectl({"annotate", "mr", "gpt2", "-n", ns_, "--kubeconfig=" + alice,
                         "approve.lockstep.dev/ci=" + userName("bob")});
  EXPECT_NE(forged.exitCode, 0);
  EXPECT_NE(forged.err.find("value \"" + userName("bob") + "\" must be your own user name \"" +
                            userName("alice") + "\""),
            std::string::npos)
      << forged.err;
  EXPECT_EQ(stageOf(release("gpt2"), "ci")["phase"], "WaitingForApproval");

  // alice approves (by default the waiting stage); her name is what is recorded,
  // and the controller moves the stage on.
  r = cli(alice, {"approve", "gpt2"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out,
            "stage \"ci\" of release \"" + ns_ + "/gpt2\" approved by " + userName("alice") + "\n");
  EXPECT_EQ(annotation("gpt2", "approve.lockstep.dev/ci"), userName("alice"));
  r = cli(carol, {"wait", "gpt2", "--for=phase=Validated", "--timeout=90s"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  json mr = release("gpt2");
  EXPECT_EQ(stageOf(mr, "ci")["approvedBy"], userName("alice")) << mr["status"].dump(2);
  EXPECT_EQ(stageOf(mr, "ci")["phase"], "Succeeded");
  r = cli(carol, {"status", "gpt2"});
  EXPECT_NE(r.out.find("approved by " + userName("alice")), std::string::npos) << r.out;
  // Nothing is waiting any more.
  r = cli(alice, {"approve", "gpt2"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("no stage of release \"" + ns_ +
                       "/gpt2\" is waiting for approval (phase: Validated"),
            std::string::npos)
      << r.err;
}

TEST_F(ReleaseCliClusterTest, AbortNeedsTheAbortVerbAndStopsARunningEval) {
  auto created = kubectl({"create", "-f", "-"}, releaseManifest("stopme", "", "300s").dump());
  ASSERT_EQ(created.exitCode, 0) << created.err;
  ASSERT_TRUE(eventually([&] { return jobs("stopme")["items"].size() == 1; }));
  std::string alice = user("alice", "lockstep-release-approver");
  json approveOnly = kReadPatchNoVerbs;
  approveOnly[0]["verbs"].push_back("approve");
  std::string dave = user("dave", "", approveOnly);

  auto r = cli(dave, {"abort", "stopme"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("may not abort"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RBAC verb \"abort\""), std::string::npos) << r.err;
  EXPECT_EQ(annotation("stopme", "lockstep.dev/abort"), "");

  r = cli(alice, {"abort", "stopme"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(annotation("stopme", "lockstep.dev/abort"), userName("alice"));
  r = cli(alice, {"wait", "stopme", "--for=phase=Failed", "--timeout=90s"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  json mr = release("stopme");
  EXPECT_EQ(stageOf(mr, "eval")["message"], "aborted by " + userName("alice"));
  EXPECT_TRUE(eventually([&] { return jobs("stopme")["items"].empty(); })) << jobs("stopme").dump();
  r = cli(alice, {"status", "stopme"});
  EXPECT_NE(r.out.find("Abort requested by: " + userName("alice")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Aborted"), std::string::npos) << r.out;
  // An ended release cannot be aborted again.
  r = cli(alice, {"abort", "stopme"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("already ended (phase: Failed)"), std::string::npos) << r.err;
}

TEST_F(ReleaseCliClusterTest, ReadsListsAndWaits) {
  createWaiting("gpt2");
  std::string carol = user("carol", "lockstep-release-viewer");

  auto r = cli(carol, {"status", "gpt2"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("ci     WaitingForApproval"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eval   accuracy  0.84"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Evidence:"), std::string::npos) << r.out;
  r = cli(carol, {"status", "gpt2", "-o", "json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["phase"], "Testing");
  r = cli(carol, {"list"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("gpt2  gpt2   Testing  ci"), std::string::npos) << r.out;

  // A stage that is not waiting, an unknown stage, a missing release.
  std::string alice = user("alice", "lockstep-release-approver");
  r = cli(alice, {"approve", "gpt2", "eval"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("stage \"eval\" of release \"" + ns_ +
                       "/gpt2\" is not waiting for approval (phase: Succeeded"),
            std::string::npos)
      << r.err;
  r = cli(alice, {"approve", "gpt2", "qa"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("has no stage \"qa\" (stages: eval, ci)"), std::string::npos) << r.err;
  r = cli(alice, {"status", "nope"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("release \"" + ns_ + "/nope\" not found"), std::string::npos) << r.err;

  // wait: times out while ci waits; fails fast on a release that failed its gate.
  r = cli(carol, {"wait", "gpt2", "--for=phase=Validated", "--timeout=2s"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("timed out after 2s"), std::string::npos) << r.err;
  auto created = kubectl({"create", "-f", "-"},
                         releaseManifest("weak", "", "1s", R"({"accuracy":0.1})").dump());
  ASSERT_EQ(created.exitCode, 0) << created.err;
  waitPhase("weak", "Failed");
  r = cli(carol, {"wait", "weak", "--for=phase=Validated", "--timeout=30s"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("it will never reach Validated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("accuracy"), std::string::npos) << r.err;
  r = cli(carol, {"wait", "weak", "--for=phase=failed"});
  EXPECT_EQ(r.exitCode, 0) << r.err;

  // As a kubectl plugin (kubectl finds a plugin only when no flag comes before its name).
  std::string cliDir = LOCKSTEP_CLI_BIN;
  cliDir = cliDir.substr(0, cliDir.rfind('/'));
  r = run({"env", "PATH=" + cliDir + ":" + std::getenv("PATH"), toolsBin() + "/kubectl", "lockstep",
           "release", "list", "--kubeconfig=" + carol});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("weak"), std::string::npos) << r.out;
}

TEST_F(ReleaseCliClusterTest, GateTemplateOnAnotherImageIsRefused) {
  auto r = kubectl({"create", "-f", "-"},
                   releaseManifest("foreign", "registry.example/runtimes/torch:2.5").dump());
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("spec.stages[0].gate.template.spec.containers[0]: stage \"eval\" container "
                       "\"eval\" image \"registry.example/runtimes/torch:2.5\" is not pinned by "
                       "digest"),
            std::string::npos)
      << r.err;
  r = kubectl({"create", "-f", "-"}, releaseManifest("same", kTestImage).dump());
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

}  // namespace
}  // namespace lockstep::testing
