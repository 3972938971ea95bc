// `lockstep runtime history`: arguments, the table, and the command against a
// scripted API server (FakeTransport).
#include <gtest/gtest.h>

#include <sstream>

#include "cmd/lockstep/runtime_args.h"
#include "cmd/lockstep/runtime_commands.h"
#include "cmd/lockstep/runtime_view.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeTransport;

json runtimeEnv() {
  return {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "RuntimeEnv"},
      {"metadata", {{"name", "torch"}, {"namespace", "ml"}, {"generation", 3}}},
      {"spec",
       {{"image", "reg.example/t@sha256:" + std::string(64, '2')}, {"revisionHistoryLimit", 2}}},
      {"status",
       {{"observedGeneration", 3},
        {"currentRevision", 2},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Resolved"}}}},
        {"revisions",
         {{{"number", 1},
           {"image", "reg.example/t@sha256:" + std::string(64, '1')},
           {"closureHash", "sha256:" + std::string(64, 'a')},
           {"cuda", "12.4"},
           {"firstResolved", "2026-11-30T08:00:00Z"},
           {"lastResolved", "2026-11-30T09:00:00Z"},
           {"pinnedBy", {"gpt2-v1", "gpt2-v2"}}},
          {{"number", 2},
           {"image", "reg.example/t@sha256:" + std::string(64, '2')},
           {"closureHash", "sha256:" + std::string(64, 'a')},
           {"firstResolved", "2026-11-30T09:00:00Z"},
           {"lastResolved", "2026-11-30T09:00:00Z"}}}}}}};
}

TEST(RuntimeArgs, ParsesHistoryAndNamesWhatIsWrong) {
  auto c = parseRuntimeArgs({"history", "torch", "-n", "ml", "-o", "json"});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->action, RuntimeCommand::Action::kHistory);
  EXPECT_EQ(c->name, "torch");
  EXPECT_EQ(c->kube.ns, "ml");
  EXPECT_TRUE(c->json);
  EXPECT_EQ(parseRuntimeArgs({"--help"})->action, RuntimeCommand::Action::kHelp);
  EXPECT_EQ(parseRuntimeArgs({"history"}).status().message(), "history needs a RuntimeEnv name");
  EXPECT_EQ(parseRuntimeArgs({"list"}).status().message(),
            "unknown subcommand \"list\" (history, advisories, drift)");
  EXPECT_EQ(parseRuntimeArgs({"history", "a", "b"}).status().message(), "unexpected argument b");
  EXPECT_EQ(parseRuntimeArgs({"history", "a", "--bogus"}).status().message(),
            "unknown flag --bogus");
}

TEST(RuntimeView, HistoryIsNewestFirstWithTheCurrentMarkedAndThePins) {
  kube::Clock::WallTime now;
  ASSERT_TRUE(kube::parseTime("2026-11-30T10:00:00Z", &now));
  std::string out = renderRuntimeHistory(runtimeEnv(), now);
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "RuntimeEnv ml/torch: current revision 2 (Ready=True, Resolved); history limit 2")
      << out;
  const size_t r2 = out.find("\n2  ");
  const size_t r1 = out.find("\n1  ");
  ASSERT_NE(r2, std::string::npos) << out;
  ASSERT_NE(r1, std::string::npos) << out;
  EXPECT_LT(r2, r1) << out;
  EXPECT_NE(out.find("gpt2-v1,gpt2-v2"), std::string::npos) << out;
  EXPECT_NE(out.find("2026-11-30T08:00:00Z (2h)"), std::string::npos) << out;
  EXPECT_NE(out.substr(r2, out.find('\n', r2 + 1) - r2).find(" * "), std::string::npos) << out;
  json empty = runtimeEnv();
  empty["status"].erase("revisions");
  EXPECT_NE(renderRuntimeHistory(empty, now).find("no revisions recorded"), std::string::npos);
}

class RuntimeCommandsTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  kube::Client client_{transport_};
  FakeClock clock_;
  std::ostringstream out_, err_;
  ReleaseIo io_{client_, clock_, out_, err_, "lockstep"};
};

TEST_F(RuntimeCommandsTest, HistoryReadsTheRuntimeEnvOnce) {
  transport_->push(FakeTransport::ok(runtimeEnv()));
  RuntimeCommand cmd = *parseRuntimeArgs({"history", "torch", "-o", "json"});
  EXPECT_EQ(runRuntimeCommand(cmd, "ml", io_), 0) << err_.str();
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/apis/lockstep.dev/v1alpha1/namespaces/ml/runtimeenvs/torch");
  json doc = json::parse(out_.str());
  EXPECT_EQ(doc["currentRevision"], 2);
  EXPECT_EQ(doc["revisions"].size(), 2u);
}

TEST_F(RuntimeCommandsTest, AMissingRuntimeEnvIsNamed) {
  transport_->push(FakeTransport::status(404, "NotFound", "runtimeenvs \"nope\" not found"));
  RuntimeCommand cmd = *parseRuntimeArgs({"history", "nope"});
  EXPECT_EQ(runRuntimeCommand(cmd, "ml", io_), 1);
  EXPECT_EQ(err_.str(), "lockstep: runtime history: no RuntimeEnv \"nope\" in namespace \"ml\"\n");
}

// Issue 32: `lockstep runtime advisories NAME` prints status.advisories, the current
// revision's match and each pinned revision's, newest first.
json withAdvisories() {
  json rte = runtimeEnv();
  json idna = {
      {"id", "GHSA-jjg7-2v4v-x38h"}, {"package", "idna"}, {"version", "3.4"},
      {"severity", "high"},          {"fixed", "3.7"},    {"summary", "DoS in idna.encode"}};
  rte["status"]["advisories"] = {{"source", "https://osv.example/v1 (OSV API)"},
                                 {"revision", 2},
                                 {"closureHash", "sha256:" + std::string(64, 'b')},
                                 {"count", 0},
                                 {"highest", "none"},
                                 {"packagesLookedUp", 3},
                                 {"notMatched", 0},
                                 {"revisions",
                                  {{{"revision", 1},
                                    {"closureHash", "sha256:" + std::string(64, 'a')},
                                    {"count", 1},
                                    {"highest", "high"},
                                    {"packagesLookedUp", 3},
                                    {"notMatched", 1},
                                    {"items", {idna}}},
                                   {{"revision", 2}, {"current", true}, {"count", 0}}}}};
  return rte;
}

TEST(RuntimeView, AdvisoriesOfTheCurrentAndEachPinnedRevision) {
  json rte = withAdvisories();
  std::string out = renderRuntimeAdvisories(rte);
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "RuntimeEnv ml/torch: advisories from https://osv.example/v1 (OSV API)");
  const size_t current = out.find("revision 2 (current), closure sha256:" + std::string(64, 'b') +
                                  ": 0 advisories; 3 packages looked up, 0 not matched\n");
  const size_t pinned = out.find("revision 1 (pinned), closure sha256:" + std::string(64, 'a') +
                                 ": 1 advisory, highest high; 3 packages looked up, 1 not "
                                 "matched\n");
  ASSERT_NE(current, std::string::npos) << out;
  ASSERT_NE(pinned, std::string::npos) << out;
  EXPECT_LT(current, pinned) << "newest first\n" << out;
  EXPECT_NE(out.find("GHSA-jjg7-2v4v-x38h  idna     3.4      high      3.7    DoS in idna.encode"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("revision 2 (pinned)"), std::string::npos) << "the current one once\n" << out;
  EXPECT_FALSE(runtimeAdvisoriesClean(rte)) << "the pinned revision has one";

  rte["status"]["advisories"]["revisions"][0] = {
      {"revision", 1}, {"known", false}, {"reason", "recorded before its closure was stored"}};
  out = renderRuntimeAdvisories(rte);
  EXPECT_NE(out.find("revision 1 (pinned): not known: recorded before its closure was stored\n"),
            std::string::npos)
      << out;
  EXPECT_FALSE(runtimeAdvisoriesClean(rte)) << "not known is never clean";
  rte["status"]["advisories"]["revisions"].erase(0);
  EXPECT_TRUE(runtimeAdvisoriesClean(rte)) << renderRuntimeAdvisories(rte);
  rte["status"].erase("advisories");
  EXPECT_NE(renderRuntimeAdvisories(rte).find("not known, not clean"), std::string::npos);
  EXPECT_FALSE(runtimeAdvisoriesClean(rte));
}

TEST_F(RuntimeCommandsTest, AdvisoriesExitOneWhenAnyAndPrintTheStatusAsJson) {
  transport_->push(FakeTransport::ok(withAdvisories()));
  RuntimeCommand cmd = *parseRuntimeArgs({"advisories", "torch", "-o", "json"});
  EXPECT_EQ(cmd.action, RuntimeCommand::Action::kAdvisories);
  EXPECT_EQ(runRuntimeCommand(cmd, "ml", io_), 1) << err_.str();
  json doc = json::parse(out_.str());
  EXPECT_EQ(doc["revisions"][0]["items"][0]["id"], "GHSA-jjg7-2v4v-x38h");
  EXPECT_EQ(parseRuntimeArgs({"advisories"}).status().message(),
            "advisories needs a RuntimeEnv name");
}

TEST(RuntimeArgs, ParsesDrift) {
  auto c = parseRuntimeArgs({"drift", "-A", "-o", "json"});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->action, RuntimeCommand::Action::kDrift);
  EXPECT_TRUE(c->kube.allNamespaces);
  EXPECT_TRUE(c->json);
  EXPECT_EQ(parseRuntimeArgs({"drift", "torch"}).status().message(), "unexpected argument torch");
}

json podOn(const std::string& name, const std::string& image) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"uid", "uid-" + name},
            {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
            {"annotations", {{"lockstep.dev/closure-hash", "sha256:" + std::string(64, 'a')}}}}},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"image", image}}})}}},
          {"status", {{"phase", "Running"}}}};
}

TEST_F(RuntimeCommandsTest, DriftListsEachKindOnceAndNamesTheDriftingPods) {
  transport_->push(FakeTransport::ok(
      {{"metadata", {{"name", "ml"}, {"labels", {{"lockstep.dev/enforce", "warn"}}}}}}));
  transport_->push(FakeTransport::ok(
      {{"items", json::array({podOn("ok", "reg.example/t@sha256:" + std::string(64, '1')),
                              podOn("stray", "reg.example/t@sha256:" + std::string(64, '9'))})},
       {"metadata", json::object()}}));
  transport_->push(
      FakeTransport::ok({{"items", json::array({runtimeEnv()})}, {"metadata", json::object()}}));
  RuntimeCommand cmd = *parseRuntimeArgs({"drift"});
  EXPECT_EQ(runRuntimeCommand(cmd, "ml", io_), 1) << err_.str();
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ml");
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/ml/pods");
  EXPECT_NE(reqs[1].uri().find("fieldSelector=status.phase"), std::string::npos) << reqs[1].uri();
  EXPECT_EQ(reqs[2].path, "/apis/lockstep.dev/v1alpha1/namespaces/ml/runtimeenvs");
  const std::string out = out_.str();
  EXPECT_NE(out.find("ml\tstray\ttorch\tforeign-image\t"), std::string::npos) << out;
  EXPECT_EQ(out.find("\tok\t"), std::string::npos) << out;
}

TEST_F(RuntimeCommandsTest, NoDriftExitsZero) {
  transport_->push(FakeTransport::ok({{"metadata", {{"name", "ml"}}}}));
  transport_->push(FakeTransport::ok(
      {{"items", json::array({podOn("ok", "reg.example/t@sha256:" + std::string(64, '2'))})},
       {"metadata", json::object()}}));
  transport_->push(
      FakeTransport::ok({{"items", json::array({runtimeEnv()})}, {"metadata", json::object()}}));
  RuntimeCommand cmd = *parseRuntimeArgs({"drift", "-o", "json"});
  EXPECT_EQ(runRuntimeCommand(cmd, "ml", io_), 0) << err_.str();
  json reports = json::parse(out_.str());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0]["summary"]["pass"], 1);
  EXPECT_EQ(reports[0]["summary"]["fail"], 0);
}

}  // namespace
}  // namespace lockstep::cli
