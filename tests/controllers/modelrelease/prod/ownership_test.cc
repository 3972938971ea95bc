// Tests of "prod objects are Lockstep's alone" and of deleting a release
// (controllers/modelrelease/prod/ownership.h, modelrelease_plan.h): pure, no
// server. A foreign object at one of the model's prod names stops the release
// (Stalled, NameConflict) with no write to prod; a deleted release rolls its
// canary back before its finalizer goes; a Promoted one goes at once.
#include "controllers/modelrelease/prod/ownership.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/canary_status.h"
#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_anchor.h"
#include "api/v1alpha1/resources.h"
#include "controllers/modelrelease/modelrelease_plan.h"
#include "controllers/modelrelease/prod/model_record.h"
#include "controllers/modelrelease/prod/prod_plan.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "operator/kube/conditions.h"
#include "tests/support/builders.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

const std::string kOwnershipHash = "sha256:" + std::string(64, 'a');
const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kOwnershipPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
const std::string kOwnershipOldPackage =
    "registry.example/models/gpt2@sha256:" + std::string(64, 'b');

kube::ObjectPtr share(const json& o) { return std::make_shared<const kube::Object>(o); }

// The Model gpt2: `canary` holds the slot, prod runs `promoted` (package kOldPackage).
json modelOf(const std::string& canary, const std::string& promoted = "",
             const std::string& uid = "model-uid") {
  json m = kube::newObject(v1::kModels, "ml", "gpt2");
  m["metadata"]["uid"] = uid;
  m["metadata"]["resourceVersion"] = "40";
  m["status"] = {{"revision", 0}};
  if (!canary.empty()) m["status"]["canary"] = {{"release", canary}};
  if (!promoted.empty()) {
    m["status"]["prod"] = {{"release", promoted},
                           {"package", kOwnershipOldPackage},
                           {"runtime", {{"closureHash", kOwnershipHash}}}};
    m["status"]["revision"] = 1;
  }
  return m;
}

// The anchor ConfigMap an earlier version kept the record in.
json anchorOf(const std::string& canary, const std::string& promoted = "",
              const std::string& uid = "anchor-uid") {
  json cm = kube::newObject(v1::kConfigMaps, "ml", v1::modelAnchorName("gpt2"));
  cm["metadata"]["uid"] = uid;
  cm["metadata"]["resourceVersion"] = "40";
  cm["metadata"]["labels"] = {{v1::kModelLabel, "gpt2"}, {kManagedByLabel, kManagedByLockstep}};
  cm["data"] = {{v1::kAnchorCanary, canary}};
  if (!promoted.empty()) {
    cm["data"][v1::kAnchorPromoted] = promoted;
    cm["data"][v1::kAnchorPromotedPackage] = kOwnershipOldPackage;
    cm["data"][v1::kAnchorPromotedClosureHash] = kOwnershipHash;
    cm["data"][v1::kAnchorRevision] = "4";
    cm["data"][v1::kAnchorHistory] = json::array({{{"action", "Promoted"},
                                                   {"release", promoted},
                                                   {"package", kOwnershipOldPackage},
                                                   {"closureHash", kOwnershipHash},
                                                   {"at", "2026-11-30T08:00:00Z"}}})
                                         .dump();
  }
  return cm;
}

ServingObjectsInput inputFor(const std::string& modelUid = "model-uid") {
  ServingObjectsInput in;
  in.model = "gpt2";
  in.ns = "ml";
  in.modelUid = modelUid;
  return in;
}

// A Deployment of `track` as Lockstep builds it, running `release` with
// `replicas`, owned by the Model `modelUid`.
json ourDeployment(const std::string& track, const std::string& release, int replicas,
                   const std::string& modelUid = "model-uid") {
  ServingRelease r{release,        kOwnershipPackage,
                   kOwnershipHash, "torch",
                   kImage,         {{"spec", {{"containers", json::array({{{"name", "srv"}}})}}}}};
  auto d = buildServingDeployment(inputFor(modelUid), track, r, replicas);
  EXPECT_TRUE(d.isOk()) << d.status().toString();
  return *d;
}

// The team's own Service `gpt2` (the reproduction): selector app=gpt2, no labels.
json teamService() {
  json s = kube::newObject(v1::kServices, "ml", "gpt2");
  s["metadata"]["uid"] = "team-svc";
  s["spec"] = {{"selector", {{"app", "gpt2"}}},
               {"ports", json::array({{{"port", 80}, {"targetPort", 9000}}})}};
  return s;
}

TEST(NameConflict, NothingAtTheNamesOrEverythingOursIsNoConflict) {
  ProdObserved p;
  EXPECT_FALSE(findNameConflict("gpt2", p, "").has_value());
  p.model = share(modelOf("v2", "v1"));
  p.service = share(buildModelService(inputFor()));
  p.stableDeployment = share(ourDeployment(kTrackStable, "v1", 3));
  p.canaryDeployment = share(ourDeployment(kTrackCanary, "v2", 1));
  auto c = findNameConflict("gpt2", p, "model-uid");
  EXPECT_FALSE(c.has_value()) << c->message("ml", "gpt2");
}

TEST(NameConflict, TheTeamsServiceWithoutLockstepsLabelsIsAConflictNamingIt) {
  ProdObserved p;
  p.service = share(teamService());
  auto c = findNameConflict("gpt2", p, "");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kind, "Service");
  EXPECT_EQ(c->name, "gpt2");
  const std::string m = c->message("ml", "gpt2");
  EXPECT_NE(m.find("Service ml/gpt2 has no label lockstep.dev/model=gpt2"), std::string::npos) << m;
  EXPECT_NE(m.find("Rename or delete that Service"), std::string::npos) << m;
}

TEST(NameConflict, LabelsAloneDoNotMakeAnObjectLockstepsTheModelMustOwnIt) {
  ProdObserved p;
  p.model = share(modelOf("v2"));
  // Labelled like Lockstep's, but owned by no Model (copied from another namespace).
  json copied = ourDeployment(kTrackStable, "v1", 3);
  copied["metadata"].erase("ownerReferences");
  p.stableDeployment = share(copied);
  auto c = findNameConflict("gpt2", p, "");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->name, "gpt2-stable");
  EXPECT_NE(c->why.find("no owner reference to the Model gpt2"), std::string::npos) << c->why;

  // Owned by a Model of the same name that is gone (another uid).
  p.stableDeployment = share(ourDeployment(kTrackStable, "v1", 3, "old-model"));
  c = findNameConflict("gpt2", p, "");
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->why.find("earlier Model gpt2 (uid old-model)"), std::string::npos) << c->why;

  // Owned by the anchor ConfigMap of an earlier version: Lockstep's while
  // that anchor stands (the migration re-owns it), not once it is gone.
  json legacy = ourDeployment(kTrackStable, "v1", 3);
  legacy["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                                        {"kind", "ConfigMap"},
                                                        {"name", "lockstep-model-gpt2"},
                                                        {"uid", "anchor-uid"}}});
  p.stableDeployment = share(legacy);
  EXPECT_TRUE(findNameConflict("gpt2", p, "").has_value());
  p.legacyAnchor = share(anchorOf("", "v1"));
  EXPECT_FALSE(findNameConflict("gpt2", p, "").has_value());
  p.legacyAnchor = share(anchorOf("", "v1", "another-anchor"));
  EXPECT_TRUE(findNameConflict("gpt2", p, "").has_value());
  p.legacyAnchor = nullptr;

  // Another model's label.
  json other = ourDeployment(kTrackCanary, "v2", 1);
  other["metadata"]["labels"][v1::kModelLabel] = "llama";
  p.stableDeployment = nullptr;
  p.canaryDeployment = share(other);
  c = findNameConflict("gpt2", p, "");
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->why.find("lockstep.dev/model=llama (not gpt2)"), std::string::npos) << c->why;

  // No managed-by label.
  json unmanaged = ourDeployment(kTrackCanary, "v2", 1);
  unmanaged["metadata"]["labels"].erase(kManagedByLabel);
  p.canaryDeployment = share(unmanaged);
  c = findNameConflict("gpt2", p, "");
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->why.find("app.kubernetes.io/managed-by=lockstep"), std::string::npos) << c->why;
}

TEST(NameConflict, AReCreatedModelIsAConflict) {
  // Not the Model this release's canary started with.
  ProdObserved p;
  p.model = share(modelOf("v2", "", "new-uid"));
  auto c = findNameConflict("gpt2", p, "model-uid");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->kind, "Model");
  EXPECT_NE(c->why.find("deleted and re-created"), std::string::npos) << c->why;
  EXPECT_FALSE(findNameConflict("gpt2", p, "new-uid").has_value());
}

// --- The whole plan (planModelRelease): a release in its prod stage. ---

json prodRelease(const std::string& name, const std::string& package = kOwnershipPackage) {
  json r = testing::modelRelease(name)
               .model("gpt2")
               .package(package)
               .runtimeEnv("torch")
               .closureHash(kOwnershipHash)
               .uid("uid-" + name)
               .withProdStage(
                   testing::prodStage(json::array({testing::canaryStep(50, "1h")})).replicas(2))
               .build();
  r["metadata"]["resourceVersion"] = "11";
  r["metadata"]["finalizers"] = json::array({v1::kReleaseCleanupFinalizer});
  return r;
}

ModelReleaseObserved observedOwnership(const json& release) {
  ModelReleaseObserved o;
  o.release = share(release);
  o.gates.release = release;
  o.gates.runtimeEnv =
      testing::runtimeEnv("torch")
          .image(kImage)
          .status(
              {{"observedGeneration", 1},
               {"closureHash", kOwnershipHash},
               {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Resolved"}}}}})
          .build();
  o.gates.now = "2026-12-01T12:00:00Z";
  o.gates.nowUnix = 1796126400;
  o.prod.runtimeEnvs["torch"] = share(*o.gates.runtimeEnv);
  return o;
}

void withModel(ModelReleaseObserved& o, const json& model) {
  o.prod.model = share(model);
  const v1::Model m = v1::decodeModel(model);
  o.gates.canaryRelease = m.canaryHolder();
  o.gates.promotedRelease = m.promoted();
  o.gates.modelRevision = m.prodRevision();
}

// The Model status a planned write of it carries.
v1::ModelStatus writtenModel(const PlannedApply& a) {
  EXPECT_EQ(a.resource.kind, "Model");
  EXPECT_TRUE(a.statusSubresource) << a.what;
  EXPECT_EQ(a.verb, WriteVerb::kUpdate) << a.what;
  return v1::decodeModel(a.object).status;
}

std::string conditionOf(const json& status, const std::string& type, const std::string& field) {
  auto c = kube::findCondition(status.value("conditions", json::array()), type);
  return c ? c->value(field, "") : "";
}

bool writesTo(const ExecutionPlan& x, const std::string& kind, const std::string& name) {
  for (const PlannedApply& a : x.apply) {
    const std::string n = a.verb == WriteVerb::kMergePatch ? a.name : kube::name(a.object);
    if (a.resource.kind == kind && n == name) return true;
  }
  return false;
}

TEST(NameConflictPlan, AForeignServiceStopsTheReleaseBeforeAnyProdWrite) {
  ModelReleaseObserved o = observedOwnership(prodRelease("v2"));
  o.prod.service = share(teamService());  // the Model does not exist yet
  ModelReleasePlan plan = planModelRelease(o);

  EXPECT_TRUE(plan.execution.apply.empty()) << "no Model, no Service, no Deployment written";
  EXPECT_TRUE(plan.execution.prune.empty());
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  EXPECT_EQ(status["phase"], v1::kPhaseCanary);
  EXPECT_EQ(conditionOf(status, "Stalled", "status"), "True");
  EXPECT_EQ(conditionOf(status, "Stalled", "reason"), v1::kReasonNameConflict);
  EXPECT_EQ(conditionOf(status, "Ready", "reason"), v1::kReasonNameConflict);
  EXPECT_NE(conditionOf(status, "Stalled", "message").find("Service ml/gpt2"), std::string::npos);
  EXPECT_FALSE(status.contains("canary")) << "no canary started";
  int conflicts = 0;
  for (const PlannedEvent& e : plan.execution.events) {
    if (e.reason != v1::kReasonNameConflict) continue;
    ++conflicts;
    EXPECT_EQ(e.type, "Warning");
  }
  EXPECT_EQ(conflicts, 1);
  EXPECT_EQ(plan.release.requeueAfterSeconds, 10) << "an unlabelled object sends no event";

  // The same conflict observed again: no second Event, the status stays.
  json again = prodRelease("v2");
  again["status"] = status;
  ModelReleaseObserved o2 = observedOwnership(again);
  o2.prod.service = share(teamService());
  ModelReleasePlan plan2 = planModelRelease(o2);
  EXPECT_TRUE(plan2.execution.apply.empty());
  for (const PlannedEvent& e : plan2.execution.events)
    EXPECT_NE(e.reason, v1::kReasonNameConflict) << "one Event per conflict, not per look";
  EXPECT_FALSE(plan2.execution.status.has_value()) << plan2.execution.status->object.dump(2);
}

TEST(NameConflictPlan, AForeignStableDeploymentIsFoundBeforeTheFirstCanaryStarts) {
  // The first release: no stable track would be written before its promotion,
  // yet the conflict is found before any canary pod.
  ModelReleaseObserved o = observedOwnership(prodRelease("v1"));
  withModel(o, modelOf("v1"));
  json foreign = kube::newObject(v1::kDeployments, "ml", "gpt2-stable");
  foreign["spec"] = {{"replicas", 3}, {"selector", {{"matchLabels", {{"app", "gpt2"}}}}}};
  o.prod.stableDeployment = share(foreign);
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_TRUE(plan.execution.apply.empty());
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  EXPECT_EQ(conditionOf(status, "Stalled", "reason"), v1::kReasonNameConflict);
  EXPECT_NE(conditionOf(status, "Stalled", "message").find("Deployment ml/gpt2-stable"),
            std::string::npos);

  // Once it is gone, the canary starts: the Service and the canary Deployment.
  o.prod.stableDeployment = nullptr;
  plan = planModelRelease(o);
  EXPECT_TRUE(writesTo(plan.execution, "Service", "gpt2"));
  EXPECT_TRUE(writesTo(plan.execution, "Deployment", "gpt2-canary"));
  EXPECT_EQ(plan.execution.status->object["status"]["canary"]["modelUid"], "model-uid");
}

TEST(ReleaseDeletion, ReachingProdAddsTheFinalizerBeforeAnyProdWrite) {
  json r = prodRelease("v2");
  r["metadata"].erase("finalizers");
  ModelReleaseObserved o = observedOwnership(r);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  const PlannedApply& a = plan.execution.apply[0];
  EXPECT_EQ(a.resource.kind, "ModelRelease");
  EXPECT_EQ(a.verb, WriteVerb::kMergePatch);
  EXPECT_EQ(a.object["metadata"]["finalizers"], json::array({v1::kReleaseCleanupFinalizer}));
  EXPECT_EQ(a.object["metadata"]["resourceVersion"], "11");
  EXPECT_TRUE(plan.stop);
  EXPECT_FALSE(plan.execution.status.has_value());
}

// A release mid-canary (step 1 at 50 % of 2 replicas: 1 canary, 1 stable... 2
// stable in surge) on top of the known-good v1.
ModelReleaseObserved midCanary(bool deleted) {
  json r = prodRelease("v2");
  r["status"] = {{"phase", v1::kPhaseCanary},
                 {"currentStage", "prod"},
                 {"stages", json::array({{{"name", "prod"}, {"phase", "Running"}}})},
                 {"canary",
                  {{"phase", "Progressing"},
                   {"step", 0},
                   {"startedAt", "2026-12-01T11:59:00Z"},
                   {"stepStartedAt", "2026-12-01T11:59:00Z"},
                   {"weightReachedAt", "2026-12-01T11:59:30Z"},
                   {"capacity", "surge"},
                   {"modelUid", "model-uid"},
                   {"knownGood",
                    {{"release", "v1"},
                     {"package", kOwnershipOldPackage},
                     {"closureHash", kOwnershipHash}}}}}};
  if (deleted) r["metadata"]["deletionTimestamp"] = "2026-12-01T11:59:50Z";
  ModelReleaseObserved o = observedOwnership(r);
  withModel(o, modelOf("v2", "v1"));
  o.prod.service = share(buildModelService(inputFor()));
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  o.prod.canaryDeployment = share(ourDeployment(kTrackCanary, "v2", 1));
  o.prod.releaseDeleted = deleted;
  return o;
}

TEST(ReleaseDeletion, DeletingMidCanaryRollsBackLikeAnAbortAndKeepsTheFinalizer) {
  ModelReleasePlan plan = planModelRelease(midCanary(true));
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  EXPECT_EQ(status["canary"]["phase"], "RollingBack");
  EXPECT_EQ(status["canary"]["reason"], v1::kReasonReleaseDeleted);
  for (const PlannedApply& a : plan.execution.apply)
    EXPECT_NE(a.resource.kind, "ModelRelease") << "the finalizer stays until prod is restored";
  EXPECT_GT(plan.release.requeueAfterSeconds, 0);

  // Not deleted: the same release just keeps its canary.
  ModelReleasePlan live = planModelRelease(midCanary(false));
  EXPECT_EQ(live.execution.status ? live.execution.status->object["status"]["canary"]["phase"]
                                  : json("Progressing"),
            "Progressing");
}

// An unreadable status.canary (canary_status.h) stalls the release before any
// prod write, keeping the status as written; repaired, the canary goes on.
TEST(UnreadableCanaryStatus, StallsBeforeAnyProdWriteUntilRepaired) {
  ModelReleaseObserved o = midCanary(false);
  json r = *o.release;
  r["status"]["canary"]["step"] = "first";
  o.release = share(r);
  o.gates.release = r;
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_TRUE(plan.execution.apply.empty()) << "no Model, Service or Deployment written";
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  EXPECT_EQ(status["phase"], v1::kPhaseCanary);
  EXPECT_EQ(status["canary"], r["status"]["canary"]) << "kept as written";
  EXPECT_EQ(conditionOf(status, "Stalled", "status"), "True");
  EXPECT_EQ(conditionOf(status, "Stalled", "reason"), v1::kReasonCanaryStatusUnreadable);
  EXPECT_NE(
      conditionOf(status, "Stalled", "message").find("status.canary.step: must be an integer"),
      std::string::npos)
      << conditionOf(status, "Stalled", "message");
  int warnings = 0;
  for (const PlannedEvent& e : plan.execution.events)
    warnings += e.reason == v1::kReasonCanaryStatusUnreadable ? 1 : 0;
  EXPECT_EQ(warnings, 1);

  r["status"]["canary"]["step"] = 0;
  o.release = share(r);
  o.gates.release = r;
  ModelReleasePlan repaired = planModelRelease(o);
  ASSERT_TRUE(repaired.execution.status.has_value());
  const json& again = repaired.execution.status->object["status"];
  EXPECT_NE(conditionOf(again, "Stalled", "reason"), v1::kReasonCanaryStatusUnreadable);
  EXPECT_EQ(again["canary"]["phase"], "Progressing");
}

TEST(ReleaseDeletion, OnceRolledBackTheFinalizerGoesAndNothingElseIsWritten) {
  ModelReleaseObserved o = midCanary(true);
  json r = *o.release;
  r["status"]["phase"] = v1::kPhaseRolledBack;
  r["status"]["canary"]["phase"] = "RolledBack";
  o = observedOwnership(r);
  withModel(o, modelOf("", "v1"));  // the rollback freed the slot
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  o.prod.canaryDeployment = share(ourDeployment(kTrackCanary, "v2", 0));
  o.prod.releaseDeleted = true;
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  const PlannedApply& a = plan.execution.apply[0];
  EXPECT_EQ(a.resource.kind, "ModelRelease");
  EXPECT_EQ(a.object["metadata"]["finalizers"], json::array());
  EXPECT_FALSE(plan.execution.status.has_value());
}

TEST(ReleaseDeletion, DeletingAPromotedReleaseNeverTouchesProd) {
  json r = prodRelease("v2");
  r["metadata"]["deletionTimestamp"] = "2026-12-01T11:59:50Z";
  r["status"] = {{"phase", v1::kPhasePromoted}, {"canary", {{"phase", "Promoted"}}}};
  ModelReleaseObserved o = observedOwnership(r);
  withModel(o, modelOf("", "v2"));
  o.prod.service = share(buildModelService(inputFor()));
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v2", 2));
  o.prod.canaryDeployment = share(ourDeployment(kTrackCanary, "v2", 0));
  o.prod.releaseDeleted = true;
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u) << "only the finalizer";
  EXPECT_EQ(plan.execution.apply[0].resource.kind, "ModelRelease");
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
}

TEST(ReleaseDeletion, AReleaseHoldingTheSlotWithoutACanaryFreesItBeforeItGoes) {
  // Failed after claiming the slot (e.g. InvalidSpec in prod): nothing runs,
  // but the slot is freed so the next release of the model can start.
  json r = prodRelease("v2");
  r["metadata"]["deletionTimestamp"] = "2026-12-01T11:59:50Z";
  r["status"] = {{"phase", v1::kPhaseFailed}};
  ModelReleaseObserved o = observedOwnership(r);
  withModel(o, modelOf("v2", "v1"));
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  o.prod.releaseDeleted = true;
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 2u);
  EXPECT_FALSE(writtenModel(plan.execution.apply[0]).canary) << "the slot is free";
  EXPECT_EQ(plan.execution.apply[1].resource.kind, "ModelRelease");
}

TEST(ReleaseDeletion, WhenProdItselfIsBeingDeletedTheFinalizerGoesAtOnce) {
  // A namespace deletion or `lockstep model delete`: nothing to restore into.
  ModelReleaseObserved o = midCanary(true);
  json model = modelOf("v2", "v1");
  model["metadata"]["deletionTimestamp"] = "2026-12-01T11:59:55Z";
  o.prod.model = share(model);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  EXPECT_EQ(plan.execution.apply[0].resource.kind, "ModelRelease");
}

// Issue 28: no deletion waits forever. A release deleted mid-canary rolls back
// until its deadline (from metadata.deletionTimestamp, the clock an input);
// past it the finalizer goes with the slot freed and a Warning Event, whatever
// the rollback's state. A release with nothing left to undo goes without one.
TEST(ReleaseDeletion, PastItsDeadlineTheFinalizerGoesWithAWarning) {
  const int64_t deletedAt = 1796126390;  // midCanary's deletionTimestamp, 11:59:50Z
  struct Case {
    const char* name;
    int64_t deadline;
    int64_t sinceDeletion;
    bool late;
  };
  const Case cases[] = {
      {"the default deadline, 10 s after the deletion", kDefaultReleaseDeletionDeadlineSeconds, 10,
       false},
      {"one second before the deadline", 60, 59, false},
      {"at the deadline", 60, 60, true},
      {"long past the default deadline", kDefaultReleaseDeletionDeadlineSeconds, 86400, true},
      {"a clock behind the deletion", 60, -30, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ModelReleaseObserved o = midCanary(true);
    o.deletionDeadlineSeconds = c.deadline;
    o.gates.nowUnix = deletedAt + c.sinceDeletion;
    ModelReleasePlan plan = planModelRelease(o);
    int warnings = 0;
    for (const PlannedEvent& e : plan.execution.events) {
      if (e.reason != kReasonReleaseDeletionDeadline) continue;
      ++warnings;
      EXPECT_EQ(e.type, "Warning");
      EXPECT_NE(e.message.find("v2"), std::string::npos) << e.message;
      EXPECT_NE(e.message.find("gpt2-canary"), std::string::npos) << e.message;
      EXPECT_NE(e.message.find(v1::kReleaseCleanupFinalizer), std::string::npos) << e.message;
    }
    if (!c.late) {
      EXPECT_EQ(warnings, 0);
      ASSERT_TRUE(plan.execution.status.has_value());
      EXPECT_EQ(plan.execution.status->object["status"]["canary"]["reason"],
                v1::kReasonReleaseDeleted);
      EXPECT_FALSE(writesTo(plan.execution, "ModelRelease", "v2")) << "the finalizer stays";
      continue;
    }
    EXPECT_EQ(warnings, 1);
    ASSERT_EQ(plan.execution.apply.size(), 2u);
    EXPECT_FALSE(writtenModel(plan.execution.apply[0]).canary) << "slot freed";
    EXPECT_EQ(plan.execution.apply[1].resource.kind, "ModelRelease");
    EXPECT_EQ(plan.execution.apply[1].object["metadata"]["finalizers"], json::array());
    EXPECT_FALSE(plan.execution.status.has_value());
    EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
    EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-canary"));
  }

  // Rolled back already: nothing to undo, no Warning, late or not.
  ModelReleaseObserved done = midCanary(true);
  json r = *done.release;
  r["status"]["phase"] = v1::kPhaseRolledBack;
  r["status"]["canary"]["phase"] = "RolledBack";
  done = observedOwnership(r);
  withModel(done, modelOf("", "v1"));
  done.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  done.prod.canaryDeployment = share(ourDeployment(kTrackCanary, "v2", 0));
  done.prod.releaseDeleted = true;
  done.deletionDeadlineSeconds = 60;
  done.gates.nowUnix = deletedAt + 3600;
  ModelReleasePlan plan = planModelRelease(done);
  EXPECT_TRUE(plan.execution.events.empty());
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  EXPECT_EQ(plan.execution.apply[0].resource.kind, "ModelRelease");
}

// --- The Service port belongs to the model (docs/rollouts.md). ---

// v2 on `port`, created before v1 had prod; v1 now runs prod on 8080.
ModelReleaseObserved portWorld(int port) {
  json r = prodRelease("v2");
  r["spec"]["stages"][0]["serving"]["port"] = port;
  ModelReleaseObserved o = observedOwnership(r);
  withModel(o, modelOf("", "v1"));
  o.prod.service = share(buildModelService(inputFor()));  // port 8080
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  return o;
}

TEST(ServicePort, AReleaseOnAnotherPortStallsBeforeItsCanaryAndProdStays) {
  ModelReleasePlan plan = planModelRelease(portWorld(8000));
  EXPECT_TRUE(plan.execution.apply.empty()) << "no claim, no Service, no Deployment written";
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  EXPECT_EQ(conditionOf(status, "Stalled", "status"), "True");
  EXPECT_EQ(conditionOf(status, "Stalled", "reason"), v1::kReasonServicePortConflict);
  EXPECT_EQ(conditionOf(status, "Ready", "status"), "False");
  const std::string m = conditionOf(status, "Stalled", "message");
  EXPECT_NE(m.find("serving port 8000 (spec.stages[0].serving.port) differs from port 8080 of "
                   "Service ml/gpt2, on which release v1 runs model gpt2's prod"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("lockstep model delete gpt2"), std::string::npos) << m;
  EXPECT_FALSE(status.contains("canary")) << "no canary started";
  int events = 0;
  for (const PlannedEvent& e : plan.execution.events)
    events += e.reason == v1::kReasonServicePortConflict ? 1 : 0;
  EXPECT_EQ(events, 1);

  // The model's port: the canary may start (it claims the slot first).
  ModelReleasePlan same = planModelRelease(portWorld(8080));
  ASSERT_FALSE(same.execution.apply.empty());
  EXPECT_EQ(writtenModel(same.execution.apply[0]).canary->release, "v2");
}

TEST(ServicePort, WithoutProdAnyPortMayStartAndWithoutAServiceTheReleasesPortCounts) {
  // No release runs prod yet (the first one rolled back): the Service may move.
  ModelReleaseObserved o = portWorld(8000);
  withModel(o, modelOf(""));
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_FALSE(plan.execution.apply.empty());
  EXPECT_EQ(writtenModel(plan.execution.apply[0]).canary->release, "v2");

  // Prod runs v1 but its Service is gone: v1's own serving port is the model's.
  o = portWorld(8000);
  o.prod.service = nullptr;
  json v1r = prodRelease("v1", kOwnershipOldPackage);
  v1r["status"] = {{"phase", v1::kPhasePromoted}, {"canary", {{"phase", "Promoted"}}}};
  o.prod.releases["v1"] = share(v1r);
  plan = planModelRelease(o);
  ASSERT_TRUE(plan.execution.status.has_value());
  EXPECT_EQ(conditionOf(plan.execution.status->object["status"], "Stalled", "reason"),
            v1::kReasonServicePortConflict);
}

TEST(ServicePort, AManualRollbackToAReleaseOnAnotherPortIsRefused) {
  // v1 (on 9000, admitted before prod existed) was promoted once; prod runs v2 on 8080.
  json r = prodRelease("v1", kOwnershipOldPackage);
  r["spec"]["stages"][0]["serving"]["port"] = 9000;
  r["metadata"]["annotations"] = {{"rollback.lockstep.dev/1", "alice"}};
  r["status"] = {{"phase", v1::kPhaseSuperseded}, {"canary", {{"phase", "Promoted"}}}};
  ModelReleaseObserved o = observedOwnership(r);
  withModel(o, modelOf("", "v2"));
  o.prod.service = share(buildModelService(inputFor()));  // port 8080
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v2", 2));
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable")) << "stable stays on v2";
  EXPECT_FALSE(writesTo(plan.execution, "Model", "gpt2"));
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  const std::string refused = status["rollback"].value("refused", "");
  EXPECT_NE(refused.find("release v1 serves on port 9000, but Service ml/gpt2 of model gpt2 "
                         "serves on port 8080"),
            std::string::npos)
      << status.dump(2);
}

// Issue 28 (must-show 4): a manual rollback keeps the Model's replicas, and in
// surge with no spare GPU for one pod, re-templates stable as drain (one pod
// traded at a time) instead of leaving a surge pod Pending forever.
TEST(ManualRollbackCapacity, AFullClusterTradesOnePodAtATimeAndTheModelsReplicasStay) {
  auto world = [](std::vector<int64_t> freePerNode) {
    json r = prodRelease("v1", kOwnershipOldPackage);  // written with serving.replicas 2, surge
    r["metadata"]["annotations"] = {{"rollback.lockstep.dev/1", "alice"}};
    r["status"] = {{"phase", v1::kPhaseSuperseded}, {"canary", {{"phase", "Promoted"}}}};
    ModelReleaseObserved o = observedOwnership(r);
    json model = modelOf("", "v2");
    model["spec"]["replicas"] = 3;
    withModel(o, model);
    o.prod.service = share(buildModelService(inputFor()));
    o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v2", 3));
    o.prod.gpu = GpuCapacity{1, std::move(freePerNode)};
    return o;
  };
  auto stableWrite = [](const ModelReleasePlan& plan) -> json {
    for (const PlannedApply& a : plan.execution.apply) {
      if (a.resource.kind == "Deployment" && kube::name(a.object) == "gpt2-stable") return a.object;
    }
    return nullptr;
  };
  auto traded = [](const ModelReleasePlan& plan) {
    for (const PlannedEvent& e : plan.execution.events) {
      if (e.reason == kReasonRollbackTradesPods) return true;
    }
    return false;
  };
  // Every GPU taken: drain, said in an Event.
  ModelReleasePlan full = planModelRelease(world({0, 0}));
  json stable = stableWrite(full);
  ASSERT_TRUE(stable.is_object()) << "the rollback re-templates stable";
  EXPECT_EQ(stable["spec"]["replicas"], 3) << "the Model's replicas, not the target's 2";
  EXPECT_EQ(stable["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
  EXPECT_EQ(stable["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 1);
  EXPECT_TRUE(traded(full));
  EXPECT_TRUE(writesTo(full.execution, "Model", "gpt2")) << "the record moves first, as always";
  // A spare GPU: the Model's surge.
  ModelReleasePlan spare = planModelRelease(world({0, 1}));
  stable = stableWrite(spare);
  ASSERT_TRUE(stable.is_object());
  EXPECT_EQ(stable["spec"]["replicas"], 3);
  EXPECT_EQ(stable["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1);
  EXPECT_EQ(stable["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
  EXPECT_FALSE(traded(spare));
}

// --- The Model's record is a trust root (docs/rollouts.md). ---

// v2 about to claim the slot while the Model says prod runs `named`.
ModelReleaseObserved trustWorld(const json& named) {
  ModelReleaseObserved o = observedOwnership(prodRelease("v2"));
  withModel(o, modelOf("", "v1"));
  o.prod.service = share(buildModelService(inputFor()));
  o.prod.releases["v1"] = named.is_null() ? nullptr : share(named);
  return o;
}

json promotedV1() {
  json v1r = prodRelease("v1", kOwnershipOldPackage);
  v1r["status"] = {{"phase", v1::kPhasePromoted}, {"canary", {{"phase", "Promoted"}}}};
  return v1r;
}

json promotedV1Release() { return promotedV1(); }

std::string stalledReason(const ModelReleasePlan& plan) {
  if (!plan.execution.status) return "";
  return conditionOf(plan.execution.status->object["status"], "Stalled", "reason");
}

TEST(AnchorTrust, PromotedIsCheckedAgainstTheReleaseItNamesBeforeStableRunsIt) {
  // The release the Model names got there: the canary goes on (claims the slot).
  ModelReleasePlan ok = planModelRelease(trustWorld(promotedV1()));
  EXPECT_EQ(stalledReason(ok), "") << ok.execution.status->object.dump(2);
  ASSERT_FALSE(ok.execution.apply.empty());
  EXPECT_EQ(writtenModel(ok.execution.apply[0]).canary->release, "v2");

  struct Bad {
    std::string name;
    json named;
    std::string why;
  };
  json neverPromoted = prodRelease("v1", kOwnershipOldPackage);
  neverPromoted["status"] = {{"phase", v1::kPhaseRolledBack},
                             {"canary", {{"phase", "RolledBack"}}}};
  // Its status.canary unreadable: it is not read as one that never started.
  json unreadable = prodRelease("v1", kOwnershipOldPackage);
  unreadable["status"] = {{"phase", v1::kPhaseSuperseded},
                          {"canary", {{"phase", "Promoted"}, {"step", "1"}}}};
  json otherModel = promotedV1();
  otherModel["spec"]["model"] = "llama";
  json otherPackage = promotedV1();
  otherPackage["spec"]["package"] = kOwnershipPackage;
  json otherClosure = promotedV1();
  otherClosure["spec"]["closureHash"] = "sha256:" + std::string(64, 'e');
  for (const Bad& b : std::vector<Bad>{
           {"gone, stable not running it", nullptr, "no such release exists"},
           {"never promoted", neverPromoted, "never reached prod"},
           {"unreadable status.canary", unreadable,
            "never reached prod (its status shows no promotion; status.canary "
            "cannot be read (status.canary.step: must be an integer))"},
           {"another model", otherModel, "of model llama"},
           {"another package", otherPackage, "records package " + kOwnershipOldPackage},
           {"another closure", otherClosure, "records closure " + kOwnershipHash}}) {
    ModelReleasePlan plan = planModelRelease(trustWorld(b.named));
    EXPECT_TRUE(plan.execution.apply.empty()) << b.name << ": nothing in prod written";
    EXPECT_EQ(stalledReason(plan), v1::kReasonAnchorMismatch) << b.name;
    const std::string m =
        plan.execution.status
            ? conditionOf(plan.execution.status->object["status"], "Stalled", "message")
            : "";
    EXPECT_NE(m.find("Model ml/gpt2 says prod runs release v1, but "), std::string::npos)
        << b.name << ": " << m;
    EXPECT_NE(m.find(b.why), std::string::npos) << b.name << ": " << m;
  }

  // A Promoted release deleted since: stable runs its pods, that is fine.
  ModelReleaseObserved deleted = trustWorld(nullptr);
  deleted.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  EXPECT_EQ(stalledReason(planModelRelease(deleted)), "");

  // Deleted while this release's handover is in flight (a GitOps prune of old
  // releases, found by the soak benchmark): stable already runs this release,
  // which holds the canary slot by its uid; the handover goes on.
  ModelReleaseObserved handover = trustWorld(nullptr);
  handover.prod.stableDeployment = share(ourDeployment(kTrackStable, "v2", 2));
  v1::ProdContent slot;
  slot.release = "v2";
  slot.uid = v1::decodeMeta(*handover.release).uid;
  ASSERT_FALSE(slot.uid.empty());
  json model = *handover.prod.model;
  model["status"]["canary"] = {{"release", slot.release}, {"uid", slot.uid}};
  withModel(handover, model);
  EXPECT_EQ(stalledReason(planModelRelease(handover)), "");
  // The slot held by another object of that name (deleted and re-created): no handover.
  model["status"]["canary"]["uid"] = "another-object";
  withModel(handover, model);
  EXPECT_EQ(stalledReason(planModelRelease(handover)), v1::kReasonAnchorMismatch);
}

TEST(AnchorTrust, AReCreatedModelStartsPastEveryRollbackRequestOfTheModel) {
  json r = prodRelease("v3");
  r["metadata"]["annotations"] = {{"rollback.lockstep.dev/2", "alice"},
                                  {"rollback.lockstep.dev/x", "bob"},
                                  {"team.example/owner", "ml"}};
  EXPECT_EQ(highestRollbackRevision(r), 2);
  r["status"]["rollback"] = {{"revision", "5"}};
  EXPECT_EQ(highestRollbackRevision(r), 5);
  EXPECT_EQ(highestRollbackRevision(prodRelease("v1")), 0);

  // No Model (it was deleted): one is created with defaults, then looked at again.
  ModelReleaseObserved o = observedOwnership(prodRelease("v4"));
  o.prod.highestRollbackRevision = 5;
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  const PlannedApply& create = plan.execution.apply[0];
  EXPECT_EQ(create.verb, WriteVerb::kCreate);
  EXPECT_EQ(create.resource.kind, "Model");
  EXPECT_TRUE(create.alreadyExistsIsConflict);
  EXPECT_EQ(create.object["spec"], json::object());
  EXPECT_TRUE(plan.stop);
  // Its first status write (the claim) starts the revision at 5: the first
  // promotion on it records 6, so a request keyed 5 or less never fires.
  withModel(o, modelOf(""));
  plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  const v1::ModelStatus claimed = writtenModel(plan.execution.apply[0]);
  EXPECT_EQ(claimed.revision, 5);
  EXPECT_EQ(claimed.canary->release, "v4");
  EXPECT_EQ(claimed.canary->uid, "uid-v4");
  EXPECT_EQ(claimed.canary->contentDigest.rfind("sha256:", 0), 0u);
  // A model none ever rolled back: revision 0.
  o.prod.highestRollbackRevision = 0;
  plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  EXPECT_EQ(writtenModel(plan.execution.apply[0]).revision, 0);
}

// --- Migration from the anchor ConfigMap of an earlier version. ---

TEST(Migration, TheAnchorBecomesAModelKeepingHistoryThenServingIsReOwnedThenTheAnchorGoes) {
  // An earlier version ran v1 in prod: the anchor owns the Service and stable.
  json v1r = promotedV1Release();
  ModelReleaseObserved o = observedOwnership(v1r);
  json legacyOwner = json::array({{{"apiVersion", "v1"},
                                   {"kind", "ConfigMap"},
                                   {"name", "lockstep-model-gpt2"},
                                   {"uid", "anchor-uid"}}});
  json svc = buildModelService(inputFor(""));
  svc["metadata"]["uid"] = "svc-uid";
  svc["metadata"]["ownerReferences"] = legacyOwner;
  json stable = ourDeployment(kTrackStable, "v1", 2, "");
  stable["metadata"]["uid"] = "stable-uid";
  stable["metadata"]["ownerReferences"] = legacyOwner;
  o.prod.service = share(svc);
  o.prod.stableDeployment = share(stable);
  o.prod.legacyAnchor = share(anchorOf("", "v1"));

  // 1. No Model: it is created.
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  EXPECT_EQ(plan.execution.apply[0].verb, WriteVerb::kCreate);
  EXPECT_EQ(plan.execution.apply[0].resource.kind, "Model");
  EXPECT_TRUE(plan.stop);

  // 2. Its status is built from the anchor: prod (with v1's uid and content
  // digest, its package and closure matching), the revision, the history and
  // an Adopted entry.
  o.prod.model = share(modelOf(""));
  plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u);
  const v1::ModelStatus adopted = writtenModel(plan.execution.apply[0]);
  ASSERT_TRUE(adopted.prod);
  EXPECT_EQ(adopted.prod->release, "v1");
  EXPECT_EQ(adopted.prod->uid, "uid-v1");
  EXPECT_EQ(adopted.prod->package, kOwnershipOldPackage);
  EXPECT_EQ(adopted.prod->contentDigest.rfind("sha256:", 0), 0u);
  EXPECT_EQ(adopted.revision, 4);
  ASSERT_EQ(adopted.history.size(), 2u);
  EXPECT_EQ(adopted.history[0].action, "Promoted");
  EXPECT_EQ(adopted.history[0].runtime.closureHash, kOwnershipHash);
  EXPECT_EQ(adopted.history[1].action, "Adopted");
  EXPECT_TRUE(plan.stop);
  // Nothing else moved: no Service or Deployment written, the anchor kept.
  EXPECT_FALSE(writesTo(plan.execution, "Service", "gpt2"));
  EXPECT_TRUE(plan.execution.prune.empty());

  // 3. The serving objects are re-owned by the Model: a merge patch of their
  // ownerReferences under their uid (their pod template is untouched).
  json model = modelOf("", "v1");
  model["status"]["history"] = json::array({{{"action", "Adopted"}, {"release", "v1"}}});
  o.prod.model = share(model);
  plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 2u);
  for (const PlannedApply& a : plan.execution.apply) {
    EXPECT_EQ(a.verb, WriteVerb::kMergePatch);
    EXPECT_FALSE(a.object.contains("spec")) << a.what;
    EXPECT_EQ(a.object["metadata"]["ownerReferences"],
              json::array({v1::modelOwnerReference("gpt2", "model-uid")}));
  }
  EXPECT_EQ(plan.execution.apply[0].uid, "svc-uid");
  EXPECT_EQ(plan.execution.apply[1].name, "gpt2-stable");
  EXPECT_EQ(plan.execution.apply[1].uid, "stable-uid");
  EXPECT_TRUE(plan.execution.prune.empty()) << "the anchor stays until nothing needs it";

  // 4. Everything is the Model's: the anchor is deleted under its uid.
  o.prod.service = share(buildModelService(inputFor()));
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  plan = planModelRelease(o);
  EXPECT_TRUE(plan.execution.apply.empty());
  ASSERT_EQ(plan.execution.prune.size(), 1u);
  EXPECT_EQ(plan.execution.prune[0].name, "lockstep-model-gpt2");
  EXPECT_EQ(plan.execution.prune[0].uid, "anchor-uid");

  // 5. Once it is gone, the release plans as usual (a Promoted release writes nothing).
  o.prod.legacyAnchor = nullptr;
  withModel(o, model);
  plan = planModelRelease(o);
  EXPECT_TRUE(plan.execution.prune.empty());
  EXPECT_FALSE(plan.stop);
}

// --- A release is known by its content (docs/rollouts.md "Content identity"). ---

// The Model after v1 (package kOldPackage, pinned to revision 2) was promoted
// as the object `uid`; prod's stable Deployment runs v1 with 2 pods.
ModelReleaseObserved prodRunsV1(const json& release, const std::string& uid = "uid-v1-deleted") {
  ModelReleaseObserved o = observedOwnership(release);
  json recorded = prodRelease("v1", kOwnershipOldPackage);
  const v1::RuntimePin pin{2, kImage, kOwnershipHash};
  json model = modelOf("", "v1");
  model["status"]["revision"] = 3;
  model["status"]["prod"] = {
      {"release", "v1"},
      {"uid", uid},
      {"contentDigest", v1::contentDigest(v1::releaseContent(recorded, pin))},
      {"package", kOwnershipOldPackage},
      {"runtime",
       {{"runtimeEnv", "torch"},
        {"image", kImage},
        {"closureHash", kOwnershipHash},
        {"revision", 2}}}};
  withModel(o, model);
  o.prod.service = share(buildModelService(inputFor()));
  o.prod.stableDeployment = share(ourDeployment(kTrackStable, "v1", 2));
  return o;
}

bool writesAnyServingObject(const ExecutionPlan& x) {
  return writesTo(x, "Service", "gpt2") || writesTo(x, "Deployment", "gpt2-stable") ||
         writesTo(x, "Deployment", "gpt2-canary");
}

// The review's finding: a Promoted release deleted and re-applied (a GitOps
// re-apply after a prune, a restore, kubectl replace --force) is a new object
// under prod's name. With prod's very content it IS prod: Promoted at once on
// the recorded pair, no gate Job, no canary, no write to a serving object.
TEST(ContentIdentity, AReleaseReCreatedWithProdsContentIsPromotedWithNoGateCanaryOrPod) {
  json again = testing::modelRelease("v1")
                   .model("gpt2")
                   .package(kOwnershipOldPackage)
                   .runtimeEnv("torch")
                   .closureHash(kOwnershipHash)
                   .uid("uid-v1")
                   .withStage("eval")
                   .withProdStage(
                       testing::prodStage(json::array({testing::canaryStep(50, "1h")})).replicas(2))
                   .build();
  again["metadata"]["resourceVersion"] = "11";
  // What prod ran: the same spec (gate and prod stage) as the deleted object.
  json recorded = again;
  ModelReleaseObserved o = prodRunsV1(again);
  {
    const v1::RuntimePin pin{2, kImage, kOwnershipHash};
    json model = *o.prod.model;
    model["status"]["prod"]["contentDigest"] = v1::contentDigest(v1::releaseContent(recorded, pin));
    withModel(o, model);
  }
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u) << "the Model's record, nothing else";
  const v1::ModelStatus m = writtenModel(plan.execution.apply[0]);
  EXPECT_EQ(m.prod->uid, "uid-v1") << "the record now names this object";
  EXPECT_EQ(m.prod->release, "v1");
  EXPECT_EQ(m.revision, 3) << "prod did not change";
  ASSERT_FALSE(m.history.empty());
  EXPECT_EQ(m.history.back().action, v1::kModelActionRecognized);
  EXPECT_FALSE(writesAnyServingObject(plan.execution));
  EXPECT_TRUE(plan.release.jobsToCreate.empty()) << "no gate Job";
  ASSERT_TRUE(plan.execution.status.has_value());
  const json& status = plan.execution.status->object["status"];
  EXPECT_EQ(status["phase"], v1::kPhasePromoted);
  EXPECT_EQ(status["canary"]["phase"], v1::kPhasePromoted);
  EXPECT_EQ(status["runtime"], v1::encodeRuntimePin({2, kImage, kOwnershipHash}))
      << "the recorded pair";
  EXPECT_EQ(conditionOf(status, "Ready", "status"), "True");
  EXPECT_EQ(conditionOf(status, "Ready", "reason"), v1::kReasonRecognizedAsProd);
  for (const json& st : status["stages"]) EXPECT_EQ(st["phase"], "Succeeded") << st.dump();
}

// The same name with other content is a new release: it never takes prod
// under that name, and prod (stable v1, 2 pods) is never scaled down for it.
TEST(ContentIdentity, TheSameNameWithOtherContentNeverTakesProdAndNeverScalesStableDown) {
  json other = prodRelease("v1", kOwnershipPackage);  // another package under prod's name
  ModelReleasePlan plan = planModelRelease(prodRunsV1(other));
  EXPECT_TRUE(plan.execution.apply.empty()) << "no claim, no Service, no Deployment written";
  EXPECT_EQ(stalledReason(plan), v1::kReasonContentMismatch);
  const std::string m = conditionOf(plan.execution.status->object["status"], "Stalled", "message");
  EXPECT_NE(m.find("Create it under a new name"), std::string::npos) << m;

  // Had it claimed the slot earlier (a Model written before content identity),
  // it still never moves prod.
  ModelReleaseObserved claimed = prodRunsV1(other);
  json model = *claimed.prod.model;
  model["status"]["canary"] = {{"release", "v1"}};
  withModel(claimed, model);
  plan = planModelRelease(claimed);
  EXPECT_FALSE(writesAnyServingObject(plan.execution));
}

// The known-good is the recorded content, never whatever object now holds
// its name: v2 about to start, the Model says prod runs v1 (deleted since),
// and a v1 with other content stands at that name.
TEST(ContentIdentity, AKnownGoodIsNeverFollowedByNameToAnotherContent) {
  ModelReleaseObserved o = prodRunsV1(prodRelease("v2"));
  json impostor = prodRelease("v1", kOwnershipPackage);
  impostor["status"] = {{"phase", v1::kPhasePromoted}, {"canary", {{"phase", "Promoted"}}}};
  o.prod.releases["v1"] = share(impostor);
  // Stable runs v1's recorded content: v2 goes on (claims the slot) as with v1 deleted.
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_EQ(stalledReason(plan), "");
  ASSERT_FALSE(plan.execution.apply.empty());
  EXPECT_EQ(writtenModel(plan.execution.apply[0]).canary->release, "v2");
  // Stable does not run it (any more): the impostor is not taken for prod.
  o.prod.stableDeployment = nullptr;
  plan = planModelRelease(o);
  EXPECT_EQ(stalledReason(plan), v1::kReasonAnchorMismatch);
  EXPECT_TRUE(plan.execution.apply.empty());
}

// --- No write over a newcomer (docs/rollouts.md). ---

TEST(NoWriteOverANewcomer, MissingNamesAreCreatedExistingOnesAppliedUnderTheirUid) {
  // The first canary: no Service, no canary Deployment yet.
  ModelReleaseObserved o = observedOwnership(prodRelease("v1"));
  withModel(o, modelOf("v1"));
  ModelReleasePlan plan = planModelRelease(o);
  int creates = 0;
  for (const PlannedApply& a : plan.execution.apply) {
    if (a.resource.kind != "Service" && a.resource.kind != "Deployment") continue;
    EXPECT_EQ(a.verb, WriteVerb::kCreate) << a.what;
    EXPECT_TRUE(a.alreadyExistsIsConflict) << a.what;
    ++creates;
  }
  EXPECT_EQ(creates, 2) << "the Service and gpt2-canary";

  // Mid-canary: every serving write carries the uid it was read with (the Service's
  // selector was edited by hand, so it is applied again).
  ModelReleaseObserved mid = midCanary(false);
  json svc = buildModelService(inputFor());
  svc["metadata"]["uid"] = "svc-uid";
  svc["spec"]["selector"]["app.kubernetes.io/component"] = "edited";
  mid.prod.service = share(svc);
  json canary = ourDeployment(kTrackCanary, "v2", 0);
  canary["metadata"]["uid"] = "canary-uid";
  mid.prod.canaryDeployment = share(canary);
  plan = planModelRelease(mid);
  bool sawService = false, sawCanary = false;
  for (const PlannedApply& a : plan.execution.apply) {
    if (a.resource.kind == "Service") {
      sawService = true;
      EXPECT_EQ(a.verb, WriteVerb::kApply);
      EXPECT_EQ(a.uid, "svc-uid");
    }
    if (a.resource.kind == "Deployment" &&
        (a.name == "gpt2-canary" || kube::name(a.object) == "gpt2-canary")) {
      sawCanary = true;
      EXPECT_EQ(a.uid, "canary-uid") << a.what;
    }
  }
  EXPECT_TRUE(sawService);
  EXPECT_TRUE(sawCanary) << "the canary scales to its step";

  // A Service that already holds what would be applied is not written again.
  svc = buildModelService(inputFor());
  svc["metadata"]["uid"] = "svc-uid";
  mid.prod.service = share(svc);
  plan = planModelRelease(mid);
  for (const PlannedApply& a : plan.execution.apply)
    EXPECT_NE(a.resource.kind, "Service") << a.what;
}

// --- Prod heals (prod_plan.h planProdHealing, through planModelRelease). ---

// v1, Promoted, the Model's prod by uid, no canary in flight; the names read.
ModelReleaseObserved promotedProd() {
  json r = prodRelease("v1");
  r["status"] = {{"phase", v1::kPhasePromoted}, {"canary", {{"phase", "Promoted"}}}};
  ModelReleaseObserved o = observedOwnership(r);
  json model = modelOf("", "v1");
  model["status"]["prod"]["uid"] = "uid-v1";
  withModel(o, model);
  o.prod.namesRead = true;
  return o;
}

// The serving objects as the healing builds them (from nothing at the names).
std::pair<json, json> builtServingObjects() {
  ModelReleasePlan plan = planModelRelease(promotedProd());
  json deployment, service;
  for (const PlannedApply& a : plan.execution.apply) {
    if (a.resource.kind == "Deployment") deployment = a.object;
    if (a.resource.kind == "Service") service = a.object;
  }
  EXPECT_TRUE(deployment.is_object() && service.is_object());
  deployment["metadata"]["uid"] = "stable-uid";
  service["metadata"]["uid"] = "svc-uid";
  return {deployment, service};
}

std::vector<std::string> restoredEvents(const ModelReleasePlan& plan) {
  std::vector<std::string> out;
  for (const PlannedEvent& e : plan.execution.events) {
    if (e.reason != kReasonProdRestored) continue;
    EXPECT_EQ(e.type, "Warning");
    out.push_back(e.message);
  }
  return out;
}

// Every Deployment write of `plan` is a merge patch of `want` onto the Deployment of uid `uid`
// (the one that was read: never onto one re-created meanwhile).
void expectDeploymentMergePatches(const ModelReleasePlan& plan, const json& want,
                                  const std::string& uid) {
  for (const PlannedApply& a : plan.execution.apply) {
    if (a.resource.kind != "Deployment") continue;
    EXPECT_EQ(a.verb, WriteVerb::kMergePatch) << a.what;
    EXPECT_EQ(a.object, want) << a.what;
    EXPECT_EQ(a.uid, uid) << a.what;
  }
}

TEST(ProdHealing, MissingServingObjectsAreCreatedOnceTheNamesWereRead) {
  ModelReleaseObserved o = promotedProd();
  o.prod.namesRead = false;
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_TRUE(plan.readProdNames) << "something without Lockstep's labels may stand there";
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));

  plan = planModelRelease(promotedProd());
  EXPECT_FALSE(plan.readProdNames);
  ASSERT_TRUE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
  ASSERT_TRUE(writesTo(plan.execution, "Service", "gpt2"));
  for (const PlannedApply& a : plan.execution.apply) {
    if (a.resource.kind != "Deployment") continue;
    EXPECT_EQ(a.verb, WriteVerb::kCreate);
    EXPECT_TRUE(a.alreadyExistsIsConflict);
    EXPECT_EQ(a.object["spec"]["replicas"], 2);
    EXPECT_EQ(a.object["metadata"]["labels"][v1::kReleaseLabel], "v1");
    EXPECT_EQ(a.object["metadata"]["ownerReferences"][0]["uid"], "model-uid");
  }
  auto events = restoredEvents(plan);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].rfind("Deployment gpt2-stable is missing: restored to release v1", 0), 0u)
      << events[0];
}

TEST(ProdHealing, NothingDriftedNothingIsWritten) {
  auto [deployment, service] = builtServingObjects();
  ModelReleaseObserved o = promotedProd();
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
  EXPECT_FALSE(writesTo(plan.execution, "Service", "gpt2"));
  EXPECT_TRUE(restoredEvents(plan).empty());

  // What the API server adds, and the operator's own init containers, are no drift.
  deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent";
  deployment["spec"]["template"]["spec"]["initContainers"] =
      json::array({{{"name", "lockstep-verify"}, {"image", "registry.example/cli@sha256:9"}}});
  deployment["status"] = {{"readyReplicas", 2}};
  o.prod.stableDeployment = share(deployment);
  plan = planModelRelease(o);
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
}

TEST(ProdHealing, AScaledStableDeploymentIsScaledBackWithItsTemplateUntouched) {
  auto [deployment, service] = builtServingObjects();
  deployment["spec"]["replicas"] = 0;
  ModelReleaseObserved o = promotedProd();
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_TRUE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
  expectDeploymentMergePatches(plan, json({{"spec", {{"replicas", 2}}}}), "stable-uid");
  auto events = restoredEvents(plan);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("Deployment gpt2-stable spec.replicas is 0, not 2"), std::string::npos)
      << events[0];
}

TEST(ProdHealing, AnEditedTemplateIsAppliedAgain) {
  struct Case {
    const char* name;
    std::function<void(json&)> edit;
    const char* says;
  };
  const Case cases[] = {
      {"an image swapped",
       [](json& d) { d["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"; },
       "runs image \"evil:latest\""},
      {"a container added",
       [](json& d) {
         d["spec"]["template"]["spec"]["containers"].push_back(
             {{"name", "sidecar"}, {"image", "x"}});
       },
       "has 2 containers, not 1"},
      {"the release label changed",
       [](json& d) { d["spec"]["template"]["metadata"]["labels"][v1::kReleaseLabel] = "v9"; },
       "spec.template.metadata.labels[\"lockstep.dev/release\"] is \"v9\", not \"v1\""},
      {"the closure hash annotation dropped",
       [](json& d) {
         d["spec"]["template"]["metadata"]["annotations"].erase("lockstep.dev/closure-hash");
       },
       "annotations[\"lockstep.dev/closure-hash\"] is unset"},
      {"a LOCKSTEP_* env var edited",
       [](json& d) {
         for (json& e : d["spec"]["template"]["spec"]["containers"][0]["env"]) {
           if (e["name"] == "LOCKSTEP_PACKAGE") e["value"] = kOwnershipOldPackage;
         }
       },
       "spec.template.spec.containers[\"server\"].env[\"LOCKSTEP_PACKAGE\"].value is \""},
      {"the package image volume's reference edited",
       [](json& d) {
         for (json& v : d["spec"]["template"]["spec"]["volumes"]) {
           if (v["name"] == "lockstep-package") v["image"]["reference"] = kOwnershipOldPackage;
         }
       },
       "spec.template.spec.volumes[\"lockstep-package\"].image.reference is \""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto [deployment, service] = builtServingObjects();
    c.edit(deployment);
    ModelReleaseObserved o = promotedProd();
    o.prod.stableDeployment = share(deployment);
    o.prod.service = share(service);
    ModelReleasePlan plan = planModelRelease(o);
    ASSERT_TRUE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
    for (const PlannedApply& a : plan.execution.apply) {
      if (a.resource.kind != "Deployment") continue;
      EXPECT_EQ(a.verb, WriteVerb::kApply);
      EXPECT_EQ(a.uid, "stable-uid");
      EXPECT_EQ(a.object["spec"]["template"]["metadata"]["labels"][v1::kReleaseLabel], "v1");
    }
    auto events = restoredEvents(plan);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_NE(events[0].find(c.says), std::string::npos) << events[0];
  }
}

// A Deployment an earlier version built has no template hash: it gets it by a
// metadata-only patch (no pod restarts, nothing drifted: no Event).
TEST(ProdHealing, AStableDeploymentWithoutTheTemplateHashGetsItWithoutARestart) {
  auto [deployment, service] = builtServingObjects();
  const json hash = deployment["metadata"]["annotations"][kTemplateHashAnnotation];
  ASSERT_TRUE(hash.is_string());
  deployment["metadata"].erase("annotations");
  ModelReleaseObserved o = promotedProd();
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_TRUE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
  // Metadata only: the pod template is not touched.
  expectDeploymentMergePatches(
      plan, json({{"metadata", {{"annotations", {{kTemplateHashAnnotation, hash}}}}}}),
      "stable-uid");
  EXPECT_TRUE(restoredEvents(plan).empty());
}

// No canary holds the slot: the canary track runs no pods. Scaled up (a
// rolled-back release's pods back with traffic), it goes back to 0.
TEST(ProdHealing, TheCanaryScaledUpWhileTheSlotIsFreeGoesBackToZero) {
  auto [deployment, service] = builtServingObjects();
  json canary = ourDeployment(kTrackCanary, "v2", 0);
  canary["metadata"]["uid"] = "canary-uid";
  ModelReleaseObserved o = promotedProd();
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  o.prod.canaryDeployment = share(canary);
  EXPECT_FALSE(writesTo(planModelRelease(o).execution, "Deployment", "gpt2-canary"))
      << "at 0: nothing to do";

  canary["spec"]["replicas"] = 2;
  o.prod.canaryDeployment = share(canary);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_TRUE(writesTo(plan.execution, "Deployment", "gpt2-canary"));
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
  expectDeploymentMergePatches(plan, json({{"spec", {{"replicas", 0}}}}), "canary-uid");
  auto events = restoredEvents(plan);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rfind("Deployment gpt2-canary spec.replicas is 2, not 0 (no canary holds the "
                            "slot): restored to release v1",
                            0),
            0u)
      << events[0];

  // A canary in flight owns the track.
  json model = *o.prod.model;
  model["status"]["canary"] = {{"release", "v2"}};
  withModel(o, model);
  EXPECT_FALSE(writesTo(planModelRelease(o).execution, "Deployment", "gpt2-canary"));
}

TEST(ProdHealing, ARepointedServiceIsAppliedAgain) {
  auto [deployment, service] = builtServingObjects();
  service["spec"]["selector"] = {{"app", "elsewhere"}};
  ModelReleaseObserved o = promotedProd();
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_TRUE(writesTo(plan.execution, "Service", "gpt2"));
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable"));
  auto events = restoredEvents(plan);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("Service gpt2 spec.selector is {\"app\":\"elsewhere\"}"),
            std::string::npos)
      << events[0];
}

TEST(ProdHealing, OnlyProdsReleaseByUidWithNoCanaryInFlightHeals) {
  auto [deployment, service] = builtServingObjects();
  deployment["spec"]["replicas"] = 0;
  auto heals = [&](ModelReleaseObserved o) {
    o.prod.stableDeployment = share(deployment);
    o.prod.service = share(service);
    return writesTo(planModelRelease(o).execution, "Deployment", "gpt2-stable");
  };
  EXPECT_TRUE(heals(promotedProd()));

  ModelReleaseObserved canary = promotedProd();
  json model = *canary.prod.model;
  model["status"]["canary"] = {{"release", "v2"}};
  withModel(canary, model);
  EXPECT_FALSE(heals(canary)) << "the canary's plan owns the tracks";

  ModelReleaseObserved other = promotedProd();
  model = *other.prod.model;
  model["status"]["prod"]["uid"] = "uid-of-an-older-v1";
  withModel(other, model);
  EXPECT_FALSE(heals(other)) << "another object under prod's name";

  json superseded = *promotedProd().release;
  superseded["status"]["phase"] = v1::kPhaseSuperseded;
  ModelReleaseObserved old = promotedProd();
  old.release = share(superseded);
  old.gates.release = superseded;
  EXPECT_FALSE(heals(old));

  // The Model's port is not the release's: neither object is rebuilt on the
  // release's port (the Service port is the model's; ServicePortConflict's).
  ModelReleaseObserved otherPort = promotedProd();
  model = *otherPort.prod.model;
  model["spec"]["port"] = 9090;
  withModel(otherPort, model);
  ModelReleasePlan noService = planModelRelease(otherPort);
  EXPECT_FALSE(writesTo(noService.execution, "Service", "gpt2"));
  EXPECT_FALSE(writesTo(noService.execution, "Deployment", "gpt2-stable"));

  ModelReleaseObserved foreign = promotedProd();
  foreign.prod.service = share(teamService());
  EXPECT_FALSE(writesTo(planModelRelease(foreign).execution, "Deployment", "gpt2-stable"))
      << "a foreign object at a name is NameConflict's";
}

// --- Prod heals from the Model's record once its release object is gone
// (prod_plan.h planRecordedProdHealing, placeTrack; docs/rollouts.md "Prod heals"). ---

// v1, Promoted on revision 2 of torch (its pin).
json pinnedV1() {
  json r = prodRelease("v1");
  r["metadata"].erase("finalizers");  // let go of once Promoted
  r["status"] = {{"phase", v1::kPhasePromoted},
                 {"canary", {{"phase", "Promoted"}}},
                 {"runtime", v1::encodeRuntimePin({2, kImage, kOwnershipHash})}};
  return r;
}

// The Model as v1's promotion records it (recordCanaryEnd: the slot was v1's).
json modelRecording(const json& release, const ProdObserved& p) {
  CanaryEndRecord rec;
  rec.release = recordedOf(v1::decodeModelRelease(release), release, p);
  rec.now = "2026-12-01T11:00:00Z";
  rec.promoted = true;
  std::optional<PlannedApply> write = recordCanaryEnd(modelOf("v1"), rec);
  EXPECT_TRUE(write.has_value());
  return write ? write->object : json();
}

// v1 prod by the Model's record (with its stages); the names read, nothing at them.
ModelReleaseObserved recordedWorld() {
  ModelReleaseObserved o = observedOwnership(pinnedV1());
  withModel(o, modelRecording(pinnedV1(), o.prod));
  o.prod.namesRead = true;
  return o;
}

const PlannedApply* writeTo(const std::vector<PlannedApply>& writes, const std::string& kind,
                            const std::string& name) {
  for (const PlannedApply& a : writes) {
    const std::string n = a.verb == WriteVerb::kMergePatch ? a.name : kube::name(a.object);
    if (a.resource.kind == kind && n == name) return &a;
  }
  return nullptr;
}

TEST(RecordedProd, APromotionRecordsTheStagesTheContentDigestCovers) {
  ModelReleaseObserved o = recordedWorld();
  const v1::Model m = v1::decodeModel(*o.prod.model);
  ASSERT_TRUE(m.status.prod.has_value());
  EXPECT_EQ(m.status.prod->stages, pinnedV1()["spec"]["stages"]);
  EXPECT_EQ(m.status.prod->stagesNotRecorded, "");
  EXPECT_TRUE(v1::stagesMatchContent(*m.status.prod, m.status.prod->stages));
  json other = m.status.prod->stages;
  other[0]["serving"]["replicas"] = 3;
  EXPECT_FALSE(v1::stagesMatchContent(*m.status.prod, other)) << "another template";
  // Round trip: the status as written and read back keeps them.
  EXPECT_EQ(v1::encodeModelStatus(m.status)["prod"]["stages"], pinnedV1()["spec"]["stages"]);

  // A manual rollback records them too.
  RollbackRecord rb;
  rb.release = recordedOf(v1::decodeModelRelease(pinnedV1()), pinnedV1(), o.prod);
  rb.from = "v2";
  rb.by = "alice";
  rb.now = "2026-12-01T12:00:00Z";
  EXPECT_EQ(writtenModel(recordRollback(modelOf("", "v2"), rb)).prod->stages,
            pinnedV1()["spec"]["stages"]);

  // Over the bound: not recorded, and the status says so.
  json big = pinnedV1();
  big["spec"]["stages"][0]["serving"]["template"]["metadata"]["annotations"]["note"] =
      std::string(v1::kMaxRecordedStagesBytes, 'x');
  const v1::Model bigModel = v1::decodeModel(modelRecording(big, o.prod));
  ASSERT_TRUE(bigModel.status.prod.has_value());
  EXPECT_TRUE(bigModel.status.prod->stages.is_null());
  EXPECT_NE(bigModel.status.prod->stagesNotRecorded.find("over the 65536 the Model records"),
            std::string::npos)
      << bigModel.status.prod->stagesNotRecorded;
  EXPECT_FALSE(v1::encodeModelStatus(bigModel.status)["prod"].contains("stages"));
}

// The gap: v1's object pruned, then its stable Deployment deleted.
// Prod is rebuilt from the Model's record, exactly as from the object.
TEST(RecordedProd, StableDeletedWithTheReleaseGoneIsCreatedFromTheRecordAsFromTheRelease) {
  const ModelReleasePlan fromRelease = planModelRelease(recordedWorld());
  const PlannedApply* want = writeTo(fromRelease.execution.apply, "Deployment", "gpt2-stable");
  const PlannedApply* wantService = writeTo(fromRelease.execution.apply, "Service", "gpt2");
  ASSERT_TRUE(want != nullptr && wantService != nullptr);
  EXPECT_EQ(want->object["spec"]["template"]["metadata"]["labels"][v1::kReleaseLabel], "v1");

  // The release object gone: only the Model knows v1.
  const ModelReleaseObserved gone = recordedWorld();
  std::optional<ProdPlan> heal = planRecordedProdHealing(gone.prod);
  ASSERT_TRUE(heal.has_value());
  EXPECT_FALSE(heal->needsNames);
  const PlannedApply* got = writeTo(heal->writes, "Deployment", "gpt2-stable");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->verb, WriteVerb::kCreate);
  EXPECT_TRUE(got->alreadyExistsIsConflict);
  EXPECT_EQ(got->object, want->object) << "the same Deployment as from the release object";
  const PlannedApply* gotService = writeTo(heal->writes, "Service", "gpt2");
  ASSERT_NE(gotService, nullptr);
  EXPECT_EQ(gotService->object, wantService->object);
  EXPECT_EQ(got->failureEventOn, gone.prod.model) << "failures are said on the Model";
  ASSERT_EQ(heal->events.size(), 2u);
  EXPECT_EQ(heal->events[0].reason, kReasonProdRestored);
  EXPECT_NE(heal->events[0].message.find(
                "Deployment gpt2-stable is missing: restored to release v1's serving objects "
                "from the record of Model ml/gpt2"),
            std::string::npos)
      << heal->events[0].message;

  // Names not read yet: read first (something without Lockstep's labels may stand there).
  ModelReleaseObserved unread = recordedWorld();
  unread.prod.namesRead = false;
  heal = planRecordedProdHealing(unread.prod);
  ASSERT_TRUE(heal.has_value());
  EXPECT_TRUE(heal->needsNames);
  EXPECT_TRUE(heal->writes.empty());

  // A canary in flight owns the tracks.
  ModelReleaseObserved canary = recordedWorld();
  json model = *canary.prod.model;
  model["status"]["canary"] = {{"release", "v2"}};
  withModel(canary, model);
  EXPECT_FALSE(planRecordedProdHealing(canary.prod).has_value());
}

TEST(RecordedProd, AnEditedTemplateIsReAppliedFromTheRecordAndNothingDriftedWritesNothing) {
  const ModelReleasePlan built = planModelRelease(recordedWorld());
  json deployment = writeTo(built.execution.apply, "Deployment", "gpt2-stable")->object;
  json service = writeTo(built.execution.apply, "Service", "gpt2")->object;
  deployment["metadata"]["uid"] = "stable-uid";
  service["metadata"]["uid"] = "svc-uid";
  ModelReleaseObserved o = recordedWorld();
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  EXPECT_FALSE(planRecordedProdHealing(o.prod).has_value()) << "nothing drifted";

  json edited = deployment;
  edited["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest";
  o.prod.stableDeployment = share(edited);
  std::optional<ProdPlan> heal = planRecordedProdHealing(o.prod);
  ASSERT_TRUE(heal.has_value());
  ASSERT_EQ(heal->writes.size(), 1u);
  const PlannedApply& w = heal->writes[0];
  EXPECT_EQ(w.verb, WriteVerb::kApply);
  EXPECT_EQ(w.uid, "stable-uid") << "never onto a Deployment re-created meanwhile";
  json want = deployment;
  want["metadata"].erase("uid");
  EXPECT_EQ(w.object, want);
  ASSERT_EQ(heal->events.size(), 1u);
  EXPECT_NE(heal->events[0].message.find("runs image \"evil:latest\""), std::string::npos)
      << heal->events[0].message;
}

TEST(RecordedProd, TheCanaryScaledUpIsScaledBackToZeroFromTheRecordToo) {
  ModelReleaseObserved o = recordedWorld();
  const ModelReleasePlan built = planModelRelease(o);
  json deployment = writeTo(built.execution.apply, "Deployment", "gpt2-stable")->object;
  json service = writeTo(built.execution.apply, "Service", "gpt2")->object;
  deployment["metadata"]["uid"] = "stable-uid";
  service["metadata"]["uid"] = "svc-uid";
  json canary = ourDeployment(kTrackCanary, "v2", 3);
  canary["metadata"]["uid"] = "canary-uid";
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  o.prod.canaryDeployment = share(canary);
  std::optional<ProdPlan> heal = planRecordedProdHealing(o.prod);
  ASSERT_TRUE(heal.has_value());
  ASSERT_EQ(heal->writes.size(), 1u);
  EXPECT_EQ(heal->writes[0].name, "gpt2-canary");
  EXPECT_EQ(heal->writes[0].object, json({{"spec", {{"replicas", 0}}}}));
  ASSERT_EQ(heal->events.size(), 1u);
  EXPECT_NE(heal->events[0].message.find("Deployment gpt2-canary spec.replicas is 3, not 0"),
            std::string::npos)
      << heal->events[0].message;
}

// v2's canary at its first step over v1's stable (v1's object there), both
// Deployments as the canary's plan builds them.
ModelReleaseObserved canaryOverV1() {
  ModelReleaseObserved o = midCanary(false);
  json v1r = prodRelease("v1", kOwnershipOldPackage);
  v1r["status"] = {{"phase", v1::kPhasePromoted}};
  o.prod.releases["v1"] = share(v1r);
  o.prod.stableDeployment = nullptr;
  o.prod.canaryDeployment = nullptr;
  o.prod.namesRead = true;
  const ModelReleasePlan built = planModelRelease(o);
  for (const PlannedApply& a : built.execution.apply) {
    if (a.resource.kind != "Deployment") continue;
    json d = a.object;
    d["metadata"]["uid"] = kube::name(d) + "-uid";
    (kube::name(d) == "gpt2-stable" ? o.prod.stableDeployment : o.prod.canaryDeployment) = share(d);
  }
  EXPECT_TRUE(o.prod.stableDeployment && o.prod.canaryDeployment);
  return o;
}

// During a canary its plan owns both tracks, and puts a track's edited
// template back from the release that owns the track (v1 on stable, v2 on
// the canary), with the same ProdRestored Event.
TEST(ProdHealing, DuringACanaryAnEditedTrackIsPutBackFromTheReleaseThatOwnsIt) {
  ModelReleaseObserved o = canaryOverV1();
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-stable")) << "nothing drifted";
  EXPECT_FALSE(writesTo(plan.execution, "Deployment", "gpt2-canary")) << "nothing drifted";
  EXPECT_TRUE(restoredEvents(plan).empty());

  const json cleanStable = *o.prod.stableDeployment;
  const json cleanCanary = *o.prod.canaryDeployment;
  json stable = cleanStable;
  for (json& e : stable["spec"]["template"]["spec"]["containers"][0]["env"]) {
    if (e["name"] == "LOCKSTEP_PACKAGE") e["value"] = kOwnershipPackage;
  }
  o.prod.stableDeployment = share(stable);
  json canary = cleanCanary;
  for (json& v : canary["spec"]["template"]["spec"]["volumes"]) {
    if (v["name"] == "lockstep-package") v["image"]["reference"] = kOwnershipOldPackage;
  }
  o.prod.canaryDeployment = share(canary);
  plan = planModelRelease(o);
  const PlannedApply* s = writeTo(plan.execution.apply, "Deployment", "gpt2-stable");
  const PlannedApply* c = writeTo(plan.execution.apply, "Deployment", "gpt2-canary");
  ASSERT_TRUE(s != nullptr && c != nullptr);
  EXPECT_EQ(s->verb, WriteVerb::kApply);
  EXPECT_EQ(s->uid, "gpt2-stable-uid");
  json want = cleanStable;
  want["metadata"].erase("uid");
  EXPECT_EQ(s->object, want) << "v1's template, as built";
  EXPECT_EQ(c->verb, WriteVerb::kApply);
  want = cleanCanary;
  want["metadata"].erase("uid");
  EXPECT_EQ(c->object, want) << "v2's template, as built";
  auto events = restoredEvents(plan);
  ASSERT_EQ(events.size(), 2u);
  std::string all = events[0] + "\n" + events[1];
  EXPECT_NE(
      all.find("Deployment gpt2-stable spec.template.spec.containers[\"server\"].env[\"LOCKSTEP_"
               "PACKAGE\"].value is \"" +
               kOwnershipPackage + "\", not \"" + kOwnershipOldPackage +
               "\": restored to release v1's serving objects (release v2's canary holds the "
               "slot)"),
      std::string::npos)
      << all;
  EXPECT_NE(
      all.find("Deployment gpt2-canary spec.template.spec.volumes[\"lockstep-package\"].image."
               "reference is \"" +
               kOwnershipOldPackage + "\", not \"" + kOwnershipPackage +
               "\": restored to release v2's serving objects"),
      std::string::npos)
      << all;

  // Scaled only: still a scale, the template untouched.
  json scaled = cleanStable;
  scaled["spec"]["replicas"] = 0;
  o.prod.stableDeployment = share(scaled);
  o.prod.canaryDeployment = share(cleanCanary);
  plan = planModelRelease(o);
  s = writeTo(plan.execution.apply, "Deployment", "gpt2-stable");
  ASSERT_TRUE(s != nullptr);
  EXPECT_EQ(s->verb, WriteVerb::kMergePatch);
  EXPECT_TRUE(restoredEvents(plan).empty());
}

// A refusal is the release's verdict only for the release's own template
// (docs/rollouts.md "Prod heals", "During a canary"): the canary Deployment's
// ReplicaFailure with v2's template as built rolls v2 back (AdmissionRefused);
// the same failure on a hand-edited template is the edit's, which the plan
// puts back without a rollback; and a status older than the Deployment's spec
// (the put-back template not rolled yet) says nothing yet.
TEST(ProdHealing, ARefusalOfAHandEditedCanaryTemplateIsHealedNotRolledBack) {
  ModelReleaseObserved o = canaryOverV1();
  const json clean = *o.prod.canaryDeployment;
  auto refused = [](json d) {
    d["metadata"]["generation"] = 3;
    d["status"]["observedGeneration"] = 3;
    d["status"]["conditions"] =
        json::array({{{"type", "ReplicaFailure"},
                      {"status", "True"},
                      {"reason", "FailedCreate"},
                      {"message",
                       "pods \"gpt2-canary-5d9-x\" is forbidden: admission webhook "
                       "\"pods.lockstep.dev\" denied the request: closure hash mismatch"}}});
    return d;
  };
  auto canaryStatus = [](const ModelReleasePlan& plan) {
    return plan.execution.status ? plan.execution.status->object["status"]["canary"]
                                 : json::object();
  };

  o.prod.canaryDeployment = share(refused(clean));
  ModelReleasePlan plan = planModelRelease(o);
  EXPECT_EQ(canaryStatus(plan).value("phase", ""), "RollingBack");
  EXPECT_EQ(canaryStatus(plan).value("reason", ""), v1::kReasonAdmissionRefused);

  json edited = refused(clean);
  for (json& e : edited["spec"]["template"]["spec"]["containers"][0]["env"]) {
    if (e["name"] == "LOCKSTEP_RELEASE") e["value"] = "v0";
  }
  o.prod.canaryDeployment = share(edited);
  plan = planModelRelease(o);
  EXPECT_NE(canaryStatus(plan).value("phase", ""), "RollingBack") << canaryStatus(plan).dump(2);
  const PlannedApply* c = writeTo(plan.execution.apply, "Deployment", "gpt2-canary");
  ASSERT_NE(c, nullptr) << "the edit is put back";
  EXPECT_EQ(c->object["spec"]["template"], clean["spec"]["template"]);
  EXPECT_FALSE(restoredEvents(plan).empty());

  // Put back, the Deployment controller not caught up yet: nothing to judge.
  json stale = refused(clean);
  stale["metadata"]["generation"] = 4;
  o.prod.canaryDeployment = share(stale);
  plan = planModelRelease(o);
  EXPECT_NE(canaryStatus(plan).value("phase", ""), "RollingBack") << canaryStatus(plan).dump(2);
}

// v2 aborted mid-handover (stable already re-templated to v2): stable goes
// back to the known-good v1, whose object is gone. `model`: the Model's record.
ModelReleaseObserved abortedHandover(json model) {
  ModelReleaseObserved o = midCanary(false);
  json r = *o.release;
  r["status"]["canary"]["phase"] = "RollingBack";
  r["status"]["canary"]["reason"] = v1::kReasonAborted;
  r["status"]["canary"]["message"] = "aborted by alice";
  o.release = share(r);
  o.gates.release = r;
  model["status"]["canary"] = {{"release", "v2"}, {"uid", "uid-v2"}};
  withModel(o, model);
  json stable = ourDeployment(kTrackStable, "v2", 2);
  stable["metadata"]["uid"] = "stable-uid";
  o.prod.stableDeployment = share(stable);
  o.prod.releases["v1"] = nullptr;
  return o;
}

TEST(RecordedProd, AHandoverAbortedAfterProdsReleaseWasPrunedPutsStableBackFromTheRecord) {
  const json recorded = *recordedWorld().prod.model;
  // v1's object still there: stable goes back on it.
  ModelReleaseObserved live = abortedHandover(recorded);
  live.prod.releases["v1"] = share(pinnedV1());
  const ModelReleasePlan fromObject = planModelRelease(live);
  const PlannedApply* want = writeTo(fromObject.execution.apply, "Deployment", "gpt2-stable");
  ASSERT_NE(want, nullptr) << fromObject.stopError.toString();
  EXPECT_EQ(want->object["spec"]["template"]["metadata"]["labels"][v1::kReleaseLabel], "v1");

  // Gone: the same write, from the record.
  const ModelReleasePlan fromRecord = planModelRelease(abortedHandover(recorded));
  EXPECT_TRUE(fromRecord.stopError.isOk()) << fromRecord.stopError.toString();
  const PlannedApply* got = writeTo(fromRecord.execution.apply, "Deployment", "gpt2-stable");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->verb, WriteVerb::kApply);
  EXPECT_EQ(got->uid, "stable-uid");
  EXPECT_EQ(got->object, want->object);

  // No stages recorded (a Model an earlier operator wrote): today's message, stable keeps its pods.
  json unrecorded = recorded;
  unrecorded["status"]["prod"].erase("stages");
  const ModelReleasePlan old = planModelRelease(abortedHandover(unrecorded));
  EXPECT_TRUE(old.stop);
  EXPECT_EQ(old.stopError.code(), Code::kUnavailable);
  EXPECT_EQ(old.stopError.message(), "release v1 is gone; the stable Deployment keeps its pods");
  EXPECT_EQ(writeTo(old.execution.apply, "Deployment", "gpt2-stable"), nullptr);
}

TEST(RecordedProd, StagesThatAreNotTheRecordedContentAreRefusedNeverFollowed) {
  json forged = *recordedWorld().prod.model;
  forged["status"]["prod"]["stages"][0]["serving"]["replicas"] = 5;
  // The healing path: no write, a Warning saying why.
  ModelReleaseObserved o = recordedWorld();
  withModel(o, forged);
  std::optional<ProdPlan> heal = planRecordedProdHealing(o.prod);
  ASSERT_TRUE(heal.has_value());
  EXPECT_TRUE(heal->writes.empty());
  ASSERT_EQ(heal->events.size(), 1u);
  EXPECT_EQ(heal->events[0].reason, v1::kReasonAnchorMismatch);
  EXPECT_NE(heal->events[0].message.find(
                "(status.prod.stages) do not hash, with its package and runtime pair, to "
                "status.prod.contentDigest"),
            std::string::npos)
      << heal->events[0].message;
  EXPECT_NE(heal->events[0].message.find("never followed"), std::string::npos);

  // A later release: stalled on the record (AnchorMismatch, saying why), stable untouched.
  const ModelReleasePlan plan = planModelRelease(abortedHandover(forged));
  EXPECT_EQ(writeTo(plan.execution.apply, "Deployment", "gpt2-stable"), nullptr);
  const std::string why = plan.stopError.message();
  EXPECT_EQ(plan.stopError.code(), Code::kInvalid) << plan.stopError.toString();
  EXPECT_NE(why.find("never followed"), std::string::npos) << why;
}

// Upgrading: a record an earlier operator wrote holds no stages; the release
// object prod runs gives them once, when they are the recorded content.
TEST(RecordedProd, ARecordWithoutStagesGetsThemFromProdsReleaseObjectOnce) {
  ModelReleaseObserved o = recordedWorld();
  json model = *o.prod.model;
  model["status"]["prod"].erase("stages");
  withModel(o, model);
  const ModelReleasePlan built = planModelRelease(recordedWorld());
  json deployment = writeTo(built.execution.apply, "Deployment", "gpt2-stable")->object;
  json service = writeTo(built.execution.apply, "Service", "gpt2")->object;
  deployment["metadata"]["uid"] = "stable-uid";
  service["metadata"]["uid"] = "svc-uid";
  o.prod.stableDeployment = share(deployment);
  o.prod.service = share(service);
  ModelReleasePlan plan = planModelRelease(o);
  ASSERT_EQ(plan.execution.apply.size(), 1u) << "the Model's record, nothing else";
  const v1::ModelStatus written = writtenModel(plan.execution.apply[0]);
  EXPECT_EQ(written.prod->stages, pinnedV1()["spec"]["stages"]);
  EXPECT_EQ(written.prod->contentDigest, v1::decodeModel(model).status.prod->contentDigest);
  EXPECT_EQ(written.revision, v1::decodeModel(model).status.revision) << "prod did not change";

  // Recorded: nothing more to write.
  withModel(o, *recordedWorld().prod.model);
  EXPECT_TRUE(planModelRelease(o).execution.apply.empty());

  // The object's stages are not the recorded content (edited since): not recorded.
  json edited = pinnedV1();
  edited["spec"]["stages"][0]["serving"]["replicas"] = 4;
  ModelReleaseObserved e = o;
  e.release = share(edited);
  e.gates.release = edited;
  withModel(e, model);
  plan = planModelRelease(e);
  for (const PlannedApply& a : plan.execution.apply) EXPECT_NE(a.resource.kind, "Model");
}

}  // namespace
}  // namespace lockstep::controllers

namespace lockstep::controllers {
namespace {

// Which pods are prod (docs/rollouts.md "Which pods are prod"): the model's
// Deployments, one ReplicaSet each, and pods of every kind.
struct PodWorld {
  ProdObserved p;
  PodWorld() {
    json model = kube::newObject(v1::kModels, "ml", "gpt2");
    model["metadata"]["uid"] = "model-uid";
    p.model = share(model);
    json stable = ourDeployment("stable", "v1", 2);
    stable["metadata"]["uid"] = "stable-uid";
    p.stableDeployment = share(stable);
    json canary = ourDeployment("canary", "v2", 1);
    canary["metadata"]["uid"] = "canary-uid";
    p.canaryDeployment = share(canary);
    putReplicaSet("gpt2-stable-1", "gpt2-stable", "stable-uid", true, 2);
    putReplicaSet("gpt2-canary-1", "gpt2-canary", "canary-uid", true, 1);
  }
  void putReplicaSet(const std::string& name, const std::string& deployment,
                     const std::string& deploymentUid, bool servingTemplate, int replicas) {
    json rs = kube::newObject(v1::kReplicaSets, "ml", name);
    rs["metadata"]["uid"] = name + "-uid";
    rs["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                      {"kind", "Deployment"},
                                                      {"name", deployment},
                                                      {"uid", deploymentUid},
                                                      {"controller", true}}});
    rs["spec"]["replicas"] = replicas;
    rs["spec"]["template"]["metadata"]["labels"] = {{v1::kModelLabel, "gpt2"}};
    if (servingTemplate)
      rs["spec"]["template"]["metadata"]["labels"][v1::kServingLabel] = v1::kServingLabelValue;
    p.replicaSets[name] = share(rs);
  }
  // A pod with prod's labels on `track`, made by `replicaSet` ("": by hand).
  static kube::ObjectPtr pod(const std::string& name, const std::string& track,
                             const std::string& replicaSet, bool servingLabel = true) {
    json o = kube::newObject(v1::kPods, "ml", name);
    o["metadata"]["labels"] = {{v1::kModelLabel, "gpt2"},
                               {v1::kTrackLabel, track},
                               {v1::kReleaseLabel, track == "stable" ? "v1" : "v2"}};
    if (servingLabel) o["metadata"]["labels"][v1::kServingLabel] = v1::kServingLabelValue;
    if (!replicaSet.empty()) {
      o["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                                       {"kind", "ReplicaSet"},
                                                       {"name", replicaSet},
                                                       {"uid", replicaSet + "-uid"},
                                                       {"controller", true}}});
    }
    return share(o);
  }
};

std::vector<std::string> names(const std::vector<kube::ObjectPtr>& pods) {
  std::vector<std::string> out;
  for (const auto& p : pods) out.push_back(kube::name(*p));
  return out;
}

TEST(ServingPods, OnlyPodsWhoseChainLeadsToTheModelsDeploymentsAreProd) {
  PodWorld w;
  const std::vector<kube::ObjectPtr> pods = {
      PodWorld::pod("stable-a", "stable", "gpt2-stable-1"),
      PodWorld::pod("canary-a", "canary", "gpt2-canary-1"),
      // Must-show 4: prod's labels by hand (the old ones, and the serving label too).
      PodWorld::pod("impostor", "stable", ""),
      PodWorld::pod("impostor-old-labels", "stable", "", false),
      // A forged owner reference to the operator's ReplicaSet, without the
      // serving label (which only the ReplicaSet controller's pods may carry).
      PodWorld::pod("forged", "stable", "gpt2-stable-1", false),
      // Its label says canary, its chain says stable.
      PodWorld::pod("relabelled", "canary", "gpt2-stable-1"),
  };
  EXPECT_EQ(names(servingPodsOf("gpt2", w.p, pods)),
            (std::vector<std::string>{"stable-a", "canary-a"}));
}

TEST(ServingPods, PodsOfATemplateAnEarlierVersionBuiltStayProdUntilReTemplated) {
  PodWorld w;
  w.putReplicaSet("gpt2-stable-0", "gpt2-stable", "stable-uid", false, 2);
  const std::vector<kube::ObjectPtr> pods = {
      PodWorld::pod("old-stable", "stable", "gpt2-stable-0", false)};
  EXPECT_EQ(names(servingPodsOf("gpt2", w.p, pods)), std::vector<std::string>{"old-stable"});
}

// The Service selects on the serving label only once no pod of the model
// would lose its traffic by it: an upgrade keeps prod serving on its pods.
TEST(ServingPods, TheServiceSelectsTheServingLabelOnceEveryReplicaSetWithPodsCarriesIt) {
  PodWorld w;
  EXPECT_TRUE(servingLabelSelectable("gpt2", w.p));
  // A ReplicaSet an earlier version's template made, still with pods.
  w.putReplicaSet("gpt2-stable-0", "gpt2-stable", "stable-uid", false, 0);
  json rs = *w.p.replicaSets["gpt2-stable-0"];
  rs["status"]["replicas"] = 1;  // draining
  w.p.replicaSets["gpt2-stable-0"] = share(rs);
  EXPECT_FALSE(servingLabelSelectable("gpt2", w.p));
  rs["status"]["replicas"] = 0;  // drained
  w.p.replicaSets["gpt2-stable-0"] = share(rs);
  EXPECT_TRUE(servingLabelSelectable("gpt2", w.p));
  // Another model's ReplicaSet is not this model's business.
  w.putReplicaSet("llama-stable-0", "llama-stable", "x", false, 3);
  EXPECT_TRUE(servingLabelSelectable("gpt2", w.p));
  // A Deployment of an earlier version's template that wants pods.
  json stable = *w.p.stableDeployment;
  stable["spec"]["template"]["metadata"]["labels"].erase(v1::kServingLabel);
  w.p.stableDeployment = share(stable);
  EXPECT_FALSE(servingLabelSelectable("gpt2", w.p));
}

}  // namespace
}  // namespace lockstep::controllers
