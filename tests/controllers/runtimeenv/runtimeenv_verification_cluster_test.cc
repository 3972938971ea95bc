// Scheduled runtime verification (RuntimeEnv spec.verify) against the real
// control plane, KWOK nodes and the operator binary with the chart's RBAC
// (issue 23, must-show 5): a verification Job on a compatible GPU node (never
// gpu-old-0), a KWOK-failed run giving Verified=False with the pod's
// termination message, and requiredForPromotion holding a release in front of
// prod with a condition naming the failed verification until a run passes.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kCliImage =
    "registry.example/lockstep/"
    "lockstep@sha256:c11c000000000000000000000000000000000000000000000000000000000001";
const std::string kCu128Image =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000128";

std::string cu128Lock() {
  return "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n" +
         "nvidia-cuda-runtime-cu12==12.8.90 --hash=sha256:" + std::string(64, 'b') + "\n";
}

class RuntimeVerificationClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(ReleaseWorld::startOperator({"--cli-image=" + kCliImage}), "");
  }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  // Enforcing: admission admits the verification pod's init containers on the
  // operator's --cli-image (by digest) and checks the rest (docs/verify.md, "Admission").
  void SetUp() override { ASSERT_EQ(w_.setUp({.nsPrefix = "verify", .enforce = true}), ""); }
  void TearDown() override {
    if (HasFailure()) {
      std::cerr << kubectl({"get", "jobs,pods", "-n", w_.ns(), "-o", "wide"}).out << "\n"
                << kubectl({"get", "events", "-n", w_.ns()}).out << std::endl;
    }
    w_.tearDown(HasFailure());
  }

  // spec.verify of RuntimeEnv `name` (merge patch).
  void setVerify(const std::string& name, const json& verify) {
    json patch = {{"spec", {{"verify", verify}}}};
    auto r = kubectl({"patch", "rte", name, "-n", w_.ns(), "--type=merge", "-p", patch.dump()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // Waits until RuntimeEnv `name` has Verified=`status`; the RuntimeEnv.
  json waitVerified(const std::string& name, const std::string& status,
                    std::chrono::seconds timeout = std::chrono::seconds(90)) {
    json rte;
    bool ok = eventually(
        [&] {
          rte = w_.get("rte", name);
          return conditionField(rte, "Verified") == status;
        },
        timeout);
    EXPECT_TRUE(ok) << "Verified never became " << status << ":\n" << rte["status"].dump(2);
    return rte;
  }

  ReleaseWorld w_;
};

// Must-show 5, first item: the Job runs on a compatible node, not on gpu-old-0.
TEST_F(RuntimeVerificationClusterTest, AJobRunsOnACompatibleNodeNeverOnTheOldDriver) {
  auto r = kubectl({"apply", "-n", w_.ns(), "-f", "-"},
                   "apiVersion: lockstep.dev/v1alpha1\nkind: RuntimeEnv\nmetadata: {name: cu128}\n"
                   "spec:\n  image: " +
                       kCu128Image + "\n  lock: {inline: " + json(cu128Lock()).dump() +
                       "}\n  verify: {schedule: '@weekly', smoke: 'python -c \"import torch; "
                       "torch.cuda.init()\"'}\n");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  json rte = waitVerified("cu128", "True");
  const json& v = rte["status"]["verification"];
  ASSERT_EQ(v["results"].size(), 1u) << v.dump(2);  // one GPU product: the H100s
  EXPECT_EQ(v["results"][0]["gpuProduct"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(v["results"][0]["node"], "gpu-0");
  EXPECT_EQ(v["results"][0]["driver"], "570.124.06");
  EXPECT_EQ(v["results"][0]["result"], "Passed");
  EXPECT_EQ(v["revision"], rte["status"]["currentRevision"]);
  EXPECT_FALSE(v.value("nextRunAt", "").empty());
  const std::string message = conditionField(rte, "Verified", "message");
  EXPECT_NE(message.find("NVIDIA-H100-80GB-HBM3 (node gpu-0, driver 570.124.06)"),
            std::string::npos)
      << message;

  // The pod the scheduler bound: gpu-0, on the runtime image by digest, the
  // checks from the CLI image; none on gpu-old-0.
  json pods =
      kubectlJson({"get", "pods", "-n", w_.ns(), "-l", "lockstep.dev/verify-runtime-env=cu128"});
  ASSERT_EQ(pods["items"].size(), 1u) << pods.dump(2);
  const json& pod = pods["items"][0];
  EXPECT_EQ(pod["spec"]["nodeName"], "gpu-0");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], kCu128Image);
  EXPECT_EQ(pod["spec"]["initContainers"][0]["image"], kCliImage);
  EXPECT_EQ(pod["spec"]["initContainers"][0]["command"][1], "verify-env");
  EXPECT_EQ(pod["spec"]["initContainers"][1]["command"][1], "verify-host");
  // The closure ConfigMap the checks mount holds the current lock.
  json cm = w_.get("configmap", "lockstep-closure-cu128-" + v["revision"].dump());
  EXPECT_EQ(cm["data"]["lock"], cu128Lock());
  // An Event and the metric.
  EXPECT_TRUE(eventually([&] {
    return kubectl({"get", "events", "-n", w_.ns(), "--field-selector",
                    "involvedObject.name=cu128,reason=VerificationPassed"})
               .out.find("VerificationPassed") != std::string::npos;
  }));
  const std::string metrics = ReleaseWorld::op().scrapeMetrics();
  EXPECT_EQ(metrics.find("lockstep_runtime_verification_total{result=\"passed\"} 0"),
            std::string::npos);
  EXPECT_NE(metrics.find("lockstep_runtime_verification_total{result=\"passed\"}"),
            std::string::npos)
      << metrics.substr(0, 2000);
}

// Must-show 5, second and third items: a KWOK-failed run gives Verified=False
// with the termination message; with requiredForPromotion a release waits in
// front of prod with a condition naming the failed verification, and starts
// its canary once a later run passes.
TEST_F(RuntimeVerificationClusterTest, AFailedRunHoldsAReleaseInFrontOfProdUntilARunPasses) {
  const std::string why = "verify-host: host driver: expected >= 570.26 (CUDA 12.8), found 535";
  // Every minute, so that the passing run after the fix comes within the test.
  setVerify("torch", {{"schedule", "* * * * *"},
                      {"smoke", "true"},
                      {"requiredForPromotion", true},
                      {"pod",
                       {{"annotations",
                         {{"lockstep.dev/test-outcome", "fail"},
                          {"lockstep.dev/test-termination-message", why}}}}}});
  json rte = waitVerified("torch", "False");
  EXPECT_EQ(conditionField(rte, "Verified", "reason"), "VerificationFailed");
  const std::string message = conditionField(rte, "Verified", "message");
  EXPECT_NE(message.find(why), std::string::npos) << message;
  // The verdict (the latest finished run: the schedule may have started the next one).
  EXPECT_EQ(rte["status"]["verification"]["verdict"]["result"], "Failed");

  // The release passes its gate, then waits in front of prod.
  ASSERT_EQ(w_.create(w_.release("v1", testPackage('1'))
                          .withGate(gateStage("eval"))
                          .withProdStage(prodStage({canaryStep(100)}).replicas(1)))
                .exitCode,
            0);
  json mr;
  ASSERT_TRUE(eventually(
      [&] {
        mr = w_.get("mr", "v1");
        return conditionField(mr, "Ready", "reason") == "RuntimeNotVerified";
      },
      std::chrono::seconds(90)))
      << mr["status"].dump(2);
  const std::string held = conditionField(mr, "Ready", "message");
  EXPECT_NE(held.find("stage \"prod\" does not start"), std::string::npos) << held;
  EXPECT_NE(held.find("RuntimeEnv \"torch\": verification of revision"), std::string::npos) << held;
  EXPECT_NE(held.find(why), std::string::npos) << held;
  EXPECT_FALSE(mr["status"].contains("canary")) << mr["status"].dump(2);
  EXPECT_EQ(kubectlJson({"get", "deployments", "-n", w_.ns()})["items"].size(), 0u);

  // The runtime is fixed (the pods no longer fail): the next scheduled run passes
  // and the canary starts.
  setVerify("torch", {{"pod", {{"annotations", nullptr}}}});
  waitVerified("torch", "True", std::chrono::seconds(150));
  w_.waitPhase("v1", "Promoted", std::chrono::seconds(150));
}

// Must-show 4: with spec.verify.onStart the gate Job's pod starts with the
// verification init containers and the closure ConfigMap of the release's pinned
// revision (admitted in this enforcing namespace); a check that fails (KWOK ends
// verify-host with exit 1 and a report as its termination message) fails the
// stage with reason RuntimeVerificationFailed and the report as the message.
TEST_F(RuntimeVerificationClusterTest, OnStartGateJobsRunTheChecksAndAFailedCheckFailsTheStage) {
  setVerify("torch", {{"onStart", true}, {"prefix", "/opt/venv"}});
  const std::string revision = w_.get("rte", "torch")["status"]["currentRevision"].dump();
  const std::string closure = "lockstep-closure-torch-" + revision;
  ASSERT_TRUE(eventually([&] {
    return kubectl({"get", "configmap", closure, "-n", w_.ns()}).exitCode == 0;
  })) << "no closure ConfigMap "
      << closure;
  EXPECT_EQ(w_.get("configmap", closure)["data"]["lock"], kTestLock);
  // The RuntimeEnv says which revisions have a closure (the current one).
  EXPECT_TRUE(eventually([&] {
    return w_.get("rte", "torch")["status"].value("closureRevisions", json()).dump() ==
           "[" + revision + "]";
  })) << w_.get("rte", "torch")["status"].dump(2);

  // v1's check fails on the node: verify-host ends with its report.
  const std::string report =
      "verify-host: MISMATCH: this node differs from " + w_.hash() +
      " in 1 place(s)\n  host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05";
  json failing = gateStage("eval", report);
  failing["gate"]["template"]["metadata"]["annotations"]["lockstep.dev/test-outcome"] = "fail";
  failing["gate"]["template"]["metadata"]["annotations"]
         ["lockstep.dev/test-failed-init-container"] = "verify-host";
  ASSERT_EQ(w_.create(w_.release("v1", testPackage('1')).withGate(failing)).exitCode, 0);
  json mr = w_.waitPhase("v1", "Failed", std::chrono::seconds(90));
  EXPECT_EQ(conditionField(mr, "Ready", "reason"), "RuntimeVerificationFailed") << mr.dump(2);
  const std::string message = conditionField(mr, "Ready", "message");
  EXPECT_NE(message.find("stage \"eval\" runtime verification failed (Job v1-eval-1): "
                         "verify-host exited 1: " +
                         report),
            std::string::npos)
      << message;

  // The gate Job's pod as the API server admitted it.
  json pods =
      kubectlJson({"get", "pods", "-n", w_.ns(), "-l", "batch.kubernetes.io/job-name=v1-eval-1"});
  ASSERT_EQ(pods["items"].size(), 1u) << pods.dump(2);
  const json& spec = pods["items"][0]["spec"];
  ASSERT_GE(spec["initContainers"].size(), 2u) << spec.dump(2);
  EXPECT_EQ(spec["initContainers"][0]["name"], "verify-env");
  EXPECT_EQ(spec["initContainers"][0]["image"], kCliImage);
  EXPECT_EQ(spec["initContainers"][0]["command"].back(), "/lockstep/runtime/opt/venv");
  EXPECT_EQ(spec["initContainers"][1]["name"], "verify-host");
  EXPECT_EQ(spec["initContainers"][1]["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(spec["containers"][0]["image"], kTestImage);
  std::string closureVolume, runtimeVolume;
  for (const json& v : spec["volumes"]) {
    if (v.contains("configMap") && v["name"] == "lockstep-closure")
      closureVolume = v["configMap"]["name"];
    if (v.contains("image") && v["name"] == "lockstep-runtime")
      runtimeVolume = v["image"]["reference"];
  }
  EXPECT_EQ(closureVolume, closure);
  EXPECT_EQ(runtimeVolume, kTestImage);
  EXPECT_EQ(mr["status"]["runtime"]["revision"].dump(), revision);

  // v2's checks pass: the gate runs and the release is validated.
  ASSERT_EQ(w_.create(w_.release("v2", testPackage('2')).withGate(gateStage("eval"))).exitCode, 0);
  w_.waitPhase("v2", "Validated", std::chrono::seconds(90));
}

// onStart on serving pods: v1's pods pass their checks and v1 is promoted (the
// stable track); v2's gate passes, but a check in its canary pods fails (KWOK:
// verify-host in Init:CrashLoopBackOff with its report as the last termination
// message). v2 is rolled back with reason RuntimeVerificationFailed and the report,
// and prod keeps serving v1.
TEST_F(RuntimeVerificationClusterTest, AFailedCheckInACanaryPodRollsTheCanaryBack) {
  setVerify("torch", {{"onStart", true}, {"prefix", "/opt/venv"}});
  const std::string revision = w_.get("rte", "torch")["status"]["currentRevision"].dump();
  ASSERT_EQ(w_.create(w_.release("v1", testPackage('1'))
                          .withProdStage(prodStage({canaryStep(100)}).replicas(2)))
                .exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }))
      << json(w_.readyPods()).dump();
  // The stable pods started with the checks (and passed them).
  json stable = kubectlJson(
      {"get", "pods", "-n", w_.ns(), "-l", "lockstep.dev/track=stable,lockstep.dev/release=v1"});
  ASSERT_FALSE(stable["items"].empty()) << stable.dump(2);
  EXPECT_EQ(stable["items"][0]["spec"]["initContainers"][0]["name"], "verify-env")
      << stable["items"][0]["spec"].dump(2);

  const std::string report =
      "verify-host: MISMATCH: this node differs from " + w_.hash() +
      " in 1 place(s)\n  host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05";
  ASSERT_EQ(
      w_.create(w_.release("v2", testPackage('2'))
                    .withGate(gateStage("eval"))
                    .withProdStage(
                        prodStage({canaryStep(50), canaryStep(100)})
                            .replicas(2)
                            .podAnnotation("lockstep.dev/test-failed-init-container", "verify-host")
                            .podAnnotation("lockstep.dev/test-termination-message", report)))
          .exitCode,
      0);
  json v2 = w_.waitPhase("v2", "RolledBack", std::chrono::seconds(150));
  EXPECT_EQ(conditionField(v2, "Stalled", "reason"), "RuntimeVerificationFailed")
      << v2["status"].dump(2);
  const std::string message = conditionField(v2, "Stalled", "message");
  EXPECT_NE(message.find("runtime verification failed in a canary pod"), std::string::npos)
      << message;
  EXPECT_NE(message.find("verify-host exited 1: " + report), std::string::npos) << message;
  // The gate passed: the rollback is the canary's, not a failed stage.
  EXPECT_EQ(v2["status"]["runtime"]["revision"].dump(), revision);

  // Prod keeps serving v1.
  EXPECT_EQ(w_.stableRelease(), "v1");
  EXPECT_TRUE(eventually([&] {
    auto r = w_.readyPods();
    return r["stable/v1"] == 2 && r.size() == 1;
  })) << json(w_.readyPods()).dump();
  EXPECT_EQ(w_.get("mr", "v1")["status"]["phase"], "Promoted");
}

// Admission in the enforcing namespace: the verification pods' init containers on
// the operator's CLI image are admitted (the tests above), another image as an
// init container is still refused, and so is the CLI image as a main container.
TEST_F(RuntimeVerificationClusterTest, AnotherImageAsAnInitContainerIsStillRefused) {
  auto pod = [&](const json& inits, const json& containers) {
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "verify-by-hand"},
                  {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
                  {"annotations", {{"lockstep.dev/closure-hash", w_.hash()}}}}},
                {"spec",
                 {{"initContainers", inits},
                  {"containers", containers},
                  {"volumes", json::array({{{"name", "lockstep-runtime"},
                                            {"image", {{"reference", kTestImage}}}}})}}}};
  };
  auto create = [&](const json& p) {
    return kubectl({"create", "--dry-run=server", "-n", w_.ns(), "-f", "-"}, p.dump());
  };
  const json verifyEnv = {{"name", "verify-env"}, {"image", kCliImage}};
  const json main = json::array({{{"name", "serve"}, {"image", kTestImage}}});
  auto ok = create(pod(json::array({verifyEnv}), main));
  EXPECT_EQ(ok.exitCode, 0) << ok.err;

  const std::string busybox = "docker.io/library/busybox@sha256:" + std::string(64, 'b');
  auto other = create(pod(json::array({verifyEnv, {{"name", "setup"}, {"image", busybox}}}), main));
  EXPECT_NE(other.exitCode, 0);
  EXPECT_NE(other.err.find("init container \"setup\" image \"" + busybox +
                           "\" is not the image of RuntimeEnv \"torch\""),
            std::string::npos)
      << other.err;
  EXPECT_EQ(other.err.find("\"verify-env\""), std::string::npos) << other.err;

  auto asMain = create(
      pod(json::array({verifyEnv}), json::array({{{"name", "shell"}, {"image", kCliImage}}})));
  EXPECT_NE(asMain.exitCode, 0);
  EXPECT_NE(asMain.err.find("container \"shell\" image \"" + kCliImage + "\""), std::string::npos)
      << asMain.err;
}

}  // namespace
}  // namespace lockstep::testing
