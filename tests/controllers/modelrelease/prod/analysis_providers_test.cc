// AnalysisProviders: a provider that exists but is not configured yet (the
// operator just started, its controller has not reconciled it) makes an ask
// wait instead of failing, and the release is woken once the provider is
// configured or disabled. Found by CanaryFaultsTest: the measurement right
// after a restart was an error "AnalysisProvider ... not found".
#include <chrono>
#include <map>
#include <string>
#include <thread>
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

ProviderConfig configFor(const nlohmann::json& extra) {
  nlohmann::json spec = {{"address", "http://127.0.0.1:1"}, {"allowInsecureHttp", true}};
  spec.update(extra);
  auto decoded = api::v1alpha1::decodeAnalysisProviderSpec(spec);
  EXPECT_TRUE(decoded.isOk()) << decoded.status().message();
  ProviderConfig c;
  c.spec = *decoded;
  c.spec.timeoutSeconds = 1;
  return c;
}

// Who may use a provider, checked at every ask against the namespace's labels
// now: a namespace relabelled after its release was admitted is refused from
// then on, naming the provider and the namespace.
TEST(AnalysisProvidersTenancy, ANamespaceTheSelectorDoesNotMatchIsRefusedAtEveryAsk) {
  AnalysisProviders providers;
  std::map<std::string, std::map<std::string, std::string>> labels = {
      {"tenant-a", {{"team", "a"}}}, {"tenant-b", {{"team", "b"}}}};
  providers.setNamespaceLabels(
      [&](const std::string& ns) -> std::optional<std::map<std::string, std::string>> {
        auto it = labels.find(ns);
        if (it == labels.end()) return std::nullopt;
        return it->second;
      });
  ASSERT_TRUE(
      providers
          .configure("team-a", configFor({{"namespaceSelector", {{"matchLabels", {{"team", "a"}}}}},
                                          {"allowFreeFormQueries", true}}))
          .isOk());
  ASSERT_TRUE(providers.configure("closed", configFor({{"allowFreeFormQueries", true}})).isOk());
  MeasurementAsk a = askOf("team-a", "v2");
  a.ns = "tenant-a";
  EXPECT_FALSE(providers.measure(a).has_value()) << "A's namespace: queued";
  MeasurementAsk b = askOf("team-a", "v9");
  b.ns = "tenant-b";
  auto refused = providers.measure(b);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error,
            "AnalysisProvider \"team-a\" does not serve namespace \"tenant-b\": the namespace's "
            "labels do not match its spec.namespaceSelector (team=a)");
  EXPECT_TRUE(refused->refused) << "no retry fixes it: the step fails at once";
  // A's namespace relabelled later: A is refused too.
  labels["tenant-a"] = {{"team", "c"}};
  a.key.index = 1;
  auto later = providers.measure(a);
  ASSERT_TRUE(later.has_value());
  EXPECT_NE(later->error.find("does not serve namespace \"tenant-a\""), std::string::npos)
      << later->error;
  // No selector: no namespace.
  MeasurementAsk c = askOf("closed", "v3");
  c.ns = "tenant-b";
  auto closed = providers.measure(c);
  ASSERT_TRUE(closed.has_value());
  EXPECT_NE(closed->error.find("AnalysisProvider \"closed\" serves no namespace"),
            std::string::npos)
      << closed->error;
}

// Free-form PromQL only where the provider allows it; a template's name and
// arguments are checked at the ask as at apply.
TEST(AnalysisProvidersTenancy, FreeFormQueriesOnlyWhereAllowedAndTemplatesAreChecked) {
  AnalysisProviders providers;
  providers.setNamespaceLabels([](const std::string&) {
    return std::optional<std::map<std::string, std::string>>(std::map<std::string, std::string>{});
  });
  providers.setTemplates([](const std::string& name) -> std::optional<nlohmann::json> {
    if (name != "error-ratio") return std::nullopt;
    return nlohmann::json{{"query", "sum(rate(reqs{ {{selector}} }[{{args.window}}]))"},
                          {"args", {{{"name", "window"}, {"type", "duration"}}}}};
  });
  ASSERT_TRUE(
      providers.configure("main", configFor({{"namespaceSelector", nlohmann::json::object()}}))
          .isOk());
  auto freeForm = providers.measure(askOf("main", "v2"));
  ASSERT_TRUE(freeForm.has_value());
  EXPECT_EQ(freeForm->error,
            "analysis.prometheus.query: AnalysisProvider \"main\" does not run free-form queries "
            "(its spec.allowFreeFormQueries is not true); name an AnalysisTemplate in "
            "analysis.prometheus.template");
  MeasurementAsk t = askOf("main", "v2");
  t.analysis.query.clear();
  t.analysis.templateName = "error-ratio";
  t.analysis.args = {{"window", "5m] or vector(1) or x[5m"}};
  auto badArg = providers.measure(t);
  ASSERT_TRUE(badArg.has_value());
  EXPECT_NE(badArg->error.find("analysis.prometheus.args.window: \"5m] or vector(1) or x[5m\" is "
                               "not a duration"),
            std::string::npos)
      << badArg->error;
  t.analysis.args = {{"window", "5m"}};
  EXPECT_FALSE(providers.measure(t).has_value()) << "a valid template ask is queued";
  t.analysis.templateName = "nope";
  t.key.index = 1;
  auto missing = providers.measure(t);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->error, "AnalysisTemplate \"nope\" not found (kubectl get analysistemplates)");
}

// A release's own address (--allow-release-prometheus-address): its executor
// goes once idle, and what the address answered (here: connection refused)
// is one kind, "analysis provider unreachable".
TEST(AnalysisProvidersAddresses, IdleExecutorsAreEvictedAndErrorsAreOneKind) {
  AnalysisProvidersOptions o;
  o.allowReleaseAddresses = true;
  o.addressIdleSeconds = 0;
  o.addressTimeoutSeconds = 1;
  AnalysisProviders providers(o);
  MeasurementAsk ask = askOf("", "v2");
  ask.analysis.address = "http://127.0.0.1:1";
  std::optional<Measurement> m;
  for (int i = 0; i < 100 && !m; ++i) {
    m = providers.measure(ask);
    if (!m) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->error, "prometheus http://127.0.0.1:1: analysis provider unreachable");
  EXPECT_EQ(providers.addressExecutors(), 1u);
  MeasurementAsk other = ask;
  other.analysis.address = "http://127.0.0.1:2";
  providers.measure(other);
  EXPECT_EQ(providers.addressExecutors(), 1u) << "the idle one was evicted, the new one stays";
}

}  // namespace
}  // namespace lockstep::controllers
