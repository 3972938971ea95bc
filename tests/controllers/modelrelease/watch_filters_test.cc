// What wakes the Model and ModelRelease controllers
// (controllers/modelrelease/watch_filters.h): each update filter drops an
// update of nothing but what its reconciler does not read, and lets each
// field it reads through; the releases an event of a model's serving
// objects concerns.
#include "controllers/modelrelease/watch_filters.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace lockstep::controllers::watch_filters_test {

using nlohmann::json;
using Filter = std::function<bool(const kube::Object&, const kube::Object&)>;

json deployment() {
  return json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "gpt2-stable", "namespace": "ml", "uid": "d-uid",
      "resourceVersion": "100", "generation": 3,
      "labels": {"lockstep.dev/model": "gpt2"},
      "annotations": {"deployment.kubernetes.io/revision": "2"},
      "ownerReferences": [{"apiVersion": "lockstep.dev/v1alpha1", "kind": "Model",
        "name": "gpt2", "uid": "m-uid", "controller": true}]},
    "spec": {"replicas": 4, "template": {
      "metadata": {"labels": {"lockstep.dev/release": "gpt2-v1"},
                   "annotations": {"lockstep.dev/closure-hash": "sha256:aa"}},
      "spec": {"containers": [{"name": "server", "image": "torch"}]}}},
    "status": {"observedGeneration": 3, "replicas": 4, "updatedReplicas": 4,
      "readyReplicas": 3, "availableReplicas": 3,
      "conditions": [
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
         "message": "Deployment does not have minimum availability."},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
         "message": "ReplicaSet \"gpt2-stable-1\" is progressing."}]}
  })");
}

// The update the Deployment controller writes as one more pod turns Ready:
// the counts it keeps and its conditions' wording, and a new resourceVersion.
json onePodMoreReady(json d) {
  d["metadata"]["resourceVersion"] = "101";
  d["status"]["readyReplicas"] = 4;
  d["status"]["availableReplicas"] = 4;
  d["status"]["conditions"][0] = {{"type", "Available"},
                                  {"status", "True"},
                                  {"reason", "MinimumReplicasAvailable"},
                                  {"message", "Deployment has minimum availability."}};
  d["status"]["conditions"][1]["reason"] = "NewReplicaSetAvailable";
  d["status"]["conditions"][1]["message"] =
      "ReplicaSet \"gpt2-stable-1\" has successfully progressed.";
  return d;
}

struct Change {
  std::string what;
  std::function<void(json&)> edit;
};

// Each change, made on `base` with a new resourceVersion, passes `filter`.
void expectEachPasses(const Filter& filter, const json& base, const std::vector<Change>& changes) {
  for (const Change& c : changes) {
    json changed = base;
    changed["metadata"]["resourceVersion"] = "999";
    c.edit(changed);
    EXPECT_TRUE(filter(base, changed)) << c.what;
  }
}

// What the Model's conditions read of a Deployment (prod/model_conditions.cc).
std::vector<Change> modelReadsOfDeployment() {
  return {
      {"generation", [](json& d) { d["metadata"]["generation"] = 4; }},
      {"deletion", [](json& d) { d["metadata"]["deletionTimestamp"] = "2026-12-05T08:00:00Z"; }},
      {"owner", [](json& d) { d["metadata"]["ownerReferences"][0]["uid"] = "other"; }},
      {"labels", [](json& d) { d["metadata"]["labels"]["lockstep.dev/model"] = "llama"; }},
      {"spec.replicas", [](json& d) { d["spec"]["replicas"] = 2; }},
      {"template release",
       [](json& d) { d["spec"]["template"]["metadata"]["labels"]["lockstep.dev/release"] = "v2"; }},
      {"template closure hash",
       [](json& d) {
         d["spec"]["template"]["metadata"]["annotations"]["lockstep.dev/closure-hash"] = "bb";
       }},
      {"observedGeneration", [](json& d) { d["status"]["observedGeneration"] = 2; }},
      {"status.replicas", [](json& d) { d["status"]["replicas"] = 5; }},
      {"updatedReplicas", [](json& d) { d["status"]["updatedReplicas"] = 3; }},
  };
}

TEST(WatchFilters, ModelDropsItsDeploymentsCountsUnlessTheRollOutStartsOrEnds) {
  const json d = deployment();
  EXPECT_FALSE(deploymentChangeConcernsModel(d, onePodMoreReady(d)));
  json rv = d;
  rv["metadata"]["resourceVersion"] = "101";
  EXPECT_FALSE(deploymentChangeConcernsModel(d, rv));
  json revision = d;
  revision["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "3";
  EXPECT_FALSE(deploymentChangeConcernsModel(d, revision));
  expectEachPasses(deploymentChangeConcernsModel, d, modelReadsOfDeployment());
  // Rolling (2 of 4 pods on the template): one more updated pod, a new
  // generation observed at once, are still rolling; the last one is not, and
  // neither is one stuck past its progress deadline.
  json rolling = d;
  rolling["status"]["updatedReplicas"] = 2;
  json more = rolling;
  more["status"]["updatedReplicas"] = 3;
  EXPECT_FALSE(deploymentChangeConcernsModel(rolling, more));
  json observed = more;
  observed["metadata"]["generation"] = 4;
  observed["status"]["observedGeneration"] = 4;
  EXPECT_FALSE(deploymentChangeConcernsModel(more, observed));
  EXPECT_TRUE(deploymentChangeConcernsModel(more, d));
  json stuck = rolling;
  stuck["status"]["conditions"][1]["reason"] = "ProgressDeadlineExceeded";
  EXPECT_TRUE(deploymentChangeConcernsModel(rolling, stuck));
  EXPECT_TRUE(deploymentChangeConcernsModel(stuck, rolling));
}

TEST(WatchFilters, ModelReadsOfItsServiceTheOwnerOnly) {
  const json s = json::parse(R"({"apiVersion": "v1", "kind": "Service",
    "metadata": {"name": "gpt2", "namespace": "ml", "resourceVersion": "5",
      "labels": {"lockstep.dev/model": "gpt2"},
      "ownerReferences": [{"kind": "Model", "name": "gpt2", "uid": "m-uid", "controller": true}]},
    "spec": {"type": "ClusterIP", "selector": {"lockstep.dev/model": "gpt2"},
             "ports": [{"port": 8080}]}})");
  json ports = s;
  ports["metadata"]["resourceVersion"] = "6";
  ports["spec"]["ports"][0]["port"] = 9090;
  EXPECT_FALSE(serviceChangeConcernsModel(s, ports));
  expectEachPasses(
      serviceChangeConcernsModel, s,
      {{"owner uid", [](json& x) { x["metadata"]["ownerReferences"][0]["uid"] = "x"; }},
       {"owner gone", [](json& x) { x["metadata"].erase("ownerReferences"); }},
       {"controller flag",
        [](json& x) { x["metadata"]["ownerReferences"][0]["controller"] = false; }}});
  json none = s;
  none["metadata"].erase("ownerReferences");
  EXPECT_TRUE(serviceChangeConcernsModel(none, s));
}

json replicaFailure(const std::string& message) {
  return {{"type", "ReplicaFailure"},
          {"status", "True"},
          {"reason", "FailedCreate"},
          {"message", message}};
}

TEST(WatchFilters, ReleasesReadOfADeploymentsStatusOnlyItsAdmissionRefusals) {
  const json d = deployment();
  EXPECT_FALSE(deploymentChangeConcernsReleases(d, onePodMoreReady(d)));
  json counts = onePodMoreReady(d);
  counts["status"]["replicas"] = 5;
  counts["status"]["updatedReplicas"] = 1;
  EXPECT_FALSE(deploymentChangeConcernsReleases(d, counts));
  // A generation observed with no refusal to reveal.
  json behind = d;
  behind["status"]["observedGeneration"] = 2;
  EXPECT_FALSE(deploymentChangeConcernsReleases(behind, d));
  std::vector<Change> reads = {
      {"generation", [](json& x) { x["metadata"]["generation"] = 4; }},
      {"deletion", [](json& x) { x["metadata"]["deletionTimestamp"] = "2026-12-05T08:00:00Z"; }},
      {"owner", [](json& x) { x["metadata"]["ownerReferences"][0]["uid"] = "other"; }},
      {"uid", [](json& x) { x["metadata"]["uid"] = "d-uid-2"; }},
      {"labels", [](json& x) { x["metadata"]["labels"]["lockstep.dev/model"] = "llama"; }},
      {"annotations",
       [](json& x) { x["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "3"; }},
      {"spec.replicas", [](json& x) { x["spec"]["replicas"] = 2; }},
      {"template container",
       [](json& x) { x["spec"]["template"]["spec"]["containers"][0]["image"] = "other"; }},
      {"ReplicaFailure",
       [](json& x) { x["status"]["conditions"].push_back(replicaFailure("denied")); }},
  };
  expectEachPasses(deploymentChangeConcernsReleases, d, reads);
  // A refusal's message changing passes, and one going away; one the status
  // reveals as it catches up with the spec passes, and one it hides.
  json failing = d;
  failing["status"]["conditions"].push_back(replicaFailure("quota"));
  json other = failing;
  other["status"]["conditions"][2] = replicaFailure("admission webhook denied");
  EXPECT_TRUE(deploymentChangeConcernsReleases(failing, other));
  EXPECT_TRUE(deploymentChangeConcernsReleases(failing, d));
  json notYet = failing;
  notYet["status"]["observedGeneration"] = 2;
  EXPECT_TRUE(deploymentChangeConcernsReleases(notYet, failing));
  EXPECT_TRUE(deploymentChangeConcernsReleases(failing, notYet));
  // Not one that is False.
  json falseOne = d;
  falseOne["status"]["conditions"].push_back(replicaFailure("gone"));
  falseOne["status"]["conditions"][2]["status"] = "False";
  EXPECT_FALSE(deploymentChangeConcernsReleases(d, falseOne));
}

TEST(WatchFilters, ReleasesDropTheModelsOwnConditions) {
  const json m = json::parse(R"({"apiVersion": "lockstep.dev/v1alpha1", "kind": "Model",
    "metadata": {"name": "gpt2", "namespace": "ml", "uid": "m-uid", "resourceVersion": "7",
      "generation": 1, "annotations": {}},
    "spec": {"replicas": 4},
    "status": {"observedGeneration": 1, "revision": 1,
      "prod": {"release": "gpt2-v1", "uid": "r1"},
      "conditions": [{"type": "Ready", "status": "False", "reason": "StableNotReady"}]}})");
  json conditions = m;
  conditions["metadata"]["resourceVersion"] = "8";
  conditions["status"]["conditions"][0]["status"] = "True";
  conditions["status"]["observedGeneration"] = 2;
  EXPECT_FALSE(modelChangeConcernsReleases(m, conditions));
  expectEachPasses(
      modelChangeConcernsReleases, m,
      {{"spec", [](json& x) { x["spec"]["replicas"] = 2; }},
       {"generation", [](json& x) { x["metadata"]["generation"] = 2; }},
       {"annotations",
        [](json& x) { x["metadata"]["annotations"]["rollback.lockstep.dev/1"] = "gpt2-v0"; }},
       {"prod", [](json& x) { x["status"]["prod"]["release"] = "gpt2-v2"; }},
       {"canary",
        [](json& x) {
          x["status"]["canary"] = {{"release", "gpt2-v2"}};
        }},
       {"revision", [](json& x) { x["status"]["revision"] = 2; }},
       {"history",
        [](json& x) {
          x["status"]["history"] = json::array({{{"release", "v0"}}});
        }},
       {"deletion", [](json& x) { x["metadata"]["deletionTimestamp"] = "2026-12-05T08:00:00Z"; }}});
}

TEST(WatchFilters, PodsAndServicesDropOnlyAResourceVersion) {
  const json pod = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ml", "resourceVersion": "1",
      "labels": {"lockstep.dev/release": "gpt2-v1"}},
    "spec": {"nodeName": ""},
    "status": {"phase": "Pending"}})");
  json rv = pod;
  rv["metadata"]["resourceVersion"] = "2";
  rv["metadata"]["managedFields"] = json::array({{{"manager", "kubelet"}}});
  EXPECT_FALSE(changedBeyondResourceVersion(pod, rv));
  expectEachPasses(
      changedBeyondResourceVersion, pod,
      {{"phase", [](json& x) { x["status"]["phase"] = "Running"; }},
       {"nodeName", [](json& x) { x["spec"]["nodeName"] = "n1"; }},
       {"label", [](json& x) { x["metadata"]["labels"]["x"] = "y"; }},
       {"condition", [](json& x) {
          x["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
        }}});
}

json release(const std::string& phase) {
  json r = {{"apiVersion", "lockstep.dev/v1alpha1"},
            {"kind", "ModelRelease"},
            {"metadata", {{"name", "gpt2-v2"}, {"namespace", "ml"}}},
            {"spec", {{"model", "gpt2"}}}};
  if (!phase.empty()) r["status"]["phase"] = phase;
  return r;
}

TEST(WatchFilters, FinishedReleasesWithoutProdReadNoModelObjects) {
  const json model = json::parse(R"({"metadata": {"name": "gpt2", "namespace": "ml"},
    "status": {"prod": {"release": "gpt2-v1"}}})");
  for (const char* phase : {"Failed", "RolledBack", "Validated"})
    EXPECT_FALSE(releaseReadsModelObjects(release(phase), &model)) << phase;
  EXPECT_FALSE(releaseReadsModelObjects(release("RolledBack"), nullptr));
  for (const char* phase :
       {"", "Pending", "Evaluating", "Testing", "Canary", "Promoted", "Superseded", "Bogus"})
    EXPECT_TRUE(releaseReadsModelObjects(release(phase), &model)) << phase;
  // A finished one still holding something in prod.
  json deleting = release("RolledBack");
  deleting["metadata"]["deletionTimestamp"] = "2026-12-05T08:00:00Z";
  EXPECT_TRUE(releaseReadsModelObjects(deleting, &model));
  json finalizer = release("Failed");
  finalizer["metadata"]["finalizers"] = json::array({"lockstep.dev/release-cleanup"});
  EXPECT_TRUE(releaseReadsModelObjects(finalizer, &model));
  json prodIsIt = model;
  prodIsIt["status"]["prod"]["release"] = "gpt2-v2";
  EXPECT_TRUE(releaseReadsModelObjects(release("Failed"), &prodIsIt));
  json holdsSlot = model;
  holdsSlot["status"]["canary"] = {{"release", "gpt2-v2"}};
  EXPECT_TRUE(releaseReadsModelObjects(release("Failed"), &holdsSlot));
  // A mistyped phase reads as none: concerned.
  json mistyped = release("");
  mistyped["status"]["phase"] = 3;
  EXPECT_TRUE(releaseReadsModelObjects(mistyped, &model));
}

json pod(const char* release, const char* track) {
  json p = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "gpt2-pod"}, {"namespace", "ml"}, {"labels", {{"lockstep.dev/model", "gpt2"}}}}}};
  if (release != nullptr) p["metadata"]["labels"]["lockstep.dev/release"] = release;
  if (track != nullptr) p["metadata"]["labels"]["lockstep.dev/track"] = track;
  return p;
}

using Names = std::vector<std::string>;

TEST(WatchFilters, AServingPodOfAnotherReleaseWakesTheCanarySlotsHolder) {
  json model = json::parse(R"({"metadata": {"name": "gpt2", "namespace": "ml"},
    "status": {"prod": {"release": "gpt2-v1"}, "canary": {"release": "gpt2-v2"}}})");
  // A stable pod of prod's release: prod's release and the canary holder, which
  // waits on stable (a rollback restoring it, a step shrinking it, the handover).
  EXPECT_EQ(releasesWokenByPod(pod("gpt2-v1", "stable"), &model), (Names{"gpt2-v1", "gpt2-v2"}));
  // The holder's own pod: the holder once; prod's release is not woken by it.
  EXPECT_EQ(releasesWokenByPod(pod("gpt2-v2", "canary"), &model), (Names{"gpt2-v2"}));
  // A gate Job's pod (no track label): its release only.
  EXPECT_EQ(releasesWokenByPod(pod("gpt2-v3", nullptr), &model), (Names{"gpt2-v3"}));
  // No canary in flight, or no Model: the pod's release only.
  json noCanary = model;
  noCanary["status"].erase("canary");
  EXPECT_EQ(releasesWokenByPod(pod("gpt2-v1", "stable"), &noCanary), (Names{"gpt2-v1"}));
  EXPECT_EQ(releasesWokenByPod(pod("gpt2-v1", "stable"), nullptr), (Names{"gpt2-v1"}));
  // A serving pod whose release label is gone (hand-edited) still wakes the holder.
  EXPECT_EQ(releasesWokenByPod(pod(nullptr, "stable"), &model), (Names{"gpt2-v2"}));
  // A mistyped canary record names no one.
  json mistyped = model;
  mistyped["status"]["canary"]["release"] = 7;
  EXPECT_EQ(releasesWokenByPod(pod("gpt2-v1", "stable"), &mistyped), (Names{"gpt2-v1"}));
}

}  // namespace lockstep::controllers::watch_filters_test
