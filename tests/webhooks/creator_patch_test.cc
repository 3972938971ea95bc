// The ModelRelease creator webhook: the JSON Patch recording the creator on
// CREATE (webhooks/admission/creator_patch.h), checked by applying it
// (nlohmann's RFC 6902 implementation), and the endpoint's AdmissionReview
// answer (patchType JSONPatch, base64 patch).
#include "webhooks/admission/creator_patch.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/webhooks/builders.h"
#include "tests/webhooks/fakes.h"
#include "webhooks/admission/handler.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::FakeRecorder;
using testing::ReleaseBuilder;

constexpr const char* kCreatedBy = "lockstep.dev/created-by";

AdmissionRequest create(json object, const std::string& user = "alice") {
  AdmissionRequest r;
  r.uid = "uid-1";
  r.operation = Operation::kCreate;
  r.ns = "ml";
  r.name = "gpt2-v7";
  r.user.username = user;
  r.userName = user;
  r.object = std::move(object);
  return r;
}

// The object as the API server stores it after applying the patch.
json patched(const AdmissionRequest& r) {
  StatusOr<json> patch = creatorPatch(r);
  EXPECT_TRUE(patch.isOk()) << patch.status().toString();
  return patch.isOk() ? r.object.patch(*patch) : json();
}

TEST(JsonPointerToken, EscapesTildeThenSlash) {
  EXPECT_EQ(jsonPointerToken("lockstep.dev/created-by"), "lockstep.dev~1created-by");
  EXPECT_EQ(jsonPointerToken("a~b/c"), "a~0b~1c");
  EXPECT_EQ(jsonPointerToken("~1"), "~01");  // not "~1" read back as "/"
  EXPECT_EQ(jsonPointerToken("plain"), "plain");
}

TEST(CreatorPatch, NoAnnotationsAddsTheMap) {
  AdmissionRequest r = create(ReleaseBuilder().json());
  ASSERT_FALSE(r.object["metadata"].contains("annotations"));
  StatusOr<json> patch = creatorPatch(r);
  ASSERT_TRUE(patch.isOk());
  EXPECT_EQ(*patch, json::parse(R"([{"op":"add","path":"/metadata/annotations",
                                     "value":{"lockstep.dev/created-by":"alice"}}])"));
  EXPECT_EQ(patched(r)["metadata"]["annotations"], json({{kCreatedBy, "alice"}}));
  // A null map is replaced the same way.
  r.object["metadata"]["annotations"] = nullptr;
  EXPECT_EQ(patched(r)["metadata"]["annotations"], json({{kCreatedBy, "alice"}}));
}

TEST(CreatorPatch, OtherAnnotationsAreKeptAndTheKeyIsEscaped) {
  AdmissionRequest r =
      create(ReleaseBuilder().annotate("team", "ml").annotate("a/b", "c").json(), "bob");
  StatusOr<json> patch = creatorPatch(r);
  ASSERT_TRUE(patch.isOk());
  EXPECT_EQ(*patch, json::parse(R"([{"op":"add",
                                     "path":"/metadata/annotations/lockstep.dev~1created-by",
                                     "value":"bob"}])"));
  EXPECT_EQ(patched(r)["metadata"]["annotations"],
            json({{"team", "ml"}, {"a/b", "c"}, {kCreatedBy, "bob"}}));
  // The rest of the object is untouched.
  json rest = patched(r);
  rest["metadata"]["annotations"].erase(kCreatedBy);
  EXPECT_EQ(rest, r.object);
}

TEST(CreatorPatch, AValueTheUserWroteIsLeftForTheValidatingWebhook) {
  // Right or wrong, it is not rewritten: the validating webhook refuses a
  // value other than the requesting user (approval_policy.h).
  for (const json& value : {json("alice"), json("mallory"), json(7)}) {
    AdmissionRequest r = create(ReleaseBuilder().json());
    r.object["metadata"]["annotations"][kCreatedBy] = value;
    StatusOr<json> patch = creatorPatch(r);
    ASSERT_TRUE(patch.isOk());
    EXPECT_TRUE(patch->empty()) << *patch;
  }
}

TEST(CreatorPatch, OnlyCreateIsPatched) {
  for (Operation op : {Operation::kUpdate, Operation::kDelete, Operation::kConnect}) {
    AdmissionRequest r = create(ReleaseBuilder().json());
    r.operation = op;
    r.oldObject = r.object;
    StatusOr<json> patch = creatorPatch(r);
    ASSERT_TRUE(patch.isOk());
    EXPECT_TRUE(patch->empty()) << operationName(op);
  }
  AdmissionRequest status = create(ReleaseBuilder().json());
  status.subResource = "status";
  EXPECT_TRUE(creatorPatch(status)->empty());
}

// Issue 29: each approval a write adds or changes is recorded with its writer's groups.
AdmissionRequest update(json object, json old, const std::string& user,
                        std::vector<std::string> groups) {
  AdmissionRequest r = create(std::move(object), user);
  r.operation = Operation::kUpdate;
  r.oldObject = std::move(old);
  r.user.groups = std::move(groups);
  return r;
}

json afterGroupsPatch(const AdmissionRequest& r) { return r.object.patch(approverGroupsPatch(r)); }

TEST(ApproverGroupsPatch, RecordsTheGroupsOfEachApprovalWritten) {
  json old = ReleaseBuilder().annotate("approve.lockstep.dev/ci", "alice").json();
  old["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"] = R"(["ml-leads"])";
  json now = old;
  now["metadata"]["annotations"]["approve.lockstep.dev/ci.2"] = "dave";
  // A value the client wrote is replaced.
  now["metadata"]["annotations"]["approver-groups.lockstep.dev/ci.2"] = R"(["ml-leads"])";
  json a = afterGroupsPatch(
      update(now, old, "dave", {"interns", "system:authenticated"}))["metadata"]["annotations"];
  EXPECT_EQ(a["approver-groups.lockstep.dev/ci.2"], R"(["interns","system:authenticated"])");
  EXPECT_EQ(a["approver-groups.lockstep.dev/ci"], R"(["ml-leads"])") << "alice's is not rewritten";
  // A user in no group: an empty list, not nothing.
  EXPECT_EQ(
      afterGroupsPatch(update(now, old, "dave",
                              {}))["metadata"]["annotations"]["approver-groups.lockstep.dev/ci.2"],
      "[]");
  // Already right: no operation.
  now["metadata"]["annotations"]["approver-groups.lockstep.dev/ci.2"] = R"(["sre"])";
  EXPECT_TRUE(approverGroupsPatch(update(now, old, "dave", {"sre"})).empty());
  // Nothing written, nothing patched; other annotations do not matter.
  json labelled = old;
  labelled["metadata"]["annotations"]["team"] = "ml";
  EXPECT_TRUE(approverGroupsPatch(update(labelled, old, "dave", {"sre"})).empty());
  // On CREATE too (refused by the validating webhook, but never without its groups).
  json created = ReleaseBuilder().annotate("approve.lockstep.dev/ci", "alice").json();
  AdmissionRequest c = create(created, "alice");
  c.user.groups = {"ml-leads"};
  EXPECT_EQ(afterGroupsPatch(c)["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"],
            R"(["ml-leads"])");
  // The status subresource and DELETE are never patched.
  AdmissionRequest st = update(now, old, "dave", {"sre", "x"});
  st.subResource = "status";
  EXPECT_TRUE(approverGroupsPatch(st).empty());
  st = update(now, old, "dave", {"sre", "x"});
  st.operation = Operation::kDelete;
  EXPECT_TRUE(approverGroupsPatch(st).empty());
}

TEST(ApproverGroupsPatch, TheGroupsOfARemovedApprovalGoWithIt) {
  json old = ReleaseBuilder().annotate("approve.lockstep.dev/ci", "alice").json();
  old["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"] = R"(["ml-leads"])";
  json now = old;
  now["metadata"]["annotations"].erase("approve.lockstep.dev/ci");
  json a = afterGroupsPatch(update(now, old, "carol", {}))["metadata"]["annotations"];
  EXPECT_FALSE(a.contains("approver-groups.lockstep.dev/ci")) << a.dump();
}

TEST(CreatorPatch, NoMetadataAddsIt) {
  AdmissionRequest r = create(json{{"kind", "ModelRelease"}});
  EXPECT_EQ(patched(r)["metadata"], json({{"annotations", {{kCreatedBy, "alice"}}}}));
}

TEST(CreatorPatch, BadInputIsAnErrorNamingTheField) {
  struct Case {
    AdmissionRequest request;
    std::string want;
  };
  AdmissionRequest noObject = create(nullptr);
  AdmissionRequest badMetadata = create(json{{"metadata", "x"}});
  AdmissionRequest badAnnotations = create(ReleaseBuilder().json());
  badAnnotations.object["metadata"]["annotations"] = json::array({"a"});
  AdmissionRequest noUser = create(ReleaseBuilder().json(), "");
  for (const Case& c : std::vector<Case>{
           {noObject, "request.object: a CREATE must carry the ModelRelease as an object"},
           {badMetadata, "request.object.metadata: not an object (string)"},
           {badAnnotations, "request.object.metadata.annotations: not an object (array)"},
           {noUser,
            "request.userInfo.username is empty: the creator of the release cannot be "
            "recorded in metadata.annotations[\"lockstep.dev/created-by\"]"}}) {
    StatusOr<json> patch = creatorPatch(c.request);
    ASSERT_FALSE(patch.isOk()) << c.want;
    EXPECT_EQ(patch.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(patch.status().message(), c.want);
  }
}

TEST(Base64, Rfc4648TestVectors) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\x00\xfe", 3)), "/wD+");
}

std::string unbase64(const std::string& in) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

class CreatorWebhookTest : public ::testing::Test {
 protected:
  FakeRecorder recorder_;
  lockstep::testing::FakeClock clock_;
  ModelReleaseCreatorWebhook webhook_{recorder_, clock_};
};

TEST_F(CreatorWebhookTest, CreateAnswersAJsonPatchRecordingTheUser) {
  json release = ReleaseBuilder().json();
  HttpReply r = webhook_.handle(
      testing::review("CREATE", release, nullptr, false, "u-7", "", {{"username", "carol"}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json resp = json::parse(r.body)["response"];
  EXPECT_EQ(resp["uid"], "u-7");
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_EQ(resp["patchType"], "JSONPatch");
  json patch = json::parse(unbase64(resp["patch"].get<std::string>()));
  EXPECT_EQ(release.patch(patch)["metadata"]["annotations"][kCreatedBy], "carol");
  auto o = recorder_.outcomes();
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].webhook, "modelreleases-creator");
  EXPECT_EQ(o[0].decision, Decision::kAllowed);
  EXPECT_EQ(o[0].userName, "carol");
  EXPECT_TRUE(o[0].checked);
  EXPECT_EQ(webhook_.path(), "/mutate/modelreleases");
}

TEST_F(CreatorWebhookTest, UpdateAndAUserSetValueAnswerWithoutAPatch) {
  json release = ReleaseBuilder().annotate(kCreatedBy, "carol").json();
  for (const std::string op : {"UPDATE", "CREATE"}) {
    HttpReply r =
        webhook_.handle(testing::review(op, release, op == "UPDATE" ? release : json(nullptr),
                                        false, "u-1", "", {{"username", "carol"}}));
    ASSERT_EQ(r.status, 200) << r.body;
    json resp = json::parse(r.body)["response"];
    EXPECT_EQ(resp["allowed"], true) << op;
    EXPECT_FALSE(resp.contains("patch")) << op << ": " << r.body;
    EXPECT_FALSE(resp.contains("patchType")) << op;
  }
}

TEST_F(CreatorWebhookTest, AnApprovalIsAnsweredWithItsWritersGroups) {
  json before = ReleaseBuilder().annotate(kCreatedBy, "carol").json();
  json after = before;
  after["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "alice";
  HttpReply r = webhook_.handle(
      testing::review("UPDATE", after, before, false, "u-3", "",
                      {{"username", "alice"}, {"groups", {"ml-leads", "system:authenticated"}}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json resp = json::parse(r.body)["response"];
  EXPECT_EQ(resp["allowed"], true);
  EXPECT_EQ(resp["patchType"], "JSONPatch");
  json patch = json::parse(unbase64(resp["patch"].get<std::string>()));
  json stored = after.patch(patch);
  EXPECT_EQ(stored["metadata"]["annotations"]["approver-groups.lockstep.dev/ci"],
            R"(["ml-leads","system:authenticated"])");
  EXPECT_EQ(stored["metadata"]["annotations"][kCreatedBy], "carol") << "never rewritten";
  auto o = recorder_.outcomes();
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].checked);
}

TEST_F(CreatorWebhookTest, MalformedReviewsAreClearErrors) {
  // Not an AdmissionReview: HTTP 400 naming what is wrong.
  HttpReply garbage = webhook_.handle("{\"kind\":\"Pod\"}");
  EXPECT_EQ(garbage.status, 400);
  EXPECT_NE(garbage.body.find("kind is not AdmissionReview"), std::string::npos) << garbage.body;
  // A CREATE whose object cannot carry the annotation: refused, 400 BadRequest, naming the field.
  json bad = ReleaseBuilder().json();
  bad["metadata"]["annotations"] = "x";
  HttpReply r = webhook_.handle(testing::review("CREATE", bad));
  ASSERT_EQ(r.status, 200) << r.body;
  json resp = json::parse(r.body)["response"];
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["code"], 400);
  EXPECT_EQ(resp["status"]["reason"], "BadRequest");
  EXPECT_EQ(resp["status"]["message"],
            "lockstep: request.object.metadata.annotations: not an object (string)");
  EXPECT_FALSE(resp.contains("patch"));
  auto o = recorder_.outcomes();
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].decision, Decision::kError);
  EXPECT_EQ(o[1].decision, Decision::kDenied);
}

}  // namespace
}  // namespace lockstep::webhooks
