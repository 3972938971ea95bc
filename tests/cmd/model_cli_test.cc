// `lockstep model`: arguments, the pure history/rollback decisions, and the
// commands against a scripted API server (FakeTransport).
#include <gtest/gtest.h>

#include <sstream>

#include "cmd/lockstep/model_args.h"
#include "cmd/lockstep/model_commands.h"
#include "cmd/lockstep/model_view.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeTransport;

const std::string kHashA = "sha256:" + std::string(64, 'a');
const std::string kHashB = "sha256:" + std::string(64, 'b');

// The Model gpt2 (status.prod: `promoted`, the canary slot: `canary`).
json model(const std::string& promoted, const std::string& canary = "", int64_t revision = 2) {
  auto runtime = [] { return json{{"runtimeEnv", "torch"}, {"closureHash", kHashA}}; };
  json history = json::array({{{"action", "Promoted"},
                               {"release", "gpt2-v6"},
                               {"package", "reg.example/m@sha256:" + std::string(64, '6')},
                               {"runtime", runtime()},
                               {"at", "2026-11-30T08:00:00Z"}},
                              {{"action", "RolledBack"},
                               {"release", "gpt2-v7"},
                               {"package", "reg.example/m@sha256:" + std::string(64, '7')},
                               {"runtime", runtime()},
                               {"reason", "AnalysisFailed"},
                               {"stable", "gpt2-v6"},
                               {"at", "2026-11-30T09:00:00Z"}},
                              {{"action", "Promoted"},
                               {"release", "gpt2-v8"},
                               {"package", "reg.example/m@sha256:" + std::string(64, '8')},
                               {"runtime", runtime()},
                               {"at", "2026-11-30T09:30:00Z"}}});
  json status = {{"revision", revision}, {"history", history}};
  if (!promoted.empty()) {
    status["prod"] = {{"release", promoted},
                      {"package", "reg.example/m@sha256:" + std::string(64, '8')},
                      {"runtime", runtime()},
                      {"contentDigest", "sha256:" + std::string(64, 'c')}};
  }
  if (!canary.empty()) status["canary"] = {{"release", canary}};
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "Model"},
          {"metadata", {{"name", "gpt2"}, {"namespace", "ml"}, {"resourceVersion", "9"}}},
          {"spec", json::object()},
          {"status", status}};
}

json releaseModelCli(const std::string& name, const std::string& canaryPhase,
                     const std::string& hash = kHashA) {
  return {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"resourceVersion", "7" + name}}},
      {"spec", {{"model", "gpt2"}, {"runtimeEnvRef", {{"name", "torch"}}}, {"closureHash", hash}}},
      {"status", {{"phase", "Superseded"}, {"canary", {{"phase", canaryPhase}}}}}};
}

json withReady(json releaseModelCli, const std::string& status, const std::string& reason,
               const std::string& message) {
  releaseModelCli["status"]["conditions"] = json::array(
      {{{"type", "Ready"}, {"status", status}, {"reason", reason}, {"message", message}}});
  return releaseModelCli;
}

json runtimeEnv(const std::string& hash = kHashA) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "RuntimeEnv"},
          {"metadata", {{"name", "torch"}, {"namespace", "ml"}}},
          {"status", {{"closureHash", hash}}}};
}

std::map<std::string, json> releasesOf(std::initializer_list<json> rs) {
  std::map<std::string, json> out;
  for (const json& r : rs) out[r["metadata"]["name"].get<std::string>()] = r;
  return out;
}

TEST(ModelArgs, ParsesEachSubcommandAndRefusesMisplacedFlags) {
  auto c = parseModelArgs({"rollback", "gpt2", "--to", "gpt2-v6", "-n", "ml", "--wait"});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->action, ModelCommand::Action::kRollback);
  EXPECT_EQ(c->model, "gpt2");
  EXPECT_EQ(c->to, "gpt2-v6");
  EXPECT_EQ(c->kube.ns, "ml");
  EXPECT_TRUE(c->wait);
  EXPECT_EQ(parseModelArgs({"history", "gpt2", "-o", "json"})->json, true);
  auto bad = [](std::vector<std::string> a) { return parseModelArgs(a).status().message(); };
  EXPECT_NE(bad({"delete", "gpt2"}).find("confirm with --yes"), std::string::npos);
  EXPECT_NE(bad({"history", "gpt2", "--to", "x"}).find("--to applies to rollback"),
            std::string::npos);
  EXPECT_NE(bad({"rollback"}).find("usage: model rollback MODEL"), std::string::npos);
  EXPECT_NE(bad({"rollback", "gpt2", "--to"}).find("--to needs a value"), std::string::npos);
  EXPECT_NE(bad({"rollback", "gpt2", "--timeout=1m"}).find("--timeout needs --wait"),
            std::string::npos);
  EXPECT_NE(bad({"promote", "gpt2"}).find("unknown subcommand \"promote\""), std::string::npos);
}

TEST(ModelView, RollbackGoesToTheReleaseProdRanBefore) {
  auto plan = planModelRollback(
      model("gpt2-v8"),
      releasesOf({releaseModelCli("gpt2-v6", "Promoted"), releaseModelCli("gpt2-v7", "RolledBack"),
                  releaseModelCli("gpt2-v8", "Promoted")}),
      {{"torch", runtimeEnv()}}, "", "alice");
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->target, "gpt2-v6");  // v7 never ran prod: it was rolled back
  EXPECT_EQ(plan->from, "gpt2-v8");
  EXPECT_EQ(plan->revision, "2");
  EXPECT_EQ(plan->annotation, "rollback.lockstep.dev/2");
  EXPECT_EQ(plan->targetAnnotation, "rollback-to.lockstep.dev/2");
  EXPECT_TRUE(plan->alreadyBy.empty());
}

// The request lives on the Model: written there by this user for this target
// already, the CLI writes nothing again; another user's, or another target's,
// is a new request (it re-signs the Model's annotations).
TEST(ModelView, ARequestOnTheModelIsNotWrittenTwice) {
  auto all =
      releasesOf({releaseModelCli("gpt2-v6", "Promoted"), releaseModelCli("gpt2-v7", "RolledBack"),
                  releaseModelCli("gpt2-v8", "Promoted")});
  json asked = model("gpt2-v8");
  asked["metadata"]["annotations"] = {{"rollback.lockstep.dev/2", "alice"},
                                      {"rollback-to.lockstep.dev/2", "gpt2-v6"}};
  auto same = planModelRollback(asked, all, {{"torch", runtimeEnv()}}, "", "alice");
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ(same->alreadyBy, "alice");
  auto other = planModelRollback(asked, all, {{"torch", runtimeEnv()}}, "", "bob");
  ASSERT_TRUE(other.isOk());
  EXPECT_TRUE(other->alreadyBy.empty());
  asked["metadata"]["annotations"]["rollback-to.lockstep.dev/2"] = "gpt2-v7";
  auto elsewhere = planModelRollback(asked, all, {{"torch", runtimeEnv()}}, "", "alice");
  ASSERT_TRUE(elsewhere.isOk());
  EXPECT_TRUE(elsewhere->alreadyBy.empty());
}

TEST(ModelView, RollbackRefusalsSayWhyAndWhatToDo) {
  auto all =
      releasesOf({releaseModelCli("gpt2-v6", "Promoted"), releaseModelCli("gpt2-v7", "RolledBack"),
                  releaseModelCli("gpt2-v8", "Promoted")});
  auto msg = [&](const json& a, const std::map<std::string, json>& rs,
                 const std::map<std::string, json>& envs, const std::string& to) {
    auto p = planModelRollback(a, rs, envs, to, "alice");
    EXPECT_FALSE(p.isOk()) << to;
    return p.status().message();
  };
  std::map<std::string, json> fresh = {{"torch", runtimeEnv()}};
  EXPECT_NE(msg(model("gpt2-v8"), all, {{"torch", runtimeEnv(kHashB)}}, "")
                .find("RuntimeEnv \"torch\" now resolves to " + kHashB),
            std::string::npos);
  EXPECT_NE(msg(model("gpt2-v8", "gpt2-v9"), all, fresh, "").find("abort it first"),
            std::string::npos);
  EXPECT_NE(msg(model("gpt2-v8"), all, fresh, "gpt2-v7").find("was never promoted"),
            std::string::npos);
  EXPECT_NE(msg(model("gpt2-v8"), all, fresh, "gpt2-v8").find("what prod runs already"),
            std::string::npos);
  EXPECT_NE(msg(model("gpt2-v8"), all, fresh, "gpt2-v1").find("does not exist"), std::string::npos);
  EXPECT_NE(msg(model(""), all, fresh, "").find("runs no promoted release"), std::string::npos);
  EXPECT_NE(msg(model("gpt2-v8"), releasesOf({releaseModelCli("gpt2-v8", "Promoted")}), fresh, "")
                .find("no earlier promoted release"),
            std::string::npos);
}

TEST(ModelView, HistoryShowsEveryPromotionAndRollback) {
  json a = model("gpt2-v8");
  auto h = modelHistory(a);
  ASSERT_TRUE(h.isOk());
  kube::Clock::WallTime now;
  ASSERT_TRUE(kube::parseTime("2026-11-30T10:00:00Z", &now));
  std::string out = renderModelHistory(a, *h, now);
  EXPECT_NE(out.find("prod runs: gpt2-v8 (reg.example/m@sha256:888888888888, closure aaaaaaaaaaaa, "
                     "content cccccccccccc)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("RolledBack"), std::string::npos) << out;
  EXPECT_NE(out.find("AnalysisFailed; stable stayed on gpt2-v6"), std::string::npos) << out;
  EXPECT_NE(out.find("2h"), std::string::npos) << out;  // age of the first promotion
}

class ModelCommandsTest : public ::testing::Test {
 protected:
  ModelCommandsTest() { clock_.setAutoAdvance(true); }
  int run(const std::vector<std::string>& args) {
    auto cmd = parseModelArgs(args);
    EXPECT_TRUE(cmd.isOk()) << cmd.status().toString();
    return runModelCommand(*cmd, "ml", io_);
  }
  // The answers of a rollback request by alice: prod runs gpt2-v8, gpt2-v6 ran
  // before on a runtime that has not moved, the annotation PATCH succeeds.
  void pushRollbackOfV8ToV6();
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  kube::Client client_{transport_};
  FakeClock clock_;
  std::ostringstream out_, err_;
  ReleaseIo io_{client_, clock_, out_, err_, "lockstep"};
};

json whoamiModelCli(const std::string& user) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "SelfSubjectReview"},
          {"status", {{"userInfo", {{"username", user}}}}}};
}

void ModelCommandsTest::pushRollbackOfV8ToV6() {
  transport_->push(FakeTransport::ok(whoamiModelCli("alice")));
  transport_->push(FakeTransport::ok(model("gpt2-v8")));
  transport_->push(FakeTransport::list(
      {releaseModelCli("gpt2-v6", "Promoted"), releaseModelCli("gpt2-v8", "Promoted")}, "10"));
  transport_->push(FakeTransport::ok(runtimeEnv()));
  transport_->push(
      FakeTransport::ok(releaseModelCli("gpt2-v6", "Promoted")));  // the patch's answer
}

TEST_F(ModelCommandsTest, RollbackAnnotatesTheModelWithTheRevisionAndTargetAndWaits) {
  pushRollbackOfV8ToV6();
  transport_->push(FakeTransport::ok(model("gpt2-v8")));  // wait: not yet
  transport_->push(FakeTransport::ok(releaseModelCli("gpt2-v6", "Promoted")));
  // The Model records it, but its pods are not Ready yet: still waiting.
  transport_->push(FakeTransport::ok(model("gpt2-v6", "", 3)));
  transport_->push(FakeTransport::ok(withReady(releaseModelCli("gpt2-v6", "Promoted"), "False",
                                               "ManualRollback", "waiting for 2 Ready")));
  transport_->push(FakeTransport::ok(model("gpt2-v6", "", 3)));  // prod serves it
  transport_->push(FakeTransport::ok(withReady(releaseModelCli("gpt2-v6", "Promoted"), "True",
                                               "ManualRollback", "2/2 stable pods Ready")));
  EXPECT_EQ(run({"rollback", "gpt2", "--wait"}), 0) << err_.str();
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 11u);
  EXPECT_EQ(reqs[1].path, "/apis/lockstep.dev/v1alpha1/namespaces/ml/models/gpt2");
  // On the Model, guarded by the resourceVersion it was read at.
  EXPECT_EQ(reqs[4].method, "PATCH");
  EXPECT_EQ(reqs[4].path, "/apis/lockstep.dev/v1alpha1/namespaces/ml/models/gpt2");
  EXPECT_EQ(json::parse(reqs[4].body), (json{{"metadata",
                                              {{"resourceVersion", "9"},
                                               {"annotations",
                                                {{"rollback.lockstep.dev/2", "alice"},
                                                 {"rollback-to.lockstep.dev/2", "gpt2-v6"}}}}}}));
  EXPECT_NE(out_.str().find("rollback from \"gpt2-v8\" to \"gpt2-v6\" requested by alice"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("prod runs release \"gpt2-v6\" (2/2 stable pods Ready)"),
            std::string::npos)
      << out_.str();
}

// The target deleted while --wait waits: nothing will act on the request, so
// the CLI says so at once instead of waiting out its timeout.
TEST_F(ModelCommandsTest, RollbackWaitEndsWhenTheTargetIsDeleted) {
  pushRollbackOfV8ToV6();
  transport_->push(FakeTransport::ok(model("gpt2-v8")));  // prod has not moved
  transport_->push(FakeTransport::status(404, "NotFound", "modelreleases \"gpt2-v6\" not found"));
  EXPECT_EQ(run({"rollback", "gpt2", "--wait"}), 1);
  EXPECT_NE(err_.str().find("release \"gpt2-v6\" was deleted before prod went back to it"),
            std::string::npos)
      << err_.str();
}

// Issue 28: --wait ends with the rollback's clear failure past the Model's deadline.
TEST_F(ModelCommandsTest, RollbackWaitFailsWithTheDeadlineMessage) {
  pushRollbackOfV8ToV6();
  transport_->push(FakeTransport::ok(model("gpt2-v6", "", 3)));
  transport_->push(FakeTransport::ok(
      withReady(releaseModelCli("gpt2-v6", "Promoted"), "False", "RollbackDeadlineExceeded",
                "model \"gpt2\" rolled back from \"gpt2-v8\" by alice did not complete within "
                "600s")));
  EXPECT_EQ(run({"rollback", "gpt2", "--wait"}), 1);
  EXPECT_NE(err_.str().find("lockstep: the rollback failed: model \"gpt2\" rolled back from "
                            "\"gpt2-v8\" by alice did not complete within 600s"),
            std::string::npos)
      << err_.str();
}

TEST_F(ModelCommandsTest, RollbackToAStaleRuntimeWritesNothing) {
  transport_->push(FakeTransport::ok(whoamiModelCli("alice")));
  transport_->push(FakeTransport::ok(model("gpt2-v8")));
  transport_->push(FakeTransport::list(
      {releaseModelCli("gpt2-v6", "Promoted"), releaseModelCli("gpt2-v8", "Promoted")}, "10"));
  transport_->push(FakeTransport::ok(runtimeEnv(kHashB)));
  EXPECT_EQ(run({"rollback", "gpt2"}), 1);
  EXPECT_EQ(transport_->requestCount(), 4u);  // no PATCH
  EXPECT_NE(
      err_.str().find("cannot roll back model \"gpt2\": release \"gpt2-v6\" was validated on"),
      std::string::npos)
      << err_.str();
}

// A target whose status.canary cannot be read: the CLI prints the decoder's
// error naming the member and writes nothing (never "never promoted", never a crash).
TEST_F(ModelCommandsTest, RollbackToAReleaseWithAnUnreadableCanaryStatusSaysWhy) {
  json unreadable = releaseModelCli("gpt2-v6", "Promoted");
  unreadable["status"]["canary"]["step"] = "2";
  transport_->push(FakeTransport::ok(whoamiModelCli("alice")));
  transport_->push(FakeTransport::ok(model("gpt2-v8")));
  transport_->push(FakeTransport::list({unreadable, releaseModelCli("gpt2-v8", "Promoted")}, "10"));
  transport_->push(FakeTransport::ok(runtimeEnv()));
  EXPECT_EQ(run({"rollback", "gpt2", "--to", "gpt2-v6"}), 1);
  EXPECT_LE(transport_->requestCount(), 4u);  // no PATCH
  for (const auto& r : transport_->requests()) EXPECT_NE(r.method, "PATCH");
  EXPECT_NE(err_.str().find("release \"gpt2-v6\": status.canary cannot be read "
                            "(status.canary.step: must be an integer): whether prod ran it is "
                            "unknown"),
            std::string::npos)
      << err_.str();
}

TEST_F(ModelCommandsTest, HistoryOfAModelNeverInProdSaysSo) {
  transport_->push(
      FakeTransport::status(404, "NotFound", "models.lockstep.dev \"bert\" not found"));
  EXPECT_EQ(run({"history", "bert"}), 1);
  EXPECT_NE(err_.str().find("model \"bert\" has never reached prod in namespace \"ml\""),
            std::string::npos)
      << err_.str();
}

TEST_F(ModelCommandsTest, DeleteRemovesTheModelInBackground) {
  transport_->push(FakeTransport::ok(json{{"kind", "Status"}, {"status", "Success"}}));
  EXPECT_EQ(run({"delete", "gpt2", "--yes"}), 0) << err_.str();
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "DELETE");
  EXPECT_EQ(reqs[0].path, "/apis/lockstep.dev/v1alpha1/namespaces/ml/models/gpt2");
  EXPECT_NE(reqs[0].body.find("Background"), std::string::npos) << reqs[0].body;
}

}  // namespace
}  // namespace lockstep::cli
