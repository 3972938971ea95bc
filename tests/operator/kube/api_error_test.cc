#include "operator/kube/api_error.h"

#include <gtest/gtest.h>

namespace lockstep::kube {
namespace {

std::string statusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                        {"reason", reason}, {"message", message}, {"code", code}}
      .dump();
}

TEST(ApiErrorTest, SuccessIsOk) {
  EXPECT_TRUE(statusFromResponse(200, "{}").isOk());
  EXPECT_TRUE(statusFromResponse(201, "").isOk());
}

TEST(ApiErrorTest, MapsCodesAndReasons) {
  struct Case {
    int http;
    std::string reason;
    Code want;
  } cases[] = {
      {404, "NotFound", Code::kNotFound},
      {409, "AlreadyExists", Code::kAlreadyExists},
      {409, "Conflict", Code::kConflict},
      {410, "Gone", Code::kGone},
      {410, "Expired", Code::kGone},
      {422, "Invalid", Code::kInvalid},
      {403, "Forbidden", Code::kForbidden},
      {401, "Unauthorized", Code::kUnauthorized},
      {429, "TooManyRequests", Code::kUnavailable},
      {500, "InternalError", Code::kUnavailable},
      {503, "ServiceUnavailable", Code::kUnavailable},
      {504, "Timeout", Code::kUnavailable},
      {400, "BadRequest", Code::kInvalidArgument},
      {415, "UnsupportedMediaType", Code::kInvalidArgument},
  };
  for (const auto& c : cases) {
    Status st = statusFromResponse(c.http, statusBody(c.http, c.reason, "msg " + c.reason));
    EXPECT_EQ(st.code(), c.want) << c.http << " " << c.reason;
    EXPECT_EQ(st.message(), "msg " + c.reason);
  }
}

TEST(ApiErrorTest, ExpiredReasonWinsOverCode) {
  // A list with an expired continue token: 410 reason Expired; some paths answer 500 with it.
  EXPECT_EQ(statusFromResponse(500, statusBody(500, "Expired", "too old")).code(), Code::kGone);
}

TEST(ApiErrorTest, TooLargeResourceVersionIsGone) {
  nlohmann::json st = {{"kind", "Status"},
                       {"code", 504},
                       {"reason", "Timeout"},
                       {"message", "Too large resource version"},
                       {"details", {{"causes", {{{"reason", "ResourceVersionTooLarge"}}}}}}};
  EXPECT_EQ(statusFromResponse(504, st.dump()).code(), Code::kGone);
}

// What kube-apiserver answers a server-side apply of a status field that the
// CRD installed in the cluster does not declare (a CRD older than the operator).
TEST(ApiErrorTest, UndeclaredFieldNamesTheOutdatedCrd) {
  const std::string server =
      "failed to create typed patch object (ns/torch; lockstep.dev/v1alpha1, Kind=RuntimeEnv): "
      ".status.currentRevision: field not declared in schema";
  Status st = statusFromResponse(500, statusBody(500, "", server));
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message().rfind(server, 0), 0u) << st.message();
  EXPECT_NE(
      st.message().find("CustomResourceDefinition in the cluster is older than this operator"),
      std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("helm upgrade does not update CRDs"), std::string::npos);
}

TEST(ApiErrorTest, NonStatusBodyUsesHttpCode) {
  Status st = statusFromResponse(404, "404 page not found");
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("404 page not found"), std::string::npos);
  EXPECT_EQ(statusFromResponse(502, "").code(), Code::kUnavailable);
}

TEST(ApiErrorTest, WatchErrorObject) {
  nlohmann::json st = {{"kind", "Status"},
                       {"code", 410},
                       {"reason", "Expired"},
                       {"message", "too old resource version: 1 (2)"}};
  EXPECT_EQ(statusFromStatusObject(st).code(), Code::kGone);
  EXPECT_TRUE(isRetryable(unavailable("x")));
  EXPECT_FALSE(isRetryable(Status(Code::kConflict, "x")));
}

// Issue 12 item 14: which reconcile failures are re-queued quietly and which
// are the object's problem, code by code (the ModelRelease controller uses it).
TEST(ApiError, TransientCodesAreExactlyTheOnesARetryCanFix) {
  for (Code c :
       {Code::kUnavailable, Code::kDeadlineExceeded, Code::kConflict, Code::kInternal, Code::kGone})
    EXPECT_TRUE(isTransient(Status(c, "x"))) << codeName(c);
  for (Code c :
       {Code::kOk, Code::kInvalidArgument, Code::kNotFound, Code::kAlreadyExists, Code::kInvalid,
        Code::kForbidden, Code::kUnauthorized, Code::kResourceExhausted, Code::kCancelled})
    EXPECT_FALSE(isTransient(Status(c, "x"))) << codeName(c);
  // Through the API server's answers: a 409 Conflict and a 500 retry, a 422 does not.
  EXPECT_TRUE(isTransient(statusFromResponse(
      409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"modified"})")));
  EXPECT_TRUE(isTransient(statusFromResponse(500, "etcd down")));
  EXPECT_FALSE(isTransient(statusFromResponse(
      422, R"({"kind":"Status","reason":"Invalid","code":422,"message":"bad"})")));
}

}  // namespace
}  // namespace lockstep::kube
