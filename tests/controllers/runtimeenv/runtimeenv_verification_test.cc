// Scheduled runtime verification (pure): which nodes a run uses, the Job it
// runs, how Job outcomes become the Verified condition, when runs are due,
// and the promotion rule the ModelRelease controller reads.
#include "controllers/runtimeenv/runtimeenv_verification.h"

#include <string>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"
#include "tests/support/builders.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons and types

const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kCli =
    "registry.example/lockstep/"
    "lockstep@sha256:c11c000000000000000000000000000000000000000000000000000000000001";
const std::string kHash = "sha256:" + std::string(64, 'e');
// Tuesday 2026-12-01T17:20:30Z.
const std::string kNow = "2026-12-01T17:20:30Z";
constexpr int64_t kNowUnix = 1796145630;

json gpuNode(const std::string& name, const std::string& product, const std::string& major,
             const std::string& minor, const std::string& rev) {
  json n = testing::gpuNode(name, major, minor, rev);
  n["metadata"]["labels"]["nvidia.com/gpu.product"] = product;
  return n;
}

// The test world's nodes (tests/cluster/kwok/nodes.yaml).
std::vector<json> worldNodes() {
  return {testing::cpuNode("cpu-0"), gpuNode("gpu-1", "NVIDIA-H100-80GB-HBM3", "570", "124", "06"),
          gpuNode("gpu-0", "NVIDIA-H100-80GB-HBM3", "570", "124", "06"),
          gpuNode("gpu-old-0", "Tesla-V100-SXM2-32GB", "535", "183", "01")};
}

json verifySpec(const std::string& schedule = "@weekly") {
  return {{"schedule", schedule},
          {"smoke", "python -c 'import torch; torch.cuda.init()'"},
          {"requiredForPromotion", true},
          {"pod", {{"annotations", {{"example.com/team", "ml"}}}}}};
}

struct World {
  json runtimeEnv;
  std::vector<json> nodes = worldNodes();
  std::vector<json> jobs;
  std::vector<json> pods;
  int64_t revision = 1;
  std::string cuda = "12.8";
  std::string minDriver = "570.26";
  std::string now = kNow;
  int64_t nowUnix = kNowUnix;

  explicit World(const json& verify, const json& status = json::object()) {
    runtimeEnv = testing::runtimeEnv("torch").image(kImage).uid("rte-uid").build();
    if (!verify.is_null()) runtimeEnv["spec"]["verify"] = verify;
    runtimeEnv["status"] = status;
    runtimeEnv["status"]["currentRevision"] = revision;
  }

  VerificationPlan plan() const {
    VerificationInput in;
    in.runtimeEnv = testing::share(runtimeEnv);
    in.spec = decodeVerifySpec(runtimeEnv);
    in.revision = revision;
    in.image = kImage;
    in.closureHash = kHash;
    in.cuda = cuda;
    in.minDriver = minDriver;
    in.lockText = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
    in.format = "pip";
    for (const auto& n : nodes) in.nodes.push_back(testing::share(n));
    for (const auto& j : jobs) in.jobs.push_back(testing::share(j));
    for (const auto& p : pods) in.pods.push_back(testing::share(p));
    in.cliImage = kCli;
    in.now = now;
    in.nowUnix = nowUnix;
    return planVerification(in);
  }
};

json job(const std::string& name, int64_t run, const std::string& condition = "",
         const std::string& at = kNow) {
  json j = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", name},
        {"namespace", "ml"},
        {"uid", name + "-uid"},
        {"labels", {{kVerifyRuntimeEnvLabel, "torch"}, {kVerifyRunLabel, std::to_string(run)}}}}},
      {"status", json::object()}};
  if (!condition.empty()) {
    j["status"]["conditions"] =
        json::array({{{"type", condition},
                      {"status", "True"},
                      {"reason", condition == "Failed" ? "BackoffLimitExceeded" : ""},
                      {"lastTransitionTime", at}}});
  }
  return j;
}

json failedPod(const std::string& jobName, const std::string& node, const std::string& container,
               const std::string& message) {
  return {
      {"metadata",
       {{"name", jobName + "-abcde"},
        {"namespace", "ml"},
        {"labels", {{"batch.kubernetes.io/job-name", jobName}}}}},
      {"spec", {{"nodeName", node}}},
      {"status",
       {{"phase", "Failed"},
        {"initContainerStatuses",
         json::array({{{"name", "verify-env"},
                       {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}})},
        {"containerStatuses",
         json::array({{{"name", container},
                       {"state",
                        {{"terminated",
                          {{"exitCode", 1}, {"reason", "Error"}, {"message", message}}}}}}})}}}};
}

// A run of revision 1 started at `startedAt`, its one H100 result `result`.
json runningStatus(const std::string& startedAt, const std::string& result = kResultRunning) {
  VerificationStatus v;
  v.run = 1;
  v.revision = 1;
  v.closureHash = kHash;
  v.startedAt = startedAt;
  v.result = result;
  v.results = {
      {"NVIDIA-H100-80GB-HBM3", "gpu-0", "570.124.06", "torch-verify-1-0", result, "", ""}};
  if (result != kResultRunning) {
    v.finishedAt = startedAt;
    v.verdict = {1, result, startedAt, startedAt,
                 "revision 1 " + std::string(result == kResultPassed ? "passed" : "failed")};
  }
  return {{"verification", encodeVerificationStatus(v)}};
}

TEST(RuntimeEnvVerification, AFirstRunUsesOneCompatibleNodePerGpuProductNeverTheOldDriver) {
  World w(verifySpec());
  VerificationPlan p = w.plan();
  ASSERT_EQ(p.jobsToCreate.size(), 1u);
  const json& spec = p.jobsToCreate[0]["spec"]["template"]["spec"];
  // gpu-0, the first H100 node by name; gpu-old-0's driver 535 is below CUDA 12.8's 570.26.
  EXPECT_EQ(spec["nodeSelector"]["kubernetes.io/hostname"], "gpu-0");
  EXPECT_EQ(spec["nodeSelector"]["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  ASSERT_TRUE(p.verified.has_value());
  EXPECT_EQ(p.verified->status, kStatusUnknown);
  EXPECT_EQ(p.verified->reason, kReasonVerificationRunning);
  EXPECT_EQ(p.verified->message,
            "run 1 verifies revision 1 on NVIDIA-H100-80GB-HBM3 (node gpu-0, driver 570.124.06)");
  EXPECT_EQ(p.status["run"], 1);
  EXPECT_EQ(p.status["results"][0]["node"], "gpu-0");
  EXPECT_EQ(p.status["results"][0]["result"], kResultRunning);
  EXPECT_EQ(p.status["nextRunAt"], "2026-12-06T00:00:00Z");  // the next Sunday, @weekly
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "VerificationStarted");

  // A CUDA 12.1 closure (minimum 530.30.02) runs on the V100 node too: one Job per product.
  w.cuda = "12.1";
  w.minDriver = "530.30.02";
  p = w.plan();
  ASSERT_EQ(p.jobsToCreate.size(), 2u);
  EXPECT_EQ(p.jobsToCreate[0]["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"],
            "gpu-0");
  EXPECT_EQ(p.jobsToCreate[1]["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"],
            "gpu-old-0");
}

TEST(RuntimeEnvVerification, TheJobRunsTheChecksFromTheCliImageAndTheSmokeOnTheRuntimeByDigest) {
  World w(verifySpec());
  VerificationPlan p = w.plan();
  ASSERT_EQ(p.jobsToCreate.size(), 1u);
  const json& j = p.jobsToCreate[0];
  EXPECT_EQ(j["metadata"]["name"], "torch-verify-1-0");
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["kind"], "RuntimeEnv");
  EXPECT_EQ(j["metadata"]["ownerReferences"][0]["uid"], "rte-uid");
  EXPECT_EQ(j["metadata"]["labels"][kVerifyRunLabel], "1");
  EXPECT_EQ(j["spec"]["backoffLimit"], 0);
  EXPECT_EQ(j["spec"]["activeDeadlineSeconds"], 1800);
  const json& tmpl = j["spec"]["template"];
  EXPECT_EQ(tmpl["metadata"]["annotations"]["example.com/team"], "ml");
  // The pod declares the revision it verifies: admission checks its main container.
  EXPECT_EQ(tmpl["metadata"]["labels"]["lockstep.dev/runtime-env"], "torch");
  EXPECT_EQ(tmpl["metadata"]["annotations"]["lockstep.dev/closure-hash"], kHash);
  EXPECT_EQ(tmpl["metadata"]["annotations"]["lockstep.dev/runtime-revision"], "1");
  const json& spec = tmpl["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");
  ASSERT_EQ(spec["initContainers"].size(), 2u);
  EXPECT_EQ(spec["initContainers"][0]["image"], kCli);
  EXPECT_EQ(
      spec["initContainers"][0]["command"],
      json::array({"lockstep", "verify-env", "--lock", "/lockstep/closure/lock", "--runtime-json",
                   "/lockstep/closure/runtime.json", "--prefix", "/lockstep/runtime/usr/local"}));
  EXPECT_EQ(spec["initContainers"][1]["command"][1], "verify-host");
  EXPECT_EQ(spec["initContainers"][1]["resources"]["limits"]["nvidia.com/gpu"], 1);
  EXPECT_EQ(spec["initContainers"][0]["securityContext"]["runAsNonRoot"], true);
  ASSERT_EQ(spec["containers"].size(), 1u);
  EXPECT_EQ(spec["containers"][0]["image"], kImage);
  EXPECT_EQ(spec["containers"][0]["command"],
            json::array({"sh", "-c", "python -c 'import torch; torch.cuda.init()'"}));
  EXPECT_EQ(spec["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(spec["volumes"][0]["configMap"]["name"], "lockstep-closure-torch-1");
  EXPECT_EQ(spec["volumes"][1]["image"]["reference"], kImage);
  // The closure the checks read, for the current revision.
  ASSERT_TRUE(p.closureConfigMap.has_value());
  EXPECT_EQ((*p.closureConfigMap)["metadata"]["name"], "lockstep-closure-torch-1");
  EXPECT_EQ((*p.closureConfigMap)["data"]["lock"],
            "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n");
  json runtime = json::parse((*p.closureConfigMap)["data"]["runtime.json"].get<std::string>());
  EXPECT_EQ(runtime["closureHash"], kHash);
  EXPECT_EQ(runtime["minDriver"], "570.26");
}

TEST(RuntimeEnvVerification, WithoutSmokeTheChecksStayInitContainers) {
  // Admission trusts the CLI image only as an init container: the main container is
  // the runtime image by digest even without a smoke command.
  json spec = verifySpec();
  spec.erase("smoke");
  World w(spec);
  VerificationPlan p = w.plan();
  ASSERT_EQ(p.jobsToCreate.size(), 1u);
  const json& pod = p.jobsToCreate[0]["spec"]["template"]["spec"];
  ASSERT_EQ(pod["initContainers"].size(), 2u);
  EXPECT_EQ(pod["initContainers"][1]["name"], "verify-host");
  ASSERT_EQ(pod["containers"].size(), 1u);
  EXPECT_EQ(pod["containers"][0]["image"], kImage);
  EXPECT_EQ(pod["containers"][0]["command"], json::array({"sh", "-c", "true"}));
}

json closureCm(const std::string& name, const std::string& ownerUid = "rte-uid") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", "ml"},
            {"labels", {{kVerifyRuntimeEnvLabel, "torch"}}},
            {"ownerReferences", json::array({{{"uid", ownerUid}, {"controller", true}}})}}},
          {"data", json::object()}};
}

TEST(RuntimeEnvVerification, ClosureConfigMapsOfPinnedRevisionsAreKeptOthersPruned) {
  // Revision 4 is current; 2 is pinned by a release; 1 and 3 are neither.
  for (bool onStartOnly : {false, true}) {
    SCOPED_TRACE(onStartOnly ? "onStart only" : "schedule");
    World w(onStartOnly ? json{{"onStart", true}} : verifySpec());
    w.revision = 4;
    VerificationInput in;  // planned by hand to give the ConfigMaps and pins
    in.runtimeEnv = testing::share(w.runtimeEnv);
    in.spec = decodeVerifySpec(w.runtimeEnv);
    in.revision = 4;
    in.image = kImage;
    in.closureHash = kHash;
    in.lockText = "numpy==1.26.4\n";
    in.cliImage = kCli;
    in.now = kNow;
    in.nowUnix = kNowUnix;
    for (const char* n : {"lockstep-closure-torch-1", "lockstep-closure-torch-2",
                          "lockstep-closure-torch-3", "lockstep-closure-torch-4"})
      in.closureConfigMaps.push_back(testing::share(closureCm(n)));
    in.pinnedRevisions = {2};
    VerificationPlan p = planVerification(in);
    ASSERT_TRUE(p.closureConfigMap.has_value());  // revision 4's data differs: applied
    EXPECT_EQ((*p.closureConfigMap)["metadata"]["name"], "lockstep-closure-torch-4");
    EXPECT_EQ(p.closureConfigMapsToDelete,
              (std::vector<std::string>{"lockstep-closure-torch-1", "lockstep-closure-torch-3"}));
    EXPECT_EQ(p.jobsToCreate.empty(), onStartOnly);
  }
}

// A pinned revision without a closure ConfigMap (never current while spec.verify was
// set) gets one when it was resolved from the current lock bytes (same lock digest:
// the operator knows its closure); one resolved from another lock does not, and
// status.closureRevisions says which revisions have a closure.
TEST(RuntimeEnvVerification, APinnedRevisionGetsItsClosureWhenItsLockIsTheCurrentOne) {
  World w(json{{"onStart", true}});
  VerificationInput in;
  in.runtimeEnv = testing::share(w.runtimeEnv);
  in.spec = decodeVerifySpec(w.runtimeEnv);
  in.revision = 4;
  in.image = kImage;
  in.closureHash = kHash;
  in.lockText = "numpy==1.26.4\n";
  in.cliImage = kCli;
  in.now = kNow;
  in.nowUnix = kNowUnix;
  const std::string oldHash = "sha256:" + std::string(64, '2');
  auto rev = [&](int64_t n, const std::string& digest, std::vector<std::string> pinnedBy) {
    api::v1alpha1::RuntimeRevision r;
    r.number = n;
    r.image = kImage;
    r.closureHash = n == 4 ? kHash : oldHash;
    r.lockDigest = digest;
    r.cuda = n == 2 ? "12.4" : "12.8";
    r.pinnedBy = std::move(pinnedBy);
    return r;
  };
  const std::string lockA = "sha256:" + std::string(64, 'a');
  const std::string lockB = "sha256:" + std::string(64, 'b');
  // 1: pinned, another lock; 2: pinned, the current lock (another image); 3: pinned,
  // has its ConfigMap; 4: current.
  in.revisions = {rev(1, lockB, {"v1"}), rev(2, lockA, {"v2"}), rev(3, lockB, {"v3"}),
                  rev(4, lockA, {})};
  in.pinnedRevisions = {1, 2, 3};
  in.closureConfigMaps = {testing::share(closureCm("lockstep-closure-torch-3"))};
  VerificationPlan p = planVerification(in);
  ASSERT_EQ(p.pinnedClosureConfigMaps.size(), 1u);
  const json& cm = p.pinnedClosureConfigMaps[0];
  EXPECT_EQ(cm["metadata"]["name"], "lockstep-closure-torch-2");
  EXPECT_EQ(cm["metadata"]["labels"]["lockstep.dev/runtime-revision"], "2");
  EXPECT_EQ(cm["data"]["lock"], "numpy==1.26.4\n");
  const json runtime = json::parse(cm["data"]["runtime.json"].get<std::string>());
  EXPECT_EQ(runtime["closureHash"], oldHash);  // revision 2's pair, not the current one
  EXPECT_EQ(runtime["cuda"], "12.4");
  ASSERT_TRUE(p.closureRevisions.has_value());
  EXPECT_EQ(*p.closureRevisions, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_TRUE(p.closureConfigMapsToDelete.empty());

  // Verification off: no closure wanted, status.closureRevisions removed.
  in.spec.reset();
  VerificationPlan off = planVerification(in);
  EXPECT_TRUE(off.pinnedClosureConfigMaps.empty());
  ASSERT_TRUE(off.closureRevisions.has_value());
  EXPECT_TRUE(off.closureRevisions->empty());
}

TEST(RuntimeEnvVerification, AFailedJobGivesVerifiedFalseWithTheTerminationMessage) {
  World w(verifySpec(), runningStatus("2026-12-01T17:10:00Z"));
  w.jobs = {job("torch-verify-1-0", 1, "Failed")};
  w.pods = {failedPod("torch-verify-1-0", "gpu-0", "smoke",
                      "RuntimeError: Found no NVIDIA driver on your system\n")};
  VerificationPlan p = w.plan();
  EXPECT_TRUE(p.jobsToCreate.empty());
  ASSERT_TRUE(p.verified.has_value());
  EXPECT_EQ(p.verified->status, kStatusFalse);
  EXPECT_EQ(p.verified->reason, kReasonVerificationFailed);
  EXPECT_EQ(p.verified->message,
            "revision 1 failed on NVIDIA-H100-80GB-HBM3 (node gpu-0, driver 570.124.06): smoke "
            "exited 1: RuntimeError: Found no NVIDIA driver on your system (run 1)");
  EXPECT_EQ(p.status["result"], kResultFailed);
  EXPECT_EQ(p.status["verdict"]["result"], kResultFailed);
  EXPECT_EQ(p.finishedResult, "failed");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "Warning");
  EXPECT_EQ(p.events[0].message, p.verified->message);
}

TEST(RuntimeEnvVerification, AFailedJobWhosePodIsNotCachedYetWaitsForItBriefly) {
  World w(verifySpec(), runningStatus("2026-12-01T17:10:00Z"));
  w.jobs = {job("torch-verify-1-0", 1, "Failed", "2026-12-01T17:20:28Z")};
  VerificationPlan p = w.plan();
  EXPECT_EQ(p.status["result"], kResultRunning);
  EXPECT_EQ(p.requeueAfterSeconds, 2);
  // Later, without the pod: the Job's own reason.
  w.now = "2026-12-01T17:21:30Z";
  w.nowUnix = kNowUnix + 60;
  p = w.plan();
  EXPECT_EQ(p.status["results"][0]["message"], "Job torch-verify-1-0 failed: BackoffLimitExceeded");
}

TEST(RuntimeEnvVerification, ACompletedJobPassesAndCountsUntilTheNextScheduledRunIsDue) {
  World w(verifySpec(), runningStatus("2026-12-01T17:10:00Z"));
  w.jobs = {job("torch-verify-1-0", 1, "Complete")};
  VerificationPlan p = w.plan();
  ASSERT_TRUE(p.verified.has_value());
  EXPECT_EQ(p.verified->status, kStatusTrue);
  EXPECT_EQ(p.verified->message,
            "revision 1 passed verify-env, verify-host and the smoke command on "
            "NVIDIA-H100-80GB-HBM3 (node gpu-0, driver 570.124.06) (run 1, started "
            "2026-12-01T17:10:00Z)");
  EXPECT_EQ(p.finishedResult, "passed");
  EXPECT_EQ(p.status["nextRunAt"], "2026-12-06T00:00:00Z");
  // The next run plus its timeout (1800 s).
  EXPECT_EQ(p.status["staleAfter"], "2026-12-06T00:30:00Z");
  EXPECT_EQ(p.requeueAfterSeconds, 1796515200 - kNowUnix);
}

TEST(RuntimeEnvVerification, TheScheduleStartsTheNextRunAndKeepsTheVerdictMeanwhile) {
  // Run 1 passed last week (Sunday 2026-11-22); @weekly was due on Sunday 2026-11-29.
  World w(verifySpec(), runningStatus("2026-11-22T00:00:05Z", kResultPassed));
  w.jobs = {job("torch-verify-1-0", 1, "Complete")};
  VerificationPlan p = w.plan();
  ASSERT_EQ(p.jobsToCreate.size(), 1u);
  EXPECT_EQ(p.jobsToCreate[0]["metadata"]["name"], "torch-verify-2-0");
  EXPECT_EQ(p.jobsToDelete, std::vector<std::string>{"torch-verify-1-0"});
  EXPECT_EQ(p.status["run"], 2);
  EXPECT_EQ(p.status["verdict"]["run"], 1);
  EXPECT_EQ(p.verified->status, kStatusTrue);
  EXPECT_EQ(p.events.back().message,
            "run 2 verifies revision 1 on NVIDIA-H100-80GB-HBM3 (node gpu-0, driver 570.124.06) "
            "(scheduled)");
}

TEST(RuntimeEnvVerification, NoRunBeforeTheScheduleIsDue) {
  World w(verifySpec(), runningStatus("2026-12-01T17:10:00Z", kResultPassed));
  w.jobs = {job("torch-verify-1-0", 1, "Complete")};
  VerificationPlan p = w.plan();
  EXPECT_TRUE(p.jobsToCreate.empty());
  EXPECT_TRUE(p.jobsToDelete.empty());
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(p.requeueAfterSeconds, 1796515200 - kNowUnix);
}

TEST(RuntimeEnvVerification, ANewRevisionIsVerifiedAtOnceSupersedingARunOfTheOldOne) {
  World w(verifySpec(), runningStatus("2026-12-01T17:10:00Z"));
  w.revision = 2;
  w.jobs = {job("torch-verify-1-0", 1)};
  VerificationPlan p = w.plan();
  ASSERT_EQ(p.jobsToCreate.size(), 1u);
  EXPECT_EQ(p.jobsToCreate[0]["metadata"]["name"], "torch-verify-2-0");
  EXPECT_EQ(p.jobsToDelete, std::vector<std::string>{"torch-verify-1-0"});
  EXPECT_EQ(p.status["revision"], 2);
  EXPECT_FALSE(p.status.contains("verdict"));
  EXPECT_EQ(p.verified->status, kStatusUnknown);
  EXPECT_NE(p.events.back().message.find("(a new revision)"), std::string::npos);
}

TEST(RuntimeEnvVerification, NoCompatibleNodeSaysSoAndStartsNothing) {
  World w(verifySpec());
  w.nodes = {gpuNode("gpu-old-0", "Tesla-V100-SXM2-32GB", "535", "183", "01")};
  VerificationPlan p = w.plan();
  EXPECT_TRUE(p.jobsToCreate.empty());
  EXPECT_EQ(p.verified->status, kStatusFalse);
  EXPECT_EQ(p.verified->reason, kReasonNoCompatibleNodes);
  EXPECT_EQ(p.verified->message,
            "no schedulable GPU node reports an NVIDIA driver >= 570.26 (CUDA 12.8): revision 1 "
            "cannot be verified");
}

TEST(RuntimeEnvVerification, AnInvalidScheduleNamesTheField) {
  World w(verifySpec("0 25 * * *"));
  VerificationPlan p = w.plan();
  EXPECT_TRUE(p.jobsToCreate.empty());
  EXPECT_EQ(p.verified->reason, kReasonInvalidSchedule);
  EXPECT_EQ(p.verified->message,
            "spec.verify.schedule: schedule \"0 25 * * *\": field 2 (hour): 25 is out of range "
            "0-23");
}

TEST(RuntimeEnvVerification, WithoutAScheduleNothingOfItIsLeft) {
  World w(nullptr, runningStatus("2026-12-01T17:10:00Z"));
  w.jobs = {job("torch-verify-1-0", 1)};
  VerificationPlan p = w.plan();
  EXPECT_FALSE(p.enabled);
  EXPECT_TRUE(p.status.is_null());
  EXPECT_FALSE(p.verified.has_value());
  EXPECT_EQ(p.jobsToDelete, std::vector<std::string>{"torch-verify-1-0"});
}

// The promotion rule (api/v1alpha1/runtime_verify.h), on RuntimeEnvs as the cache holds them.
json verifiedRte(const json& status, bool required = true) {
  json verify = verifySpec();
  verify["requiredForPromotion"] = required;
  json r = testing::runtimeEnv("torch").image(kImage).build();
  r["spec"]["verify"] = verify;
  r["status"] = status;
  r["status"]["currentRevision"] = 1;
  return r;
}

TEST(RuntimeEnvVerificationGate, APassedFreshVerificationLetsTheCanaryStart) {
  json s = runningStatus("2026-12-01T17:10:00Z", kResultPassed);
  s["verification"]["staleAfter"] = "2026-12-06T00:30:00Z";
  EXPECT_EQ(verificationBlocksPromotion(verifiedRte(s), kNow), std::nullopt);
  EXPECT_EQ(verificationBlocksPromotion(verifiedRte(json::object(), false), kNow), std::nullopt);
}

TEST(RuntimeEnvVerificationGate, AFailedMissingOrOldVerificationBlocksItNamingWhy) {
  json failed = runningStatus("2026-12-01T17:10:00Z", kResultFailed);
  failed["conditions"] = json::array();
  EXPECT_EQ(verificationBlocksPromotion(verifiedRte(failed), kNow).value_or(""),
            "RuntimeEnv \"torch\": verification of revision 1 failed (run 1): revision 1 failed");
  EXPECT_EQ(verificationBlocksPromotion(verifiedRte(json::object()), kNow).value_or(""),
            "RuntimeEnv \"torch\": revision 1 is not verified yet");
  EXPECT_EQ(verificationBlocksPromotion(verifiedRte(runningStatus(kNow)), kNow).value_or(""),
            "RuntimeEnv \"torch\": revision 1 is not verified yet (run 1 is running)");
  json old = runningStatus("2026-11-22T00:00:05Z", kResultPassed);
  old["verification"]["staleAfter"] = "2026-11-29T00:30:00Z";
  EXPECT_EQ(verificationBlocksPromotion(verifiedRte(old), kNow).value_or(""),
            "RuntimeEnv \"torch\": the last passed verification (run 1, started "
            "2026-11-22T00:00:05Z) is older than its schedule \"@weekly\" allows (a newer run "
            "was due to finish by 2026-11-29T00:30:00Z)");
}

// Through the RuntimeEnv planner: the status carries the verification and the
// Verified condition; the closure ConfigMap is written before the Job that mounts it.
TEST(RuntimeEnvVerification, TheRuntimeEnvPlanWritesTheConfigMapThenTheJobThenTheStatus) {
  json rte =
      testing::runtimeEnv("torch")
          .image(kImage)
          .uid("rte-uid")
          .inlineLock("numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n" +
                      "nvidia-cuda-runtime-cu12==12.8.90 --hash=sha256:" + std::string(64, 'b') +
                      "\n")
          .build();
  rte["spec"]["verify"] = verifySpec();
  RuntimeEnvObserved o;
  o.runtimeEnv = testing::share(rte);
  for (const auto& n : worldNodes()) o.nodes.push_back(testing::share(n));
  o.cliImage = kCli;
  o.nowUnix = kNowUnix;
  RuntimeEnvPlan p = planRuntimeEnv(o, kNow);
  auto verified = kube::findCondition(p.status["conditions"], kConditionVerified);
  ASSERT_TRUE(verified.has_value());
  EXPECT_EQ((*verified)["reason"], kReasonVerificationRunning);
  EXPECT_EQ(p.status["verification"]["revision"], 1);
  ExecutionPlan x = executionPlan(p, o);
  // The in-use finalizer is not wanted (no release pins); ConfigMap, then the Job.
  ASSERT_GE(x.apply.size(), 2u);
  EXPECT_EQ(x.apply[0].object["kind"], "ConfigMap");
  EXPECT_EQ(x.apply[1].object["kind"], "Job");
  EXPECT_EQ(x.apply[1].verb, WriteVerb::kCreate);
  // Of the revision just resolved: its image by digest, its closure hash and lock.
  const std::string hash = p.status["closureHash"];
  ASSERT_EQ(hash.rfind("sha256:", 0), 0u) << hash;
  EXPECT_EQ(x.apply[1].object["spec"]["template"]["spec"]["containers"][0]["image"], kImage);
  EXPECT_EQ(p.status["verification"]["closureHash"], hash);
  json runtime = json::parse(x.apply[0].object["data"]["runtime.json"].get<std::string>());
  EXPECT_EQ(runtime["closureHash"], hash);
  EXPECT_EQ(runtime["cuda"], "12.8");
  EXPECT_EQ(x.apply[0].object["data"]["lock"], rte["spec"]["lock"]["inline"]);
  ASSERT_TRUE(x.status.has_value());
}

}  // namespace
}  // namespace lockstep::controllers
