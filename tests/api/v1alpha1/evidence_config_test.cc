// SigningConfig and TrustPolicy specs: decoding with errors that name the
// field, and which keys sign or are trusted for which packages and stages.
#include <gtest/gtest.h>

#include "api/v1alpha1/signing_config.h"
#include "api/v1alpha1/trust_policy.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

const std::string kPem = "-----BEGIN PUBLIC KEY-----\nMFk…\n-----END PUBLIC KEY-----\n";

TEST(SigningConfig, DecodesAndMatchesPackagesByPrefix) {
  auto spec = decodeSigningConfigSpec({{"repositories", json::array({"registry.example/models/"})},
                                       {"keySecretRef", {{"name", "k"}}},
                                       {"registryCredentialsSecretRef", {{"name", "push"}}}});
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  EXPECT_EQ(spec->key.key, "key.pem");
  EXPECT_EQ(spec->credentialsSecret, "push");
  EXPECT_TRUE(signsFor(*spec, "registry.example/models/gpt2"));
  EXPECT_FALSE(signsFor(*spec, "registry.example/other/gpt2"));
  EXPECT_TRUE(signsFor(*decodeSigningConfigSpec({{"keySecretRef", {{"name", "k"}}}}), "any/x"));
}

TEST(SigningConfig, ErrorsNameTheField) {
  EXPECT_EQ(decodeSigningConfigSpec(json::object()).status().message(),
            "spec.keySecretRef: is required");
  EXPECT_EQ(decodeSigningConfigSpec({{"keySecretRef", {{"name", "k"}, {"namespace", "x"}}}})
                .status()
                .message(),
            "spec.keySecretRef.namespace: is not accepted: the Secret is always read in the "
            "operator's namespace");
  EXPECT_EQ(decodeSigningConfigSpec(
                {{"keySecretRef", {{"name", "k"}}}, {"repositories", json::array({""})}})
                .status()
                .message(),
            "spec.repositories[0]: must be a non-empty string");
}

TEST(SigningConfig, ARegistryCaOfItsOwn) {
  const std::string ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto spec =
      decodeSigningConfigSpec({{"keySecretRef", {{"name", "k"}}}, {"registryCABundle", ca}});
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  EXPECT_EQ(spec->registryCaPem, ca);
  EXPECT_TRUE(decodeSigningConfigSpec({{"keySecretRef", {{"name", "k"}}}})->registryCaPem.empty());
  EXPECT_EQ(decodeSigningConfigSpec({{"keySecretRef", {{"name", "k"}}}, {"registryCABundle", "x"}})
                .status()
                .message(),
            "spec.registryCABundle: holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  EXPECT_EQ(decodeSigningConfigSpec({{"keySecretRef", {{"name", "k"}}}, {"registryCABundle", 3}})
                .status()
                .message(),
            "spec.registryCABundle: must be PEM text");
}

json policy() {
  return {{"keys", json::array({{{"name", "prod"}, {"publicKey", kPem}},
                                {{"name", "ci-bot"}, {"publicKey", kPem}}})},
          {"rules",
           json::array({{{"repositories", json::array({"registry.example/models/"})},
                         {"stages", json::array({"eval", "prod"})},
                         {"keys", json::array({"prod"})}},
                        {{"stages", json::array({"ci"})}, {"keys", json::array({"ci-bot"})}}})}};
}

TEST(TrustPolicy, TrustsKeysForTheStagesAndRepositoriesOfTheirRules) {
  auto spec = decodeTrustPolicySpec(policy());
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  using Names = std::set<std::string>;
  EXPECT_EQ(trustedKeyNames(*spec, "registry.example/models/gpt2", "eval"), Names{"prod"});
  EXPECT_EQ(trustedKeyNames(*spec, "registry.example/models/gpt2", "ci"), Names{"ci-bot"});
  EXPECT_EQ(trustedKeyNames(*spec, "registry.example/models/gpt2", ""), (Names{"ci-bot", "prod"}));
  EXPECT_EQ(trustedKeyNames(*spec, "elsewhere/gpt2", "eval"), Names{});
  EXPECT_EQ(trustedKeyNames(*spec, "elsewhere/gpt2", "ci"), Names{"ci-bot"});
}

TEST(TrustPolicy, ErrorsNameTheField) {
  json p = policy();
  p["rules"][1]["keys"] = json::array({"old"});
  EXPECT_EQ(decodeTrustPolicySpec(p).status().message(),
            "spec.rules[1].keys[0]: \"old\" is not a name in spec.keys");
  p = policy();
  p["keys"][1]["name"] = "prod";
  EXPECT_EQ(decodeTrustPolicySpec(p).status().message(),
            "spec.keys[1].name: \"prod\" is listed twice");
  p = policy();
  p["keys"][0]["publicKey"] = "not a key";
  EXPECT_EQ(decodeTrustPolicySpec(p).status().message(),
            "spec.keys[0].publicKey: holds no PEM public key (-----BEGIN PUBLIC KEY-----)");
  EXPECT_EQ(decodeTrustPolicySpec({{"keys", json::array()}}).status().message(),
            "spec.keys: must list at least one {name, publicKey}");
  p = policy();
  p["rules"][0]["stages"] = json::array({1});
  EXPECT_EQ(decodeTrustPolicySpec(p).status().message(),
            "spec.rules[0].stages[0]: must be a non-empty string");
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
