// The Model's own conditions (controllers/modelrelease/prod/model_conditions.h):
// Ready, Progressing and Degraded from the record and the objects prod is made of.
#include "controllers/modelrelease/prod/model_conditions.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "controllers/modelrelease/watch_filters.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers::model_conditions_test {
namespace {

using nlohmann::json;

const std::string kHashA = "sha256:" + std::string(64, 'a');
const std::string kHashB = "sha256:" + std::string(64, 'b');
const std::string kPkg = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
constexpr const char* kNow = "2026-12-04T10:00:00Z";
constexpr const char* kLater = "2026-12-04T11:00:00Z";

kube::ObjectPtr ptr(json o) { return std::make_shared<const kube::Object>(std::move(o)); }

json prodRecord(const std::string& release = "gpt2-v1", const std::string& hash = kHashA) {
  return {{"release", release},
          {"uid", "u-" + release},
          {"contentDigest", "sha256:" + std::string(64, 'd')},
          {"package", kPkg},
          {"runtime",
           {{"runtimeEnv", "torch"},
            {"image", "registry.example/rt@sha256:" + std::string(64, 'e')},
            {"closureHash", hash},
            {"revision", 2}}},
          {"since", "2026-12-04T09:00:00Z"}};
}

// Model gpt2 in ml: spec.replicas 2 (the record keeps no stages: N from the spec).
json model(std::optional<json> prod, std::optional<json> canary = std::nullopt) {
  json m = {{"apiVersion", "lockstep.dev/v1alpha1"},
            {"kind", "Model"},
            {"metadata",
             {{"name", "gpt2"}, {"namespace", "ml"}, {"uid", "model-uid"}, {"generation", 3}}},
            {"spec", {{"replicas", 2}}},
            {"status", {{"revision", prod ? 1 : 0}, {"history", json::array()}}}};
  if (prod) m["status"]["prod"] = *prod;
  if (canary) m["status"]["canary"] = *canary;
  return m;
}

json deployment(const std::string& track, const std::string& release, const std::string& hash,
                int replicas) {
  return {{"metadata", {{"name", "gpt2-" + track}, {"namespace", "ml"}, {"generation", 4}}},
          {"spec",
           {{"replicas", replicas},
            {"template",
             {{"metadata",
               {{"labels", {{"lockstep.dev/release", release}, {"lockstep.dev/track", track}}},
                {"annotations",
                 {{"lockstep.dev/closure-hash", hash}, {"lockstep.dev/package", kPkg}}}}}}}}},
          {"status",
           {{"observedGeneration", 4},
            {"replicas", replicas},
            {"updatedReplicas", replicas},
            {"readyReplicas", replicas}}}};
}

json pod(const std::string& name, const std::string& track, const std::string& release,
         const std::string& hash, bool ready, bool terminating = false) {
  json p = {
      {"metadata",
       {{"name", name},
        {"namespace", "ml"},
        {"labels",
         {{"lockstep.dev/model", "gpt2"},
          {"lockstep.dev/track", track},
          {"lockstep.dev/release", release}}},
        {"annotations", {{"lockstep.dev/closure-hash", hash}, {"lockstep.dev/package", kPkg}}}}},
      {"status",
       {{"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  if (terminating) p["metadata"]["deletionTimestamp"] = "2026-12-04T09:59:00Z";
  return p;
}

// Prod on gpt2-v1 with two Ready stable pods on its pair, the Service there.
ModelObserved serving() {
  ModelObserved o;
  o.model = ptr(model(prodRecord()));
  o.service = ptr({{"metadata", {{"name", "gpt2"}, {"namespace", "ml"}}}});
  o.stableDeployment = ptr(deployment("stable", "gpt2-v1", kHashA, 2));
  o.pods = {ptr(pod("s1", "stable", "gpt2-v1", kHashA, true)),
            ptr(pod("s2", "stable", "gpt2-v1", kHashA, true))};
  o.releases = 1;
  return o;
}

json condition(const ModelConditions& c, const char* type) {
  auto found = kube::findCondition(c.conditions, type);
  EXPECT_TRUE(found.has_value()) << type;
  return found.value_or(json::object());
}

std::string reason(const ModelConditions& c, const char* type) {
  return condition(c, type).value("reason", "");
}
std::string status(const ModelConditions& c, const char* type) {
  return condition(c, type).value("status", "");
}
std::string message(const ModelConditions& c, const char* type) {
  return condition(c, type).value("message", "");
}

TEST(ModelConditions, AModelNoReleaseNamesIsReconciledAndSaysSo) {
  ModelObserved o;
  o.model = ptr(model(std::nullopt));
  const ModelConditions c = planModelConditions(o, kNow);
  EXPECT_TRUE(c.changed);
  EXPECT_EQ(c.observedGeneration, 3);
  EXPECT_EQ(status(c, "Ready"), "False");
  EXPECT_EQ(reason(c, "Ready"), kModelReasonNoProd);
  EXPECT_NE(message(c, "Ready").find("no ModelRelease names it"), std::string::npos)
      << message(c, "Ready");
  EXPECT_EQ(status(c, "Degraded"), "False");
  EXPECT_EQ(status(c, "Progressing"), "False");
  EXPECT_EQ(condition(c, "Ready").value("observedGeneration", 0), 3);

  o.releases = 2;
  EXPECT_NE(message(planModelConditions(o, kNow), "Ready").find("2 ModelRelease(s) name it"),
            std::string::npos);
}

TEST(ModelConditions, ProdServingItsRecordedPairIsReady) {
  const ModelConditions c = planModelConditions(serving(), kNow);
  EXPECT_TRUE(c.ready);
  EXPECT_EQ(status(c, "Ready"), "True");
  EXPECT_EQ(reason(c, "Ready"), kModelReasonServing);
  EXPECT_NE(message(c, "Ready").find("2/2 pods of gpt2-v1 Ready on its pair"), std::string::npos)
      << message(c, "Ready");
  EXPECT_NE(message(c, "Ready").find(kHashA), std::string::npos);
  EXPECT_EQ(status(c, "Degraded"), "False");
  EXPECT_EQ(reason(c, "Degraded"), kModelReasonAsRecorded);
  EXPECT_EQ(status(c, "Progressing"), "False");
}

TEST(ModelConditions, OnlyReadyLivePodsOnTheRecordedPairCount) {
  ModelObserved o = serving();
  o.pods = {ptr(pod("s1", "stable", "gpt2-v1", kHashA, true)),
            ptr(pod("s2", "stable", "gpt2-v1", kHashA, true, /*terminating=*/true)),
            ptr(pod("s3", "stable", "gpt2-v1", kHashB, true)),   // another closure
            ptr(pod("s4", "stable", "gpt2-v1", kHashA, false)),  // not Ready
            ptr(pod("s5", "stable", "gpt2-v0", kHashA, true))};  // another release
  const ModelConditions c = planModelConditions(o, kNow);
  EXPECT_FALSE(c.ready);
  EXPECT_EQ(c.readyPods, 1);
  EXPECT_EQ(reason(c, "Ready"), kModelReasonStableNotReady);
  EXPECT_NE(message(c, "Ready").find("1/2 pods of gpt2-v1"), std::string::npos)
      << message(c, "Ready");
  // Nothing in flight explains it.
  EXPECT_EQ(status(c, "Degraded"), "True");
  EXPECT_EQ(reason(c, "Degraded"), kModelReasonStableNotReady);
}

TEST(ModelConditions, AStableRollOutIsProgressingNotDegraded) {
  ModelObserved o = serving();
  json d = deployment("stable", "gpt2-v1", kHashA, 2);
  d["metadata"]["generation"] = 5;  // not observed by the Deployment controller yet
  o.stableDeployment = ptr(d);
  o.pods.pop_back();
  ModelConditions c = planModelConditions(o, kNow);
  EXPECT_EQ(status(c, "Progressing"), "True");
  EXPECT_EQ(reason(c, "Progressing"), kModelReasonStableRollingOut);
  EXPECT_EQ(status(c, "Ready"), "False");
  EXPECT_EQ(status(c, "Degraded"), "False");

  // A Deployment past its progress deadline is stuck, not rolling: Degraded says so.
  d["status"]["conditions"] = json::array(
      {{{"type", "Progressing"}, {"status", "False"}, {"reason", "ProgressDeadlineExceeded"}}});
  o.stableDeployment = ptr(d);
  c = planModelConditions(o, kNow);
  EXPECT_EQ(status(c, "Progressing"), "False");
  EXPECT_EQ(status(c, "Degraded"), "True");
}

TEST(ModelConditions, AMissingOrForeignTemplateOrServiceIsNamed) {
  ModelObserved o = serving();
  o.stableDeployment = nullptr;
  ModelConditions c = planModelConditions(o, kNow);
  EXPECT_EQ(reason(c, "Ready"), kModelReasonStableMissing);
  EXPECT_EQ(message(c, "Ready"), "Deployment ml/gpt2-stable does not exist");
  EXPECT_EQ(status(c, "Degraded"), "True");

  o = serving();
  o.stableDeployment = ptr(deployment("stable", "gpt2-v1", kHashB, 2));
  c = planModelConditions(o, kNow);
  EXPECT_EQ(reason(c, "Ready"), kModelReasonStableNotOnProd);
  EXPECT_NE(message(c, "Ready").find("closure hash " + kHashB + ", the Model pins " + kHashA),
            std::string::npos)
      << message(c, "Ready");

  o = serving();
  o.stableDeployment = ptr(deployment("stable", "gpt2-v0", kHashA, 2));
  c = planModelConditions(o, kNow);
  EXPECT_EQ(reason(c, "Ready"), kModelReasonStableNotOnProd);
  EXPECT_NE(message(c, "Ready").find("runs release gpt2-v0, the Model records gpt2-v1"),
            std::string::npos)
      << message(c, "Ready");

  o = serving();
  o.service = nullptr;
  c = planModelConditions(o, kNow);
  EXPECT_EQ(reason(c, "Ready"), kModelReasonServiceMissing);
  EXPECT_EQ(message(c, "Ready"), "Service ml/gpt2 does not exist");
}

TEST(ModelConditions, ACanaryIsProgressingAndStableIsJudgedOnItsShare) {
  ModelObserved o = serving();
  json canary = prodRecord("gpt2-v2", kHashA);  // the same pair as prod: still not prod's pods
  canary["since"] = "2026-12-04T09:30:00Z";
  o.model = ptr(model(prodRecord(), canary));
  o.stableDeployment = ptr(deployment("stable", "gpt2-v1", kHashA, 1));
  o.canaryDeployment = ptr(deployment("canary", "gpt2-v2", kHashA, 1));
  o.pods = {ptr(pod("s1", "stable", "gpt2-v1", kHashA, true)),
            ptr(pod("c1", "canary", "gpt2-v1", kHashA, true))};
  ModelConditions c = planModelConditions(o, kNow);
  EXPECT_EQ(status(c, "Progressing"), "True");
  EXPECT_EQ(reason(c, "Progressing"), kModelReasonCanaryInFlight);
  EXPECT_NE(message(c, "Progressing").find("gpt2-v2 holds the canary slot"), std::string::npos);
  EXPECT_EQ(c.want, 1);
  EXPECT_EQ(c.readyPods, 1);  // the canary track's pod does not count while a canary runs
  EXPECT_EQ(status(c, "Ready"), "True");
  EXPECT_EQ(status(c, "Degraded"), "False");
  // In flight, no live count: another Ready pod is no write of the Model.
  EXPECT_EQ(message(c, "Ready").find("1/1"), std::string::npos) << message(c, "Ready");
  {
    json m = *o.model;
    m["status"]["conditions"] = c.conditions;
    m["status"]["observedGeneration"] = c.observedGeneration;
    ModelObserved more = o;
    more.model = ptr(m);
    more.pods.push_back(ptr(pod("s2", "stable", "gpt2-v1", kHashA, true)));
    EXPECT_FALSE(planModelConditions(more, kLater).changed);
  }

  // The hand-over after a promotion: no canary in the slot, the canary
  // track's pods on prod's pair serve it while stable takes them over.
  o.model = ptr(model(prodRecord()));
  o.stableDeployment = ptr(deployment("stable", "gpt2-v1", kHashA, 2));
  o.pods = {ptr(pod("s1", "stable", "gpt2-v1", kHashA, true)),
            ptr(pod("c1", "canary", "gpt2-v1", kHashA, true))};
  c = planModelConditions(o, kNow);
  EXPECT_EQ(c.readyPods, 2);
  EXPECT_TRUE(c.ready);
}

TEST(ModelConditions, PlanningTwiceWritesNothingAndKeepsTransitionTimes) {
  ModelObserved o = serving();
  const ModelConditions first = planModelConditions(o, kNow);
  json m = *o.model;
  m["status"]["conditions"] = first.conditions;
  m["status"]["observedGeneration"] = first.observedGeneration;
  o.model = ptr(m);
  const ModelConditions again = planModelConditions(o, kLater);
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(again.conditions, first.conditions);

  // A pod down: Ready moves (a new transition time), Progressing keeps its own.
  o.pods.pop_back();
  const ModelConditions down = planModelConditions(o, kLater);
  EXPECT_TRUE(down.changed);
  EXPECT_EQ(condition(down, "Ready").value("lastTransitionTime", ""), kLater);
  EXPECT_EQ(condition(down, "Progressing").value("lastTransitionTime", ""), kNow);

  // A spec edit: observedGeneration follows even when no condition changes.
  m["metadata"]["generation"] = 4;
  o = serving();
  o.model = ptr(m);
  const ModelConditions edited = planModelConditions(o, kLater);
  EXPECT_TRUE(edited.changed);
  EXPECT_EQ(edited.observedGeneration, 4);
}

// A rollback asked on the Model that no release will act on is said (once, by
// the shell); one a release will act on is that release's to report.
TEST(ModelConditions, ARollbackRequestNoReleaseWillTakeIsSaid) {
  api::v1alpha1::Model m;
  m.meta.name = "gpt2";
  m.meta.ns = "ml";
  m.status.revision = 3;
  auto release = [](const std::string& name) {
    api::v1alpha1::ModelHistoryEntry e;
    e.action = api::v1alpha1::kModelActionPromoted;
    e.release = name;
    return e;
  };
  m.status.history = {release("v6"), release("v7"), release("v8")};
  std::set<std::string> live = {"v6", "v7", "v8"};
  std::set<std::string> neverPromoted;
  auto isRelease = [&](const std::string& n) -> std::optional<api::v1alpha1::ModelRelease> {
    if (!live.count(n)) return std::nullopt;
    api::v1alpha1::ModelRelease r;
    r.meta.name = n;
    if (!neverPromoted.count(n)) {
      r.status.phase = api::v1alpha1::Phase::kSuperseded;
      r.status.canary = nlohmann::json{{"phase", api::v1alpha1::kPhasePromoted}};
    }
    return r;
  };
  EXPECT_FALSE(unresolvableRollback(m, isRelease)) << "nothing asked";
  m.annotations["rollback.lockstep.dev/3"] = "alice";
  EXPECT_EQ(unresolvableRollback(m, isRelease).value_or(""),
            "rollback of model \"gpt2\" at prod revision 3 asked by alice refused: the model "
            "runs no promoted release");
  m.status.prod = api::v1alpha1::ProdContent{};
  m.status.prod->release = "v8";
  EXPECT_FALSE(unresolvableRollback(m, isRelease)) << "v7 takes it";
  live = {"v8"};
  EXPECT_NE(unresolvableRollback(m, isRelease)
                .value_or("")
                .find("no release prod ran before the current one still exists"),
            std::string::npos);
  m.annotations["rollback-to.lockstep.dev/3"] = "v5";
  EXPECT_NE(unresolvableRollback(m, isRelease)
                .value_or("")
                .find("release \"v5\" (rollback-to.lockstep.dev/3) is not a ModelRelease of "
                      "this model in namespace ml"),
            std::string::npos);
  m.annotations["rollback-to.lockstep.dev/3"] = "v8";
  EXPECT_NE(unresolvableRollback(m, isRelease).value_or("").find("is what prod runs already"),
            std::string::npos);
  live = {"v5", "v8"};
  m.annotations["rollback-to.lockstep.dev/3"] = "v5";
  EXPECT_FALSE(unresolvableRollback(m, isRelease)) << "v5 says in its own status";
  // The same name, an object that never ran in prod (re-created): it would not answer.
  neverPromoted = {"v5"};
  EXPECT_NE(unresolvableRollback(m, isRelease)
                .value_or("")
                .find("release \"v5\" never ran in prod (phase Pending)"),
            std::string::npos);
  m.annotations.erase("rollback-to.lockstep.dev/3");
  live = {"v7", "v8"};
  neverPromoted = {"v7"};
  EXPECT_NE(unresolvableRollback(m, isRelease)
                .value_or("")
                .find("no release prod ran before the current one still exists"),
            std::string::npos)
      << "the default skips an object that never ran in prod";
  // A request at an earlier revision is spent: nothing to say.
  m.status.revision = 4;
  EXPECT_FALSE(unresolvableRollback(m, isRelease));
}

// The Model controller's filter of its Deployments (watch_filters.h) drops an
// update only when the conditions planned from it are the same: the Ready
// counts and the conditions' wording the Deployment controller writes, in a
// rolled-out, a rolling and a stuck Deployment.
TEST(ModelConditions, WhatTheDeploymentFilterDropsChangesNoCondition) {
  const json conditions = json::array(
      {{{"type", "Available"}, {"status", "False"}, {"reason", "MinimumReplicasUnavailable"}},
       {{"type", "Progressing"}, {"status", "True"}, {"reason", "ReplicaSetUpdated"}}});
  json rolledOut = deployment("stable", "gpt2-v1", kHashA, 2);
  rolledOut["status"]["conditions"] = conditions;
  json rolling = rolledOut;
  rolling["status"]["updatedReplicas"] = 1;
  json stuck = rolling;
  stuck["status"]["conditions"][1]["reason"] = "ProgressDeadlineExceeded";
  for (const json& before : {rolledOut, rolling, stuck}) {
    json after = before;
    after["status"]["readyReplicas"] = 0;
    after["status"]["availableReplicas"] = 2;
    after["status"]["conditions"][0]["status"] = "True";
    after["status"]["conditions"][0]["reason"] = "MinimumReplicasAvailable";
    after["status"]["conditions"].push_back(
        {{"type", "ReplicaFailure"}, {"status", "True"}, {"reason", "FailedCreate"}});
    if (before["status"]["conditions"][1]["reason"] != "ProgressDeadlineExceeded")
      after["status"]["conditions"][1]["reason"] = "NewReplicaSetAvailable";
    ASSERT_FALSE(deploymentChangeConcernsModel(before, after)) << before.dump();
    ModelObserved a = serving();
    a.pods.pop_back();  // 1/2: StableNotReady, Degraded unless rolling
    ModelObserved b = a;
    a.stableDeployment = ptr(before);
    b.stableDeployment = ptr(after);
    EXPECT_EQ(planModelConditions(a, kNow).conditions, planModelConditions(b, kNow).conditions)
        << before.dump();
  }
  // What it lets through does change them: the roll-out ends, or gets stuck.
  ModelObserved a = serving(), b = serving();
  a.pods.pop_back();
  b.pods.pop_back();
  a.stableDeployment = ptr(rolling);
  b.stableDeployment = ptr(rolledOut);
  EXPECT_TRUE(deploymentChangeConcernsModel(rolling, rolledOut));
  EXPECT_NE(planModelConditions(a, kNow).conditions, planModelConditions(b, kNow).conditions);
  b.stableDeployment = ptr(stuck);
  EXPECT_TRUE(deploymentChangeConcernsModel(rolling, stuck));
  EXPECT_NE(planModelConditions(a, kNow).conditions, planModelConditions(b, kNow).conditions);
}

}  // namespace
}  // namespace lockstep::controllers::model_conditions_test
