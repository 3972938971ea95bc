// AnalysisProvider: its spec's decoder (every error names the field) and its
// status (Ready from the CA, the token and the health-check query).
#include "controllers/analysisprovider/provider_status.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/analysis_provider.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

std::string specError(const json& spec) {
  auto s = v1::decodeAnalysisProviderSpec(spec);
  return s.isOk() ? "" : s.status().message();
}

TEST(AnalysisProviderSpec, DecodesWithDefaults) {
  auto s = v1::decodeAnalysisProviderSpec({{"address", "https://prometheus.monitoring.svc:9091"},
                                           {"caConfigMapRef", {{"name", "prom-ca"}}},
                                           {"bearerTokenSecretRef", {{"name", "prom-token"}}}});
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ(s->timeoutSeconds, 10);
  EXPECT_EQ(s->maxConcurrentQueries, 4);
  EXPECT_EQ(s->caConfigMapRef->key, "ca.crt");
  EXPECT_EQ(s->bearerTokenSecretRef->key, "token");
  auto t = v1::decodeAnalysisProviderSpec({{"address", "http://127.0.0.1:9090"},
                                           {"allowInsecureHttp", true},
                                           {"timeout", "3s"},
                                           {"maxConcurrentQueries", 1}});
  ASSERT_TRUE(t.isOk()) << t.status().message();
  EXPECT_EQ(t->timeoutSeconds, 3);
  EXPECT_EQ(t->maxConcurrentQueries, 1);
}

TEST(AnalysisProviderSpec, EveryErrorNamesTheField) {
  EXPECT_EQ(specError(json::object()), "spec.address: is required");
  EXPECT_NE(specError({{"address", "http://prom:9090"}})
                .find("spec.address: \"http://prom:9090\" is plain http"),
            std::string::npos);
  EXPECT_NE(specError({{"address", "ftp://prom"}}).find("spec.address: \"ftp://prom\" must start"),
            std::string::npos);
  EXPECT_EQ(specError({{"address", "https://p"}, {"timeout", "0s"}}),
            "spec.timeout: \"0s\" is not a duration of at least 1s");
  EXPECT_EQ(specError({{"address", "https://p"}, {"timeout", "5m"}}),
            "spec.timeout: \"5m\" is more than 120s");
  EXPECT_EQ(specError({{"address", "https://p"}, {"maxConcurrentQueries", 0}}),
            "spec.maxConcurrentQueries: must be between 1 and 64, got 0");
  EXPECT_EQ(specError({{"address", "https://p"}, {"bearerTokenSecretRef", {{"key", "t"}}}}),
            "spec.bearerTokenSecretRef.name: is required");
  EXPECT_EQ(specError({{"address", "https://p"},
                       {"bearerTokenSecretRef", {{"name", "t"}, {"namespace", "team-a"}}}}),
            "spec.bearerTokenSecretRef.namespace: is not accepted: the object is always read in "
            "the operator's namespace");
  EXPECT_EQ(specError({{"address", "http://p"},
                       {"allowInsecureHttp", true},
                       {"bearerTokenSecretRef", {{"name", "t"}}}}),
            "spec.bearerTokenSecretRef: a bearer token is only sent over https (it would cross "
            "the network in clear text); use an https address");
  EXPECT_EQ(specError({{"address", "https://p"}, {"caBundle", "not pem"}}),
            "spec.caBundle: holds no PEM certificate");
}

ProviderObserved observed() {
  ProviderObserved o;
  o.generation = 2;
  o.now = "2026-12-01T18:00:00Z";
  return o;
}

json ready(const json& status) {
  for (const json& c : status["conditions"])
    if (c["type"] == "Ready") return c;
  return json();
}

TEST(AnalysisProviderStatus, ReadyFollowsTheHealthCheck) {
  ProviderObserved o = observed();
  json first = providerStatus(o);
  EXPECT_EQ(ready(first)["status"], "Unknown");
  EXPECT_EQ(ready(first)["reason"], "Probing");
  o.status = first;
  QueryAnswer ok;
  ok.value = 1;
  o.probe = ok;
  o.stats = QueryStats{0, 0, 5, 1, 0, 0};
  json answered = providerStatus(o);
  EXPECT_EQ(ready(answered)["status"], "True");
  EXPECT_EQ(ready(answered)["reason"], "Answering");
  EXPECT_EQ(answered["queries"]["succeeded"], 5);
  EXPECT_EQ(answered["observedGeneration"], 2);
  // A failing TLS handshake (the client's message) shows in Ready.
  QueryAnswer tls;
  tls.error =
      "prometheus https://p:9091 unreachable: SSL handshake failed (is the server's "
      "certificate for this host name, and signed by the provider's CA bundle?)";
  o.status = answered;
  o.probe = tls;
  json failing = providerStatus(o);
  EXPECT_EQ(ready(failing)["status"], "False");
  EXPECT_EQ(ready(failing)["reason"], "QueryFailed");
  EXPECT_NE(ready(failing)["message"].get<std::string>().find("SSL handshake failed"),
            std::string::npos);
  // No answer yet this round: what the last probe said stays.
  o.status = failing;
  o.probe.reset();
  EXPECT_EQ(ready(providerStatus(o))["reason"], "QueryFailed");
}

TEST(AnalysisProviderStatus, AMissingTokenOrCaIsNamedNeverItsValue) {
  ProviderObserved o = observed();
  o.token = Status(Code::kNotFound,
                   "spec.bearerTokenSecretRef: Secret lockstep-system/prom-token has no key "
                   "\"token\"");
  json s = providerStatus(o);
  EXPECT_EQ(ready(s)["reason"], "TokenUnavailable");
  EXPECT_EQ(ready(s)["message"],
            "spec.bearerTokenSecretRef: Secret lockstep-system/prom-token has no key \"token\"");
  o = observed();
  o.ca = Status(Code::kNotFound, "spec.caConfigMapRef: ConfigMap lockstep-system/ca not found");
  EXPECT_EQ(ready(providerStatus(o))["reason"], "CAUnavailable");
  o = observed();
  o.spec = Status(Code::kInvalidArgument, "spec.timeout: \"0s\" is not a duration of at least 1s");
  EXPECT_EQ(ready(providerStatus(o))["reason"], "InvalidSpec");
}

}  // namespace
}  // namespace lockstep::controllers
