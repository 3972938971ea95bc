// Tests of the typed views of Pod, Node and Deployment (operator/kube/views.h):
// objects shaped as the API server sends them (kubectl get -o json, trimmed),
// then malformed ones: each field's default and the problem line naming it.
#include "operator/kube/views.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace lockstep::kube {
namespace {

using nlohmann::json;

// A serving pod of a canary, Running and Ready, one restart, one GPU.
const json kPod = json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": "gpt2-canary-7d9f8-abcde", "namespace": "ml", "uid": "5f1c-pod",
    "resourceVersion": "4821", "creationTimestamp": "2026-12-03T20:01:02Z",
    "labels": {"lockstep.dev/model": "gpt2", "lockstep.dev/track": "canary",
               "lockstep.dev/release": "gpt2-v2", "pod-template-hash": "7d9f8"},
    "annotations": {"lockstep.dev/closure-hash": "sha256:aa"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "gpt2-canary-7d9f8",
                         "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}]},
  "spec": {
    "nodeName": "gpu-a",
    "containers": [{"name": "server", "image": "reg.example/runtime@sha256:bb",
                    "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"},
                                  "limits": {"nvidia.com/gpu": "1"}}},
                   {"name": "sidecar", "image": "reg.example/proxy:1",
                    "resources": {"requests": {"cpu": "100m"}}}],
    "initContainers": [{"name": "verify", "image": "reg.example/cli:1",
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
  "status": {
    "phase": "Running",
    "conditions": [
      {"type": "PodReadyToStartContainers", "status": "True"},
      {"type": "Initialized", "status": "True"},
      {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T20:02:00Z"},
      {"type": "ContainersReady", "status": "True"},
      {"type": "PodScheduled", "status": "True"}],
    "containerStatuses": [
      {"name": "server", "ready": true, "restartCount": 1, "image": "reg.example/runtime@sha256:bb"},
      {"name": "sidecar", "ready": true, "restartCount": 0}]}})");

// A pod the scheduler could not place.
const json kPendingPod = json::parse(R"({
  "metadata": {"name": "gpt2-canary-7d9f8-zzzzz", "namespace": "ml", "uid": "u2",
               "deletionTimestamp": "2026-12-03T20:05:00Z"},
  "spec": {"containers": [{"name": "server",
                           "resources": {"requests": {"nvidia.com/gpu": 2}}}]},
  "status": {"phase": "Pending",
             "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                             "message": "0/5 nodes are available: 2 Insufficient nvidia.com/gpu."}]}})");

TEST(PodView, ReadsAPodAsTheApiServerSendsIt) {
  const PodView p = viewPod(kPod);
  EXPECT_EQ(p.meta.name, "gpt2-canary-7d9f8-abcde");
  EXPECT_EQ(p.meta.ns, "ml");
  EXPECT_EQ(p.meta.uid, "5f1c-pod");
  EXPECT_EQ(p.meta.key(), "ml/gpt2-canary-7d9f8-abcde");
  EXPECT_EQ(p.meta.creationTimestamp, "2026-12-03T20:01:02Z");
  EXPECT_EQ(p.meta.labels.get("lockstep.dev/track"), "canary");
  EXPECT_EQ(p.meta.labels.get("lockstep.dev/release"), "gpt2-v2");
  EXPECT_FALSE(p.meta.labels.find("absent"));
  EXPECT_EQ(p.meta.annotations.get("lockstep.dev/closure-hash"), "sha256:aa");
  ASSERT_EQ(p.meta.ownerReferences.size(), 1u);
  ASSERT_NE(p.meta.controller(), nullptr);
  EXPECT_EQ(p.meta.controller()->kind, "ReplicaSet");
  EXPECT_EQ(p.meta.controller()->uid, "rs-uid");
  EXPECT_EQ(p.nodeName, "gpu-a");
  EXPECT_EQ(p.phase, "Running");
  EXPECT_TRUE(p.ready);
  EXPECT_FALSE(p.terminating());
  EXPECT_FALSE(p.unschedulable);
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].name, "server");
  EXPECT_EQ(p.containers[0].restartCount, 1);
  EXPECT_TRUE(p.containers[0].ready);
  EXPECT_EQ(p.restarts(), 1);
  // 1 (server's request) + 0 (sidecar); the init container's 1 is not larger.
  EXPECT_EQ(p.gpuRequest, 1);
  EXPECT_EQ(p.conditions.size(), 5u);
  EXPECT_TRUE(p.problems.empty()) << p.problems.front();
}

TEST(PodView, ReadsSchedulingFailureAndTermination) {
  const PodView p = viewPod(kPendingPod);
  EXPECT_EQ(p.phase, "Pending");
  EXPECT_TRUE(p.terminating());
  EXPECT_EQ(p.meta.deletionTimestamp, "2026-12-03T20:05:00Z");
  EXPECT_TRUE(p.unschedulable);
  EXPECT_EQ(p.scheduleFailureReason, "Unschedulable");
  EXPECT_EQ(p.scheduleFailureMessage, "0/5 nodes are available: 2 Insufficient nvidia.com/gpu.");
  EXPECT_FALSE(p.ready);
  EXPECT_EQ(p.nodeName, "");
  EXPECT_EQ(p.gpuRequest, 2);
  EXPECT_TRUE(p.problems.empty());
}

TEST(PodView, ReadyIsTheReadyConditionOnly) {
  json pod = kPod;
  pod["status"]["conditions"][2]["status"] = "False";  // Ready=False, ContainersReady=True
  EXPECT_FALSE(viewPod(pod).ready);
  pod["status"]["conditions"][2]["status"] = "Unknown";
  EXPECT_FALSE(viewPod(pod).ready);
  pod["status"]["conditions"].erase(2);
  EXPECT_FALSE(viewPod(pod).ready);  // ContainersReady alone is not Ready
}

// Each row: the pod with one field malformed or missing, what the view reads
// (the header's default) and the problem line it adds ("" = none).
struct PodCase {
  const char* what;
  json::json_pointer at;
  json value;  // null: the member is removed
  std::string problem;
};

TEST(PodView, MalformedFieldsReadAsTheirDefaultAndAreNamed) {
  const std::vector<PodCase> cases = {
      {"restartCount as a string", json::json_pointer("/status/containerStatuses/0/restartCount"),
       "3",
       "Pod ml/gpt2-canary-7d9f8-abcde: status.containerStatuses[0].restartCount: \"3\" is not "
       "an integer (read as 0)"},
      {"a negative restartCount", json::json_pointer("/status/containerStatuses/0/restartCount"),
       -2,
       "Pod ml/gpt2-canary-7d9f8-abcde: status.containerStatuses[0].restartCount: -2 is negative "
       "(read as 0)"},
      {"no status", json::json_pointer("/status"), nullptr, ""},
      {"status as a string", json::json_pointer("/status"), "Running",
       "Pod ml/gpt2-canary-7d9f8-abcde: status: \"Running\" is not an object (read as empty)"},
      {"conditions as an object", json::json_pointer("/status/conditions"), json{{"type", "Ready"}},
       "Pod ml/gpt2-canary-7d9f8-abcde: status.conditions: {\"type\":\"Ready\"} is not an array "
       "(read as empty)"},
      {"a condition that is a string", json::json_pointer("/status/conditions/2"), "Ready",
       "Pod ml/gpt2-canary-7d9f8-abcde: status.conditions[2]: \"Ready\" is not an object "
       "(skipped)"},
      {"phase as a number", json::json_pointer("/status/phase"), 2,
       "Pod ml/gpt2-canary-7d9f8-abcde: status.phase: 2 is not a string (read as \"\")"},
      {"nodeName as an object", json::json_pointer("/spec/nodeName"), json::object(),
       "Pod ml/gpt2-canary-7d9f8-abcde: spec.nodeName: {} is not a string (read as \"\")"},
      {"deletionTimestamp as a number", json::json_pointer("/metadata/deletionTimestamp"), 17,
       "Pod ml/gpt2-canary-7d9f8-abcde: metadata.deletionTimestamp: 17 is not a string (read as "
       "\"\")"},
      {"labels as an array", json::json_pointer("/metadata/labels"), json::array({"a"}),
       "Pod ml/gpt2-canary-7d9f8-abcde: metadata.labels: [\"a\"] is not an object (read as "
       "empty)"},
      {"a GPU request of \"1k\"",
       json::json_pointer("/spec/containers/0/resources/requests/nvidia.com~1gpu"), "1k",
       "Pod ml/gpt2-canary-7d9f8-abcde: spec.containers[0].resources.requests[\"nvidia.com/gpu\"]: "
       "\"1k\" is not a whole number of devices (read as 0)"},
  };
  for (const PodCase& c : cases) {
    SCOPED_TRACE(c.what);
    json pod = kPod;
    if (c.value.is_null()) {
      pod[c.at.parent_pointer()].erase(c.at.back());
    } else {
      pod[c.at] = c.value;
    }
    const PodView p = viewPod(pod);
    if (c.problem.empty()) {
      EXPECT_TRUE(p.problems.empty()) << p.problems.front();
    } else {
      ASSERT_EQ(p.problems.size(), 1u);
      EXPECT_EQ(p.problems[0], c.problem);
    }
    EXPECT_EQ(p.meta.name, "gpt2-canary-7d9f8-abcde");  // the rest is still read
  }
}

TEST(PodView, DefaultsOfMalformedFields) {
  json pod = kPod;
  pod["status"]["containerStatuses"][0]["restartCount"] = "3";
  EXPECT_EQ(viewPod(pod).restarts(), 0);
  pod = kPod;
  pod.erase("status");
  PodView p = viewPod(pod);
  EXPECT_EQ(p.phase, "");
  EXPECT_FALSE(p.ready);
  EXPECT_FALSE(p.unschedulable);
  EXPECT_TRUE(p.containers.empty());
  EXPECT_EQ(p.gpuRequest, 1);  // the spec is still read
  pod = kPod;
  pod["metadata"]["labels"] = json::array({"a"});
  EXPECT_EQ(viewPod(pod).meta.labels.get("lockstep.dev/track"), "");
  pod = kPod;
  pod["metadata"]["labels"]["lockstep.dev/track"] = 7;  // a non-string label reads as absent
  EXPECT_FALSE(viewPod(pod).meta.labels.find("lockstep.dev/track"));
  // Not an object at all: everything at its default, the metadata named.
  const json notAnObject = json::array();
  p = viewPod(notAnObject);
  EXPECT_EQ(p.meta.name, "");
  EXPECT_TRUE(p.problems.empty());
  const json badMetadata = {{"metadata", "x"}};
  p = viewPod(badMetadata);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_EQ(p.problems[0], "Pod (no name): metadata: \"x\" is not an object (read as empty)");
}

// GPU quantities: "2" and 2 are two devices; anything else is none, and named.
TEST(GpuQuantity, WholeDevicesOnly) {
  struct Row {
    json q;
    std::optional<int64_t> want;
  };
  const std::vector<Row> rows = {
      {"2", 2},
      {2, 2},
      {"0", 0},
      {0, 0},
      {"16", 16},
      {"1k", std::nullopt},
      {"500m", std::nullopt},
      {"1.5", std::nullopt},
      {"-1", std::nullopt},
      {-1, std::nullopt},
      {2.0, std::nullopt},
      {true, std::nullopt},
      {"", std::nullopt},
      {"1234567890123", std::nullopt},
      {" 2", std::nullopt},
      {json::object(), std::nullopt},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.q.dump());
    EXPECT_EQ(wholeQuantity(r.q), r.want);
  }
}

TEST(GpuQuantity, PodRequestCountsLikeTheScheduler) {
  json spec = kPod["spec"];
  EXPECT_EQ(gpuRequestOf(spec), 1);
  spec["containers"][1]["resources"]["limits"] = {{"nvidia.com/gpu", 2}};  // a limit alone counts
  EXPECT_EQ(gpuRequestOf(spec), 3);
  spec["initContainers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4";
  EXPECT_EQ(gpuRequestOf(spec), 4);  // the largest init container, when larger than the sum
  // A request wins over its limit, even a malformed one (read as 0).
  spec["initContainers"][0]["resources"]["requests"] = {{"nvidia.com/gpu", "1k"}};
  std::vector<std::string> problems;
  EXPECT_EQ(gpuRequestOf(spec, &problems, "template.spec"), 3);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0],
            "template.spec.initContainers[0].resources.requests[\"nvidia.com/gpu\"]: \"1k\" is not "
            "a whole number of devices (read as 0)");
  EXPECT_EQ(gpuRequestOf(json::object()), 0);
  EXPECT_EQ(gpuRequestOf(json{{"containers", "x"}}), 0);
}

const json kNode = json::parse(R"({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "gpu-a", "uid": "node-uid",
               "labels": {"kubernetes.io/hostname": "gpu-a", "nvidia.com/cuda.driver.major": "570",
                          "nvidia.com/cuda.driver.minor": "86", "nvidia.com/cuda.driver.rev": "15"}},
  "spec": {"podCIDR": "10.244.1.0/24",
           "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
  "status": {
    "capacity": {"cpu": "64", "memory": "528012312Ki", "nvidia.com/gpu": "8", "pods": "110"},
    "allocatable": {"cpu": "63500m", "memory": "527909912Ki", "nvidia.com/gpu": "7", "pods": "110"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady",
       "message": "kubelet is posting ready status"}]}})");

TEST(NodeView, ReadsANodeAsTheApiServerSendsIt) {
  const NodeView n = viewNode(kNode);
  EXPECT_EQ(n.meta.name, "gpu-a");
  EXPECT_EQ(n.meta.key(), "gpu-a");  // cluster-scoped
  EXPECT_EQ(n.meta.labels.get("nvidia.com/cuda.driver.major"), "570");
  EXPECT_EQ(n.allocatableGpus, 7);
  EXPECT_EQ(n.capacityGpus, 8);
  EXPECT_FALSE(n.unschedulable);
  ASSERT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(n.taints[0].value, "present");
  EXPECT_EQ(n.taints[0].effect, "NoSchedule");
  EXPECT_TRUE(n.ready);
  EXPECT_TRUE(n.problems.empty()) << n.problems.front();
}

TEST(NodeView, MalformedAndMissingFields) {
  json node = kNode;
  node["spec"]["unschedulable"] = true;
  node["status"]["allocatable"]["nvidia.com/gpu"] = 4;    // a JSON integer counts as well
  node["status"]["conditions"][1]["status"] = "Unknown";  // the kubelet stopped posting
  NodeView n = viewNode(node);
  EXPECT_TRUE(n.unschedulable);
  EXPECT_EQ(n.allocatableGpus, 4);
  EXPECT_FALSE(n.ready);
  EXPECT_TRUE(n.problems.empty());

  node = kNode;
  node["status"]["allocatable"]["nvidia.com/gpu"] = "1k";
  node["spec"]["unschedulable"] = "true";
  node["spec"]["taints"][0]["effect"] = 3;
  n = viewNode(node);
  EXPECT_EQ(n.allocatableGpus, 0);
  EXPECT_EQ(n.capacityGpus, 8);
  EXPECT_FALSE(n.unschedulable);
  ASSERT_EQ(n.taints.size(), 1u);
  EXPECT_EQ(n.taints[0].effect, "");
  EXPECT_EQ(n.problems,
            (std::vector<std::string>{
                "Node gpu-a: status.allocatable[\"nvidia.com/gpu\"]: \"1k\" is not a whole number "
                "of devices (read as 0)",
                "Node gpu-a: spec.unschedulable: \"true\" is not a boolean (read as false)",
                "Node gpu-a: spec.taints[0].effect: 3 is not a string (read as \"\")"}));

  node = kNode;
  node.erase("status");  // a node just registered
  node["spec"].erase("taints");
  n = viewNode(node);
  EXPECT_EQ(n.allocatableGpus, 0);
  EXPECT_EQ(n.capacityGpus, 0);
  EXPECT_TRUE(n.taints.empty());
  EXPECT_FALSE(n.ready);
  EXPECT_TRUE(n.problems.empty());
}

// The GPU count's views read what the full views read of the same fields, for
// the objects above with each of those fields (and their parents) malformed or gone.
TEST(GpuViews, ReadTheirFieldsAsTheFullViews) {
  std::vector<std::pair<std::string, json>> pods = {{"as sent", kPod}, {"pending", kPendingPod}};
  auto podWith = [&](const std::string& what, const char* at, const json& value) {
    json pod = kPod;
    const json::json_pointer ptr(at);
    if (value.is_null()) {
      pod[ptr.parent_pointer()].erase(ptr.back());
    } else {
      pod[ptr] = value;
    }
    pods.emplace_back(what, pod);
  };
  podWith("no spec", "/spec", nullptr);
  podWith("spec as a string", "/spec", "x");
  podWith("no status", "/status", nullptr);
  podWith("status as an array", "/status", json::array({"Running"}));
  podWith("phase as a number", "/status/phase", 2);
  podWith("nodeName as an object", "/spec/nodeName", json::object());
  podWith("containers as an object", "/spec/containers", json::object());
  podWith("a GPU request of \"1k\"", "/spec/containers/0/resources/requests/nvidia.com~1gpu", "1k");
  podWith("a GPU request of 3", "/spec/containers/0/resources/requests/nvidia.com~1gpu", 3);
  pods.emplace_back("not an object", json::array());
  for (const auto& [what, pod] : pods) {
    SCOPED_TRACE("pod " + what);
    const PodView full = viewPod(pod);
    const PodGpuView gpu = viewPodGpu(pod);
    EXPECT_EQ(gpu.nodeName, full.nodeName);
    EXPECT_EQ(gpu.phase, full.phase);
    EXPECT_EQ(gpu.gpuRequest, full.gpuRequest);
  }
  EXPECT_EQ(viewPodGpu(kPod).gpuRequest, 1);  // the table reads something
  EXPECT_NE(viewPodGpu(kPod).nodeName, "");
  EXPECT_NE(viewPodGpu(kPod).phase, "");

  std::vector<std::pair<std::string, json>> nodes = {{"as sent", kNode}};
  auto nodeWith = [&](const std::string& what, const char* at, const json& value) {
    json node = kNode;
    const json::json_pointer ptr(at);
    if (value.is_null()) {
      node[ptr.parent_pointer()].erase(ptr.back());
    } else {
      node[ptr] = value;
    }
    nodes.emplace_back(what, node);
  };
  nodeWith("cordoned", "/spec/unschedulable", true);
  nodeWith("unschedulable as a string", "/spec/unschedulable", "true");
  nodeWith("spec as a string", "/spec", "x");
  nodeWith("no status", "/status", nullptr);
  nodeWith("allocatable as an array", "/status/allocatable", json::array({"8"}));
  nodeWith("GPUs as a JSON integer", "/status/allocatable/nvidia.com~1gpu", 4);
  nodeWith("GPUs of \"1k\"", "/status/allocatable/nvidia.com~1gpu", "1k");
  nodeWith("no GPUs", "/status/allocatable/nvidia.com~1gpu", nullptr);
  nodeWith("labels as an array", "/metadata/labels", json::array({"a"}));
  nodeWith("a driver label as a number", "/metadata/labels/nvidia.com~1cuda.driver.major", 570);
  nodeWith("metadata as a string", "/metadata", "x");
  nodeWith("name as a number", "/metadata/name", 7);
  for (const auto& [what, node] : nodes) {
    SCOPED_TRACE("node " + what);
    const NodeView full = viewNode(node);
    const NodeGpuView gpu = viewNodeGpu(node);
    EXPECT_EQ(gpu.name, full.meta.name);
    EXPECT_EQ(gpu.allocatableGpus, full.allocatableGpus);
    EXPECT_EQ(gpu.unschedulable, full.unschedulable);
    EXPECT_EQ(gpu.labels.copy(), full.meta.labels.copy());
  }
  EXPECT_EQ(viewNodeGpu(kNode).allocatableGpus, 7);
  EXPECT_EQ(viewNodeGpu(kNode).name, "gpu-a");
  EXPECT_EQ(viewNodeGpu(kNode).labels.get("nvidia.com/cuda.driver.major"), "570");
}

const json kDeployment = json::parse(R"({
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "gpt2-stable", "namespace": "ml", "uid": "dep-uid", "generation": 4,
               "labels": {"lockstep.dev/model": "gpt2", "app.kubernetes.io/managed-by": "lockstep"}},
  "spec": {"replicas": 3,
           "selector": {"matchLabels": {"lockstep.dev/model": "gpt2", "lockstep.dev/track": "stable"}},
           "template": {"metadata": {"labels": {"lockstep.dev/release": "gpt2-v1",
                                                "lockstep.dev/track": "stable"},
                                     "annotations": {"lockstep.dev/closure-hash": "sha256:aa"}},
                        "spec": {"containers": [{"name": "server", "image": "r@sha256:bb"}]}}},
  "status": {"observedGeneration": 4, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 2,
             "availableReplicas": 1,
             "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                            {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                             "message": "pods \"gpt2-stable-x\" is forbidden: denied"}]}})");

TEST(DeploymentView, ReadsADeploymentAsTheApiServerSendsIt) {
  const DeploymentView d = viewDeployment(kDeployment);
  EXPECT_EQ(d.meta.key(), "ml/gpt2-stable");
  EXPECT_EQ(d.meta.generation, 4);
  EXPECT_EQ(d.specReplicas, 3);
  EXPECT_EQ(d.replicas(), 3);
  EXPECT_EQ(d.templateLabels.get("lockstep.dev/release"), "gpt2-v1");
  EXPECT_EQ(d.templateAnnotations.get("lockstep.dev/closure-hash"), "sha256:aa");
  EXPECT_EQ(d.observedGeneration, 4);
  EXPECT_EQ(d.statusReplicas, 3);
  EXPECT_EQ(d.updatedReplicas, 3);
  EXPECT_EQ(d.readyReplicas, 2);
  EXPECT_EQ(d.availableReplicas, 1);  // one not yet Ready for minReadySeconds
  ASSERT_EQ(d.conditions.size(), 2u);
  EXPECT_EQ(d.conditions[1].type, "ReplicaFailure");
  EXPECT_TRUE(d.conditions[1].isTrue());
  EXPECT_EQ(d.conditions[1].reason, "FailedCreate");
  EXPECT_EQ(d.conditions[1].message, "pods \"gpt2-stable-x\" is forbidden: denied");
  EXPECT_TRUE(d.problems.empty()) << d.problems.front();
}

TEST(DeploymentView, MalformedAndMissingFields) {
  json dep = kDeployment;
  dep["spec"].erase("replicas");  // the API server defaults it to 1
  dep.erase("status");            // just created: no status yet
  DeploymentView d = viewDeployment(dep);
  EXPECT_EQ(d.specReplicas, std::nullopt);
  EXPECT_EQ(d.replicas(), 1);
  EXPECT_EQ(d.statusReplicas, 0);
  EXPECT_EQ(d.readyReplicas, 0);
  EXPECT_EQ(d.observedGeneration, 0);
  EXPECT_TRUE(d.conditions.empty());
  EXPECT_TRUE(d.problems.empty());

  dep = kDeployment;
  dep["spec"]["replicas"] = "2";
  dep["status"]["readyReplicas"] = 1.5;
  dep["spec"]["template"]["metadata"] = "x";
  d = viewDeployment(dep);
  EXPECT_EQ(d.specReplicas, std::nullopt);
  EXPECT_EQ(d.replicas(), 1);
  EXPECT_EQ(d.readyReplicas, 0);
  EXPECT_EQ(d.templateLabels.get("lockstep.dev/release"), "");
  EXPECT_TRUE(d.templateLabels.empty());
  EXPECT_EQ(d.statusReplicas, 3);  // the rest is still read
  EXPECT_EQ(
      d.problems,
      (std::vector<std::string>{
          "Deployment ml/gpt2-stable: spec.replicas: \"2\" is not an integer (read as unset: "
          "1)",
          "Deployment ml/gpt2-stable: spec.template.metadata: \"x\" is not an object (read as "
          "empty)",
          "Deployment ml/gpt2-stable: status.readyReplicas: 1.5 is not an integer (read as "
          "0)"}));
  dep = kDeployment;
  dep["spec"]["replicas"] = 0;  // scaled to zero is not unset
  EXPECT_EQ(viewDeployment(dep).replicas(), 0);
}

}  // namespace
}  // namespace lockstep::kube
