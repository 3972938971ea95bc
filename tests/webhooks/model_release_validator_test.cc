#include "webhooks/admission/model_release_validator.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/webhooks/builders.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::kEnvHash;
using testing::kEnvImage;
using testing::ReleaseBuilder;
using testing::sha;

RuntimeEnvView torch() { return {"torch", "ml", kEnvHash, kEnvImage, true}; }

struct Case {
  std::string name;
  Operation op = Operation::kCreate;
  json release;
  json oldRelease = nullptr;
  std::optional<RuntimeEnvView> env = torch();
  Decision want = Decision::kAllowed;
  std::vector<std::string> mentions = {};
  std::string subResource = "";
};

std::vector<Case> cases() {
  RuntimeEnvView notReady = torch();
  notReady.ready = false;
  RuntimeEnvView other = torch();
  other.closureHash = sha('9');
  auto good = [] { return ReleaseBuilder::good(); };
  return {
      {"valid release admitted", Operation::kCreate, good().json()},
      {"package by tag denied",
       Operation::kCreate,
       good().set("package", "registry.example/models/gpt2:v7").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.package: \"registry.example/models/gpt2:v7\" must be a reference by digest"}},
      {"package with tag and digest denied",
       Operation::kCreate,
       good().set("package", "registry.example/models/gpt2:v7@" + sha('b')).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.package:", "without a tag"}},
      {"package with short digest denied",
       Operation::kCreate,
       good().set("package", "registry.example/models/gpt2@sha256:ab12").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.package:", "not a valid OCI reference"}},
      {"package missing denied",
       Operation::kCreate,
       good().erase("package").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.package: required"}},
      {"package of wrong type denied",
       Operation::kCreate,
       good().set("package", 42).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.package: required"}},
      {"closure hash malformed denied",
       Operation::kCreate,
       good().set("closureHash", "9c0e").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.closureHash: \"9c0e\" is not sha256:<64 lowercase hex>"}},
      {"closure hash uppercase denied",
       Operation::kCreate,
       good().set("closureHash", "sha256:" + std::string(64, 'C')).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.closureHash:"}},
      {"runtimeEnvRef missing denied",
       Operation::kCreate,
       good().erase("runtimeEnvRef").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.runtimeEnvRef.name: required"}},
      {"no stages denied",
       Operation::kCreate,
       ReleaseBuilder().json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages: at least one stage is required"}},
      {"gates only admitted", Operation::kCreate, ReleaseBuilder().gate("eval").gate("ci").json()},
      {"custom names admitted", Operation::kCreate,
       ReleaseBuilder().gate("smoke").gate("bench-a100").serving("serve").json()},
      {"duplicate stage name denied",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").gate("eval").serving("prod").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[1].name: duplicate stage name \"eval\" (first at spec.stages[0].name)"}},
      {"gate after prod denied",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").serving("prod").gate("ci").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[1]: the serving stage \"prod\" must be the last stage"}},
      {"two serving stages denied",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").serving("prod").serving("prod2").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[2]: only one serving stage is allowed (another at spec.stages[1])"}},
      {"prod name on a gate denied",
       Operation::kCreate,
       ReleaseBuilder().gate("prod").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0].name: \"prod\" is reserved for the serving stage"}},
      {"eval name on serving denied",
       Operation::kCreate,
       ReleaseBuilder().serving("eval").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0].name: \"eval\" is reserved for a gate stage"}},
      {"stage with both gate and serving denied",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage({{"name", "x"}, {"gate", json::object()}, {"serving", json::object()}})
           .json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0]: must have exactly one of gate"}},
      {"stage with neither denied",
       Operation::kCreate,
       ReleaseBuilder().rawStage({{"name", "x"}}).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0]: must have exactly one of gate"}},
      {"stage name not a DNS label denied",
       Operation::kCreate,
       ReleaseBuilder().gate("Eval_1").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0].name: \"Eval_1\" must be a DNS label"}},
      {"stage name missing denied",
       Operation::kCreate,
       ReleaseBuilder().rawStage({{"gate", json::object()}}).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0].name: required"}},
      {"stage not an object denied",
       Operation::kCreate,
       ReleaseBuilder().rawStage("eval").json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0]: must be an object"}},
      {"canary steps increasing admitted", Operation::kCreate,
       ReleaseBuilder()
           .gate("eval")
           .serving("prod", json::array({{{"weight", 10}}, {{"weight", 50}}, {{"weight", 100}}}))
           .json()},
      {"canary weights decreasing denied",
       Operation::kCreate,
       ReleaseBuilder().serving("prod", json::array({{{"weight", 50}}, {{"weight", 10}}})).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0].canary.steps[1].weight: 10 must be greater than the previous step's 50"}},
      {"canary weight out of range denied",
       Operation::kCreate,
       ReleaseBuilder().serving("prod", json::array({{{"weight", 150}}})).json(),
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec.stages[0].canary.steps[0].weight: 150 is not in 1..100"}},
      {"RuntimeEnv missing warns",
       Operation::kCreate,
       good().json(),
       nullptr,
       std::nullopt,
       Decision::kWarned,
       {"RuntimeEnv \"ml/torch\" does not exist yet"}},
      {"RuntimeEnv not Ready warns",
       Operation::kCreate,
       good().json(),
       nullptr,
       notReady,
       Decision::kWarned,
       {"is not Ready yet"}},
      {"RuntimeEnv hash differs denied",
       Operation::kCreate,
       good().json(),
       nullptr,
       other,
       Decision::kDenied,
       {"spec.closureHash: \"" + kEnvHash +
        "\" differs from RuntimeEnv \"ml/torch\" status.closureHash \"" + sha('9') + "\""}},
      {"RuntimeEnv hash differs on update only warns (stale release)",
       Operation::kUpdate,
       good().json(),
       good().json(),
       other,
       Decision::kWarned,
       {"release is stale"}},
      {"package changed on update denied",
       Operation::kUpdate,
       good().set("package", "registry.example/models/gpt2@" + sha('d')).json(),
       good().json(),
       torch(),
       Decision::kDenied,
       {"spec.package: field is immutable (was \"registry.example/models/gpt2@" + sha('b') + "\""}},
      {"runtimeEnvRef changed on update denied",
       Operation::kUpdate,
       good().set("runtimeEnvRef", {{"name", "other"}}).json(),
       good().json(),
       std::nullopt,
       Decision::kDenied,
       {"spec.runtimeEnvRef.name: field is immutable (was \"torch\", now \"other\")"}},
      {"closureHash changed on update denied",
       Operation::kUpdate,
       good().set("closureHash", sha('d')).json(),
       good().json(),
       torch(),
       Decision::kDenied,
       {"spec.closureHash: field is immutable"}},
      {"unchanged invalid stages do not block metadata updates", Operation::kUpdate,
       ReleaseBuilder().gate("eval").gate("eval").json(),
       ReleaseBuilder().gate("eval").gate("eval").json()},
      {"changed stages re-validated on update",
       Operation::kUpdate,
       ReleaseBuilder().gate("eval").gate("eval").json(),
       ReleaseBuilder().gate("eval").json(),
       torch(),
       Decision::kDenied,
       {"duplicate stage name"}},
      {"status subresource not checked",
       Operation::kUpdate,
       ReleaseBuilder().json(),
       ReleaseBuilder().json(),
       torch(),
       Decision::kAllowed,
       {},
       "status"},
      {"delete not checked", Operation::kDelete, ReleaseBuilder().json()},
      {"spec missing denied",
       Operation::kCreate,
       json{{"metadata", {{"name", "x"}}}},
       nullptr,
       torch(),
       Decision::kDenied,
       {"spec: required", "ModelRelease \"ml/x\""}},
  };
}

class ModelReleaseValidatorTest : public ::testing::TestWithParam<Case> {};

TEST_P(ModelReleaseValidatorTest, Decides) {
  const Case& c = GetParam();
  ModelReleaseReview r;
  r.operation = c.op;
  r.ns = "ml";
  r.subResource = c.subResource;
  r.release = &c.release;
  r.oldRelease = c.oldRelease.is_null() ? nullptr : &c.oldRelease;
  r.runtimeEnv = c.env;
  Verdict v = validateModelRelease(r);
  std::string all = v.message;
  for (const auto& w : v.warnings) all += "\n" + w;
  EXPECT_EQ(decisionName(v.decision), decisionName(c.want)) << all;
  for (const auto& m : c.mentions)
    EXPECT_NE(all.find(m), std::string::npos) << "want: " << m << "\ngot: " << all;
  if (c.want == Decision::kDenied) {
    EXPECT_EQ(v.code, 422);
    EXPECT_EQ(v.reason, "Invalid");
  }
  if (c.want == Decision::kAllowed) EXPECT_TRUE(v.violations.empty() && v.warnings.empty()) << all;
}

INSTANTIATE_TEST_SUITE_P(Table, ModelReleaseValidatorTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n;
                           for (char ch : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(ModelReleaseValidator, RuntimeEnvName) {
  EXPECT_EQ(modelReleaseRuntimeEnvName(ReleaseBuilder().json()), "torch");
  EXPECT_EQ(modelReleaseRuntimeEnvName(ReleaseBuilder().erase("runtimeEnvRef").json()),
            std::nullopt);
  EXPECT_EQ(modelReleaseRuntimeEnvName(ReleaseBuilder().set("runtimeEnvRef", "x").json()),
            std::nullopt);
}

}  // namespace
}  // namespace lockstep::webhooks
