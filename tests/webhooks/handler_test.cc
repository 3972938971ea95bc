#include "webhooks/admission/handler.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/webhooks/builders.h"
#include "tests/webhooks/fakes.h"
#include "webhooks/admission/static_lookups.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::FakeAuthorizer;
using testing::FakeRecorder;
using testing::kEnvHash;
using testing::kEnvImage;
using testing::PodBuilder;
using testing::ReleaseBuilder;
using testing::sha;

class HandlerTest : public ::testing::Test {
 protected:
  HandlerTest() {
    clock_.setTickOnRead(std::chrono::microseconds(250));
    envs_.put({"torch", "ml", kEnvHash, kEnvImage, true});
    modes_.set("ml", NamespaceMode::kEnforce);
    modes_.set("soft", NamespaceMode::kWarn);
    modes_.set("quiet", NamespaceMode::kAudit);
  }
  StaticRuntimeEnvs envs_;
  StaticNamespaceModes modes_;
  FakeRecorder recorder_;
  lockstep::testing::FakeClock clock_;
  FakeAuthorizer authorizer_;
  PodWebhook pods_{envs_, modes_, recorder_, clock_};
  ModelReleaseWebhook releases_{envs_, authorizer_, recorder_, clock_};
};

json response(const HttpReply& r) { return json::parse(r.body)["response"]; }

TEST_F(HandlerTest, AdmitsGoodPodAndRecords) {
  HttpReply r =
      pods_.handle(testing::review("CREATE", PodBuilder::good().json(), nullptr, false, "u-1"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.contentType, "application/json");
  EXPECT_EQ(response(r)["uid"], "u-1");
  EXPECT_EQ(response(r)["allowed"], true);
  auto o = recorder_.outcomes();
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].webhook, "pods");
  EXPECT_EQ(o[0].operation, Operation::kCreate);
  EXPECT_EQ(o[0].decision, Decision::kAllowed);
  EXPECT_EQ(o[0].name, "web-1");
  EXPECT_TRUE(o[0].checked);
  EXPECT_GT(o[0].duration.count(), 0);
}

TEST_F(HandlerTest, TrustsTheCliImageOnlyByDigestAndOnlyAsInitContainer) {
  const std::string cli = "registry.example/lockstep/lockstep@" + sha('1');
  const json pod = PodBuilder::good().init("verify-env", cli).json();
  EXPECT_EQ(response(pods_.handle(testing::review("CREATE", pod)))["allowed"], false);
  Status tag = pods_.trustInitImage("registry.example/lockstep/lockstep:1.0");
  EXPECT_EQ(tag.code(), Code::kInvalidArgument) << tag.toString();
  EXPECT_EQ(response(pods_.handle(testing::review("CREATE", pod)))["allowed"], false);
  ASSERT_TRUE(pods_.trustInitImage(cli).isOk());
  EXPECT_EQ(response(pods_.handle(testing::review("CREATE", pod)))["allowed"], true);
}

TEST_F(HandlerTest, DeniesWrongHashWithMessage) {
  HttpReply r = pods_.handle(testing::review("CREATE", PodBuilder::good().hash(sha('d')).json()));
  ASSERT_EQ(r.status, 200);
  json resp = response(r);
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["code"], 403);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find(kEnvHash), std::string::npos);
  EXPECT_EQ(recorder_.outcomes().at(0).decision, Decision::kDenied);
}

TEST_F(HandlerTest, WarnAndAuditNamespaces) {
  auto pod = PodBuilder::good().hash(sha('d')).json();
  pod["metadata"]["namespace"] = "soft";
  auto body = json::parse(testing::review("CREATE", pod));
  body["request"]["namespace"] = "soft";
  envs_.put({"torch", "soft", kEnvHash, kEnvImage, true});
  json resp = response(pods_.handle(body.dump()));
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_EQ(resp["warnings"].size(), 1u);

  body["request"]["namespace"] = "quiet";
  envs_.put({"torch", "quiet", kEnvHash, kEnvImage, true});
  resp = response(pods_.handle(body.dump()));
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_TRUE(resp["auditAnnotations"].contains("closure-violation"));
  auto o = recorder_.outcomes();
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].decision, Decision::kWarned);
  EXPECT_EQ(o[1].decision, Decision::kAudited);
}

TEST_F(HandlerTest, DryRunIsAnsweredTheSameAndFlagged) {
  json resp = response(pods_.handle(
      testing::review("CREATE", PodBuilder::good().hash(sha('d')).json(), nullptr, true)));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_TRUE(recorder_.outcomes().at(0).dryRun);
}

TEST_F(HandlerTest, GenerateNamePodIsNamedInOutcome) {
  pods_.handle(testing::review("CREATE", PodBuilder::good().generateName("web-7d9f-").json()));
  EXPECT_EQ(recorder_.outcomes().at(0).name, "web-7d9f-*");
}

// A namespace whose mode cannot be read (not in the cache, API server down).
struct UnreadableNamespaces final : NamespaceModeLookup {
  StatusOr<NamespaceMode> modeOf(std::string_view) const override {
    return unavailable("namespace read timed out");
  }
};

TEST_F(HandlerTest, UnknownNamespaceModeAnswers500SoFailurePolicyDecides) {
  UnreadableNamespaces unreadable;
  PodWebhook pods(envs_, unreadable, recorder_, clock_);
  // An unlabelled pod: admitted if the namespace were taken as unlabelled.
  HttpReply r = pods.handle(testing::review("CREATE", PodBuilder::good().noEnv().json()));
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_NE(r.body.find("admission mode of namespace \"ml\" unknown"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("namespace read timed out"), std::string::npos) << r.body;
  ASSERT_EQ(recorder_.outcomes().size(), 1u);
  EXPECT_EQ(recorder_.outcomes()[0].decision, Decision::kError);
}

// A CREATE without an object (null) in an enforcing namespace is refused, not admitted
// as "nothing to check" (issue 12 item 12: fail closed).
TEST_F(HandlerTest, CreateWithoutAnObjectIsDeniedInAnEnforcingNamespace) {
  HttpReply r = pods_.handle(testing::review("CREATE", nullptr));
  ASSERT_EQ(r.status, 200) << r.body;
  json resp = response(r);
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["code"], 403);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find(
                "request.object is not a Pod object (JSON null)"),
            std::string::npos)
      << resp.dump();
  ASSERT_EQ(recorder_.outcomes().size(), 1u);
  EXPECT_EQ(recorder_.outcomes()[0].decision, Decision::kDenied);
}

TEST_F(HandlerTest, GarbageIs400AndCountedAsError) {
  for (std::string body :
       {std::string(), std::string("garbage"), std::string("{}"), std::string("\x00\x01", 2)}) {
    HttpReply r = pods_.handle(body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.contentType.rfind("text/plain", 0), 0u);
  }
  for (const auto& o : recorder_.outcomes()) EXPECT_EQ(o.decision, Decision::kError);
}

TEST_F(HandlerTest, ModelReleaseWebhook) {
  HttpReply ok = releases_.handle(testing::review("CREATE", ReleaseBuilder::good().json()));
  EXPECT_EQ(response(ok)["allowed"], true);
  HttpReply bad = releases_.handle(testing::review(
      "CREATE", ReleaseBuilder::good().set("package", "registry.example/m:latest").json()));
  json resp = response(bad);
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["code"], 422);
  envs_.erase("ml", "torch");
  json warned =
      response(releases_.handle(testing::review("CREATE", ReleaseBuilder::good().json())));
  EXPECT_EQ(warned["allowed"], true);
  EXPECT_EQ(warned["warnings"].size(), 1u);
  auto o = recorder_.outcomes();
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].webhook, "modelreleases");
  EXPECT_EQ(o[1].decision, Decision::kDenied);
  EXPECT_EQ(o[2].decision, Decision::kWarned);
}

// The webhook looks the model's prod and the providers up through its lookups.
class OneProd final : public ModelProdLookup {
 public:
  std::optional<ModelProdView> prodOf(std::string_view ns, std::string_view model) const override {
    if (ns == "ml" && model == "gpt2") return ModelProdView{"gpt2-v6", 8080};
    return std::nullopt;
  }
};
class NoProviders final : public AnalysisProviderLookup {
 public:
  bool exists(std::string_view) const override { return false; }
};

TEST_F(HandlerTest, ModelReleaseWebhookReadsProdAndProvidersFromItsLookups) {
  OneProd prods;
  NoProviders providers;
  releases_.setModelProds(&prods);
  releases_.setAnalysisProviders(&providers);
  json mr = ReleaseBuilder::good().json();
  mr["spec"]["stages"][2]["serving"]["port"] = 9000;
  json refused = response(releases_.handle(testing::review("CREATE", mr)));
  EXPECT_EQ(refused["allowed"], false);
  EXPECT_NE(refused["status"]["message"].get<std::string>().find(
                "spec.stages[2].serving.port: 9000 differs from port 8080"),
            std::string::npos)
      << refused.dump();

  json step = {{"weight", 100},
               {"analysis", {{"prometheus", {{"provider", "nope"}, {"query", "up"}}}}}};
  json warned = ReleaseBuilder::good().json();
  warned["spec"]["stages"][2]["canary"]["steps"] = json::array({step});
  json resp = response(releases_.handle(testing::review("CREATE", warned)));
  EXPECT_EQ(resp["allowed"], true);
  ASSERT_EQ(resp["warnings"].size(), 1u) << resp.dump();
  EXPECT_NE(resp["warnings"][0].get<std::string>().find("AnalysisProvider \"nope\" does not exist"),
            std::string::npos);
}

TEST_F(HandlerTest, ApprovalAsksTheAuthorizerAsTheRequestingUser) {
  json userInfo = {{"username", "alice"},
                   {"uid", "u-42"},
                   {"groups", {"team-a", "system:authenticated"}},
                   {"extra", {{"scopes", {"read", "write"}}}}};
  json before = ReleaseBuilder::good().manual("ci").waitingForApproval("ci").json();
  json after = ReleaseBuilder::good()
                   .manual("ci")
                   .waitingForApproval("ci")
                   .approvedBy("ci", "alice", R"(["team-a","system:authenticated"])")
                   .json();
  json denied = response(
      releases_.handle(testing::review("UPDATE", after, before, false, "u-1", "", userInfo)));
  EXPECT_EQ(denied["allowed"], false);
  EXPECT_EQ(denied["status"]["code"], 403);
  EXPECT_EQ(denied["status"]["reason"], "Forbidden");
  EXPECT_NE(denied["status"]["message"].get<std::string>().find(
                "user \"alice\" may not approve ModelRelease \"ml/gpt2-v7\": RBAC verb "
                "\"approve\""),
            std::string::npos)
      << denied.dump();
  auto asked = authorizer_.asked();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].user.username, "alice");
  EXPECT_EQ(asked[0].user.uid, "u-42");
  EXPECT_EQ(asked[0].user.groups, (std::vector<std::string>{"team-a", "system:authenticated"}));
  EXPECT_EQ(asked[0].user.extra.at("scopes"), (std::vector<std::string>{"read", "write"}));
  EXPECT_EQ(asked[0].verb, "approve");
  EXPECT_EQ(asked[0].group, "lockstep.dev");
  EXPECT_EQ(asked[0].resource, "modelreleases");
  EXPECT_EQ(asked[0].ns, "ml");
  EXPECT_EQ(asked[0].name, "gpt2-v7");

  authorizer_.allow("alice", "approve");
  json allowed = response(
      releases_.handle(testing::review("UPDATE", after, before, false, "u-2", "", userInfo)));
  EXPECT_EQ(allowed["allowed"], true) << allowed.dump();
}

TEST_F(HandlerTest, OrdinaryWritesNeverAskTheAuthorizer) {
  json mr = ReleaseBuilder::good().approvedBy("ci", "bob").json();
  json labelled = mr;
  labelled["metadata"]["labels"]["team"] = "a";
  EXPECT_EQ(response(releases_.handle(testing::review("UPDATE", labelled, mr)))["allowed"], true);
  // Forged names are refused before any question is asked.
  json forged = ReleaseBuilder::good().abortedBy("bob").json();
  EXPECT_EQ(response(releases_.handle(testing::review("UPDATE", forged, mr)))["allowed"], false);
  EXPECT_TRUE(authorizer_.asked().empty());
}

TEST_F(HandlerTest, AuthorizerFailureFailsClosedWithTheReason) {
  authorizer_.allow("alice", "abort")
      .failWith(Status(Code::kDeadlineExceeded, "POST subjectaccessreviews: timed out"));
  json before = ReleaseBuilder::good().json();
  json after = ReleaseBuilder::good().abortedBy("alice").json();
  json r = response(releases_.handle(testing::review("UPDATE", after, before)));
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["code"], 403);
  EXPECT_NE(r["status"]["message"].get<std::string>().find(
                "cannot check whether user \"alice\" may abort ModelRelease \"ml/gpt2-v7\" "
                "(SubjectAccessReview failed: POST subjectaccessreviews: timed out); refused"),
            std::string::npos)
      << r.dump();
}

TEST(StaticLookups, LoadsDocument) {
  auto l = loadStaticLookups(R"({"runtimeEnvs":[{"namespace":"ml","name":"t","ready":true,
      "closureHash":"h","image":"i"}],"namespaces":{"ml":"warn","x":"off"}})");
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  auto env = l->envs->find("ml", "t");
  ASSERT_TRUE(env.has_value());
  EXPECT_TRUE(env->ready);
  EXPECT_EQ(env->image, "i");
  EXPECT_EQ(*l->namespaces->modeOf("ml"), NamespaceMode::kWarn);
  EXPECT_EQ(*l->namespaces->modeOf("x"), NamespaceMode::kOff);
  EXPECT_EQ(*l->namespaces->modeOf("y"), NamespaceMode::kUnset);
  EXPECT_FALSE(loadStaticLookups("[").isOk());
  EXPECT_FALSE(loadStaticLookups(R"({"runtimeEnvs":[{"name":"t"}]})").isOk());
  EXPECT_FALSE(loadStaticLookups(R"({"namespaces":{"a":1}})").isOk());
}

TEST(StaticLookups, LoadsRevisionsAndNamesTheBadField) {
  auto l = loadStaticLookups(R"({"runtimeEnvs":[{"namespace":"ml","name":"t","ready":true,
      "closureHash":"h2","image":"i2","currentRevision":2,
      "revisions":[{"number":1,"image":"i1","closureHash":"h1","pinnedBy":["v1"]},
                   {"number":2,"image":"i2","closureHash":"h2"}]}]})");
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  auto env = l->envs->find("ml", "t");
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->currentRevision, 2);
  ASSERT_EQ(env->revisions.size(), 2u);
  EXPECT_EQ(env->revisions[0].pinnedBy, std::vector<std::string>{"v1"});
  EXPECT_EQ(env->revisions[1].closureHash, "h2");
  auto bad = loadStaticLookups(
      R"({"runtimeEnvs":[{"namespace":"ml","name":"t","revisions":[{"number":0}]}]})");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("runtimeEnvs[0].revisions[0].number"), std::string::npos)
      << bad.status().message();
  bad = loadStaticLookups(
      R"({"runtimeEnvs":[{"namespace":"ml","name":"t","revisions":[{"number":1,"pinnedBy":"v1"}]}]})");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("revisions[0].pinnedBy"), std::string::npos);
}

TEST(StaticLookups, Authorization) {
  AccessRequest q;
  q.user.username = "bob";
  q.verb = "approve";
  auto open = loadStaticLookups("{}");
  ASSERT_TRUE(open.isOk());
  EXPECT_TRUE(open->authorizer->authorize(q)->allowed);  // the dev server allows by default
  auto l = loadStaticLookups(
      R"({"authorization":{"default":"deny","rules":[{"user":"bob","verb":"approve","allowed":true}]}})");
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  EXPECT_TRUE(l->authorizer->authorize(q)->allowed);
  q.verb = "abort";
  EXPECT_FALSE(l->authorizer->authorize(q)->allowed);
  EXPECT_FALSE(loadStaticLookups(R"({"authorization":{"default":"maybe"}})").isOk());
  EXPECT_FALSE(loadStaticLookups(R"({"authorization":{"rules":[{"user":"bob"}]}})").isOk());
}

}  // namespace
}  // namespace lockstep::webhooks
