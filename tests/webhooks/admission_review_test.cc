#include "webhooks/admission/admission_review.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/webhooks/builders.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::PodBuilder;

TEST(AdmissionReviewDecode, ReadsRequestFields) {
  auto body = testing::review("UPDATE", PodBuilder::good().json(), PodBuilder::good().json(),
                              /*dryRun=*/true, "8f3c-uid", "ephemeralcontainers");
  StatusOr<AdmissionRequest> r = decodeAdmissionReview(body);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->uid, "8f3c-uid");
  EXPECT_EQ(r->operation, Operation::kUpdate);
  EXPECT_EQ(r->ns, "ml");
  EXPECT_EQ(r->name, "web-1");
  EXPECT_EQ(r->resource, "pods");
  EXPECT_EQ(r->subResource, "ephemeralcontainers");
  EXPECT_EQ(r->kind.kind, "Pod");
  EXPECT_EQ(r->userName, "alice");
  EXPECT_TRUE(r->dryRun);
  EXPECT_TRUE(r->object.is_object());
  EXPECT_TRUE(r->oldObject.is_object());
}

TEST(AdmissionReviewDecode, RejectsMalformedBodies) {
  const std::string okRequest = R"("request":{"uid":"u","operation":"CREATE"})";
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {"not json", "not valid JSON"},
      {"{\"apiVersion\":", "not valid JSON"},
      {"[1,2]", "not a JSON object"},
      {"\"AdmissionReview\"", "not a JSON object"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod",)" + okRequest + "}", "kind"},
      {R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview",)" + okRequest + "}",
       "apiVersion"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})", "no request"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]})",
       "no request"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}})",
       "uid"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"","operation":"CREATE"}})",
       "uid"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7,"operation":"CREATE"}})",
       "uid"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}})",
       "operation"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE","object":"x"}})",
       "object"},
      {R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE","oldObject":[1]}})",
       "oldObject"},
      {std::string(200, '[') + std::string(200, ']'), "deeper"},
      {"{\"a\":" + std::string(100000, '['), "deeper"},
  };
  for (const auto& [body, mention] : cases) {
    StatusOr<AdmissionRequest> r = decodeAdmissionReview(body);
    ASSERT_FALSE(r.isOk()) << body.substr(0, 80);
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(mention), std::string::npos)
        << body.substr(0, 80) << " → " << r.status().message();
  }
}

// The depth limit counts open objects/arrays, exactly at the boundary, and
// ignores brackets inside strings (escaped quotes included).
TEST(AdmissionReviewDecode, DepthLimitIsExactAndIgnoresStrings) {
  auto nested = [](int containers) {  // the root object plus containers-1 arrays
    return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","x":)" +
           std::string(containers - 1, '[') + std::string(containers - 1, ']') + "}";
  };
  EXPECT_FALSE(jsonNestedDeeperThan(nested(kMaxJsonDepth), kMaxJsonDepth));
  EXPECT_TRUE(jsonNestedDeeperThan(nested(kMaxJsonDepth + 1), kMaxJsonDepth));
  auto atLimit = decodeAdmissionReview(nested(kMaxJsonDepth));
  ASSERT_FALSE(atLimit.isOk());  // no request, but parsed: not a depth error
  EXPECT_EQ(atLimit.status().message().find("deeper"), std::string::npos)
      << atLimit.status().message();
  auto over = decodeAdmissionReview(nested(kMaxJsonDepth + 1));
  ASSERT_FALSE(over.isOk());
  EXPECT_NE(over.status().message().find("deeper"), std::string::npos) << over.status().message();

  const std::string brackets = std::string(200, '[') + R"(\")" + std::string(200, '{');
  EXPECT_FALSE(jsonNestedDeeperThan(R"({"s":")" + brackets + R"("})", kMaxJsonDepth));
  auto r = decodeAdmissionReview(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":")" +
      brackets + R"(","operation":"CREATE"}})");
  ASSERT_FALSE(r.isOk());  // uid too long, but not too deep
  EXPECT_NE(r.status().message().find("uid"), std::string::npos) << r.status().message();
}

// A FieldMask keeps only the named fields of request.object and oldObject:
// `true` keeps a whole value, an object mask applies to each element of an
// array, scalars keep their type; the rest of the request is kept whole.
TEST(AdmissionReviewDecode, MaskKeepsOnlyNamedObjectFields) {
  const json pod = json::parse(R"({
    "metadata": {"name": "p", "uid": "x", "labels": {"a": "1", "b": {"deep": [1, 2.5, null]}}},
    "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "E", "value": "v"}]},
                            7, [{"name": "nested", "env": 1}], "s"],
             "nodeName": "n", "volumes": {"name": "not-an-array"}},
    "status": {"phase": "Pending"}})");
  const json mask = json::parse(R"({"metadata": {"name": true, "labels": true},
    "spec": {"containers": {"name": true, "image": true}, "volumes": {"name": true}}})");
  auto r = decodeAdmissionReview(testing::review("UPDATE", pod, pod), &mask);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const json want = json::parse(R"({
    "metadata": {"name": "p", "labels": {"a": "1", "b": {"deep": [1, 2.5, null]}}},
    "spec": {"containers": [{"name": "c", "image": "i"}, 7, [{"name": "nested"}], "s"],
             "volumes": {"name": "not-an-array"}}})");
  EXPECT_EQ(r->object, want) << r->object.dump();
  EXPECT_EQ(r->oldObject, want) << r->oldObject.dump();
  EXPECT_EQ(r->user.username, "alice");  // the envelope is not masked
  EXPECT_EQ(r->kind.kind, "Pod");

  auto whole = decodeAdmissionReview(testing::review("UPDATE", pod, pod));
  ASSERT_TRUE(whole.isOk());
  EXPECT_EQ(whole->object, pod);
  EXPECT_EQ(whole->oldObject, pod);
}

// Duplicate keys: the last one wins, as with nlohmann's parser (and Go's).
TEST(AdmissionReviewDecode, LastDuplicateKeyWins) {
  const json mask = json::parse(R"({"metadata":{"labels":true}})");
  auto r = decodeAdmissionReview(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a",
          "uid":"b","operation":"CREATE","object":{"metadata":{"labels":{"x":"1"},"labels":{"x":"2"}}}}})",
      &mask);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->uid, "b");
  EXPECT_EQ(r->object, json::parse(R"({"metadata":{"labels":{"x":"2"}}})"));
}

// What the parser refuses is named, wherever it is in the body (also in parts a mask drops).
TEST(AdmissionReviewDecode, InvalidJsonAnywhereIsNamed) {
  const std::string head =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",
          "operation":"CREATE","object":{"metadata":{"name":"p"},"spec":{"nodeName":)";
  const json mask = json::parse(R"({"metadata":{"name":true}})");
  for (const auto& [value, reason] : std::vector<std::pair<std::string, std::string>>{
           {"tru", "atom"},
           {"123456789012345678901234567890", "number"},
           {"1e400", "number"},
           {R"("\ud800")", "string"},
           {"\"\xff\"", "UTF-8"},
       }) {
    auto r = decodeAdmissionReview(head + value + "}}}}", &mask);
    ASSERT_FALSE(r.isOk()) << value;
    EXPECT_NE(r.status().message().find("not valid JSON"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(reason), std::string::npos)
        << value << " → " << r.status().message();
  }
}

// The plain "allowed" answer is written without a DOM: byte for byte what
// the DOM writes, for any uid (quotes, control characters, invalid UTF-8).
TEST(AdmissionReviewEncode, AllowedAnswerIsTheSameBytesAsTheDom) {
  for (const std::string& uid :
       {std::string("3f0c1d2e-bench"), std::string("a\"b\\c\n\t\x01"), std::string("caf\xc3\xa9"),
        std::string("bad\xff\xfe"), std::string()}) {
    AdmissionResponse resp;
    resp.uid = uid;
    const json dom = {{"apiVersion", "admission.k8s.io/v1"},
                      {"kind", "AdmissionReview"},
                      {"response", {{"uid", uid}, {"allowed", true}}}};
    EXPECT_EQ(encodeAdmissionReview(resp),
              dom.dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

TEST(AdmissionReviewDecode, ToleratesOddButValidFields) {
  auto r = decodeAdmissionReview(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",
          "operation":"PATCH","dryRun":"yes","object":null,"namespace":5,"kind":"x"}})");
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->operation, Operation::kUnknown);
  EXPECT_FALSE(r->dryRun);
  EXPECT_TRUE(r->object.is_null());
  EXPECT_EQ(r->ns, "");
}

TEST(AdmissionReviewEncode, AllowedEchoesUid) {
  AdmissionResponse resp;
  resp.uid = "abc";
  json out = json::parse(encodeAdmissionReview(resp));
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "abc");
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_FALSE(out["response"].contains("status"));
  EXPECT_FALSE(out["response"].contains("warnings"));
}

TEST(AdmissionReviewEncode, DeniedCarriesStatusAndWarnings) {
  Verdict v;
  v.decision = Decision::kDenied;
  v.code = 403;
  v.reason = "Forbidden";
  v.message = "lockstep: no";
  v.warnings = {"w1", std::string(5000, 'x')};
  json out = json::parse(encodeAdmissionReview(responseFromVerdict("u1", v)));
  const json& r = out["response"];
  EXPECT_EQ(r["uid"], "u1");
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["code"], 403);
  EXPECT_EQ(r["status"]["reason"], "Forbidden");
  EXPECT_EQ(r["status"]["message"], "lockstep: no");
  EXPECT_EQ(r["status"]["status"], "Failure");
  ASSERT_EQ(r["warnings"].size(), 2u);
  EXPECT_LE(r["warnings"][1].get<std::string>().size(), 1024u);
}

TEST(AdmissionReviewEncode, AuditedAddsAuditAnnotation) {
  Verdict v;
  v.decision = Decision::kAudited;
  v.message = "lockstep: pod \"ml/x\": bad";
  json out = json::parse(encodeAdmissionReview(responseFromVerdict("u", v)));
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_EQ(out["response"]["auditAnnotations"]["closure-violation"], v.message);
}

TEST(AdmissionReviewEncode, InvalidUtf8IsReplacedNotThrown) {
  AdmissionResponse resp;
  resp.uid = "u";
  resp.allowed = false;
  resp.code = 403;
  resp.message = std::string("bad \xff\xfe bytes");
  std::string out;
  ASSERT_NO_THROW(out = encodeAdmissionReview(resp));
  EXPECT_TRUE(json::accept(out));
}

}  // namespace
}  // namespace lockstep::webhooks
