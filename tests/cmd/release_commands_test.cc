// `lockstep release` commands against a scripted API server (FakeTransport):
// the requests they send, what they print, and their exit codes.
#include "cmd/lockstep/release_commands.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeTransport;

json release(const std::string& stagePhase, const std::string& phase = "Testing") {
  return {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "gpt2-v7"}, {"namespace", "ml"}, {"resourceVersion", "41"}}},
      {"spec",
       {{"stages",
         {{{"name", "eval"}, {"gate", json::object()}},
          {{"name", "ci"}, {"approval", "Manual"}, {"gate", json::object()}}}}}},
      {"status",
       {{"phase", phase},
        {"currentStage", "ci"},
        {"stages",
         {{{"name", "eval"}, {"phase", "Succeeded"}}, {{"name", "ci"}, {"phase", stagePhase}}}}}}};
}

json whoami(const std::string& user) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "SelfSubjectReview"},
          {"status", {{"userInfo", {{"username", user}, {"groups", {"system:authenticated"}}}}}}};
}

class ReleaseCommandsTest : public ::testing::Test {
 protected:
  ReleaseCommandsTest() { clock_.setAutoAdvance(true); }
  int run(const std::vector<std::string>& args) {
    auto cmd = parseReleaseArgs(args);
    EXPECT_TRUE(cmd.isOk()) << cmd.status().toString();
    return runReleaseCommand(*cmd, "ml", io_);
  }
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  kube::Client client_{transport_};
  FakeClock clock_;
  std::ostringstream out_, err_;
  ReleaseIo io_{client_, clock_, out_, err_, "lockstep"};
};

TEST_F(ReleaseCommandsTest, ApproveFindsTheUserAndPatchesTheWaitingStage) {
  transport_->push(FakeTransport::ok(whoami("alice")));
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  EXPECT_EQ(run({"approve", "gpt2-v7"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "stage \"ci\" of release \"ml/gpt2-v7\" approved by alice\n");
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/apis/authentication.k8s.io/v1/selfsubjectreviews");
  EXPECT_EQ(reqs[1].method, "GET");
  EXPECT_EQ(reqs[1].path, "/apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/gpt2-v7");
  EXPECT_EQ(reqs[2].method, "PATCH");
  EXPECT_EQ(reqs[2].header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(json::parse(reqs[2].body),
            (json{{"metadata",
                   {{"resourceVersion", "41"},
                    {"annotations", {{"approve.lockstep.dev/ci", "alice"}}}}}}));
}

TEST_F(ReleaseCommandsTest, ApprovePrintsTheWebhookDenial) {
  transport_->push(FakeTransport::ok(whoami("bob")));
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  const std::string denial =
      "admission webhook \"modelreleases.lockstep.dev\" denied the request: lockstep: "
      "ModelRelease \"ml/gpt2-v7\": metadata.annotations[\"approve.lockstep.dev/ci\"]: user "
      "\"bob\" "
      "may not approve ModelRelease \"ml/gpt2-v7\": RBAC verb \"approve\" ...";
  transport_->push(FakeTransport::status(403, "Forbidden", denial));
  EXPECT_EQ(run({"approve", "gpt2-v7", "ci"}), 1);
  EXPECT_EQ(err_.str(),
            "lockstep: approving stage \"ci\" of release \"ml/gpt2-v7\": " + denial + "\n");
  EXPECT_EQ(out_.str(), "");
}

TEST_F(ReleaseCommandsTest, RbacRefusalOfThePatchNamesTheRole) {
  transport_->push(FakeTransport::ok(whoami("bob")));
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  transport_->push(FakeTransport::status(
      403, "Forbidden",
      "modelreleases.lockstep.dev \"gpt2-v7\" is forbidden: User \"bob\" cannot patch resource"));
  EXPECT_EQ(run({"approve", "gpt2-v7"}), 1);
  EXPECT_NE(err_.str().find("cannot patch resource"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("the ClusterRole lockstep-release-approver grants"), std::string::npos);
}

TEST_F(ReleaseCommandsTest, ApproveRetriesAConflictWithAFreshRead) {
  transport_->push(FakeTransport::ok(whoami("alice")));
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  transport_->push(FakeTransport::status(409, "Conflict", "the object has been modified"));
  json moved = release("WaitingForApproval");
  moved["metadata"]["resourceVersion"] = "42";
  transport_->push(FakeTransport::ok(moved));
  transport_->push(FakeTransport::ok(moved));
  EXPECT_EQ(run({"approve", "gpt2-v7"}), 0) << err_.str();
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(json::parse(reqs[4].body)["metadata"]["resourceVersion"], "42");
}

TEST_F(ReleaseCommandsTest, ApproveOfAStageThatIsNotWaitingWritesNothing) {
  transport_->push(FakeTransport::ok(whoami("alice")));
  transport_->push(FakeTransport::ok(release("Running")));
  EXPECT_EQ(run({"approve", "gpt2-v7", "ci"}), 1);
  EXPECT_EQ(err_.str(),
            "lockstep: cannot approve: stage \"ci\" of release \"ml/gpt2-v7\" is not waiting for "
            "approval (phase: Running)\n");
  EXPECT_EQ(transport_->requestCount(), 2u);
}

TEST_F(ReleaseCommandsTest, MissingReleaseIsNamed) {
  transport_->push(FakeTransport::ok(whoami("alice")));
  transport_->push(FakeTransport::status(404, "NotFound", "modelreleases \"nope\" not found"));
  EXPECT_EQ(run({"abort", "nope"}), 1);
  EXPECT_EQ(err_.str(), "lockstep: abort: release \"ml/nope\" not found\n");
  transport_->push(FakeTransport::status(404, "NotFound", "modelreleases \"nope\" not found"));
  EXPECT_EQ(run({"status", "nope"}), 1);
}

TEST_F(ReleaseCommandsTest, AbortPatchesTheAbortAnnotation) {
  transport_->push(FakeTransport::ok(whoami("system:serviceaccount:ml:ci-bot")));
  transport_->push(FakeTransport::ok(release("Running")));
  transport_->push(FakeTransport::ok(release("Running")));
  EXPECT_EQ(run({"abort", "gpt2-v7"}), 0) << err_.str();
  EXPECT_EQ(json::parse(transport_->requests()[2].body)["metadata"]["annotations"],
            (json{{"lockstep.dev/abort", "system:serviceaccount:ml:ci-bot"}}));
  EXPECT_NE(out_.str().find("abort requested by system:serviceaccount:ml:ci-bot"),
            std::string::npos);
}

TEST_F(ReleaseCommandsTest, NoSelfSubjectReviewIsExplained) {
  transport_->push(
      FakeTransport::status(404, "NotFound", "the server could not find the resource"));
  EXPECT_EQ(run({"abort", "gpt2-v7"}), 1);
  EXPECT_NE(err_.str().find("finding your user name: the API server does not serve "
                            "selfsubjectreviews.authentication.k8s.io/v1"),
            std::string::npos)
      << err_.str();
}

TEST_F(ReleaseCommandsTest, StatusJsonPrintsTheStatus) {
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  EXPECT_EQ(run({"status", "gpt2-v7", "-o", "json"}), 0);
  EXPECT_EQ(json::parse(out_.str()), release("WaitingForApproval")["status"]);
}

TEST_F(ReleaseCommandsTest, WaitPollsUntilThePhase) {
  transport_->push(FakeTransport::ok(release("WaitingForApproval")));
  transport_->push(FakeTransport::ok(release("Running")));
  transport_->push(FakeTransport::ok(release("Succeeded", "Validated")));
  EXPECT_EQ(run({"wait", "gpt2-v7", "--for=phase=Validated"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "release \"ml/gpt2-v7\" reached phase Validated\n");
  EXPECT_EQ(transport_->requestCount(), 3u);
}

TEST_F(ReleaseCommandsTest, WaitFailsFastOnAnotherEnd) {
  transport_->push(FakeTransport::ok(release("Failed", "Failed")));
  EXPECT_EQ(run({"wait", "gpt2-v7", "--for=phase=Validated"}), 1);
  EXPECT_NE(
      err_.str().find("ended in phase Failed, stage ci Failed; it will never reach Validated"),
      std::string::npos)
      << err_.str();
}

TEST_F(ReleaseCommandsTest, WaitTimesOut) {
  transport_->setHandler([](const kube::Request&) -> std::optional<testing::FakeReply> {
    return FakeTransport::ok(release("WaitingForApproval"));
  });
  EXPECT_EQ(run({"wait", "gpt2-v7", "--for=phase=Validated", "--timeout=10s"}), 1);
  EXPECT_NE(err_.str().find("timed out after 10s waiting for release \"ml/gpt2-v7\" to reach phase "
                            "Validated (now phase Testing, stage ci WaitingForApproval)"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(transport_->requestCount(), 11u);  // t = 0, 1, …, 10 s
}

TEST_F(ReleaseCommandsTest, ListRendersTheNamespace) {
  transport_->push(FakeTransport::list({release("Running")}, "100"));
  EXPECT_EQ(run({"list"}), 0) << err_.str();
  EXPECT_EQ(transport_->requests()[0].path,
            "/apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases");
  EXPECT_NE(out_.str().find("gpt2-v7"), std::string::npos) << out_.str();
  transport_->push(FakeTransport::list({}, "100"));
  EXPECT_EQ(run({"list", "-A"}), 0);
  EXPECT_EQ(transport_->requests()[1].path, "/apis/lockstep.dev/v1alpha1/modelreleases");
}

}  // namespace
}  // namespace lockstep::cli
