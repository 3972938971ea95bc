// RuntimeEnv spec.verify.onStart on the ModelRelease side (docs/verify.md,
// "onStart"): the gate Job's pod starts with the verification init containers
// on the CLI image, against the closure ConfigMap of the release's pinned
// revision and the runtime image by digest; no CLI image: the stage does not
// start; a failed check is the stage's failure reason. Also the pure pieces:
// the container builder on a pod template and the failure read from a pod.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/common/verify_containers.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/canary_plan.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/runtime_pod.h"
#include "tests/support/builders.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

const std::string kHash = "sha256:" + std::string(64, 'a');
const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kCli = "registry.example/lockstep/lockstep@sha256:" + std::string(64, 'c');
const std::string kNow = "2026-11-30T10:00:00Z";
const std::string kReport =
    "verify-host: MISMATCH: this node differs from sha256:aaaa… in 1 place(s)\n"
    "  host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05\n";

// RuntimeEnv "torch", Ready on revision `current` (kImage, kHash), spec.verify as given.
json runtimeEnv(const json& verify, int64_t current = 2) {
  json rte = testing::runtimeEnv("torch").image(kImage).build();
  if (!verify.is_null()) rte["spec"]["verify"] = verify;
  rte["status"] = {
      {"observedGeneration", 1},
      {"closureHash", kHash},
      {"currentRevision", current},
      {"revisions",
       json::array({{{"number", current}, {"image", kImage}, {"closureHash", kHash}}})},
      {"conditions",
       json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "Resolved"}}})}};
  return rte;
}

json release() {
  json gate = testing::gateStage("eval");
  gate["gate"]["template"]["spec"]["containers"][0]["resources"] = {
      {"limits", {{"nvidia.com/gpu", 2}}}};
  return testing::modelRelease("v1").runtimeEnv("torch").closureHash(kHash).withGate(gate).build();
}

ReleaseObserved observed(const json& rel, const json& rte, const std::string& cli = kCli) {
  ReleaseObserved o;
  o.release = rel;
  o.runtimeEnv = rte;
  o.cliImage = cli;
  o.now = kNow;
  o.nowUnix = 1796032800;
  return o;
}

const json* volume(const json& podSpec, const std::string& name) {
  for (const json& v : podSpec["volumes"]) {
    if (v["name"] == name) return &v;
  }
  return nullptr;
}

std::string condition(const ReleasePlan& p, const std::string& type, const std::string& field) {
  for (const json& c : p.status["conditions"]) {
    if (c["type"] == type) return c.value(field, "");
  }
  return "";
}

TEST(VerifyOnStart, TheGateJobStartsWithTheChecksOnThePinnedRevision) {
  ReleasePlan plan = planRelease(observed(release(), runtimeEnv({{"onStart", true}}, 7)));
  ASSERT_EQ(plan.jobsToCreate.size(), 1u) << plan.status.dump(2);
  const json& pod = plan.jobsToCreate[0]["spec"]["template"]["spec"];
  ASSERT_GE(pod["initContainers"].size(), 2u) << pod.dump(2);
  const json& env = pod["initContainers"][0];
  const json& host = pod["initContainers"][1];
  EXPECT_EQ(env["name"], "verify-env");
  EXPECT_EQ(env["image"], kCli);
  EXPECT_EQ(
      env["command"],
      json::array({"lockstep", "verify-env", "--lock", "/lockstep/closure/lock", "--runtime-json",
                   "/lockstep/closure/runtime.json", "--prefix", "/lockstep/runtime/usr/local"}));
  EXPECT_EQ(env["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(host["name"], "verify-host");
  EXPECT_EQ(host["image"], kCli);
  // verify-host sees the GPUs the gate asks for, and checks their count.
  EXPECT_EQ(host["resources"]["limits"]["nvidia.com/gpu"], 2);
  EXPECT_EQ(host["command"].back(), "2");
  // The closure ConfigMap of the pinned revision (7), the runtime image by digest.
  const json* closure = volume(pod, "lockstep-closure");
  ASSERT_NE(closure, nullptr) << pod.dump(2);
  EXPECT_EQ((*closure)["configMap"]["name"], "lockstep-closure-torch-7");
  const json* runtime = volume(pod, "lockstep-runtime");
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ((*runtime)["image"]["reference"], kImage);
  // The gate's own container is unchanged: on the runtime image, first among containers.
  EXPECT_EQ(pod["containers"][0]["image"], kImage);
  EXPECT_EQ(plan.status["runtime"]["revision"], 7);
}

TEST(VerifyOnStart, WithoutOnStartTheGateJobHasNoChecks) {
  for (const json& verify :
       {json(nullptr), json{{"onStart", false}}, json{{"schedule", "@weekly"}}}) {
    ReleasePlan plan = planRelease(observed(release(), runtimeEnv(verify)));
    ASSERT_EQ(plan.jobsToCreate.size(), 1u);
    const json& pod = plan.jobsToCreate[0]["spec"]["template"]["spec"];
    EXPECT_FALSE(pod.contains("initContainers")) << verify.dump() << pod.dump(2);
    EXPECT_EQ(volume(pod, "lockstep-closure"), nullptr);
  }
}

TEST(VerifyOnStart, WithoutACliImageTheStageDoesNotStartAndSaysWhy) {
  ReleasePlan plan = planRelease(observed(release(), runtimeEnv({{"onStart", true}}), ""));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeVerificationUnavailable");
  const std::string message = condition(plan, "Ready", "message");
  EXPECT_NE(message.find("stage \"eval\" does not start: RuntimeEnv \"torch\" asks for "
                         "spec.verify.onStart, but the operator runs without --cli-image"),
            std::string::npos)
      << message;
  EXPECT_NE(plan.status["phase"], "Failed");
  // The flag given (the operator restarted with it): the stage starts.
  ReleasePlan next = planRelease(observed(release(), runtimeEnv({{"onStart", true}})));
  EXPECT_EQ(next.jobsToCreate.size(), 1u);
}

// A release pinned to a revision whose closure the RuntimeEnv controller does not
// keep (status.closureRevisions lacks it: resolved from another lock) does not start
// its stage: its pods would wait for the ConfigMap in ContainerCreating without a word.
TEST(VerifyOnStart, APinnedRevisionWithoutItsClosureDoesNotStartAndSaysWhich) {
  json rte = runtimeEnv({{"onStart", true}}, 2);
  rte["status"]["revisions"].push_back(
      {{"number", 1}, {"image", kImage}, {"closureHash", kHash}, {"pinnedBy", {"v1"}}});
  rte["status"]["closureRevisions"] = {2};
  json rel = release();
  rel["status"]["runtime"] = api::v1alpha1::encodeRuntimePin({1, kImage, kHash});
  ReleasePlan plan = planRelease(observed(rel, rte));
  EXPECT_TRUE(plan.jobsToCreate.empty()) << plan.status.dump(2);
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeVerificationUnavailable");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "RuntimeVerificationUnavailable");
  const std::string message = condition(plan, "Ready", "message");
  EXPECT_NE(message.find("stage \"eval\" does not start: RuntimeEnv \"torch\" has no closure of "
                         "revision 1 (no ConfigMap lockstep-closure-torch-1"),
            std::string::npos)
      << message;
  EXPECT_NE(plan.status["phase"], "Failed");
  // The RuntimeEnv controller keeps (or wrote) revision 1's closure: the stage starts on it.
  rte["status"]["closureRevisions"] = {1, 2};
  ReleasePlan next = planRelease(observed(rel, rte));
  ASSERT_EQ(next.jobsToCreate.size(), 1u) << next.status.dump(2);
  const json* closure =
      volume(next.jobsToCreate[0]["spec"]["template"]["spec"], "lockstep-closure");
  ASSERT_NE(closure, nullptr);
  EXPECT_EQ((*closure)["configMap"]["name"], "lockstep-closure-torch-1");
  // A prod stage in front of the canary start checks the pinned revision too.
  rte["status"]["closureRevisions"] = {2};
  json prodOnly = testing::modelRelease("v1")
                      .runtimeEnv("torch")
                      .closureHash(kHash)
                      .withProdStage(testing::prodStage({testing::canaryStep(100)}))
                      .build();
  prodOnly["status"]["runtime"] = api::v1alpha1::encodeRuntimePin({1, kImage, kHash});
  ReleasePlan prod = planRelease(observed(prodOnly, rte));
  EXPECT_EQ(condition(prod, "Ready", "reason"), "RuntimeVerificationUnavailable")
      << prod.status.dump(2);
  EXPECT_NE(condition(prod, "Ready", "message").find("has no closure of revision 1"),
            std::string::npos)
      << condition(prod, "Ready", "message");
}

TEST(VerifyOnStart, AMalformedOnStartIsNamedByField) {
  ReleasePlan plan = planRelease(observed(release(), runtimeEnv({{"onStart", "yes"}})));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeVerificationUnavailable");
  EXPECT_NE(condition(plan, "Ready", "message")
                .find("RuntimeEnv \"torch\" spec.verify.onStart: expected a boolean, found "
                      "string \"yes\""),
            std::string::npos)
      << condition(plan, "Ready", "message");
  auto prefix = api::v1alpha1::decodeOnStart(runtimeEnv({{"onStart", true}, {"prefix", "opt"}}));
  ASSERT_FALSE(prefix.isOk());
  EXPECT_NE(prefix.status().message().find("spec.verify.prefix: expected an absolute path"),
            std::string::npos)
      << prefix.status().message();
  auto ok = api::v1alpha1::decodeOnStart(runtimeEnv({{"onStart", true}, {"prefix", "/opt/venv"}}));
  ASSERT_TRUE(ok.isOk());
  ASSERT_TRUE(ok->has_value());
  EXPECT_EQ((*ok)->prefix, "/opt/venv");
}

// The gate Job's pod as KWOK or the kubelet leaves it after a failed check.
json failedCheckPod(const json& job, const std::string& container, const std::string& message) {
  return {
      {"metadata",
       {{"name", job["metadata"]["name"].get<std::string>() + "-x"},
        {"labels", {{"batch.kubernetes.io/job-name", job["metadata"]["name"]}}}}},
      {"status",
       {{"phase", "Failed"},
        {"initContainerStatuses",
         json::array(
             {{{"name", "verify-env"},
               {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}},
              {{"name", container},
               {"state",
                {{"terminated", {{"exitCode", 1}, {"reason", "Error"}, {"message", message}}}}}}})},
        {"containerStatuses",
         json::array(
             {{{"name", "eval"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}})}}}};
}

TEST(VerifyOnStart, AFailedCheckIsTheStagesFailureReason) {
  const json rte = runtimeEnv({{"onStart", true}});
  ReleasePlan first = planRelease(observed(release(), rte));
  ASSERT_EQ(first.jobsToCreate.size(), 1u);
  json job = first.jobsToCreate[0];
  job["metadata"]["uid"] = "job-uid";
  job["status"]["conditions"] =
      json::array({{{"type", "Failed"},
                    {"status", "True"},
                    {"reason", "BackoffLimitExceeded"},
                    {"message", "Job has reached the specified backoff limit"},
                    {"lastTransitionTime", "2026-11-30T10:01:00Z"}}});
  json rel = release();
  rel["status"] = first.status;
  ReleaseObserved o = observed(rel, rte);
  o.jobs = {job};
  o.pods = {failedCheckPod(job, "verify-host", kReport)};
  ReleasePlan plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeVerificationFailed");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "RuntimeVerificationFailed");
  const std::string message = condition(plan, "Ready", "message");
  EXPECT_EQ(message,
            "stage \"eval\" runtime verification failed (Job v1-eval-1): verify-host exited 1: "
            "verify-host: MISMATCH: this node differs from sha256:aaaa… in 1 place(s)\n"
            "  host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05");
  const json& eval = plan.status["stages"][0];
  EXPECT_EQ(eval["phase"], "Failed");
  EXPECT_NE(eval["message"].get<std::string>().find("found 535.104.05"), std::string::npos);
  // A gate container that fails (not a check) keeps the gate's reason.
  o.pods[0]["status"]["initContainerStatuses"][1]["state"]["terminated"]["exitCode"] = 0;
  o.pods[0]["status"]["containerStatuses"][0]["state"] = {
      {"terminated", {{"exitCode", 3}, {"message", "eval crashed"}}}};
  ReleasePlan gate = planRelease(o);
  EXPECT_EQ(condition(gate, "Ready", "reason"), "GateFailed");
}

TEST(ContainerFailure, ReadsInitContainersFirstAndTheLastStateOfARestartedOne) {
  json pod = {
      {"status",
       {{"initContainerStatuses",
         json::array(
             {{{"name", "verify-env"},
               {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
               {"restartCount", 3},
               {"lastState",
                {{"terminated", {{"exitCode", 1}, {"message", "pypi alpha: version\n\n"}}}}}}})},
        {"containerStatuses",
         json::array({{{"name", "app"},
                       {"state", {{"terminated", {{"exitCode", 2}, {"reason", "Error"}}}}}}})}}}};
  EXPECT_EQ(containerFailure(pod, true), "verify-env exited 1: pypi alpha: version");
  EXPECT_EQ(containerFailure(pod, false), "verify-env exited 1: pypi alpha: version");
  pod["status"]["initContainerStatuses"][0]["lastState"]["terminated"]["exitCode"] = 0;
  // Only the main container failed: not a verification failure.
  EXPECT_EQ(containerFailure(pod, true), std::nullopt);
  EXPECT_EQ(containerFailure(pod, false), "app exited 2 (Error)");
  // Another init container is not a check.
  pod["status"]["initContainerStatuses"][0]["name"] = "setup";
  pod["status"]["initContainerStatuses"][0]["lastState"]["terminated"]["exitCode"] = 1;
  EXPECT_EQ(containerFailure(pod, true), std::nullopt);
  // Long reports are cut.
  pod["status"]["initContainerStatuses"][0]["name"] = "verify-host";
  pod["status"]["initContainerStatuses"][0]["lastState"]["terminated"]["message"] =
      std::string(50, 'x');
  EXPECT_EQ(containerFailure(pod, true, 10), "verify-host exited 1: xxxxxxxxxx…");
  EXPECT_EQ(containerFailure(json::array(), true), std::nullopt);
}

// A canary pod whose verify-host keeps failing (a serving pod restarts it: the report
// is in lastState) is the canary's observation; another track's pod is not.
TEST(VerifyOnStart, ACanaryPodsFailedCheckIsObservedForTheRollback) {
  const api::v1alpha1::ModelRelease r = api::v1alpha1::decodeModelRelease(
      testing::modelRelease("v1").runtimeEnv("torch").closureHash(kHash).build());
  auto pod = [](const std::string& track, const std::string& release) {
    return json{{"metadata",
                 {{"name", release + "-" + track},
                  {"labels",
                   {{"lockstep.dev/track", track},
                    {"lockstep.dev/release", release},
                    {"lockstep.dev/model", "gpt2"}}}}},
                {"status",
                 {{"phase", "Pending"},
                  {"initContainerStatuses",
                   json::array({{{"name", "verify-host"},
                                 {"restartCount", 2},
                                 {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
                                 {"lastState",
                                  {{"terminated", {{"exitCode", 1}, {"message", kReport}}}}}}})}}}};
  };
  ProdObserved prod;
  prod.pods = {testing::share(pod("stable", "v0"))};
  CanaryObserved quiet = observeCanary(r, api::v1alpha1::CanarySpec{}, prod, kNow, 1796032800);
  EXPECT_EQ(quiet.verificationFailure, std::nullopt);
  prod.pods.push_back(testing::share(pod("canary", "v1")));
  CanaryObserved co = observeCanary(r, api::v1alpha1::CanarySpec{}, prod, kNow, 1796032800);
  ASSERT_TRUE(co.verificationFailure.has_value());
  EXPECT_EQ(*co.verificationFailure,
            "verify-host exited 1: verify-host: MISMATCH: this node differs from sha256:aaaa… in 1 "
            "place(s)\n  host driver: expected >= 570.26 (CUDA 12.8), found 535.104.05");
}

// A stable pod whose check fails (Init:CrashLoopBackOff) is named with its
// report: observed for the stable track's release only, and written into the
// message of a rollback waiting for its stable pods and of a promotion's handover.
TEST(VerifyOnStart, AStablePodsFailedCheckIsNamedInTheRollbackAndHandoverMessage) {
  const api::v1alpha1::ModelRelease r = api::v1alpha1::decodeModelRelease(
      testing::modelRelease("v1").runtimeEnv("torch").closureHash(kHash).build());
  auto pod = [](const std::string& name, const std::string& release) {
    return json{{"metadata",
                 {{"name", name},
                  {"labels",
                   {{"lockstep.dev/track", "stable"},
                    {"lockstep.dev/release", release},
                    {"lockstep.dev/model", "gpt2"}}}}},
                {"status",
                 {{"phase", "Pending"},
                  {"initContainerStatuses",
                   json::array({{{"name", "verify-host"},
                                 {"restartCount", 1},
                                 {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
                                 {"lastState",
                                  {{"terminated", {{"exitCode", 1}, {"message", kReport}}}}}}})}}}};
  };
  ProdObserved prod;
  prod.stableDeployment = testing::share(
      {{"spec", {{"template", {{"metadata", {{"labels", {{"lockstep.dev/release", "v0"}}}}}}}}}});
  // A stable pod of another release (left over) is not the stable track's.
  prod.pods = {testing::share(pod("gpt2-stable-old", "v9"))};
  EXPECT_EQ(observeCanary(r, api::v1alpha1::CanarySpec{}, prod, kNow, 1796032800)
                .stableVerificationFailure,
            std::nullopt);
  prod.pods.push_back(testing::share(pod("gpt2-stable-7f9c", "v0")));
  CanaryObserved co = observeCanary(r, api::v1alpha1::CanarySpec{}, prod, kNow, 1796032800);
  const std::string named =
      "stable pod gpt2-stable-7f9c (release v0): runtime verification "
      "failed: verify-host exited 1: " +
      kReport.substr(0, kReport.size() - 1);  // the report without its last newline
  EXPECT_EQ(co.stableVerificationFailure, named);
  EXPECT_EQ(co.verificationFailure, std::nullopt);  // not a canary pod

  // A rollback to v0 waiting for its stable pods: the message names the pod.
  CanaryObserved o;
  o.spec.replicas = 2;
  api::v1alpha1::CanaryStep whole;
  whole.weight = 100;
  o.spec.steps = {whole};
  o.release = "v1";
  o.model = "gpt2";
  o.knownGood = KnownGood{"v0", "pkg-v0", kHash};
  o.stableRelease = "v0";
  o.stable = {2, 1};
  o.previous = {{"phase", "RollingBack"},
                {"reason", "AnalysisFailed"},
                {"message", "error ratio 0.2 > 0.05"},
                {"knownGood", {{"release", "v0"}, {"package", "pkg-v0"}, {"closureHash", kHash}}},
                {"step", 0}};
  o.now = kNow;
  o.nowUnix = 1796032800;
  CanaryPlan quiet = planCanary(o);
  EXPECT_EQ(quiet.action, CanaryAction::kRollingBack);
  EXPECT_EQ(quiet.message.find("stable pod gpt2"), std::string::npos) << quiet.message;
  o.stableVerificationFailure = named;
  CanaryPlan rolling = planCanary(o);
  EXPECT_EQ(rolling.action, CanaryAction::kRollingBack);
  EXPECT_NE(rolling.message.find("AnalysisFailed: error ratio 0.2 > 0.05"), std::string::npos)
      << rolling.message;
  EXPECT_NE(rolling.message.find("; " + named), std::string::npos) << rolling.message;

  // The handover of a promotion: v1's own stable pods fail their check.
  o.previous = {{"phase", "Promoting"},
                {"promotion", "Handover"},
                {"knownGood", {{"release", "v0"}, {"package", "pkg-v0"}, {"closureHash", kHash}}},
                {"step", 0}};
  o.stableRelease = "v1";
  o.canary = {1, 1};
  o.stable = {1, 0};
  o.stableVerificationFailure =
      "stable pod gpt2-stable-aa (release v1): runtime verification failed: verify-host exited "
      "1: " +
      kReport;
  CanaryPlan handover = planCanary(o);
  EXPECT_EQ(handover.action, CanaryAction::kPromoting);
  EXPECT_NE(handover.message.find("stable Deployment takes v1"), std::string::npos)
      << handover.message;
  EXPECT_NE(handover.message.find("; stable pod gpt2-stable-aa (release v1)"), std::string::npos)
      << handover.message;
}

TEST(RuntimePodVerify, TheChecksComeFirstAndTheFetchAfterThem) {
  json tmpl = {
      {"spec",
       {{"containers",
         json::array({{{"name", "server"}, {"resources", {{"limits", {{"nvidia.com/gpu", "4"}}}}}},
                      {{"name", "sidecar"}}})},
        {"initContainers", json::array({{{"name", "warm"}}})}}}};
  RuntimePod pod;
  pod.owner = "test";
  pod.runtimeEnv = "torch";
  pod.runtimeImage = kImage;
  pod.closureHash = kHash;
  pod.package = "registry.example/models/gpt2@sha256:" + std::string(64, 'd');
  pod.mount = PackageMount::kInitContainer;
  pod.fetchCommand = {"sh", "-c", "fetch"};
  auto v = onStartVerification(runtimeEnv({{"onStart", true}}), kImage, 3, kCli);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  ASSERT_TRUE(v->has_value());
  pod.verify = **v;
  ASSERT_TRUE(prepareRuntimePod(tmpl, pod).isOk());
  const json& inits = tmpl["spec"]["initContainers"];
  ASSERT_EQ(inits.size(), 4u) << inits.dump(2);
  EXPECT_EQ(inits[0]["name"], "verify-env");
  EXPECT_EQ(inits[1]["name"], "verify-host");
  EXPECT_EQ(inits[1]["resources"]["limits"]["nvidia.com/gpu"], 4);
  EXPECT_EQ(inits[2]["name"], "lockstep-fetch-package");
  EXPECT_EQ(inits[3]["name"], "warm");
  EXPECT_EQ(inits[3]["image"], kImage);
  EXPECT_EQ(volume(tmpl["spec"], "lockstep-closure")->at("configMap")["name"],
            "lockstep-closure-torch-3");
}

// Issue 28: the webhook admits a template container naming the RuntimeEnv's
// image in another spelling (normalised: "torch@sha256:x" is
// "docker.io/library/torch@sha256:x"); the controller compared text and
// refused the release it had admitted. One comparison (api::sameImage): the
// container runs the pinned reference; another image is still refused.
TEST(RuntimePodImage, ThePinnedImageInAnotherSpellingRunsAnotherImageIsRefused) {
  const std::string digest = "sha256:" + std::string(64, '7');
  RuntimePod pod;
  pod.owner = "stage \"eval\"";
  pod.runtimeEnv = "torch";
  pod.runtimeImage = "docker.io/library/torch@" + digest;
  pod.closureHash = kHash;
  pod.package = "registry.example/models/gpt2@sha256:" + std::string(64, 'd');
  for (const std::string& spelling :
       {"torch@" + digest, "index.docker.io/library/torch:2.5@" + digest, pod.runtimeImage}) {
    json tmpl = {
        {"spec", {{"containers", json::array({{{"name", "eval"}, {"image", spelling}}})}}}};
    Status s = prepareRuntimePod(tmpl, pod);
    EXPECT_TRUE(s.isOk()) << spelling << ": " << s.toString();
    EXPECT_EQ(tmpl["spec"]["containers"][0]["image"], pod.runtimeImage) << spelling;
  }
  for (const std::string& other : {"torch@sha256:" + std::string(64, '8'),
                                   "registry.example/torch@" + digest, std::string("torch:2.5")}) {
    json tmpl = {{"spec", {{"containers", json::array({{{"name", "eval"}, {"image", other}}})}}}};
    Status s = prepareRuntimePod(tmpl, pod);
    EXPECT_FALSE(s.isOk()) << other;
    EXPECT_NE(s.message().find("names image \"" + other + "\""), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace lockstep::controllers
