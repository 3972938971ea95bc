// The serving objects' caches (controllers/common/cached_serving_objects.h):
// every reader of a cached Deployment, Service or release pod reads the same
// of the slimmed object as of the whole one the API server returns.
#include "controllers/common/cached_serving_objects.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/serving_pod.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/gates/gate_verdict.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/ownership.h"
#include "controllers/modelrelease/prod/serving_objects.h"
#include "operator/kube/views.h"

namespace lockstep::controllers::cached_serving_objects_test {

using nlohmann::json;
namespace v1 = api::v1alpha1;

const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');

ServingObjectsInput input() {
  ServingObjectsInput in;
  in.model = "gpt2";
  in.ns = "ml";
  in.modelUid = "model-uid";
  return in;
}

ServingRelease release() {
  ServingRelease r;
  r.release = "gpt2-v2";
  r.package = kPackage;
  r.closureHash = "sha256:" + std::string(64, 'a');
  r.runtimeEnv = "torch";
  r.runtimeImage = kImage;
  r.podTemplate = json::parse(R"({"spec": {"containers": [{"name": "server",
      "args": ["--port", "8080"], "ports": [{"containerPort": 8080}],
      "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}})");
  return r;
}

json built() { return *buildServingDeployment(input(), kTrackStable, release(), 2); }

// `built` as the API server returns it: defaults, server fields, status, managedFields.
json served(json d) {
  d["metadata"]["uid"] = "dep-uid";
  d["metadata"]["resourceVersion"] = "812";
  d["metadata"]["generation"] = 3;
  d["metadata"]["creationTimestamp"] = "2026-12-04T10:00:00Z";
  d["metadata"]["finalizers"] = json::array({"foregroundDeletion"});
  d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "2";
  d["metadata"]["managedFields"] = json::array({{{"manager", "lockstep-operator"}}});
  d["spec"]["progressDeadlineSeconds"] = 600;
  d["spec"]["revisionHistoryLimit"] = 10;
  json& spec = d["spec"]["template"]["spec"];
  spec["dnsPolicy"] = "ClusterFirst";
  spec["schedulerName"] = "default-scheduler";
  for (json& c : spec["containers"]) {
    c["imagePullPolicy"] = "IfNotPresent";
    c["terminationMessagePath"] = "/dev/termination-log";
  }
  d["status"] = json::parse(R"({"observedGeneration": 3, "replicas": 2, "readyReplicas": 1,
      "updatedReplicas": 2, "availableReplicas": 1, "unavailableReplicas": 1,
      "conditions": [
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
         "message": "Deployment does not have minimum availability.",
         "lastUpdateTime": "2026-12-04T10:00:00Z", "lastTransitionTime": "2026-12-04T10:00:00Z"},
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
         "message": "admission webhook denied the request: image not pinned",
         "lastUpdateTime": "2026-12-04T10:00:00Z", "lastTransitionTime": "2026-12-04T10:00:00Z"}]})");
  return d;
}

kube::Object slimmed(kube::Object o, void (*transform)(kube::Object&)) {
  transform(o);
  return o;
}

void expectSameMeta(const kube::MetaView& s, const kube::MetaView& w) {
  EXPECT_EQ(s.key(), w.key());
  EXPECT_EQ(s.uid, w.uid);
  EXPECT_EQ(s.generation, w.generation);
  EXPECT_EQ(s.creationTimestamp, w.creationTimestamp);
  EXPECT_EQ(s.deletionTimestamp, w.deletionTimestamp);
  EXPECT_EQ(s.labels.copy(), w.labels.copy());
  EXPECT_EQ(s.annotations.copy(), w.annotations.copy());
  ASSERT_EQ(s.ownerReferences.size(), w.ownerReferences.size());
  for (size_t i = 0; i < s.ownerReferences.size(); ++i) {
    EXPECT_EQ(s.ownerReferences[i].uid, w.ownerReferences[i].uid);
    EXPECT_EQ(s.ownerReferences[i].kind, w.ownerReferences[i].kind);
    EXPECT_EQ(s.ownerReferences[i].controller, w.ownerReferences[i].controller);
  }
}

void expectSameConditions(const std::vector<kube::ConditionView>& s,
                          const std::vector<kube::ConditionView>& w) {
  ASSERT_EQ(s.size(), w.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].type, w[i].type);
    EXPECT_EQ(s[i].status, w[i].status);
    EXPECT_EQ(s[i].reason, w[i].reason);
    EXPECT_EQ(s[i].message, w[i].message);
  }
}

// Every reader of the Deployment cache (the header's list) reads the same.
TEST(SlimDeployment, EveryReaderReadsTheSameAsOfTheWholeDeployment) {
  const json want = built();
  kube::Object whole = served(want);
  whole["metadata"]["deletionTimestamp"] = "2026-12-04T11:00:00Z";
  const kube::Object slim = slimmed(whole, slimDeployment);
  EXPECT_LT(slim.dump().size(), whole.dump().size());
  EXPECT_FALSE(slim["metadata"].contains("managedFields"));

  const kube::DeploymentView w = kube::viewDeployment(whole);
  const kube::DeploymentView s = kube::viewDeployment(slim);
  expectSameMeta(s.meta, w.meta);
  EXPECT_EQ(s.specReplicas, w.specReplicas);
  EXPECT_EQ(s.templateLabels.copy(), w.templateLabels.copy());
  EXPECT_EQ(s.templateAnnotations.copy(), w.templateAnnotations.copy());
  EXPECT_EQ(s.observedGeneration, w.observedGeneration);
  EXPECT_EQ(s.statusReplicas, w.statusReplicas);
  EXPECT_EQ(s.readyReplicas, w.readyReplicas);
  EXPECT_EQ(s.updatedReplicas, w.updatedReplicas);
  EXPECT_EQ(s.availableReplicas, w.availableReplicas);
  expectSameConditions(s.conditions, w.conditions);
  EXPECT_TRUE(s.problems.empty());

  EXPECT_EQ(templateRelease(&slim), templateRelease(&whole));
  EXPECT_EQ(specReplicas(&slim), specReplicas(&whole));
  EXPECT_EQ(v1::templateServes(slim), v1::templateServes(whole));
  EXPECT_EQ(kube::isBeingDeleted(slim), kube::isBeingDeleted(whole));
  EXPECT_EQ(kube::controllerOf(slim)->uid, kube::controllerOf(whole)->uid);
  EXPECT_EQ(templateHashPatch(want, slim), templateHashPatch(want, whole));
}

// Prod healing compares the live template (deploymentDrift): no drift of the
// slimmed one where the whole one has none, and the same drift where it has.
TEST(SlimDeployment, ProdHealingFindsTheSameDriftInTheSlimmedTemplate) {
  const json want = built();
  const kube::Object whole = served(want);
  EXPECT_EQ(deploymentDrift(want, slimmed(whole, slimDeployment), {}), "");
  EXPECT_EQ(deploymentDrift(want, whole, {}), "");
  auto edits = std::vector<std::function<void(json&)>>{
      [](json& d) { d["spec"]["replicas"] = 0; },
      [](json& d) { d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx"; },
      [](json& d) {
        d["spec"]["template"]["spec"]["containers"][0]["args"] = {"--port", "9"};
      },
      [](json& d) { d["spec"]["template"]["spec"]["containers"][0].erase("ports"); },
      [](json& d) { d["spec"]["template"]["spec"]["volumes"] = json::array(); },
      [](json& d) { d["spec"]["template"]["metadata"]["labels"].erase("lockstep.dev/release"); },
      [](json& d) {
        d["spec"]["template"]["metadata"]["annotations"]["lockstep.dev/package"] = "x";
      },
      [](json& d) { d["metadata"]["annotations"][kTemplateHashAnnotation] = "sha256:other"; },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    kube::Object edited = whole;
    edits[i](edited);
    const kube::Object slim = slimmed(edited, slimDeployment);
    EXPECT_EQ(deploymentDrift(want, slim, {}), deploymentDrift(want, edited, {})) << "edit " << i;
    EXPECT_EQ(templateHashPatch(want, slim), templateHashPatch(want, edited)) << "edit " << i;
  }
}

json service(const std::string& type) {
  ServingObjectsInput in = input();
  in.serviceType = type;
  return buildModelService(in);
}

json servedService(json s) {
  s["metadata"]["uid"] = "svc-uid";
  s["metadata"]["resourceVersion"] = "90";
  s["metadata"]["managedFields"] = json::array({{{"manager", "lockstep-operator"}}});
  json& spec = s["spec"];
  spec["clusterIP"] = "10.0.12.7";
  spec["clusterIPs"] = json::array({"10.0.12.7"});
  spec["ipFamilies"] = json::array({"IPv4"});
  spec["ipFamilyPolicy"] = "SingleStack";
  spec["internalTrafficPolicy"] = "Cluster";
  spec["sessionAffinity"] = "None";
  if (spec["type"] != "ClusterIP") {
    spec["externalTrafficPolicy"] = "Cluster";
    for (json& p : spec["ports"]) p["nodePort"] = 31234;
  }
  s["status"] = {{"loadBalancer", json::object()}};
  return s;
}

// serviceHolds compares every spec field buildModelService sets: each one
// must survive the slimming, or prod healing re-applies the Service forever.
TEST(SlimService, KeepsEverySpecFieldTheOperatorSetsAndReadsTheSame) {
  for (const std::string type : {"ClusterIP", "NodePort", "LoadBalancer"}) {
    const json want = service(type);
    const kube::Object whole = servedService(want);
    const kube::Object slim = slimmed(whole, slimService);
    for (const auto& [key, value] : want["spec"].items())
      EXPECT_EQ(slim["spec"].value(key, json()), whole["spec"][key]) << type << " spec." << key;
    EXPECT_FALSE(slim.contains("status"));
    EXPECT_FALSE(slim["spec"].contains("clusterIP"));
    EXPECT_FALSE(slim["metadata"].contains("managedFields"));
    EXPECT_TRUE(serviceHolds(want, whole)) << type;
    EXPECT_TRUE(serviceHolds(want, slim)) << type;
    EXPECT_EQ(serviceDrift(want, slim), "") << type;
    EXPECT_EQ(kube::controllerOf(slim)->uid, kube::controllerOf(whole)->uid);
    EXPECT_EQ(kube::label(slim, kModelLabel), kube::label(whole, kModelLabel));
    EXPECT_EQ(slim["spec"]["ports"][0]["port"], whole["spec"]["ports"][0]["port"]);
    EXPECT_EQ(kube::uid(slim), kube::uid(whole));
  }
}

TEST(SlimService, ProdHealingFindsTheSameDriftInTheSlimmedService) {
  const json want = service("ClusterIP");
  auto edits = std::vector<std::function<void(json&)>>{
      [](json& s) { s["spec"]["type"] = "NodePort"; },
      [](json& s) { s["spec"]["selector"]["app"] = "other"; },
      [](json& s) { s["spec"]["ports"][0]["targetPort"] = 9090; },
      [](json& s) { s["metadata"]["labels"].erase(kModelLabel); },
      [](json& s) { s["metadata"]["ownerReferences"] = json::array(); },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    kube::Object edited = servedService(want);
    edits[i](edited);
    const kube::Object slim = slimmed(edited, slimService);
    EXPECT_FALSE(serviceHolds(want, slim)) << "edit " << i;
    EXPECT_EQ(serviceDrift(want, slim), serviceDrift(want, edited)) << "edit " << i;
  }
}

// A serving pod as the kubelet reports it: a verification init container that
// failed once (lastState), a serving container restarted, Ready.
kube::Object servingPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gpt2-stable-5d9-x7k2p", "namespace": "ml", "uid": "pod-uid",
                 "resourceVersion": "77", "generateName": "gpt2-stable-5d9-",
                 "creationTimestamp": "2026-12-04T10:01:00Z",
                 "labels": {"lockstep.dev/model": "gpt2", "lockstep.dev/track": "stable",
                            "lockstep.dev/release": "gpt2-v2", "lockstep.dev/serving": "true",
                            "batch.kubernetes.io/job-name": "gpt2-v2-gate"},
                 "annotations": {"lockstep.dev/package": "p@sha256:1",
                                 "lockstep.dev/closure-hash": "sha256:aa"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                      "name": "gpt2-stable-5d9", "uid": "rs-uid",
                                      "controller": true}],
                 "managedFields": [{"manager": "kube-controller-manager"}]},
    "spec": {"nodeName": "gpu-3", "serviceAccountName": "default",
             "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
             "initContainers": [{"name": "verify-env", "image": "cli@sha256:2",
                                 "command": ["lockstep", "verify-env"],
                                 "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
             "containers": [{"name": "server", "image": "torch@sha256:1",
                             "env": [{"name": "LOCKSTEP_RELEASE", "value": "gpt2-v2"}],
                             "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
             "volumes": [{"name": "kube-api-access", "projected": {"sources": []}}]},
    "status": {"phase": "Running", "hostIP": "10.0.0.3", "podIP": "10.1.0.9",
               "podIPs": [{"ip": "10.1.0.9"}], "qosClass": "Burstable",
               "startTime": "2026-12-04T10:01:00Z",
               "conditions": [
                 {"type": "PodScheduled", "status": "True", "lastTransitionTime": "x"},
                 {"type": "Ready", "status": "True", "lastTransitionTime": "x"},
                 {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
                  "message": "containers with unready status: [server]", "lastProbeTime": null}],
               "initContainerStatuses": [{"name": "verify-env", "ready": true,
                 "restartCount": 1, "image": "cli@sha256:2", "imageID": "cli@sha256:2",
                 "containerID": "containerd://aa",
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                 "lastState": {"terminated": {"exitCode": 3, "reason": "Error",
                   "message": "closure hash mismatch: sha256:aa != sha256:bb"}}}],
               "containerStatuses": [{"name": "server", "ready": true, "restartCount": 2,
                 "started": true, "image": "torch@sha256:1", "imageID": "torch@sha256:1",
                 "containerID": "containerd://bb",
                 "state": {"running": {"startedAt": "2026-12-04T10:02:00Z"}},
                 "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                   "message": "out of memory"}}}]}})");
}

// Every reader of the release pod cache (the header's list) reads the same.
TEST(SlimReleasePod, EveryReaderReadsTheSameAsOfTheWholePod) {
  const kube::Object whole = servingPod();
  const kube::Object slim = slimmed(whole, slimReleasePod);
  EXPECT_LT(slim.dump().size(), whole.dump().size());
  EXPECT_FALSE(slim["spec"].contains("tolerations"));
  EXPECT_FALSE(slim["spec"]["containers"][0].contains("env"));
  EXPECT_FALSE(slim["status"].contains("podIP"));

  const kube::PodView w = kube::viewPod(whole);
  const kube::PodView s = kube::viewPod(slim);
  expectSameMeta(s.meta, w.meta);
  EXPECT_EQ(s.nodeName, w.nodeName);
  EXPECT_EQ(s.phase, w.phase);
  EXPECT_EQ(s.ready, w.ready);
  EXPECT_EQ(s.unschedulable, w.unschedulable);
  EXPECT_EQ(w.gpuRequest, 4);
  EXPECT_EQ(s.gpuRequest, w.gpuRequest);
  EXPECT_EQ(w.restarts(), 2);
  EXPECT_EQ(s.restarts(), w.restarts());
  ASSERT_EQ(s.containers.size(), w.containers.size());
  EXPECT_EQ(s.containers[0].ready, w.containers[0].ready);
  expectSameConditions(s.conditions, w.conditions);
  EXPECT_TRUE(s.problems.empty());

  // Verification failures (canary observe, serving health, the gates).
  ASSERT_TRUE(containerFailure(whole, true).has_value());
  EXPECT_EQ(containerFailure(slim, true), containerFailure(whole, true));
  EXPECT_EQ(containerFailure(slim, false), containerFailure(whole, false));
  // The gates: the Job's pods, and the main container's terminated state.
  const std::vector<json> wholes{whole}, slims{slim};
  EXPECT_EQ(podsOfJob(slims, "gpt2-v2-gate").size(), podsOfJob(wholes, "gpt2-v2-gate").size());
  kube::Object done = whole;
  done["status"]["phase"] = "Succeeded";
  done["status"]["containerStatuses"][0]["state"] =
      json::parse(R"({"terminated": {"exitCode": 0, "message": "{\"accuracy\": 0.9}"}})");
  const kube::Object doneSlim = slimmed(done, slimReleasePod);
  ASSERT_NE(terminatedState(done, "server"), nullptr);
  ASSERT_NE(terminatedState(doneSlim, "server"), nullptr);
  EXPECT_EQ(*terminatedState(doneSlim, "server"), *terminatedState(done, "server"));
}

// The serving rule (the webhook, servingPodsOf) over the slimmed caches: the
// pod, its ReplicaSet and the Deployment, each as its cache holds it.
TEST(SlimReleasePod, TheServingRuleCountsTheSamePodsOverTheSlimmedCaches) {
  kube::Object dep = served(built());
  dep["metadata"]["ownerReferences"][0]["uid"] = "model-uid";
  kube::Object rs = json::parse(R"({"apiVersion": "apps/v1", "kind": "ReplicaSet",
      "metadata": {"name": "gpt2-stable-5d9", "namespace": "ml", "uid": "rs-uid",
                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "gpt2-stable", "uid": "dep-uid",
                                        "controller": true}]},
      "spec": {"replicas": 1}})");
  rs["spec"]["template"] = dep["spec"]["template"];
  v1::slimReplicaSet(rs);
  const kube::Object model = json::parse(R"({"apiVersion": "lockstep.dev/v1alpha1",
      "kind": "Model", "metadata": {"name": "gpt2", "namespace": "ml", "uid": "model-uid"}})");
  auto lookupOver = [&](const kube::Object& d) -> v1::NamespacedLookup {
    return [&rs, &model, d](std::string_view kind, const std::string& name) -> kube::ObjectPtr {
      if (kind == "ReplicaSet" && name == kube::name(rs)) return std::make_shared<kube::Object>(rs);
      if (kind == "Deployment" && name == kube::name(d)) return std::make_shared<kube::Object>(d);
      if (kind == "Model" && name == "gpt2") return std::make_shared<kube::Object>(model);
      return nullptr;
    };
  };
  const kube::Object pod = servingPod();
  const bool whole = v1::countsAsServing(pod, "gpt2", kTrackStable, lookupOver(dep));
  EXPECT_TRUE(whole) << v1::servingOwnerOf(pod, "gpt2", lookupOver(dep)).why;
  EXPECT_EQ(v1::countsAsServing(slimmed(pod, slimReleasePod), "gpt2", kTrackStable,
                                lookupOver(slimmed(dep, slimDeployment))),
            whole);
}

// The caches of unlabelled objects: the other half of each resource (no
// lockstep.dev/model label), metadata only, trimmed to what the ownership
// check reads; the NameConflict found from a trimmed object is the one found
// from the whole object a GET returns.
TEST(CachedServingObjects, TheUnlabelledCachesKeepWhatTheOwnershipCheckReads) {
  for (const kube::Resource* r : {&kube::resources::kDeployments, &kube::resources::kServices}) {
    const kube::InformerOptions o = unlabelledMetadata(*r);
    EXPECT_EQ(o.resource.resource, r->resource);
    EXPECT_EQ(o.labelSelector, std::string("!") + v1::kModelLabel);
    EXPECT_TRUE(o.metadataOnly);
    EXPECT_TRUE(static_cast<bool>(o.transform));
  }
  kube::Object team = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata",
       {{"name", "gpt2-stable"},
        {"namespace", "ml"},
        {"uid", "team-uid"},
        {"resourceVersion", "7"},
        {"labels", {{"app", "gpt2"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/last-applied-configuration", std::string(900, 'x')}}},
        {"ownerReferences", json::array({{{"kind", "Model"}, {"name", "gpt2"}, {"uid", "old"}}})},
        {"managedFields", json::array({{{"manager", "kubectl"}}})}}},
      {"spec", {{"replicas", 3}}},
      {"status", {{"replicas", 3}}}};
  kube::Object trimmed = team;
  trimToOwnership(trimmed);
  EXPECT_EQ(trimmed["metadata"],
            (json{{"name", "gpt2-stable"},
                  {"namespace", "ml"},
                  {"uid", "team-uid"},
                  {"resourceVersion", "7"},
                  {"labels", {{"app", "gpt2"}}},
                  {"ownerReferences",
                   json::array({{{"kind", "Model"}, {"name", "gpt2"}, {"uid", "old"}}})}}));
  EXPECT_FALSE(trimmed.contains("spec"));
  EXPECT_FALSE(trimmed.contains("status"));
  EXPECT_EQ(trimmed["kind"], "Deployment");
  ProdObserved whole, fromCache;
  whole.stableDeployment = std::make_shared<const kube::Object>(team);
  fromCache.stableDeployment = std::make_shared<const kube::Object>(trimmed);
  const auto a = findNameConflict("gpt2", whole, "");
  const auto b = findNameConflict("gpt2", fromCache, "");
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->message("ml", "gpt2"), b->message("ml", "gpt2"));
}

TEST(CachedServingObjects, OneInformerPerKindForEveryReader) {
  EXPECT_EQ(modelDeployments().resource.resource, "deployments");
  EXPECT_EQ(modelDeployments().labelSelector, v1::kModelLabel);
  EXPECT_EQ(modelServices().resource.resource, "services");
  EXPECT_EQ(modelServices().labelSelector, v1::kModelLabel);
  EXPECT_EQ(releasePods().resource.resource, "pods");
  EXPECT_EQ(releasePods().labelSelector, v1::kReleaseLabel);
  for (const kube::InformerOptions& o : {modelDeployments(), modelServices(), releasePods()})
    EXPECT_TRUE(static_cast<bool>(o.transform)) << o.resource.resource;
}

}  // namespace lockstep::controllers::cached_serving_objects_test
