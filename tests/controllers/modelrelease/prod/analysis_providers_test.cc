// AnalysisProviders: a provider that exists but is not configured yet (the
// operator just started, its controller has not reconciled it) makes an ask
// wait instead of failing, and the release is woken once the provider is
// configured or disabled. Found by CanaryFaultsTest: the measurement right
// after a restart was an error "AnalysisProvider ... not found".
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "controllers/modelrelease/prod/analysis_querier.h"

namespace lockstep::controllers {
namespace {

MeasurementAsk askOf(const std::string& provider, const std::string& release) {
  MeasurementAsk ask;
  ask.analysis.provider = provider;
  ask.analysis.query = "vector(1)";
  ask.key = {"uid-" + release, 0, 0};
  ask.atUnix = 100;
  ask.ns = "ml";
  ask.name = release;
  return ask;
}

TEST(AnalysisProviders, AProviderNotConfiguredYetMakesTheAskWaitAndWakesTheRelease) {
  AnalysisProviders providers;
  std::vector<std::string> woken;
  providers.setWakeRelease(
      [&](const std::string& ns, const std::string& name) { woken.push_back(ns + "/" + name); });
  providers.setProviderExists(
      [](const std::string& name) { return name == "platform" || name == "second"; });

  EXPECT_FALSE(providers.measure(askOf("platform", "v2")).has_value()) << "waits, no error";
  EXPECT_FALSE(providers.measure(askOf("second", "v3")).has_value());
  std::optional<Measurement> gone = providers.measure(askOf("gone", "v4"));
  ASSERT_TRUE(gone.has_value()) << "a provider that does not exist is an error at once";
  EXPECT_NE(gone->error.find("AnalysisProvider \"gone\" not found"), std::string::npos)
      << gone->error;
  EXPECT_TRUE(woken.empty());

  // Disabled (its token Secret is missing): the waiting release is woken and
  // its next ask is the error naming why.
  providers.disable("platform", "spec.bearerTokenSecretRef: Secret not found");
  EXPECT_EQ(woken, std::vector<std::string>{"ml/v2"});
  std::optional<Measurement> m = providers.measure(askOf("platform", "v2"));
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->error.find("Secret not found"), std::string::npos) << m->error;

  // Configured: the other waiting release is woken (its ask then goes to the queue).
  ProviderConfig config;
  config.spec.address = "http://127.0.0.1:1";
  config.spec.allowInsecureHttp = true;
  config.spec.timeoutSeconds = 1;
  config.spec.maxConcurrentQueries = 1;
  ASSERT_TRUE(providers.configure("second", config).isOk());
  EXPECT_EQ(woken, (std::vector<std::string>{"ml/v2", "ml/v3"}));
}

}  // namespace
}  // namespace lockstep::controllers
