// ModelRollout spec: decoding with errors that name the field, the strategy's
// IntOrString fields, and waves resolved to cluster names over an inventory.
#include <gtest/gtest.h>

#include "api/v1alpha1/model_rollout.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kPackage = "registry.example/models/llama@" + kDigest;

json spec() {
  return json::parse(R"({
    "package": ")" + kPackage +
                     R"(",
    "model": "llama",
    "waves": [
      {"name": "first", "clusters": ["b"]},
      {"name": "rest", "clusters": ["c", "d"]}
    ],
    "trustPolicy": "fleet"
  })");
}

std::string errorOf(const json& s) {
  auto r = decodeModelRolloutSpec(s);
  return r.isOk() ? "(decoded)" : r.status().message();
}

TEST(ModelRollout, DecodesTheExample) {
  json s = spec();
  s["waves"][1]["clusterSelector"] = {{"matchLabels", {{"region", "eu"}}}};
  s["inventory"] = json::array({{{"name", "b"}, {"labels", {{"region", "eu"}}}}});
  s["strategy"] = {{"maxConcurrency", 2},
                   {"maxFailures", "20%"},
                   {"minSuccessTime", "10m"},
                   {"progressDeadline", "30m"}};
  s["signingConfig"] = "hub";
  auto r = decodeModelRolloutSpec(s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->package, kPackage);
  EXPECT_EQ(r->packageRef.repository(), "registry.example/models/llama");
  EXPECT_EQ(r->packageRef.digest, kDigest);
  EXPECT_EQ(r->model, "llama");
  ASSERT_EQ(r->waves.size(), 2U);
  EXPECT_EQ(r->waves[0].name, "first");
  EXPECT_EQ(r->waves[0].clusters, std::vector<std::string>{"b"});
  EXPECT_FALSE(r->waves[0].clusterSelector.has_value());
  ASSERT_TRUE(r->waves[1].clusterSelector.has_value());
  EXPECT_EQ(r->waves[1].clusterSelector->matchLabels.at("region"), "eu");
  ASSERT_EQ(r->inventory.size(), 1U);
  EXPECT_EQ(r->inventory[0].labels.at("region"), "eu");
  ASSERT_TRUE(r->strategy.maxConcurrency.has_value());
  EXPECT_EQ(r->strategy.maxConcurrency->value, 2);
  EXPECT_FALSE(r->strategy.maxConcurrency->percent);
  EXPECT_EQ(r->strategy.maxFailures.value, 20);
  EXPECT_TRUE(r->strategy.maxFailures.percent);
  EXPECT_EQ(r->strategy.minSuccessTimeSeconds, 600);
  EXPECT_EQ(r->strategy.progressDeadlineSeconds, 1800);
  EXPECT_EQ(r->signingConfig, "hub");
  EXPECT_EQ(r->trustPolicy, "fleet");
}

TEST(ModelRollout, StrategyDefaultsAreOcms) {
  auto r = decodeModelRolloutSpec(spec());
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_FALSE(r->strategy.maxConcurrency.has_value());
  EXPECT_EQ(r->strategy.maxFailures.value, 0);
  EXPECT_EQ(r->strategy.minSuccessTimeSeconds, 0);
  EXPECT_FALSE(r->strategy.progressDeadlineSeconds.has_value());
  // OCM writes "None" for no deadline and "0" for no soak.
  json s = spec();
  s["strategy"] = {{"progressDeadline", "None"}, {"minSuccessTime", "0"}, {"maxFailures", "3"}};
  r = decodeModelRolloutSpec(s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_FALSE(r->strategy.progressDeadlineSeconds.has_value());
  EXPECT_EQ(r->strategy.minSuccessTimeSeconds, 0);
  EXPECT_EQ(r->strategy.maxFailures.value, 3);
  EXPECT_FALSE(r->strategy.maxFailures.percent);
}

TEST(ModelRollout, ErrorsNameTheField) {
  json s = spec();
  s["waves"][1]["clusters"] = json::array({"b"});
  EXPECT_EQ(errorOf(s),
            "spec.waves[1].clusters[0]: \"b\" is already in spec.waves[0] (first): a cluster "
            "belongs to one wave");
  s = spec();
  s["waves"][1]["clusters"] = json::array({"c", "c"});
  EXPECT_EQ(errorOf(s), "spec.waves[1].clusters[1]: \"c\" is listed twice in this wave");
  s = spec();
  s["waves"][1]["clusters"][0] = "";
  EXPECT_EQ(errorOf(s), "spec.waves[1].clusters[0]: must be a non-empty cluster name");
  s = spec();
  s["strategy"] = {{"maxFailures", "x%"}};
  EXPECT_EQ(errorOf(s),
            "spec.strategy.maxFailures: \"x%\" is not an integer or a percentage (\"20%\")");
  s["strategy"] = {{"maxFailures", 1.5}};
  EXPECT_EQ(errorOf(s),
            "spec.strategy.maxFailures: 1.5 is not an integer or a percentage (\"20%\")");
  s["strategy"] = {{"maxFailures", -1}};
  EXPECT_EQ(errorOf(s), "spec.strategy.maxFailures: -1 is less than 0");
  s["strategy"] = {{"maxConcurrency", "150%"}};
  EXPECT_EQ(errorOf(s), "spec.strategy.maxConcurrency: \"150%\" is more than 100%");
  s["strategy"] = {{"maxConcurrency", 0}};
  EXPECT_EQ(errorOf(s), "spec.strategy.maxConcurrency: 0 is less than 1");
  s["strategy"] = {{"maxConcurrency", "0%"}};
  EXPECT_EQ(errorOf(s), "spec.strategy.maxConcurrency: \"0%\" is less than 1%");
  s["strategy"] = {{"minSuccessTime", "10 minutes"}};
  EXPECT_EQ(errorOf(s),
            "spec.strategy.minSuccessTime: \"10 minutes\" is not a duration (\"10m\", \"1h30m\")");
  s["strategy"] = {{"progressDeadline", "0s"}};
  EXPECT_EQ(errorOf(s),
            "spec.strategy.progressDeadline: must be longer than 0s (omit it, or write None, "
            "for no deadline)");
  s = spec();
  s["package"] = "registry.example/models/llama:v7";
  EXPECT_EQ(errorOf(s),
            "spec.package: \"registry.example/models/llama:v7\" is not pinned by digest "
            "(@sha256:<64 hex>)");
  s.erase("package");
  EXPECT_EQ(errorOf(s), "spec.package: is required");
  s = spec();
  s.erase("trustPolicy");
  EXPECT_EQ(errorOf(s), "spec.trustPolicy: is required");
  s = spec();
  s["model"] = "";
  EXPECT_EQ(errorOf(s), "spec.model: must be a non-empty string");
  s = spec();
  s["waves"] = json::array();
  EXPECT_EQ(errorOf(s),
            "spec.waves: must list at least one wave {name, clusters, clusterSelector}");
  s = spec();
  s["waves"][1]["name"] = "first";
  EXPECT_EQ(errorOf(s), "spec.waves[1].name: \"first\" is already the name of spec.waves[0]");
  s = spec();
  s["waves"][0]["clusters"] = json::array();
  EXPECT_EQ(errorOf(s), "spec.waves[0]: names no clusters and has no clusterSelector");
  s = spec();
  s["waves"][0]["clusterSelector"] = {
      {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "Gt"}}})}};
  EXPECT_EQ(errorOf(s),
            "spec.waves[0].clusterSelector.matchExpressions[0].operator: \"Gt\" is not In, NotIn, "
            "Exists or DoesNotExist");
  s["waves"][0]["clusterSelector"] = {
      {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "In"}}})}};
  EXPECT_EQ(errorOf(s),
            "spec.waves[0].clusterSelector.matchExpressions[0].values: must list at least one "
            "value for operator In");
  s["waves"][0]["clusterSelector"] = {{"matchLabels", {{"region", 1}}}};
  EXPECT_EQ(errorOf(s), "spec.waves[0].clusterSelector.matchLabels.region: must be a string");
  s = spec();
  s["inventory"] = json::array({{{"name", "b"}}, {{"name", "b"}}});
  EXPECT_EQ(errorOf(s), "spec.inventory[1].name: \"b\" is listed twice");
}

TEST(ModelRollout, SelectorsMatchAsKubernetesLabelSelectors) {
  ClusterSelector s;
  EXPECT_TRUE(selectorMatches(s, {})) << "an empty selector matches every cluster";
  s.matchLabels = {{"region", "eu"}};
  EXPECT_TRUE(selectorMatches(s, {{"region", "eu"}, {"gpu", "h100"}}));
  EXPECT_FALSE(selectorMatches(s, {{"region", "us"}}));
  EXPECT_FALSE(selectorMatches(s, {}));
  s.matchExpressions = {{"gpu", "In", {"h100", "a100"}}, {"canary", "DoesNotExist", {}}};
  EXPECT_TRUE(selectorMatches(s, {{"region", "eu"}, {"gpu", "a100"}}));
  EXPECT_FALSE(selectorMatches(s, {{"region", "eu"}, {"gpu", "l4"}}));
  EXPECT_FALSE(selectorMatches(s, {{"region", "eu"}, {"gpu", "a100"}, {"canary", "no"}}));
  ClusterSelector notIn{{}, {{"region", "NotIn", {"us"}}, {"gpu", "Exists", {}}}};
  EXPECT_TRUE(selectorMatches(notIn, {{"gpu", "l4"}}));
  EXPECT_FALSE(selectorMatches(notIn, {{"gpu", "l4"}, {"region", "us"}}));
  EXPECT_FALSE(selectorMatches(notIn, {{"region", "eu"}}));
}

TEST(ModelRollout, ResolvesWavesInOrderWithoutRepeatingAClaimedCluster) {
  json s = spec();
  // first: b by name, then the eu clusters by selector (sorted, b not repeated);
  // rest: c and d by name — d already claimed by first's selector — then everything.
  s["waves"][0]["clusterSelector"] = {{"matchLabels", {{"region", "eu"}}}};
  s["waves"][1]["clusterSelector"] = json::object();
  auto r = decodeModelRolloutSpec(s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  std::vector<InventoryCluster> inventory = {{"z", {{"region", "eu"}}},
                                             {"d", {{"region", "eu"}}},
                                             {"b", {{"region", "eu"}}},
                                             {"e", {{"region", "us"}}},
                                             {"a", {}}};
  auto waves = resolveWaves(*r, inventory);
  ASSERT_EQ(waves.size(), 2U);
  EXPECT_EQ(waves[0].name, "first");
  EXPECT_EQ(waves[0].clusters, (std::vector<std::string>{"b", "d", "z"}));
  EXPECT_EQ(waves[1].name, "rest");
  EXPECT_EQ(waves[1].clusters, (std::vector<std::string>{"c", "a", "e"}));
}

TEST(ModelRollout, ANamedClusterNeedNotBeInTheInventoryAndASelectorMayMatchNothing) {
  json s = spec();
  s["waves"].push_back(
      {{"name", "gpu"}, {"clusterSelector", {{"matchLabels", {{"gpu", "b200"}}}}}});
  auto r = decodeModelRolloutSpec(s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  auto waves = resolveWaves(*r, {});
  ASSERT_EQ(waves.size(), 3U);
  EXPECT_EQ(waves[0].clusters, std::vector<std::string>{"b"});
  EXPECT_EQ(waves[1].clusters, (std::vector<std::string>{"c", "d"}));
  EXPECT_TRUE(waves[2].clusters.empty());
}

TEST(ModelRollout, InventoryIsTheClusterProfilesWhenThereAreAny) {
  json s = spec();
  s["inventory"] = json::array({{{"name", "static"}}});
  auto r = decodeModelRolloutSpec(s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(rolloutInventory(*r, {}).at(0).name, "static");
  auto inv = rolloutInventory(*r, {{"profile", {}}});
  ASSERT_EQ(inv.size(), 1U);
  EXPECT_EQ(inv[0].name, "profile");
}

TEST(ModelRollout, ClusterProfilesGiveNamesAndLabelsOnceSortedByName) {
  const std::vector<json> profiles = {
      {{"metadata", {{"name", "west"}, {"namespace", "fleet"}, {"labels", {{"region", "us"}}}}}},
      {{"metadata", {{"name", "east"}, {"namespace", "fleet"}, {"labels", {{"region", "eu"}}}}}},
      {{"metadata", {{"name", "west"}, {"namespace", "other"}}}},
      {{"metadata", {{"namespace", "fleet"}}}}};
  auto inv = clusterProfileInventory(profiles);
  ASSERT_EQ(inv.size(), 2U);
  EXPECT_EQ(inv[0].name, "east");
  EXPECT_EQ(inv[0].labels.at("region"), "eu");
  EXPECT_EQ(inv[1].name, "west");
  EXPECT_EQ(inv[1].labels.at("region"), "us") << "the first of a name counts";
  EXPECT_TRUE(clusterProfileInventory({}).empty());
}

TEST(ModelRollout, ConcurrencyRoundsUpAndFailuresRoundDown) {
  RolloutStrategy s;
  EXPECT_EQ(maxConcurrencyFor(s, 5), 5) << "unset: the whole wave";
  EXPECT_EQ(maxConcurrencyFor(s, 0), 1);
  s.maxConcurrency = IntOrPercent{50, true};
  EXPECT_EQ(maxConcurrencyFor(s, 5), 3);
  EXPECT_EQ(maxConcurrencyFor(s, 4), 2);
  s.maxConcurrency = IntOrPercent{1, true};
  EXPECT_EQ(maxConcurrencyFor(s, 5), 1) << "at least 1";
  s.maxConcurrency = IntOrPercent{2, false};
  EXPECT_EQ(maxConcurrencyFor(s, 5), 2);
  EXPECT_EQ(maxFailuresFor(s, 10), 0) << "default: no failure tolerated";
  s.maxFailures = IntOrPercent{20, true};
  EXPECT_EQ(maxFailuresFor(s, 9), 1);
  EXPECT_EQ(maxFailuresFor(s, 10), 2);
  EXPECT_EQ(maxFailuresFor(s, 4), 0);
  s.maxFailures = IntOrPercent{1, false};
  EXPECT_EQ(maxFailuresFor(s, 4), 1);
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
