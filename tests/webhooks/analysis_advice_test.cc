// The analysis advice (webhooks/admission/analysis_advice.h): the longest
// PromQL range, and one admission warning per analysis that measures before
// its window holds only the canary's samples.
#include "webhooks/admission/analysis_advice.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/webhooks/builders.h"
#include "webhooks/admission/model_release_validator.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;

TEST(AnalysisAdvice, LongestRangeOfRangeSelectorsAndSubqueries) {
  struct Case {
    std::string query;
    std::optional<int64_t> want;
  };
  const std::vector<Case> cases = {
      {"error_rate", std::nullopt},
      {"sum(rate(x[10s]))", 10},
      {"sum(rate(x[5m])) / sum(rate(y[30s]))", 300},
      {"max_over_time(rate(x[1m])[1h30m:1m])", 5400},
      {"rate(x[ 2m ])", 120},
      {"rate(x[1500ms])", 2},                          // rounded up
      {R"(sum(x{code=~"5[0-9]{2}"}))", std::nullopt},  // a regex is no range
      {R"(rate(x{path='/a[1d]'}[20s]))", 20},          // nor a quoted bracket
      {R"(rate(x{a="\"[9h]"}[3s]))", 3},               // escaped quote inside
      {"x[", std::nullopt},                            // unterminated
      {"x[$window]", std::nullopt},                    // not a duration
      {"rate(x[1w]) + rate(y[1d])", 7 * 86400},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(longestRangeSeconds(c.query), c.want) << c.query;
  }
}

json analysis(const std::string& query, const char* initialDelay) {
  json p = {{"provider", "prometheus-main"}, {"query", query}, {"max", 0.1}};
  if (initialDelay != nullptr) p["initialDelay"] = initialDelay;
  return {{"prometheus", p}};
}

TEST(AnalysisAdvice, WarnsPerAnalysisWhoseDelayIsShorterThanItsWindow) {
  json spec = {
      {"stages",
       json::array(
           {{{"name", "eval"}, {"gate", json::object()}},
            {{"name", "prod"},
             {"canary",
              {{"analysis", analysis("sum(rate(x[1m]))", nullptr)},  // default of every step
               {"steps",
                json::array({{{"weight", 25}},
                             {{"weight", 50}, {"analysis", analysis("sum(rate(x[1m]))", "70s")}},
                             {{"weight", 100}, {"analysis", analysis("sum(rate(x[5m]))", "1m")}},
                             {{"weight", 100}, {"analysis", analysis("up", "0s")}}})}}}}})}};
  std::vector<std::string> w;
  adviseAnalyses(&spec, w);
  ASSERT_EQ(w.size(), 2u) << json(w).dump(2);
  EXPECT_NE(w[0].find("spec.stages[1].canary.analysis.prometheus: initialDelay 0s is shorter "
                      "than the query's range window 60s"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("at least 60s plus one scrape interval"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("spec.stages[1].canary.steps[2].analysis.prometheus: initialDelay 60s "
                      "is shorter than the query's range window 300s"),
            std::string::npos)
      << w[1];
}

TEST(AnalysisAdvice, TheValidatorAdmitsWithTheWarning) {
  json steps =
      json::array({{{"weight", 50}, {"analysis", analysis("sum(rate(x[10s]))", nullptr)}}});
  json mr = testing::ReleaseBuilder::good().json();
  mr["spec"]["stages"][2]["canary"]["steps"] = steps;
  ModelReleaseReview r;
  r.ns = "ml";
  r.release = &mr;
  r.runtimeEnv = RuntimeEnvView{"torch", "ml", testing::kEnvHash, testing::kEnvImage, true};
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(v.decision, Decision::kWarned) << v.message;  // admitted, with the warning
  ASSERT_EQ(v.warnings.size(), 1u) << json(v.warnings).dump(2);
  EXPECT_NE(v.warnings[0].find("steps[0].analysis.prometheus: initialDelay 0s"), std::string::npos)
      << v.warnings[0];
  mr["spec"]["stages"][2]["canary"]["steps"][0]["analysis"]["prometheus"]["initialDelay"] = "12s";
  Verdict fixed = validateModelRelease(r);
  EXPECT_EQ(fixed.decision, Decision::kAllowed) << fixed.message;
  EXPECT_TRUE(fixed.warnings.empty()) << json(fixed.warnings).dump(2);
}

// Where the queries go is the platform's: a release naming its own address is
// refused (naming the field) unless the operator runs with
// --allow-release-prometheus-address; naming a provider is fine.
TEST(AnalysisSources, AReleaseAddressIsRefusedNamingTheFieldUnlessThePlatformAllowsIt) {
  json own = analysis("up", "0s");
  own["prometheus"].erase("provider");
  own["prometheus"]["address"] = "http://169.254.169.254";
  json mr = testing::ReleaseBuilder::good().json();
  mr["spec"]["stages"][2]["canary"]["steps"] = json::array(
      {{{"weight", 50}, {"analysis", analysis("up", "0s")}}, {{"weight", 100}, {"analysis", own}}});
  ModelReleaseReview r;
  r.ns = "ml";
  r.release = &mr;
  r.runtimeEnv = RuntimeEnvView{"torch", "ml", testing::kEnvHash, testing::kEnvImage, true};
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("spec.stages[2].canary.steps[1].analysis.prometheus.address "
                           "\"http://169.254.169.254\": a release may not choose the Prometheus "
                           "address"),
            std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("name an AnalysisProvider in "
                           "spec.stages[2].canary.steps[1].analysis.prometheus.provider"),
            std::string::npos)
      << v.message;
  EXPECT_EQ(v.message.find("steps[0]"), std::string::npos) << v.message;  // a provider: fine
  r.allowPrometheusAddress = true;
  Verdict allowed = validateModelRelease(r);
  EXPECT_NE(allowed.decision, Decision::kDenied) << allowed.message;
}

}  // namespace
}  // namespace lockstep::webhooks
