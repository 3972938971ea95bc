// AnalysisTemplate (the platform's PromQL with typed arguments) and an
// AnalysisProvider's tenancy fields: decoding errors name the field, the
// operator fills the release's own selectors, and a tenant's argument values
// can never change the query's structure (they are quoted PromQL strings, or
// checked against a character set).
#include "api/v1alpha1/analysis_template.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/analysis_provider.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

const json kErrorRatio = json::parse(R"({
  "query": "sum(rate(reqs{ {{selector}}, code=~{{args.codes}} }[{{args.window}}])) / sum(rate(reqs{ {{selector}} }[{{args.window}}])) > {{args.floor}}",
  "args": [{"name": "window", "type": "duration", "default": "1m"},
           {"name": "codes", "default": "5..", "pattern": "[0-9.|]+"},
           {"name": "floor", "type": "number"}]
})");

TemplateContext context() { return {"tenant-b", "gpt2", "gpt2-v2", "canary"}; }

TEST(AnalysisTemplate, TheOperatorFillsTheReleasesOwnSelectors) {
  auto t = decodeAnalysisTemplateSpec(kErrorRatio);
  ASSERT_TRUE(t.isOk()) << t.status().message();
  auto args = checkTemplateArgs(*t, {{"floor", "0"}}, "analysis.prometheus");
  ASSERT_TRUE(args.isOk()) << args.status().message();
  EXPECT_EQ(renderAnalysisTemplate(*t, *args, context()),
            "sum(rate(reqs{ namespace=\"tenant-b\",model=\"gpt2\",release=\"gpt2-v2\","
            "track=\"canary\", code=~\"5..\" }[1m])) / sum(rate(reqs{ "
            "namespace=\"tenant-b\",model=\"gpt2\",release=\"gpt2-v2\",track=\"canary\" }[1m])) > "
            "0");
  // Each placeholder alone, and a literal brace around one ({{{...}}}).
  auto one = decodeAnalysisTemplateSpec(
      json{{"query",
            "x{namespace={{namespace}},pod=~{{ pod }},m={{model}},r={{release}},"
            "t={{track}}} + y{{{selector}}}"}});
  ASSERT_TRUE(one.isOk()) << one.status().message();
  EXPECT_EQ(renderAnalysisTemplate(*one, {}, context()),
            "x{namespace=\"tenant-b\",pod=~\"gpt2-canary-.*\",m=\"gpt2\",r=\"gpt2-v2\","
            "t=\"canary\"} + y{namespace=\"tenant-b\",model=\"gpt2\",release=\"gpt2-v2\","
            "track=\"canary\"}");
}

// Hostile values: a string argument is one quoted PromQL string whatever it
// holds; a duration or number outside its character set is refused.
TEST(AnalysisTemplate, ArgumentValuesCannotInjectPromQL) {
  auto t = decodeAnalysisTemplateSpec(json{
      {"query", "sum(reqs{ {{selector}}, code=~{{args.codes}} }[{{args.window}}]) > {{args.n}}"},
      {"args",
       {{{"name", "codes"}},
        {{"name", "window"}, {"type", "duration"}},
        {{"name", "n"}, {"type", "number"}}}}});
  ASSERT_TRUE(t.isOk()) << t.status().message();
  const std::string hostile = R"(5.."} or vector(1) or up{namespace=~".+", x=")";
  auto args = checkTemplateArgs(*t, {{"codes", hostile}, {"window", "5m"}, {"n", "0.5"}},
                                "spec.stages[1].canary.analysis.prometheus");
  ASSERT_TRUE(args.isOk()) << args.status().message();
  const std::string q = renderAnalysisTemplate(*t, *args, context());
  EXPECT_EQ(q, R"(sum(reqs{ namespace="tenant-b",model="gpt2",release="gpt2-v2",track="canary", )"
               R"(code=~"5..\"} or vector(1) or up{namespace=~\".+\", x=\"" }[5m]) > 0.5)");
  EXPECT_EQ(promqlString("a\\\"b\nc"), R"("a\\\"b\nc")");
  EXPECT_EQ(promqlString("back\\"), R"("back\\")") << "a trailing backslash cannot eat the quote";

  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"window", "5m]) or vector(1"},
                                                        {"window", "5m offset 1h"},
                                                        {"n", "1 or vector(1)"},
                                                        {"n", "0x10"},
                                                        {"codes", std::string("5..\n")}}) {
    std::map<std::string, std::string> given = {{"codes", "5.."}, {"window", "5m"}, {"n", "1"}};
    given[name] = value;
    auto bad = checkTemplateArgs(*t, given, "spec.stages[1].canary.analysis.prometheus");
    ASSERT_FALSE(bad.isOk()) << name << "=" << value;
    EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(bad.status().message().rfind(
                  "spec.stages[1].canary.analysis.prometheus.args." + name + ": ", 0),
              0u)
        << bad.status().message();
  }
  // A value that slips past checking is never spliced in raw.
  const std::string slipped = renderAnalysisTemplate(
      *t, {{"codes", "x"}, {"window", "1m]) or up["}, {"n", "1"}}, context());
  EXPECT_NE(slipped.find("[\"1m]) or up[\"]"), std::string::npos)
      << "quoted, so at worst a syntax error: " << slipped;
}

TEST(AnalysisTemplate, ReleaseArgumentsAreTheDeclaredOnesOfTheirType) {
  auto t = decodeAnalysisTemplateSpec(kErrorRatio);
  ASSERT_TRUE(t.isOk());
  const std::string w = "spec.stages[2].canary.steps[0].analysis.prometheus";
  auto missing = checkTemplateArgs(*t, {}, w);
  EXPECT_EQ(missing.status().message(), w + ".args.floor: is required (a number)");
  auto unknown = checkTemplateArgs(*t, {{"floor", "1"}, {"namespace", "tenant-a"}}, w);
  EXPECT_EQ(unknown.status().message(),
            w + ".args.namespace: is not an argument of the template (it declares: window, "
                "codes, floor)");
  auto pattern = checkTemplateArgs(*t, {{"floor", "1"}, {"codes", ".*"}}, w);
  EXPECT_EQ(pattern.status().message(),
            w + ".args.codes: \".*\" does not match the template's pattern \"[0-9.|]+\"");
  auto ok = checkTemplateArgs(*t, {{"floor", "-1.5e3"}, {"window", "1h30m"}}, w);
  ASSERT_TRUE(ok.isOk()) << ok.status().message();
  EXPECT_EQ(ok->at("codes"), "5..") << "the default";
  auto longValue = checkTemplateArgs(*t, {{"floor", "1"}, {"codes", std::string(300, '5')}}, w);
  EXPECT_NE(longValue.status().message().find("more than 256"), std::string::npos);
}

TEST(AnalysisTemplate, DecodingErrorsNameTheField) {
  auto err = [](const json& spec) { return decodeAnalysisTemplateSpec(spec).status().message(); };
  EXPECT_EQ(err(json::object()), "spec.query: is required (a PromQL query)");
  EXPECT_EQ(err(json{{"query", "sum(up)"}}),
            "spec.query: uses neither {{selector}} nor {{namespace}}: its series would not be "
            "pinned to the measured release's namespace");
  EXPECT_EQ(err(json{{"query", "up{ {{selector}} } > {{args.x}}"}}),
            "spec.query: {{args.x}} names an argument spec.args does not declare");
  EXPECT_EQ(err(json{{"query", "up{ {{selector}}, n={{name}} }"}}),
            "spec.query: {{name}} is not a placeholder (selector, namespace, model, release, "
            "track, pod, args.<name>)");
  EXPECT_EQ(err(json{{"query", "up{ {{selector} }"}}),
            "spec.query: \"{{\" at offset 4 is never closed");
  json args = {{"query", "up{ {{selector}} }[{{args.w}}]"},
               {"args", {{{"name", "w"}, {"type", "time"}}}}};
  EXPECT_EQ(err(args), "spec.args[0].type: \"time\" is not string, duration or number");
  args["args"][0] = {{"name", "w"}, {"type", "duration"}, {"default", "soon"}};
  EXPECT_EQ(err(args),
            "spec.args[0].default: \"soon\" is not a duration (a PromQL duration such as 5m or "
            "1h30m)");
  args["args"][0] = {{"name", "w"}, {"pattern", "("}};
  EXPECT_EQ(err(args), "spec.args[0].pattern: \"(\" is not a regular expression");
  args["args"][0] = {{"name", "1w"}};
  EXPECT_NE(err(args).find("spec.args[0].name: \"1w\" is not a name"), std::string::npos);
  args["args"] = {{{"name", "w"}}, {{"name", "w"}}};
  EXPECT_EQ(err(args), "spec.args[1].name: \"w\" is declared twice");
  args["args"] = {{{"name", "w"}}, {{"name", "unused"}}};
  EXPECT_EQ(err(args),
            "spec.args: argument \"unused\" is declared but spec.query never uses "
            "{{args.unused}}");
}

// Who may use a provider: absent serves no namespace, {} every namespace.
TEST(AnalysisProviderTenancy, NamespaceSelectorDecidesWhoMayUseIt) {
  auto spec = [](json extra) {
    json s = {{"address", "https://prometheus.monitoring:9091"}};
    s.update(extra);
    return decodeAnalysisProviderSpec(s);
  };
  auto none = spec(json::object());
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(providerServes(*none, {{"kubernetes.io/metadata.name", "a"}}));
  EXPECT_FALSE(none->allowFreeFormQueries);
  EXPECT_EQ(providerRefusal("main", *none, "b"),
            "AnalysisProvider \"main\" serves no namespace (it has no spec.namespaceSelector), "
            "so not namespace \"b\"; the platform opens it to namespaces with "
            "spec.namespaceSelector");
  auto every = spec({{"namespaceSelector", json::object()}});
  ASSERT_TRUE(every.isOk());
  EXPECT_TRUE(providerServes(*every, {}));
  json selector = {{"matchLabels", {{"team", "a"}}},
                   {"matchExpressions",
                    json::array({{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"dev"}}}})}};
  auto teamA = spec({{"namespaceSelector", selector}, {"allowFreeFormQueries", true}});
  ASSERT_TRUE(teamA.isOk()) << teamA.status().message();
  EXPECT_TRUE(teamA->allowFreeFormQueries);
  EXPECT_TRUE(providerServes(*teamA, {{"team", "a"}}));
  EXPECT_FALSE(providerServes(*teamA, {{"team", "b"}}));
  EXPECT_FALSE(providerServes(*teamA, {{"team", "a"}, {"tier", "dev"}}));
  EXPECT_EQ(providerRefusal("main", *teamA, "b"),
            "AnalysisProvider \"main\" does not serve namespace \"b\": the namespace's labels do "
            "not match its spec.namespaceSelector (team=a,tier notin (dev))");
  json badSelector = {{"matchExpressions", json::array({{{"key", "team"}, {"operator", "Is"}}})}};
  auto bad = spec({{"namespaceSelector", badSelector}});
  EXPECT_EQ(bad.status().message(),
            "spec.namespaceSelector.matchExpressions[0].operator: \"Is\" is not In, NotIn, Exists "
            "or DoesNotExist");
  EXPECT_EQ(spec({{"namespaceSelector", "team=a"}}).status().message(),
            "spec.namespaceSelector: must be a label selector {matchLabels, matchExpressions}");
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
