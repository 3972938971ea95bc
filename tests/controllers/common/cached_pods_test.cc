// The shared pod cache's slimming (controllers/common/cached_pods.h): what the GPU
// pre-check and the drift scan read is kept, the rest is not.
#include "controllers/common/cached_pods.h"

#include <gtest/gtest.h>

#include "operator/kube/views.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

TEST(SlimPod, KeepsWhatTheReadersUseAndDropsTheRest) {
  kube::Object pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                 "deletionTimestamp": "2026-12-03T00:00:00Z",
                 "labels": {"lockstep.dev/runtime-env": "torch", "app": "serve"},
                 "annotations": {"lockstep.dev/closure-hash": "sha256:aa",
                                 "kubectl.kubernetes.io/last-applied-configuration": "{huge}"},
                 "managedFields": [{"manager": "kubectl"}]},
    "spec": {"nodeName": "n1",
             "containers": [{"name": "main", "image": "img@sha256:1", "env": [{"name": "X"}],
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
             "initContainers": [{"name": "verify", "image": "cli@sha256:2"}],
             "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
             "volumes": [{"name": "model", "image": {"reference": "models/m@sha256:3"}},
                         {"name": "scratch", "emptyDir": {}}]},
    "status": {"phase": "Running", "podIP": "10.0.0.1"}})");
  slimPod(pod);
  EXPECT_EQ(pod["metadata"]["uid"], "u1");
  EXPECT_EQ(pod["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(pod["metadata"]["deletionTimestamp"], "2026-12-03T00:00:00Z");
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "serve");
  EXPECT_EQ(pod["metadata"]["annotations"], (json{{"lockstep.dev/closure-hash", "sha256:aa"}}));
  EXPECT_FALSE(pod["metadata"].contains("managedFields"));
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  EXPECT_EQ(pod["spec"]["containers"][0],
            (json{{"name", "main"},
                  {"image", "img@sha256:1"},
                  {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}));
  EXPECT_EQ(pod["spec"]["initContainers"][0]["image"], "cli@sha256:2");
  EXPECT_EQ(pod["spec"]["ephemeralContainers"][0], (json{{"name", "debug"}, {"image", "busybox"}}));
  EXPECT_EQ(pod["spec"]["volumes"],
            (json::array({{{"name", "model"}, {"image", {{"reference", "models/m@sha256:3"}}}}})));
  EXPECT_EQ(pod["status"], (json{{"phase", "Running"}}));
}

// The GPU pre-check reads cached pods through kube::PodView (prod/gpu_capacity.cc):
// what it reads of a slimmed pod is what it would read of the whole pod.
TEST(SlimPod, TheGpuCapacityViewReadsTheSameOfASlimmedPod) {
  const kube::Object whole = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "trainer-0", "namespace": "team-a", "uid": "u9",
                 "deletionTimestamp": "2026-12-03T00:00:00Z",
                 "labels": {"lockstep.dev/track": "stable", "lockstep.dev/release": "m-v1"},
                 "ownerReferences": [{"kind": "Job", "name": "trainer", "uid": "j"}]},
    "spec": {"nodeName": "gpu-b",
             "containers": [{"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
                            {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
             "initContainers": [{"name": "warm", "image": "w",
                                 "resources": {"limits": {"nvidia.com/gpu": "4"}}}]},
    "status": {"phase": "Pending",
               "conditions": [{"type": "PodScheduled", "status": "True"}]}})");
  kube::Object slim = whole;
  slimPod(slim);
  const kube::PodView w = kube::viewPod(whole);
  const kube::PodView s = kube::viewPod(slim);
  EXPECT_EQ(w.gpuRequest, 4);  // the init container's 4 over the containers' 2
  EXPECT_EQ(s.gpuRequest, w.gpuRequest);
  EXPECT_EQ(s.nodeName, w.nodeName);
  EXPECT_EQ(s.phase, w.phase);
  EXPECT_EQ(s.terminating(), w.terminating());
  EXPECT_EQ(s.meta.key(), w.meta.key());
  EXPECT_EQ(s.meta.uid, w.meta.uid);
  EXPECT_EQ(s.meta.labels.copy(), w.meta.labels.copy());
  EXPECT_TRUE(s.problems.empty()) << s.problems.front();
}

TEST(UnfinishedPods, OneInformerForEveryReader) {
  kube::InformerOptions o = unfinishedPods();
  EXPECT_EQ(o.resource.resource, "pods");
  EXPECT_EQ(o.fieldSelector, "status.phase!=Succeeded,status.phase!=Failed");
  EXPECT_TRUE(o.labelSelector.empty());
  ASSERT_TRUE(static_cast<bool>(o.transform));
}

}  // namespace
}  // namespace lockstep::controllers
