// Ordinary workloads keep working with Lockstep installed: the operator binary
// runs with the chart's RBAC and ValidatingWebhookConfiguration (failurePolicy
// Fail), and Jobs, Deployments and plain pod writes (labels, annotations,
// finalizers) go through in plain and enforcing namespaces — while the writes
// that would let a pod escape its runtime (image swaps, dropping the
// runtime-env label, a package mounted by tag) are refused.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kDigest =
    "sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kImage = "registry.example/runtimes/torch@" + kDigest;
const std::string kOtherDigestImage =
    "registry.example/runtimes/torch@sha256:" + std::string(64, '9');
const std::string kTaggedImage = "registry.example/runtimes/torch:2.5";
const std::string kLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
const std::string kTrackingFinalizer = "batch.kubernetes.io/job-tracking";

class WorkloadsClusterTest : public OperatorSuite<WorkloadsClusterTest> {
 protected:
  void TearDown() override {
    printOperatorLogOnFailure();
    // Namespaces must finish deleting: a pod stuck in Terminating (a finalizer the
    // webhook kept a controller from removing) fails the test here.
    for (const auto& ns : namespaces_) {
      auto r = kubectl({"delete", "namespace", ns, "--timeout=120s"});
      EXPECT_EQ(r.exitCode, 0) << "namespace " << ns << " did not finish deleting: " << r.err
                               << kubectl({"get", "pods", "-n", ns, "-o", "wide"}).out;
    }
  }

  // A namespace with lockstep.dev/enforce=`mode` ("" = unlabelled); when
  // `withRuntime`, a Ready RuntimeEnv "torch" whose hash is returned.
  std::string makeNamespace(const std::string& mode, bool withRuntime, std::string& ns) {
    ns = uniqueName("wl-" + (mode.empty() ? std::string("plain") : mode));
    namespaces_.push_back(ns);
    EXPECT_EQ(kubectl({"create", "namespace", ns}).exitCode, 0);
    if (!mode.empty()) {
      EXPECT_EQ(kubectl({"label", "namespace", ns, "lockstep.dev/enforce=" + mode}).exitCode, 0);
    }
    if (!withRuntime) return "";
    std::string hash = applyReadyRuntimeEnv(ns, "torch", kImage, kLock);
    EXPECT_FALSE(hash.empty()) << "RuntimeEnv " << ns << "/torch never became Ready";
    return hash;
  }

  // Pod template metadata + spec that passes the policy for RuntimeEnv "torch".
  static json runtimeTemplate(const std::string& hash, const json& extraLabels = json::object()) {
    json labels = {{"lockstep.dev/runtime-env", "torch"}};
    labels.update(extraLabels);
    return {
        {"metadata", {{"labels", labels}, {"annotations", {{"lockstep.dev/closure-hash", hash}}}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"containers", json::array({{{"name", "main"}, {"image", kImage}}})}}}};
  }

  // Runs a Job to completion and checks its pods lost the tracking finalizer.
  void expectJobCompletes(const std::string& ns, const json& podTemplate) {
    json job = {{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", "hello"}}},
                {"spec", {{"backoffLimit", 0}, {"template", podTemplate}}}};
    auto r = kubectl({"create", "-n", ns, "-f", "-"}, job.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto wait =
        kubectl({"wait", "--for=condition=Complete", "job/hello", "-n", ns, "--timeout=90s"});
    EXPECT_EQ(wait.exitCode, 0) << wait.err << kubectl({"describe", "job", "hello", "-n", ns}).out;
    std::string last;
    EXPECT_TRUE(eventually([&] {
      json pods = kubectlJson({"get", "pods", "-n", ns, "-l", "job-name=hello"});
      if (pods.is_discarded() || pods["items"].empty()) return false;
      last = pods.dump();
      for (const json& p : pods["items"]) {
        for (const json& f : p["metadata"].value("finalizers", json::array())) {
          if (f == kTrackingFinalizer) return false;
        }
      }
      return true;
    })) << "tracking finalizer never removed: "
        << last;
  }

  std::vector<std::string> namespaces_;
};

TEST_F(WorkloadsClusterTest, JobInPlainNamespaceCompletesAndLosesItsFinalizer) {
  std::string ns;
  makeNamespace("", false, ns);
  expectJobCompletes(
      ns, {{"spec",
            {{"restartPolicy", "Never"},
             {"containers",
              json::array({{{"name", "main"}, {"image", "registry.example/busybox:1.36"}}})}}}});
}

TEST_F(WorkloadsClusterTest, JobInEnforcingNamespaceCompletesAndLosesItsFinalizer) {
  std::string ns;
  std::string hash = makeNamespace("enforce", true, ns);
  ASSERT_FALSE(hash.empty());
  expectJobCompletes(ns, runtimeTemplate(hash));
}

TEST_F(WorkloadsClusterTest, DeploymentRollsOutScalesAndRollsInBothKindsOfNamespace) {
  for (const std::string mode : {"", "enforce"}) {
    SCOPED_TRACE("mode '" + mode + "'");
    std::string ns;
    std::string hash = makeNamespace(mode, true, ns);
    json tmpl = runtimeTemplate(hash, {{"app", "serve"}});
    tmpl["spec"].erase("restartPolicy");
    json deploy = {{"apiVersion", "apps/v1"},
                   {"kind", "Deployment"},
                   {"metadata", {{"name", "serve"}}},
                   {"spec",
                    {{"replicas", 2},
                     {"selector", {{"matchLabels", {{"app", "serve"}}}}},
                     {"template", tmpl}}}};
    ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, deploy.dump()).exitCode, 0);
    auto r = kubectl({"rollout", "status", "deploy/serve", "-n", ns, "--timeout=90s"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(kubectl({"scale", "deploy/serve", "-n", ns, "--replicas=3"}).exitCode, 0);
    // A new template revision (annotation) rolls pods over: creates and deletes.
    EXPECT_EQ(kubectl({"patch", "deploy/serve", "-n", ns, "--type=merge", "-p",
                       R"({"spec":{"template":{"metadata":{"annotations":{"rev":"2"}}}}})"})
                  .exitCode,
              0);
    r = kubectl({"rollout", "status", "deploy/serve", "-n", ns, "--timeout=90s"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json d = kubectlJson({"get", "deploy", "serve", "-n", ns});
    EXPECT_EQ(d["status"].value("readyReplicas", 0), 3) << d["status"].dump();
  }
}

// Label, annotate, add and remove a finalizer: in an enforcing namespace (a pod on its
// RuntimeEnv) and in an unlabelled one (a pod that knows nothing of Lockstep).
TEST_F(WorkloadsClusterTest, PlainPodWritesSucceedInEnforcingAndPlainNamespaces) {
  for (const std::string mode : {"enforce", ""}) {
    SCOPED_TRACE("mode '" + mode + "'");
    std::string ns;
    std::string hash = makeNamespace(mode, !mode.empty(), ns);
    json pod =
        mode.empty()
            ? json{{"spec",
                    {{"containers", json::array({{{"name", "main"}, {"image", kTaggedImage}}})}}}}
            : runtimeTemplate(hash);
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    pod["metadata"]["name"] = "p";
    ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, pod.dump()).exitCode, 0);
    auto r = kubectl({"label", "pod", "p", "-n", ns, "team=research"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    r = kubectl({"annotate", "pod", "p", "-n", ns, "note=hello"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    r = kubectl({"patch", "pod", "p", "-n", ns, "--type=merge", "-p",
                 R"({"metadata":{"finalizers":["example.com/hold"]}})"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    r = kubectl({"patch", "pod", "p", "-n", ns, "--type=json", "-p",
                 R"([{"op":"remove","path":"/metadata/finalizers"}])"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    json now = kubectlJson({"get", "pod", "p", "-n", ns});
    EXPECT_EQ(now["metadata"]["labels"].value("team", ""), "research") << now.dump();
    EXPECT_EQ(now["metadata"]["annotations"].value("note", ""), "hello") << now.dump();
    EXPECT_FALSE(now["metadata"].contains("finalizers")) << now.dump();
  }
}

// `kubectl set image` on a pod outside the policy (unlabelled pod, unlabelled namespace) is
// an ordinary write, admitted as it would be without Lockstep.
TEST_F(WorkloadsClusterTest, SetImageOnAPodOutsideThePolicySucceeds) {
  std::string ns;
  makeNamespace("", false, ns);
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "p"}}},
      {"spec", {{"containers", json::array({{{"name", "main"}, {"image", kTaggedImage}}})}}}};
  ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, pod.dump()).exitCode, 0);
  auto r = kubectl({"set", "image", "pod/p", "-n", ns, "main=registry.example/busybox:1.36"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err.find("Warning:"), std::string::npos) << r.err;
  json now = kubectlJson({"get", "pod", "p", "-n", ns});
  EXPECT_EQ(now["spec"]["containers"][0]["image"], "registry.example/busybox:1.36");
}

// A pod being deleted and held by a finalizer (what a controller does before it lets go)
// goes once the finalizer is removed, in an enforcing namespace with the webhook installed.
TEST_F(WorkloadsClusterTest, RemovingTheLastFinalizerOfATerminatingPodLetsItGo) {
  std::string ns;
  std::string hash = makeNamespace("enforce", true, ns);
  json pod = runtimeTemplate(hash);
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"]["name"] = "held";
  pod["metadata"]["finalizers"] = json::array({"example.com/hold"});
  ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, pod.dump()).exitCode, 0);
  ASSERT_EQ(kubectl({"delete", "pod", "held", "-n", ns, "--wait=false"}).exitCode, 0);
  json terminating = kubectlJson({"get", "pod", "held", "-n", ns});
  ASSERT_FALSE(terminating.is_discarded()) << "the finalizer did not hold the pod";
  EXPECT_TRUE(terminating["metadata"].contains("deletionTimestamp")) << terminating.dump();
  auto r = kubectl({"patch", "pod", "held", "-n", ns, "--type=json", "-p",
                    R"([{"op":"remove","path":"/metadata/finalizers"}])"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  r = kubectl({"wait", "--for=delete", "pod/held", "-n", ns, "--timeout=90s"});
  EXPECT_EQ(r.exitCode, 0) << r.err << kubectl({"get", "pod", "held", "-n", ns, "-o", "yaml"}).out;
}

TEST_F(WorkloadsClusterTest, ImageSwapsAreDeniedInEnforceAndWarnedInWarn) {
  for (const std::string mode : {"enforce", "warn"}) {
    SCOPED_TRACE(mode);
    std::string ns;
    std::string hash = makeNamespace(mode, true, ns);
    json pod = runtimeTemplate(hash);
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    pod["metadata"]["name"] = "p";
    ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, pod.dump()).exitCode, 0);
    struct Swap {
      std::string image, message;
    };
    for (const Swap& s : {Swap{kTaggedImage, "is not pinned by digest"},
                          Swap{kOtherDigestImage, "has digest \"sha256:9999"}}) {
      auto r = kubectl({"set", "image", "pod/p", "-n", ns, "main=" + s.image});
      if (mode == "enforce") {
        EXPECT_NE(r.exitCode, 0) << "admitted " << s.image;
        EXPECT_NE(r.err.find("admission webhook \"pods.lockstep.dev\" denied the request"),
                  std::string::npos)
            << r.err;
      } else {
        EXPECT_EQ(r.exitCode, 0) << r.err;
        EXPECT_NE(r.err.find("Warning:"), std::string::npos) << r.err;
      }
      EXPECT_NE(r.err.find(s.message), std::string::npos) << r.err;
    }
    json now = kubectlJson({"get", "pod", "p", "-n", ns});
    EXPECT_EQ(now["spec"]["containers"][0]["image"],
              mode == "enforce" ? kImage : kOtherDigestImage);
  }
}

TEST_F(WorkloadsClusterTest, DroppingTheRuntimeLabelThenSwappingTheImageIsDenied) {
  // In an enforcing namespace and in an unlabelled one (the pod opted in by its label).
  for (const std::string mode : {"enforce", ""}) {
    SCOPED_TRACE("mode '" + mode + "'");
    std::string ns;
    std::string hash = makeNamespace(mode, true, ns);
    json pod = runtimeTemplate(hash);
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    pod["metadata"]["name"] = "p";
    ASSERT_EQ(kubectl({"create", "-n", ns, "-f", "-"}, pod.dump()).exitCode, 0);
    auto r = kubectl({"label", "pod", "p", "-n", ns, "lockstep.dev/runtime-env-"});
    EXPECT_NE(r.exitCode, 0) << "label removal admitted";
    EXPECT_NE(r.err.find("cannot be removed from a running pod"), std::string::npos) << r.err;
    r = kubectl({"set", "image", "pod/p", "-n", ns, "main=registry.example/busybox:1.36"});
    EXPECT_NE(r.exitCode, 0) << "image swap admitted";
    // And both in one write.
    r = kubectl({"patch", "pod", "p", "-n", ns, "--type=json", "-p",
                 R"([{"op":"remove","path":"/metadata/labels/lockstep.dev~1runtime-env"},)"
                 R"({"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.36"}])"});
    EXPECT_NE(r.exitCode, 0) << "label removal with image swap admitted";
    json now = kubectlJson({"get", "pod", "p", "-n", ns});
    EXPECT_EQ(now["spec"]["containers"][0]["image"], kImage);
    EXPECT_EQ(now["metadata"]["labels"].value("lockstep.dev/runtime-env", ""), "torch");
  }
}

TEST_F(WorkloadsClusterTest, ImageVolumeByTagIsDeniedInAnEnforcingNamespace) {
  std::string ns;
  std::string hash = makeNamespace("enforce", true, ns);
  auto withVolume = [&](const std::string& name, const std::string& reference) {
    json pod = runtimeTemplate(hash);
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    pod["metadata"]["name"] = name;
    pod["spec"]["volumes"] =
        json::array({{{"name", "model"},
                      {"image", {{"reference", reference}, {"pullPolicy", "IfNotPresent"}}}}});
    pod["spec"]["containers"][0]["volumeMounts"] =
        json::array({{{"name", "model"}, {"mountPath", "/model"}, {"readOnly", true}}});
    return kubectl({"create", "-n", ns, "-f", "-"}, pod.dump());
  };
  auto r = withVolume("by-tag", "registry.example/models/gpt2:latest");
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("image volume \"model\" reference \"registry.example/models/gpt2:latest\" "
                       "is not pinned by digest"),
            std::string::npos)
      << r.err;
  r = withVolume("by-digest", "registry.example/models/gpt2@sha256:" + std::string(64, 'c'));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

}  // namespace
}  // namespace lockstep::testing
