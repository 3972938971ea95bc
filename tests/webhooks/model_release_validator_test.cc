#include "webhooks/admission/model_release_validator.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/webhooks/builders.h"
#include "webhooks/admission/release_actions.h"

namespace lockstep::webhooks {
namespace {

using nlohmann::json;
using testing::kEnvHash;
using testing::kEnvImage;
using testing::ReleaseBuilder;
using testing::sha;

RuntimeEnvView torchModelReleaseValidator() { return {"torch", "ml", kEnvHash, kEnvImage, true}; }

struct CaseModelReleaseValidator {
  std::string name;
  Operation op = Operation::kCreate;
  json release;
  json oldRelease = nullptr;
  std::optional<RuntimeEnvView> env = torchModelReleaseValidator();
  Decision want = Decision::kAllowed;
  std::vector<std::string> mentions = {};
  std::string subResource = "";
};

std::vector<CaseModelReleaseValidator> casesModelReleaseValidator() {
  RuntimeEnvView notReady = torchModelReleaseValidator();
  notReady.ready = false;
  RuntimeEnvView other = torchModelReleaseValidator();
  other.closureHash = sha('9');
  auto good = [] { return ReleaseBuilder::good(); };
  return {
      {"valid release admitted", Operation::kCreate, good().json()},
      {"package by tag denied",
       Operation::kCreate,
       good().set("package", "registry.example/models/gpt2:v7").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.package: \"registry.example/models/gpt2:v7\" must be a reference by digest"}},
      {"package with tag and digest denied",
       Operation::kCreate,
       good().set("package", "registry.example/models/gpt2:v7@" + sha('b')).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.package:", "without a tag"}},
      {"package with short digest denied",
       Operation::kCreate,
       good().set("package", "registry.example/models/gpt2@sha256:ab12").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.package:", "not a valid OCI reference"}},
      {"package missing denied",
       Operation::kCreate,
       good().erase("package").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.package: required"}},
      {"package of wrong type denied",
       Operation::kCreate,
       good().set("package", 42).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.package: required"}},
      {"closure hash malformed denied",
       Operation::kCreate,
       good().set("closureHash", "9c0e").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.closureHash: \"9c0e\" is not sha256:<64 lowercase hex>"}},
      {"closure hash uppercase denied",
       Operation::kCreate,
       good().set("closureHash", "sha256:" + std::string(64, 'C')).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.closureHash:"}},
      {"runtimeEnvRef missing denied",
       Operation::kCreate,
       good().erase("runtimeEnvRef").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.runtimeEnvRef.name: required"}},
      {"no stages denied",
       Operation::kCreate,
       ReleaseBuilder().json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages: at least one stage is required"}},
      {"gates only admitted", Operation::kCreate, ReleaseBuilder().gate("eval").gate("ci").json()},
      {"custom names admitted", Operation::kCreate,
       ReleaseBuilder().gate("smoke").gate("bench-a100").serving("serve").json()},
      {"duplicate stage name denied",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").gate("eval").serving("prod").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[1].name: duplicate stage name \"eval\" (first at spec.stages[0].name)"}},
      {"gate after prod denied",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").serving("prod").gate("ci").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[1]: the serving stage \"prod\" must be the last stage"}},
      {"two serving stages denied",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").serving("prod").serving("prod2").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[2]: only one serving stage is allowed (another at spec.stages[1])"}},
      {"prod name on a gate denied",
       Operation::kCreate,
       ReleaseBuilder().gate("prod").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].name: \"prod\" is reserved for the serving stage"}},
      {"eval name on serving denied",
       Operation::kCreate,
       ReleaseBuilder().serving("eval").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].name: \"eval\" is reserved for a gate stage"}},
      {"stage with both gate and serving denied",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage({{"name", "x"}, {"gate", json::object()}, {"serving", json::object()}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0]: must have exactly one of gate"}},
      {"evidence stage allowed",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage({{"name", "verified"},
                      {"evidence",
                       {{"stages", {"eval", "ci"}},
                        {"trustPolicy", "fleet"},
                        {"specDigests", {{"eval", "sha256:" + std::string(64, 'a')}}}}}})
           .serving("prod")
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kAllowed,
       {}},
      {"fleet serving stage allowed",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage({{"name", "verified"},
                      {"evidence", {{"stages", {"eval", "ci"}}, {"trustPolicy", "fleet"}}}})
           .rawStage({{"name", "prod"},
                      {"serving", {{"replicas", 2}, {"port", 8080}}},
                      {"fleet", {{"trustPolicy", "hub"}}}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kAllowed,
       {}},
      {"fleet on a gate, and a fleet without a policy, denied",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage(
               {{"name", "eval"}, {"gate", json::object()}, {"fleet", {{"trustPolicy", "hub"}}}})
           .rawStage({{"name", "prod"},
                      {"serving", {{"replicas", 2}, {"port", 8080}}},
                      {"fleet", json::object()}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].fleet: only the serving stage waits for a fleet's wave permit",
        "spec.stages[1].fleet.trustPolicy: required"}},
      {"evidence stage with a gate too denied",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage({{"name", "x"},
                      {"gate", json::object()},
                      {"evidence", {{"stages", {"eval"}}, {"trustPolicy", "fleet"}}}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0]: must have exactly one of gate (eval/ci stages), evidence"}},
      {"evidence stage without stages, policy, with a stray spec digest and approval denied",
       Operation::kCreate,
       ReleaseBuilder()
           .rawStage(
               {{"name", "verified"},
                {"approval", "Manual"},
                {"evidence",
                 {{"stages", {"eval", "eval"}},
                  {"specDigests", {{"ci", "sha256:" + std::string(64, 'a')}, {"eval", "x"}}}}}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].evidence.stages[1]: \"eval\" is listed twice",
        "spec.stages[0].evidence.trustPolicy: required",
        "spec.stages[0].evidence.specDigests.ci: \"ci\" is not in .stages",
        "spec.stages[0].evidence.specDigests.eval: must be sha256:<64 lowercase hex>",
        "spec.stages[0].approval: an evidence stage takes no approval"}},
      {"stage with neither denied",
       Operation::kCreate,
       ReleaseBuilder().rawStage({{"name", "x"}}).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0]: must have exactly one of gate"}},
      {"stage name not a DNS label denied",
       Operation::kCreate,
       ReleaseBuilder().gate("Eval_1").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].name: \"Eval_1\" must be a DNS label"}},
      {"stage name missing denied",
       Operation::kCreate,
       ReleaseBuilder().rawStage({{"gate", json::object()}}).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].name: required"}},
      {"stage not an object denied",
       Operation::kCreate,
       ReleaseBuilder().rawStage("eval").json(),
       nullptr,
       torchModelReleaseValidator(),
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
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].canary.steps[1].weight: 10 must be greater than the previous step's 50"}},
      {"canary weight out of range denied",
       Operation::kCreate,
       ReleaseBuilder().serving("prod", json::array({{{"weight", 150}}})).json(),
       nullptr,
       torchModelReleaseValidator(),
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
       torchModelReleaseValidator(),
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
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.closureHash: field is immutable"}},
      {"unchanged invalid stages do not block metadata updates", Operation::kUpdate,
       ReleaseBuilder().gate("eval").gate("eval").json(),
       ReleaseBuilder().gate("eval").gate("eval").json()},
      {"changed stages re-validated on update",
       Operation::kUpdate,
       ReleaseBuilder().gate("eval").gate("eval").json(),
       ReleaseBuilder().gate("eval").json(),
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"duplicate stage name"}},
      {"status subresource not checked",
       Operation::kUpdate,
       ReleaseBuilder().json(),
       ReleaseBuilder().json(),
       torchModelReleaseValidator(),
       Decision::kAllowed,
       {},
       "status"},
      {"delete not checked", Operation::kDelete, ReleaseBuilder().json()},
      {"template containers without an image admitted", Operation::kCreate,
       ReleaseBuilder().gateWith("eval", {{"eval", ""}}, {{"setup", ""}}).json()},
      {"template image equal to the RuntimeEnv's admitted", Operation::kCreate,
       ReleaseBuilder()
           .gateWith("eval", {{"eval", kEnvImage}}, {{"setup", kEnvImage}})
           .servingWith("prod", kEnvImage)
           .json()},
      {"template image in another spelling of the same repository admitted", Operation::kCreate,
       ReleaseBuilder().gateWith("eval", {{"eval", "python@" + sha('a')}}).json(), nullptr,
       RuntimeEnvView{"torch", "ml", kEnvHash, "docker.io/library/python@" + sha('a'), true}},
      {"template image of another repository denied, naming stage and container",
       Operation::kCreate,
       ReleaseBuilder()
           .gate("eval")
           .gateWith("ci", {{"main", ""}, {"tests", "python@" + sha('a')}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[1].gate.template.spec.containers[1]: stage \"ci\" container \"tests\" image "
        "\"python@" +
        sha('a') + "\" is not the image of RuntimeEnv \"ml/torch\"; expected \"" + kEnvImage +
        "\" (RuntimeEnv \"ml/torch\" spec.image) or no image"}},
      {"template init container with another digest denied",
       Operation::kCreate,
       ReleaseBuilder()
           .gateWith("eval", {{"eval", ""}},
                     {{"fetch", "registry.example/runtimes/torch@" + sha('e')}})
           .json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[0].gate.template.spec.initContainers[0]: stage \"eval\" init container "
        "\"fetch\" image",
        "has digest \"" + sha('e') + "\""}},
      {"template image by tag denied",
       Operation::kCreate,
       ReleaseBuilder().gateWith("eval", {{"eval", "registry.example/runtimes/torch:2.5"}}).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"container \"eval\" image \"registry.example/runtimes/torch:2.5\" is not pinned by "
        "digest"}},
      {"serving template image checked too",
       Operation::kCreate,
       ReleaseBuilder().gate("eval").servingWith("prod", "nginx:1.27").json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec.stages[1].serving.template.spec.containers[0]: stage \"prod\" container \"server\""}},
      {"template image invalid denied",
       Operation::kCreate,
       ReleaseBuilder().gateWith("eval", {{"eval", "Not/A Valid:ref"}}).json(),
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"container \"eval\" image \"Not/A Valid:ref\" is invalid"}},
      {"template image pinned but RuntimeEnv missing warns",
       Operation::kCreate,
       ReleaseBuilder().gateWith("eval", {{"eval", kEnvImage}}).json(),
       nullptr,
       std::nullopt,
       Decision::kWarned,
       {"container \"eval\" image \"" + kEnvImage +
        "\" is not checked: RuntimeEnv \"ml/torch\" "
        "does not exist yet"}},
      {"template image by tag with RuntimeEnv missing denied",
       Operation::kCreate,
       ReleaseBuilder().gateWith("eval", {{"eval", "python:3.12"}}).json(),
       nullptr,
       std::nullopt,
       Decision::kDenied,
       {"is not pinned by digest, so it can never be the RuntimeEnv's image"}},
      {"template image on update with unchanged stages not re-checked", Operation::kUpdate,
       ReleaseBuilder().gateWith("eval", {{"eval", "python:3.12"}}).json(),
       ReleaseBuilder().gateWith("eval", {{"eval", "python:3.12"}}).json()},
      {"template image changed on update checked",
       Operation::kUpdate,
       ReleaseBuilder().gateWith("eval", {{"eval", "python:3.12"}}).json(),
       ReleaseBuilder().gateWith("eval", {{"eval", ""}}).json(),
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"container \"eval\" image \"python:3.12\" is not pinned by digest"}},
      {"spec missing denied",
       Operation::kCreate,
       json{{"metadata", {{"name", "x"}}}},
       nullptr,
       torchModelReleaseValidator(),
       Decision::kDenied,
       {"spec: required", "ModelRelease \"ml/x\""}},
  };
}

class ModelReleaseValidatorTest : public ::testing::TestWithParam<CaseModelReleaseValidator> {};

TEST_P(ModelReleaseValidatorTest, Decides) {
  const CaseModelReleaseValidator& c = GetParam();
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
  if (c.want == Decision::kAllowed) {
    EXPECT_TRUE(v.violations.empty() && v.warnings.empty()) << all;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ModelReleaseValidatorTest,
                         ::testing::ValuesIn(casesModelReleaseValidator()),
                         [](const ::testing::TestParamInfo<CaseModelReleaseValidator>& info) {
                           std::string n;
                           for (char ch : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// --- Approvals and abort: the authorizer's answers are inputs of the pure validator.

enum class Access { kAllowed, kDenied, kError };

struct ActionCase {
  std::string name;
  json release;
  json oldRelease = nullptr;  // null: CREATE
  std::map<std::string, Access> access = {};
  std::set<std::string> wantVerbs = {};  // verbsToAuthorize
  Decision want = Decision::kAllowed;
  int code = 200;
  std::vector<std::string> mentions = {};
  std::string user = "alice";
  std::vector<std::string> groups = {};  // request.userInfo.groups
};

// Stage ci waits for approval; the model's prod is at revision 4 (the driver's world).
ReleaseBuilder waiting() {
  return ReleaseBuilder().gate("eval").gate("ci").manual("ci").waitingForApproval("ci");
}
// In canary, paused at step 1.
ReleaseBuilder paused() { return ReleaseBuilder().gate("eval").serving("prod").pausedAt(1); }
// waiting(), with ci taking two approvers from ml-leads or sre (issue 29).
json fromLeads(ReleaseBuilder b) {
  json r = b.json();
  r["spec"]["stages"][1]["approval"] = {
      {"policy", "Manual"}, {"minApprovers", 2}, {"fromGroups", {"ml-leads", "sre"}}};
  return r;
}
const std::string kLeads = R"(["ml-leads","system:authenticated"])";

std::vector<ActionCase> actionCases() {
  const std::string need =
      "RBAC verb \"approve\" on resource \"modelreleases\" in API group \"lockstep.dev\" is "
      "required (the ClusterRole lockstep-release-approver grants it)";
  return {
      {"approve by the user with the verb admitted",
       waiting().approvedBy("ci", "alice").json(),
       waiting().json(),
       {{"approve", Access::kAllowed}},
       {"approve"}},
      {"approve without the verb forbidden",
       waiting().approvedBy("ci", "alice").json(),
       waiting().json(),
       {{"approve", Access::kDenied}},
       {"approve"},
       Decision::kDenied,
       403,
       {"lockstep: ModelRelease \"ml/gpt2-v7\": metadata.annotations[\"approve.lockstep.dev/ci\"]: "
        "user \"alice\" may not approve ModelRelease \"ml/gpt2-v7\": " +
        need}},
      {"approve naming another user forbidden, without asking the authorizer",
       waiting().approvedBy("ci", "bob").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"metadata.annotations[\"approve.lockstep.dev/ci\"]: value \"bob\" must be your own user "
        "name \"alice\" (it records the approver of stage \"ci\")"}},
      {"approve with an empty value forbidden",
       waiting().approvedBy("ci", "").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"value \"\" must be your own user name \"alice\""}},
      {"approve of an unknown stage invalid",
       waiting().approvedBy("qa", "alice").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"approve.lockstep.dev/qa\"]: \"qa\" is not a stage of this release "
        "(stages: \"eval\", \"ci\")"}},
      {"approve with an empty stage name invalid",
       waiting().approvedBy("", "alice").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"\"\" is not a stage of this release"}},
      {"promote of a step by the user with the verb admitted",
       paused().annotate("promote.lockstep.dev/1", "alice").json(),
       paused().json(),
       {{"promote", Access::kAllowed}},
       {"promote"}},
      {"promote-full without the verb forbidden",
       paused().annotate("lockstep.dev/promote-full", "alice").json(),
       paused().json(),
       {{"promote", Access::kDenied}},
       {"promote"},
       Decision::kDenied,
       403,
       {"user \"alice\" may not promote ModelRelease \"ml/gpt2-v7\": RBAC verb \"promote\""}},
      {"promote naming another user forbidden",
       paused().annotate("promote.lockstep.dev/1", "bob").json(),
       paused().json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"value \"bob\" must be your own user name \"alice\" (it records who promoted)"}},
      {"promote of a step that is not an index invalid",
       paused().annotate("promote.lockstep.dev/first", "alice").json(),
       paused().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"\"first\" is not a canary step index"}},
      {"rollback by the user with the verb admitted",
       waiting().annotate("rollback.lockstep.dev/4", "alice").json(),
       waiting().json(),
       {{"rollback", Access::kAllowed}},
       {"rollback"}},
      {"rollback without the verb forbidden, naming the verb",
       waiting().annotate("rollback.lockstep.dev/4", "alice").json(),
       waiting().json(),
       {{"rollback", Access::kDenied}},
       {"rollback"},
       Decision::kDenied,
       403,
       {"user \"alice\" may not rollback ModelRelease \"ml/gpt2-v7\": RBAC verb \"rollback\""}},
      {"rollback naming another user forbidden",
       waiting().annotate("rollback.lockstep.dev/4", "bob").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"value \"bob\" must be your own user name \"alice\" (it records who rolled the model "
        "back)"}},
      {"rollback naming no revision invalid",
       waiting().annotate("rollback.lockstep.dev/gpt2-v6", "alice").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"\"gpt2-v6\" is not a prod revision of the model"}},
      {"approve when the check fails is refused (fail closed)",
       waiting().approvedBy("ci", "alice").json(),
       waiting().json(),
       {{"approve", Access::kError}},
       {"approve"},
       Decision::kDenied,
       403,
       {"cannot check whether user \"alice\" may approve ModelRelease \"ml/gpt2-v7\" "
        "(SubjectAccessReview failed: deadline exceeded); refused, try again"}},
      {"approve without an answer is refused (fail closed)",
       waiting().approvedBy("ci", "alice").json(),
       waiting().json(),
       {},
       {"approve"},
       Decision::kDenied,
       403,
       {"permission to approve was not checked"}},
      {"abort by the user with the verb admitted",
       waiting().abortedBy("alice").json(),
       waiting().json(),
       {{"abort", Access::kAllowed}},
       {"abort"}},
      {"abort without the verb forbidden, naming the verb",
       waiting().abortedBy("alice").json(),
       waiting().json(),
       {{"abort", Access::kDenied}},
       {"abort"},
       Decision::kDenied,
       403,
       {"metadata.annotations[\"lockstep.dev/abort\"]: user \"alice\" may not abort",
        "RBAC verb \"abort\""}},
      {"abort naming another user forbidden",
       waiting().abortedBy("bob").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"value \"bob\" must be your own user name \"alice\" (it records who aborted)"}},
      {"approve allowed but abort denied: only abort refused",
       waiting().approvedBy("ci", "alice").abortedBy("alice").json(),
       waiting().json(),
       {{"approve", Access::kAllowed}, {"abort", Access::kDenied}},
       {"abort", "approve"},
       Decision::kDenied,
       403,
       {"may not abort"}},
      {"unchanged approval by someone else not re-checked",
       waiting().approvedBy("ci", "bob").json(), waiting().approvedBy("ci", "bob").json()},
      {"changed approval value checked",
       waiting().approvedBy("ci", "bob").json(),
       waiting().approvedBy("ci", "carol").json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"value \"bob\" must be your own user name"}},
      {"removing an approval is not an action", waiting().json(),
       waiting().approvedBy("ci", "bob").json()},
      // As the API server sends it: the mutating webhook recorded the creator.
      // Issue 29: actions only for the present. A CREATE has no status: no
      // stage waits yet, so an approval written with it is refused before any
      // authorizer call.
      {"approval on CREATE refused: no stage waits yet",
       ReleaseBuilder()
           .gate("eval")
           .gate("ci")
           .manual("ci")
           .approvedBy("ci", "alice")
           .annotate("lockstep.dev/created-by", "alice")
           .json(),
       nullptr,
       {},
       {},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"approve.lockstep.dev/ci\"]: stage \"ci\" has not been reached "
        "yet; approve it once it waits"}},
      {"approval of a stage still running refused",
       ReleaseBuilder::withStageWaiting(waiting().approvedBy("eval", "alice").json(), "ci"),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"stage \"eval\" is \"Succeeded\", not WaitingForApproval"}},
      {"promote of a later step refused",
       paused().annotate("promote.lockstep.dev/3", "alice").json(),
       paused().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"promote.lockstep.dev/3\"]: the canary is at step 1, not step 3; "
        "a promote is for the step paused now"}},
      {"promote of the current step before it pauses refused",
       [] {
         json r = paused().annotate("promote.lockstep.dev/1", "alice").json();
         r["status"]["canary"]["reason"] = "CanaryProgressing";
         return r;
       }(),
       paused().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"step 1 is not paused (canary \"CanaryProgressing\"); promote it once it pauses"}},
      // An unreadable status.canary is no step (canary_status.h): never read as step 0.
      {"promote of step 0 with an unreadable status.canary refused",
       [] {
         json r = paused().annotate("promote.lockstep.dev/0", "alice").json();
         r["status"]["canary"]["step"] = "1";
         return r;
       }(),
       paused().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"promote.lockstep.dev/0\"]: status.canary cannot be read "
        "(status.canary.step: must be an integer): the step paused now is unknown"}},
      {"promote of a release not in canary refused",
       waiting().annotate("lockstep.dev/promote-full", "alice").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"the release is not in canary (phase \"Testing\")"}},
      {"rollback against a revision the model does not have yet refused",
       waiting().annotate("rollback.lockstep.dev/5", "alice").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"rollback.lockstep.dev/5\"]: the model's prod is at revision 4, "
        "not 5"}},
      {"rollback against a past revision refused",
       waiting().annotate("rollback.lockstep.dev/3", "alice").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"the model's prod is at revision 4, not 3"}},
      {"other annotations ignored", waiting().annotate("approve.example.com/ci", "bob").json(),
       waiting().json()},
      // Issue 29: approvers are people (the platform's approvals.allowServiceAccounts is off).
      {"a ServiceAccount cannot approve",
       waiting().approvedBy("ci", "system:serviceaccount:ml:bot").json(),
       waiting().json(),
       {{"approve", Access::kAllowed}},
       {},
       Decision::kDenied,
       403,
       {"\"system:serviceaccount:ml:bot\" is a ServiceAccount: approvers are people",
        "approvals.allowServiceAccounts"},
       "system:serviceaccount:ml:bot"},
      {"a ServiceAccount may still abort",
       waiting().abortedBy("system:serviceaccount:ml:bot").json(),
       waiting().json(),
       {{"abort", Access::kAllowed}},
       {"abort"},
       Decision::kAllowed,
       200,
       {},
       "system:serviceaccount:ml:bot"},
      // Issue 29: the approver's groups, recorded by the mutating webhook; fromGroups.
      {"an approver in fromGroups admitted",
       fromLeads(waiting().approvedBy("ci", "alice", kLeads)),
       fromLeads(waiting()),
       {{"approve", Access::kAllowed}},
       {"approve"},
       Decision::kAllowed,
       200,
       {},
       "alice",
       {"ml-leads", "system:authenticated"}},
      {"an approver in none of fromGroups refused, naming them",
       fromLeads(waiting().approvedBy("ci.2", "dave", R"(["interns"])")),
       fromLeads(waiting()),
       {{"approve", Access::kAllowed}},
       {"approve"},
       Decision::kDenied,
       403,
       {"metadata.annotations[\"approve.lockstep.dev/ci.2\"]: user \"dave\" is in none of the "
        "groups stage \"ci\" takes approvals from (fromGroups: \"ml-leads\", \"sre\"; the "
        "user's groups: \"interns\")"},
       "dave",
       {"interns"}},
      {"an approval without its groups refused, naming the mutating webhook",
       waiting().annotate("approve.lockstep.dev/ci", "alice").json(),
       waiting().json(),
       {{"approve", Access::kAllowed}},
       {"approve"},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"approver-groups.lockstep.dev/ci\"]: required with the approval",
        "creator.modelreleases.lockstep.dev"}},
      {"groups that are not the approver's refused",
       fromLeads(waiting().approvedBy("ci", "dave", kLeads)),
       fromLeads(waiting()),
       {{"approve", Access::kAllowed}},
       {"approve"},
       Decision::kDenied,
       403,
       {"metadata.annotations[\"approver-groups.lockstep.dev/ci\"]: value \"[",
        "must be your own groups \"[\"interns\"]\" (it records the approver's groups)"},
       "dave",
       {"interns"}},
      {"fromGroups decoded with the stages, bad input named",
       [] {
         json r = ReleaseBuilder()
                      .gate("eval")
                      .gate("ci")
                      .annotate("lockstep.dev/created-by", "alice")
                      .json();
         r["spec"]["stages"][1]["approval"] = {{"policy", "Manual"},
                                               {"fromGroups", {"ml-leads", ""}}};
         return r;
       }(),
       nullptr,
       {},
       {},
       Decision::kDenied,
       422,
       {"spec.stages[1].approval.fromGroups[1]: must be a group name"}},
      {"groups changed without their approval refused",
       fromLeads(waiting().approvedBy("ci", "dave", kLeads)),
       fromLeads(waiting().approvedBy("ci", "dave", R"(["interns"])")),
       {},
       {},
       Decision::kDenied,
       403,
       {"metadata.annotations[\"approver-groups.lockstep.dev/ci\"]: records the groups of the "
        "user who wrote \"approve.lockstep.dev/ci\" and is written only with that approval"},
       "alice",
       {"ml-leads"}},
      {"groups removed while their approval stands refused",
       waiting().annotate("approve.lockstep.dev/ci", "bob").json(),
       waiting().approvedBy("ci", "bob").json(),
       {},
       {},
       Decision::kDenied,
       422,
       {"metadata.annotations[\"approver-groups.lockstep.dev/ci\"]: cannot be removed while "
        "\"approve.lockstep.dev/ci\" stands"}},
      {"anonymous request cannot approve",
       waiting().approvedBy("ci", "").json(),
       waiting().json(),
       {},
       {},
       Decision::kDenied,
       403,
       {"the request has no authenticated user name"},
       ""},
  };
}

void PrintTo(const ActionCase& c, std::ostream* os) { *os << c.name; }

class ModelReleaseActionTest : public ::testing::TestWithParam<ActionCase> {};

TEST_P(ModelReleaseActionTest, Decides) {
  const ActionCase& c = GetParam();
  ModelReleaseReview r;
  r.operation = c.oldRelease.is_null() ? Operation::kCreate : Operation::kUpdate;
  r.ns = "ml";
  r.name = "gpt2-v7";
  r.release = &c.release;
  r.oldRelease = c.oldRelease.is_null() ? nullptr : &c.oldRelease;
  r.runtimeEnv = torchModelReleaseValidator();
  r.prod = ModelProdView{"gpt2-v8", 8080, 4};
  r.user.username = c.user;
  r.user.groups = c.groups;
  EXPECT_EQ(verbsToAuthorize(r), c.wantVerbs);
  for (const auto& [verb, a] : c.access) {
    if (a == Access::kError) {
      r.access.emplace(verb, Status(Code::kDeadlineExceeded, "deadline exceeded"));
    } else {
      r.access.emplace(verb, AccessDecision{a == Access::kAllowed, "", ""});
    }
  }
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(decisionName(v.decision), decisionName(c.want)) << v.message;
  for (const auto& m : c.mentions)
    EXPECT_NE(v.message.find(m), std::string::npos) << "want: " << m << "\ngot: " << v.message;
  if (c.want == Decision::kDenied) {
    EXPECT_EQ(v.code, c.code) << v.message;
    EXPECT_EQ(v.reason, c.code == 403 ? "Forbidden" : "Invalid");
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ModelReleaseActionTest, ::testing::ValuesIn(actionCases()),
                         [](const ::testing::TestParamInfo<ActionCase>& info) {
                           std::string n;
                           for (char ch : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(ModelReleaseActions, AServiceAccountApprovesWhereThePlatformAllowsIt) {
  json release = waiting().approvedBy("ci", "system:serviceaccount:ml:bot").json();
  json old = waiting().json();
  ModelReleaseReview r;
  r.operation = Operation::kUpdate;
  r.ns = "ml";
  r.name = "gpt2-v7";
  r.release = &release;
  r.oldRelease = &old;
  r.runtimeEnv = torchModelReleaseValidator();
  r.user.username = "system:serviceaccount:ml:bot";
  r.approvalRules.serviceAccountsApprove = true;
  EXPECT_EQ(verbsToAuthorize(r), std::set<std::string>{"approve"});
  r.access.emplace("approve", AccessDecision{true, "", ""});
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(decisionName(v.decision), decisionName(Decision::kAllowed)) << v.message;
}

TEST(ModelReleaseActions, InvalidSpecAndForgedApprovalReportsBoth) {
  json release = waiting().approvedBy("ci", "bob").set("closureHash", "x").json();
  ModelReleaseReview r;
  r.operation = Operation::kCreate;
  r.ns = "ml";
  r.release = &release;
  r.runtimeEnv = torchModelReleaseValidator();
  r.user.username = "alice";
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(v.code, 422);
  EXPECT_NE(v.message.find("spec.closureHash"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("must be your own user name"), std::string::npos) << v.message;
}

TEST(ModelReleaseActions, AccessRequestCarriesTheUserAndTheRelease) {
  json release = waiting().json();
  ModelReleaseReview r;
  r.ns = "ml";
  r.release = &release;
  r.user = {"alice", "u-1", {"team-a", "system:authenticated"}, {{"scopes", {"x"}}}};
  AccessRequest q = accessRequestFor(r, "approve");
  EXPECT_EQ(q.user.username, "alice");
  EXPECT_EQ(q.user.uid, "u-1");
  EXPECT_EQ(q.user.groups.size(), 2u);
  EXPECT_EQ(q.user.extra.at("scopes"), std::vector<std::string>{"x"});
  EXPECT_EQ(q.verb, "approve");
  EXPECT_EQ(q.group, "lockstep.dev");
  EXPECT_EQ(q.resource, "modelreleases");
  EXPECT_EQ(q.ns, "ml");
  EXPECT_EQ(q.name, "gpt2-v7");  // from metadata when the request has no name
}

TEST(ModelReleaseActions, ChangedActions) {
  json now = waiting().approvedBy("ci", "a").approvedBy("eval", "b").abortedBy("c").json();
  json old = waiting().approvedBy("eval", "b").json();
  auto changed = changedReleaseActions(&now, &old);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].annotation, "approve.lockstep.dev/ci");
  EXPECT_EQ(changed[0].stage, "ci");
  EXPECT_EQ(changed[0].value, "a");
  EXPECT_EQ(changed[0].verb(), "approve");
  EXPECT_EQ(changed[1].annotation, "lockstep.dev/abort");
  EXPECT_EQ(changed[1].kind, ReleaseActionKind::kAbort);
  EXPECT_EQ(changed[1].verb(), "abort");
  EXPECT_EQ(changedReleaseActions(&now, nullptr).size(), 3u);
  EXPECT_EQ(approveAnnotation("ci"), "approve.lockstep.dev/ci");
  EXPECT_FALSE(parseReleaseAction("lockstep.dev/closure-hash", "x").has_value());
  // A value of the wrong type reads as empty (and then fails the user check).
  auto a = parseReleaseAction("lockstep.dev/abort", 42);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->value, "");
}

TEST(ModelReleaseValidator, RuntimeEnvName) {
  EXPECT_EQ(modelReleaseRuntimeEnvName(ReleaseBuilder().json()), "torch");
  EXPECT_EQ(modelReleaseRuntimeEnvName(ReleaseBuilder().erase("runtimeEnvRef").json()),
            std::nullopt);
  EXPECT_EQ(modelReleaseRuntimeEnvName(ReleaseBuilder().set("runtimeEnvRef", "x").json()),
            std::nullopt);
}

// --- The Service port belongs to the model; unknown AnalysisProviders warn.

Verdict reviewWithProd(const json& release, std::optional<ModelProdView> prod,
                       Operation op = Operation::kCreate, const json* old = nullptr) {
  ModelReleaseReview r;
  r.operation = op;
  r.ns = "ml";
  r.release = &release;
  r.oldRelease = old;
  r.runtimeEnv = torchModelReleaseValidator();
  r.prod = std::move(prod);
  return validateModelRelease(r);
}

json onPort(int port) {
  json mr = ReleaseBuilder("gpt2-v8").gate("eval").serving("prod").json();
  mr["spec"]["stages"][1]["serving"]["port"] = port;
  return mr;
}

TEST(ModelReleaseServicePort, AnotherPortThanProdsIsRefusedNamingFieldPortAndRelease) {
  Verdict v = reviewWithProd(onPort(8000), ModelProdView{"gpt2-v7", 8080});
  EXPECT_EQ(v.decision, Decision::kDenied) << v.message;
  EXPECT_EQ(v.code, 422);
  EXPECT_NE(v.message.find("spec.stages[1].serving.port: 8000 differs from port 8080 on which "
                           "model \"gpt2\" serves in prod (Service \"ml/gpt2\", release "
                           "\"gpt2-v7\" runs prod): the Service port belongs to the model; keep "
                           "port 8080, or retire the model first (lockstep model delete gpt2)"),
            std::string::npos)
      << v.message;
  // No port given: the default 8080.
  json unset = onPort(8000);
  unset["spec"]["stages"][1]["serving"].erase("port");
  EXPECT_EQ(reviewWithProd(unset, ModelProdView{"gpt2-v7", 8000}).decision, Decision::kDenied);
}

TEST(ModelReleaseServicePort, AllowedOnProdsPortWithoutProdOrForProdsOwnRelease) {
  EXPECT_EQ(reviewWithProd(onPort(8080), ModelProdView{"gpt2-v7", 8080}).decision,
            Decision::kAllowed);
  EXPECT_EQ(reviewWithProd(onPort(8000), std::nullopt).decision, Decision::kAllowed)
      << "the model has no prod yet: any port";
  EXPECT_EQ(reviewWithProd(onPort(8000), ModelProdView{"gpt2-v7", 0}).decision, Decision::kAllowed)
      << "prod's port unknown";
  // The release prod runs (an annotation update of it): never refused here.
  json self = onPort(8000);
  EXPECT_EQ(
      reviewWithProd(self, ModelProdView{"gpt2-v8", 8080}, Operation::kUpdate, &self).decision,
      Decision::kAllowed);
  // A metadata update of an older release (stages unchanged) is not re-checked.
  EXPECT_EQ(
      reviewWithProd(self, ModelProdView{"gpt2-v7", 8080}, Operation::kUpdate, &self).decision,
      Decision::kAllowed);
}

class KnownProviders final : public AnalysisProviderLookup {
 public:
  bool exists(std::string_view name) const override { return name == "prometheus-main"; }
};

TEST(ModelReleaseProviders, AnUnknownProviderIsAWarningNamingTheFieldStillAdmitted) {
  json step = {{"weight", 50},
               {"analysis", {{"prometheus", {{"provider", "promethues-main"}, {"query", "up"}}}}}};
  json mr = ReleaseBuilder("gpt2-v8").serving("prod", json::array({step})).json();
  mr["spec"]["stages"][0]["canary"]["analysis"] = {
      {"prometheus", {{"provider", "prometheus-main"}, {"query", "up"}}}};
  KnownProviders providers;
  ModelReleaseReview r;
  r.ns = "ml";
  r.release = &mr;
  r.runtimeEnv = torchModelReleaseValidator();
  r.providers = &providers;
  Verdict v = validateModelRelease(r);
  EXPECT_EQ(v.decision, Decision::kWarned) << v.message;
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_EQ(v.warnings[0],
            "lockstep: spec.stages[0].canary.steps[0].analysis.prometheus.provider: "
            "AnalysisProvider \"promethues-main\" does not exist (yet); until it does, every "
            "measurement of it is an error (kubectl get analysisproviders lists them)");
  // Known everywhere (or not looked up): no warning.
  mr["spec"]["stages"][0]["canary"]["steps"][0]["analysis"]["prometheus"]["provider"] =
      "prometheus-main";
  EXPECT_EQ(validateModelRelease(r).decision, Decision::kAllowed);
  mr["spec"]["stages"][0]["canary"]["steps"][0]["analysis"]["prometheus"]["provider"] = "x";
  r.providers = nullptr;
  EXPECT_EQ(validateModelRelease(r).decision, Decision::kAllowed);
}

// The platform's providers and templates, as the informer caches hold them.
class TenancyLookup final : public AnalysisProviderLookup {
 public:
  bool exists(std::string_view name) const override { return providerSpec(name).has_value(); }
  std::optional<json> providerSpec(std::string_view name) const override {
    if (name == "team-a")
      return json{{"address", "https://prometheus:9091"},
                  {"namespaceSelector", {{"matchLabels", {{"team", "a"}}}}}};
    if (name == "demo")
      return json{{"address", "https://prometheus:9091"},
                  {"namespaceSelector", json::object()},
                  {"allowFreeFormQueries", true}};
    return std::nullopt;
  }
  std::optional<json> templateSpec(std::string_view name) const override {
    if (name != "error-ratio") return std::nullopt;
    return json{{"query", "sum(rate(reqs{ {{selector}}, code=~{{args.codes}} }[{{args.window}}]))"},
                {"args",
                 {{{"name", "window"}, {"type", "duration"}, {"default", "1m"}},
                  {{"name", "codes"}, {"pattern", "[0-9.|]+"}}}}};
  }
};

Verdict reviewTenancy(const json& prometheus, const std::map<std::string, std::string>& labels) {
  static TenancyLookup lookup;
  json step = {{"weight", 50}, {"analysis", {{"prometheus", prometheus}}}};
  json mr = ReleaseBuilder("gpt2-v8").serving("prod", json::array({step})).json();
  ModelReleaseReview r;
  r.ns = "tenant-b";
  r.release = &mr;
  r.runtimeEnv = torchModelReleaseValidator();
  r.providers = &lookup;
  r.namespaceLabels = labels;
  return validateModelRelease(r);
}

// Must-show 1 at the webhook: B names A's provider and is refused, naming it.
TEST(ModelReleaseTenancy, AProviderThatDoesNotServeTheNamespaceIsRefusedNamingIt) {
  json p = {{"provider", "team-a"},
            {"template", "error-ratio"},
            {"args", {{"codes", "5.."}}},
            {"max", 0.1}};
  Verdict b = reviewTenancy(p, {{"team", "b"}});
  EXPECT_EQ(b.decision, Decision::kDenied) << b.message;
  EXPECT_NE(b.message.find("spec.stages[0].canary.steps[0].analysis.prometheus.provider: "
                           "AnalysisProvider \"team-a\" does not serve namespace \"tenant-b\": "
                           "the namespace's labels do not match its spec.namespaceSelector "
                           "(team=a)"),
            std::string::npos)
      << b.message;
  EXPECT_EQ(reviewTenancy(p, {{"team", "a"}}).decision, Decision::kAllowed)
      << reviewTenancy(p, {{"team", "a"}}).message;
}

TEST(ModelReleaseTenancy, FreeFormQueriesOnlyOnProvidersThatAllowThem) {
  Verdict v =
      reviewTenancy({{"provider", "team-a"}, {"query", "sum(up)"}, {"max", 1}}, {{"team", "a"}});
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("spec.stages[0].canary.steps[0].analysis.prometheus.query: "
                           "AnalysisProvider \"team-a\" does not run free-form queries"),
            std::string::npos)
      << v.message;
  EXPECT_EQ(reviewTenancy({{"provider", "demo"}, {"query", "sum(up)"}, {"max", 1}}, {}).decision,
            Decision::kAllowed);
}

TEST(ModelReleaseTenancy, TemplateArgumentsAreCheckedAtApply) {
  auto review = [](const json& args) {
    return reviewTenancy(
        {{"provider", "team-a"}, {"template", "error-ratio"}, {"args", args}, {"max", 0.1}},
        {{"team", "a"}});
  };
  Verdict hostile = review({{"codes", "5..\"}) or vector(1"}});
  EXPECT_EQ(hostile.decision, Decision::kDenied);
  EXPECT_NE(hostile.message.find("spec.stages[0].canary.steps[0].analysis.prometheus.args.codes: "
                                 "\"5..\"}) or vector(1\" does not match the template's pattern"),
            std::string::npos)
      << hostile.message;
  Verdict undeclared = review({{"codes", "5.."}, {"namespace", "tenant-a"}});
  EXPECT_NE(undeclared.message.find("prometheus.args.namespace: is not an argument of the "
                                    "template"),
            std::string::npos)
      << undeclared.message;
  Verdict missing = review(json::object());
  EXPECT_NE(missing.message.find("prometheus.args.codes: is required"), std::string::npos)
      << missing.message;
  Verdict window = review({{"codes", "5.."}, {"window", "1m] or up[1m"}});
  EXPECT_NE(window.message.find("prometheus.args.window: \"1m] or up[1m\" is not a duration"),
            std::string::npos)
      << window.message;
  EXPECT_EQ(review({{"codes", "5..|4.."}, {"window", "5m"}}).decision, Decision::kAllowed);
  // A template that does not exist (yet): a warning, as for providers.
  Verdict unknown =
      reviewTenancy({{"provider", "team-a"}, {"template", "nope"}, {"max", 0.1}}, {{"team", "a"}});
  EXPECT_EQ(unknown.decision, Decision::kWarned) << unknown.message;
}

}  // namespace
}  // namespace lockstep::webhooks
