// decodeQueryResponse: every shape of answer the query API gives, and many it
// must never be fooled by. Pure: bytes in, result out.
#include "operator/prometheus/query_result.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "tests/prometheus/print.h"

namespace lockstep::prometheus {
namespace {

std::string vector1(const std::string& value) {
  return R"({"status":"success","data":{"resultType":"vector","result":[)"
         R"({"metric":{"track":"canary"},"value":[1700000000.123,")" +
         value + R"("]}]}})";
}

TEST(DecodeQueryResponse, OneSeriesIsItsValue) {
  QueryResult r = decodeQueryResponse(200, vector1("0.25"));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(*r.value, 0.25);
  EXPECT_EQ(r.httpStatus, 200);
  EXPECT_TRUE(r.error.empty());
}

TEST(DecodeQueryResponse, ScalarIsItsValue) {
  QueryResult r = decodeQueryResponse(
      200, R"({"status":"success","data":{"resultType":"scalar","result":[1700000000,"-3e-2"]}})");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(*r.value, -0.03);
}

TEST(DecodeQueryResponse, ValueSpellings) {
  EXPECT_DOUBLE_EQ(*decodeQueryResponse(200, vector1("0")).value, 0.0);
  EXPECT_DOUBLE_EQ(*decodeQueryResponse(200, vector1("1")).value, 1.0);
  EXPECT_DOUBLE_EQ(*decodeQueryResponse(200, vector1("12345.678")).value, 12345.678);
  EXPECT_DOUBLE_EQ(*decodeQueryResponse(200, vector1("1e+06")).value, 1e6);
  EXPECT_DOUBLE_EQ(*decodeQueryResponse(200, vector1("-0.5")).value, -0.5);
  EXPECT_DOUBLE_EQ(*decodeQueryResponse(200, vector1("+2")).value, 2.0);
}

TEST(DecodeQueryResponse, NaNAndInfinitiesAreErrors) {
  for (const char* v : {"NaN", "+Inf", "-Inf", "Inf"}) {
    QueryResult r = decodeQueryResponse(200, vector1(v));
    EXPECT_FALSE(r.ok()) << v;
    EXPECT_FALSE(r.value.has_value()) << v;
    EXPECT_EQ(r.kind, ErrorKind::kNotFinite) << v;
  }
  EXPECT_NE(decodeQueryResponse(200, vector1("NaN")).error.find("NaN"), std::string::npos);
  EXPECT_NE(decodeQueryResponse(200, vector1("-Inf")).error.find("-Inf"), std::string::npos);
  QueryResult scalarNaN = decodeQueryResponse(
      200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}})");
  EXPECT_EQ(scalarNaN.kind, ErrorKind::kNotFinite);
}

TEST(DecodeQueryResponse, EmptyVectorIsAnError) {
  QueryResult r = decodeQueryResponse(
      200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.kind, ErrorKind::kEmpty);
  EXPECT_NE(r.error.find("empty vector"), std::string::npos) << r.error;
}

// The message goes into a release's status: the count of series only, never
// their labels (another tenant's namespace, pods, label values).
TEST(DecodeQueryResponse, SeveralSeriesAreAnErrorSayingOnlyHowMany) {
  QueryResult r = decodeQueryResponse(200, R"({"status":"success","data":{"resultType":"vector",
    "result":[{"metric":{"__name__":"reqs","track":"canary"},"value":[1,"1"]},
              {"metric":{"track":"stable"},"value":[1,"2"]}]}})");
  EXPECT_EQ(r.kind, ErrorKind::kMultipleSeries);
  EXPECT_NE(r.error.find("returned 2 series"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("exactly one"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("reqs"), std::string::npos) << "no metric name: " << r.error;
  EXPECT_EQ(r.error.find("canary"), std::string::npos) << "no label value: " << r.error;
  EXPECT_EQ(r.error.find("stable"), std::string::npos) << "no label value: " << r.error;
  EXPECT_EQ(r.error.find("track"), std::string::npos) << "no label name: " << r.error;

  std::string many = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (int i = 0; i < 50; ++i) {
    if (i > 0) many += ",";
    many += R"({"metric":{"i":")" + std::to_string(i) + R"("},"value":[1,"1"]})";
  }
  many += "]}}";
  QueryResult m = decodeQueryResponse(200, many);
  EXPECT_EQ(m.kind, ErrorKind::kMultipleSeries);
  EXPECT_NE(m.error.find("returned 50 series"), std::string::npos);
  EXPECT_EQ(m.error.find("\"i\""), std::string::npos) << m.error;
  EXPECT_LT(m.error.size(), 200u);
}

TEST(DecodeQueryResponse, MatrixStringAndHistogramAreUnsupported) {
  QueryResult matrix =
      decodeQueryResponse(200, R"({"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{},"values":[[1,"1"],[2,"2"]]}]}})");
  EXPECT_EQ(matrix.kind, ErrorKind::kUnsupportedType);
  EXPECT_NE(matrix.error.find("range vector"), std::string::npos) << matrix.error;
  QueryResult str = decodeQueryResponse(
      200, R"({"status":"success","data":{"resultType":"string","result":[1,"hello"]}})");
  EXPECT_EQ(str.kind, ErrorKind::kUnsupportedType);
  QueryResult hist =
      decodeQueryResponse(200, R"({"status":"success","data":{"resultType":"vector","result":[
        {"metric":{},"histogram":[1,{"count":"3","sum":"1","buckets":[]}]}]}})");
  EXPECT_EQ(hist.kind, ErrorKind::kUnsupportedType);
  EXPECT_NE(hist.error.find("histogram"), std::string::npos);
}

TEST(DecodeQueryResponse, PrometheusErrorsAreQueryErrors) {
  QueryResult r = decodeQueryResponse(
      400,
      R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"})");
  EXPECT_EQ(r.kind, ErrorKind::kQuery);
  EXPECT_EQ(r.errorType, "bad_data");
  EXPECT_EQ(r.httpStatus, 400);
  EXPECT_NE(r.error.find("bad_data"), std::string::npos);
  EXPECT_NE(r.error.find("HTTP 400"), std::string::npos);
  EXPECT_NE(r.error.find("parse error: unexpected end of input"), std::string::npos);

  for (int code : {422, 503, 500, 200}) {
    QueryResult e = decodeQueryResponse(
        code, R"({"status":"error","errorType":"timeout","error":"query timed out"})");
    EXPECT_EQ(e.kind, ErrorKind::kQuery) << code;
    EXPECT_EQ(e.errorType, "timeout") << code;
  }
  QueryResult bare = decodeQueryResponse(422, R"({"status":"error"})");
  EXPECT_EQ(bare.kind, ErrorKind::kQuery);
  EXPECT_EQ(bare.errorType, "unknown");
  EXPECT_NE(bare.error.find("(no message)"), std::string::npos);
}

TEST(DecodeQueryResponse, HttpErrorsWithoutAnApiAnswer) {
  QueryResult notFound = decodeQueryResponse(404, "404 page not found\n");
  EXPECT_EQ(notFound.kind, ErrorKind::kHttp);
  EXPECT_NE(notFound.error.find("HTTP 404"), std::string::npos);
  // Described, not quoted (ABodyThatIsNotThePrometheusApiIsNeverQuoted).
  EXPECT_NE(notFound.error.find("(19 bytes, not shown)"), std::string::npos) << notFound.error;
  EXPECT_EQ(notFound.error.find("page not found"), std::string::npos) << notFound.error;

  QueryResult proxy = decodeQueryResponse(502, "<html><body>Bad Gateway</body></html>");
  EXPECT_EQ(proxy.kind, ErrorKind::kHttp);
  EXPECT_EQ(proxy.error.find("Bad Gateway"), std::string::npos) << proxy.error;

  QueryResult jsonButNotProm = decodeQueryResponse(503, R"({"message":"overloaded"})");
  EXPECT_EQ(jsonButNotProm.kind, ErrorKind::kHttp);

  // A success body with a failing status is still not a value.
  QueryResult odd = decodeQueryResponse(500, vector1("1"));
  EXPECT_EQ(odd.kind, ErrorKind::kHttp);
  EXPECT_FALSE(odd.value.has_value());

  QueryResult empty = decodeQueryResponse(401, "");
  EXPECT_EQ(empty.kind, ErrorKind::kHttp);
  EXPECT_NE(empty.error.find("(empty body)"), std::string::npos);
}

TEST(DecodeQueryResponse, MalformedBodiesAreBadResponses) {
  const char* bodies[] = {
      "",
      "not json",
      "{",
      "[]",
      "null",
      "42",
      R"("success")",
      R"({})",
      R"({"status":1})",
      R"({"status":"partial"})",
      R"({"status":"success"})",
      R"({"status":"success","data":[]})",
      R"({"status":"success","data":{}})",
      R"({"status":"success","data":{"resultType":7,"result":[]}})",
      R"({"status":"success","data":{"resultType":"vector"}})",
      R"({"status":"success","data":{"resultType":"vector","result":{}}})",
      R"({"status":"success","data":{"resultType":"vector","result":[7]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":"1"}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":["1","2"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"2",3]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"abc"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,""]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1.5x"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1," 1"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"nan"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"+-1"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1e400"]}]}})",
      R"({"status":"success","data":{"resultType":"scalar","result":"1"}})",
      R"({"status":"success","data":{"resultType":"scalar","result":[]}})",
      R"({"status":"success","data":{"resultType":"histogram2","result":[]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]}]})",
      "\xff\xfe{}",
  };
  for (const char* body : bodies) {
    QueryResult r = decodeQueryResponse(200, body);
    EXPECT_EQ(r.kind, ErrorKind::kBadResponse) << body << " -> " << r.error;
    EXPECT_FALSE(r.value.has_value()) << body;
    EXPECT_FALSE(r.error.empty()) << body;
  }
}

TEST(DecodeQueryResponse, MessagesAreBoundedAndPrintable) {
  std::string junk(100000, 'x');
  junk[5] = '\n';
  junk[6] = '\x01';
  junk[7] = '\xc3';
  QueryResult r = decodeQueryResponse(200, junk);
  EXPECT_EQ(r.kind, ErrorKind::kBadResponse);
  EXPECT_LT(r.error.size(), 300u);
  for (char c : r.error) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << static_cast<int>(c);
  }
  EXPECT_NE(r.error.find("not JSON (at byte 1)"), std::string::npos) << r.error;
}

// The address is the release author's: an answer that is not the Prometheus
// API (a cloud metadata endpoint, an internal service) is described, never
// quoted, because the message goes into the release's status.
TEST(DecodeQueryResponse, ABodyThatIsNotThePrometheusApiIsNeverQuoted) {
  const std::string secret = "AKIAEXAMPLESECRETKEY";
  struct Case {
    int http;
    std::string body;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {200, "AccessKeyId=" + secret,
       "response body is not JSON (at byte 1): (32 bytes, not shown)"},
      {403, "<html>" + secret + "</html>", "HTTP 403 without a Prometheus API answer"},
      {500, R"({"key":")" + secret + R"("})", "HTTP 500 without a Prometheus API error: (30 bytes"},
      {200, R"(["AccessKeyId",")" + secret + R"("])", "response is not a JSON object: (38 bytes"},
      {200, R"({"AccessKeyId":")" + secret + R"("})", "response has no \"status\" string"},
  };
  for (const Case& c : cases) {
    QueryResult r = decodeQueryResponse(c.http, c.body);
    EXPECT_FALSE(r.error.empty()) << c.body;
    EXPECT_EQ(r.error.find(secret), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find("AccessKeyId"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find(c.mentions), std::string::npos) << r.error;
  }
}

TEST(DecodeQueryResponse, OversizedBodyIsRefusedUnread) {
  std::string big = vector1("1");
  big.append(kMaxResponseBytes, ' ');
  QueryResult r = decodeQueryResponse(200, big);
  EXPECT_EQ(r.kind, ErrorKind::kBadResponse);
  EXPECT_NE(r.error.find("exceeds"), std::string::npos);
}

TEST(DecodeQueryResponse, WarningsRideAlong) {
  std::string body = vector1("1");
  body.insert(body.size() - 1, R"(,"warnings":["partial data","some other"])");
  QueryResult r = decodeQueryResponse(200, body);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.warnings, (std::vector<std::string>{"partial data", "some other"}));
}

TEST(ParseSampleValue, Forms) {
  EXPECT_DOUBLE_EQ(*parseSampleValue("0.001"), 0.001);
  EXPECT_DOUBLE_EQ(*parseSampleValue("-7"), -7.0);
  EXPECT_TRUE(std::isnan(*parseSampleValue("NaN")));
  EXPECT_TRUE(std::isinf(*parseSampleValue("+Inf")));
  EXPECT_LT(*parseSampleValue("-Inf"), 0);
  for (const char* bad : {"", "+", "-", "++1", "+-1", "1 ", "0x10", "inf", "nan", "1e400", "1,5"}) {
    EXPECT_FALSE(parseSampleValue(bad).has_value()) << bad;
  }
}

TEST(ErrorKindName, StableNames) {
  EXPECT_STREQ(errorKindName(ErrorKind::kEmpty), "empty");
  EXPECT_STREQ(errorKindName(ErrorKind::kMultipleSeries), "multiple-series");
  EXPECT_STREQ(errorKindName(ErrorKind::kUnreachable), "unreachable");
  EXPECT_STREQ(errorKindName(ErrorKind::kNotFinite), "not-finite");
}

}  // namespace
}  // namespace lockstep::prometheus
