#include "controllers/runtimeadmission/runtimeadmission_plan.h"

#include <gtest/gtest.h>

#include <memory>

#include "api/v1alpha1/runtime_admission.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kHash = "sha256:" + std::string(64, '1');

v1::RuntimeEnv env(const std::string& name) {
  v1::RuntimeEnv e;
  e.meta.name = name;
  e.meta.ns = "ml";
  e.meta.generation = 1;
  e.spec.image = "registry.example/rt@" + kA;
  e.status.observedGeneration = 1;
  e.status.closureHash = kHash;
  e.status.currentRevision = 1;
  v1::RuntimeRevision r;
  r.number = 1;
  r.image = e.spec.image;
  r.closureHash = kHash;
  e.status.revisions = {r};
  e.status.conditions =
      json::array({{{"type", "Ready"}, {"status", "True"}, {"observedGeneration", 1}}});
  return e;
}

kube::ObjectPtr tableWith(const json& spec) {
  return std::make_shared<const kube::Object>(
      json{{"apiVersion", "lockstep.dev/v1alpha1"},
           {"kind", "RuntimeAdmission"},
           {"metadata", {{"name", v1::kRuntimeAdmissionName}, {"namespace", "ml"}}},
           {"spec", spec}});
}

TEST(PlanRuntimeAdmission, NoRuntimeEnvAndNoTableWritesNothing) {
  RuntimeAdmissionObserved o;
  o.ns = "ml";
  ExecutionPlan plan = planRuntimeAdmission(o);
  EXPECT_TRUE(plan.apply.empty());
  EXPECT_TRUE(plan.events.empty());
}

TEST(PlanRuntimeAdmission, AppliesTheTableOfTheNamespace) {
  RuntimeAdmissionObserved o;
  o.ns = "ml";
  o.runtimeEnvs = {env("torch")};
  ExecutionPlan plan = planRuntimeAdmission(o);
  ASSERT_EQ(plan.apply.size(), 1u);
  const PlannedApply& a = plan.apply[0];
  EXPECT_EQ(a.verb, WriteVerb::kApply);
  EXPECT_EQ(a.resource.resource, "runtimeadmissions");
  EXPECT_EQ(a.object["metadata"]["name"], "lockstep-runtimes");
  EXPECT_EQ(a.object["metadata"]["namespace"], "ml");
  EXPECT_EQ(a.object["spec"]["runtimeEnvs"]["torch"]["repository"], "registry.example/rt");
}

TEST(PlanRuntimeAdmission, AnUnchangedTableIsNotWrittenAgain) {
  RuntimeAdmissionObserved o;
  o.ns = "ml";
  o.runtimeEnvs = {env("torch")};
  auto spec = v1::runtimeAdmissionSpec("ml", o.runtimeEnvs, "");
  ASSERT_TRUE(spec.isOk());
  o.table = tableWith(*spec);
  EXPECT_TRUE(planRuntimeAdmission(o).apply.empty());
  // A RuntimeEnv gone: the table is rewritten without it (not left to admit its pods).
  o.runtimeEnvs.clear();
  ExecutionPlan plan = planRuntimeAdmission(o);
  ASSERT_EQ(plan.apply.size(), 1u);
  EXPECT_EQ(plan.apply[0].object["spec"]["runtimeEnvs"], json::object());
}

TEST(PlanRuntimeAdmission, ATableOverItsBoundsKeepsTheLastOneAndWarns) {
  RuntimeAdmissionObserved o;
  o.ns = "ml";
  for (size_t i = 0; i <= v1::kRuntimeAdmissionMaxEnvs; ++i) {
    o.runtimeEnvs.push_back(env("e" + std::to_string(i)));
  }
  o.table = tableWith({{"runtimeEnvs", json::object()}});
  ExecutionPlan plan = planRuntimeAdmission(o);
  EXPECT_TRUE(plan.apply.empty());
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "AdmissionTableTooLarge");
  EXPECT_NE(plan.events[0].message.find("129 RuntimeEnvs"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::controllers
