// Table tests of the ModelRelease planner (controllers/modelrelease/release_plan.h)
// and a simulated world that restarts the operator at every step.
#include "controllers/modelrelease/release_plan.h"
#include "api/v1alpha1/conditions.h"
#include "controllers/modelrelease/gates/gate_job.h"
#include "controllers/modelrelease/prod/fold.h"
#include "controllers/modelrelease/timestamps.h"
#include "tests/controllers/modelrelease/release_plan_readers.h"

#include <map>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): phases and reasons
using nlohmann::json;

const std::string kHash = "sha256:" + std::string(64, 'a');
const std::string kOtherHash = "sha256:" + std::string(64, 'b');
const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
const std::string kNow = "2026-11-30T10:00:00Z";
const int64_t kNowUnix = 1796032800;  // 2026-11-30T10:00:00Z

// ---- builders ---------------------------------------------------------------

class ReleaseBuilder {
 public:
  explicit ReleaseBuilder(std::string name = "gpt2-v7") {
    o_ = {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "ModelRelease"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-1"}, {"generation", 1}}},
          {"spec",
           {{"model", "gpt2"},
            {"package", kPackage},
            {"runtimeEnvRef", {{"name", "torch"}}},
            {"closureHash", kHash},
            {"stages", json::array()}}}};
  }
  ReleaseBuilder& gate(const std::string& name, json metrics = json::array(),
                       const std::string& timeout = "30m") {
    json tmpl = {
        {"spec",
         {{"containers", json::array({{{"name", name}, {"command", {"python", "run.py"}}}})}}}};
    o_["spec"]["stages"].push_back(
        {{"name", name},
         {"gate", {{"template", tmpl}, {"metrics", metrics}, {"timeout", timeout}}}});
    return *this;
  }
  ReleaseBuilder& evidence(const std::string& name, std::vector<std::string> stages,
                           const std::string& policy = "fleet") {
    o_["spec"]["stages"].push_back(
        {{"name", name}, {"evidence", {{"stages", stages}, {"trustPolicy", policy}}}});
    return *this;
  }
  ReleaseBuilder& manual() {
    o_["spec"]["stages"].back()["approval"] = "Manual";
    return *this;
  }
  ReleaseBuilder& containerImage(const std::string& image) {
    o_["spec"]["stages"].back()["gate"]["template"]["spec"]["containers"][0]["image"] = image;
    return *this;
  }
  ReleaseBuilder& serving(const std::string& name) {
    o_["spec"]["stages"].push_back(
        {{"name", name},
         {"serving",
          {{"template", {{"spec", {{"containers", json::array({{{"name", "s"}}})}}}}}}}});
    return *this;
  }
  ReleaseBuilder& annotate(const std::string& k, const std::string& v) {
    o_["metadata"]["annotations"][k] = v;
    return *this;
  }
  ReleaseBuilder& status(const json& s) {
    o_["status"] = s;
    return *this;
  }
  json build() const { return o_; }

 private:
  json o_;
};

json runtimeEnv(const std::string& hash = kHash, bool ready = true, int generation = 1,
                int observed = 1) {
  return {{"metadata", {{"name", "torch"}, {"namespace", "ml"}, {"generation", generation}}},
          {"spec", {{"image", kImage}}},
          {"status",
           {{"closureHash", hash},
            {"observedGeneration", observed},
            {"conditions", json::array({{{"type", "Ready"},
                                         {"status", ready ? "True" : "False"},
                                         {"reason", ready ? "Resolved" : "LockParseError"},
                                         {"message", "m"}}})}}}};
}

json metric(const std::string& name, std::optional<double> min, std::optional<double> max = {}) {
  json m = {{"name", name}};
  if (min) m["min"] = *min;
  if (max) m["max"] = *max;
  return m;
}

// A Job as the planner would have created it, with final conditions added by `finish`.
json jobFor(const ReleasePlan& plan, size_t i = 0) { return plan.jobsToCreate.at(i); }

json withUid(json job, const std::string& uid = "job-uid") {
  job["metadata"]["uid"] = uid;
  return job;
}

json finished(json job, const std::string& type, const std::string& reason = "",
              const std::string& when = "2026-11-30T10:05:00Z") {
  job = withUid(std::move(job));
  job["status"]["conditions"] = json::array(
      {{{"type", type == "Complete" ? "SuccessCriteriaMet" : "FailureTarget"}, {"status", "True"}},
       {{"type", type},
        {"status", "True"},
        {"reason", reason},
        {"message", "m"},
        {"lastTransitionTime", when}}});
  if (type == "Complete") job["status"]["completionTime"] = when;
  return job;
}

json podOf(const json& job, const std::string& phase, const std::string& message,
           int exitCode = 0) {
  std::string container = job["spec"]["template"]["spec"]["containers"][0]["name"];
  return {
      {"metadata",
       {{"name", job["metadata"]["name"].get<std::string>() + "-x"},
        {"labels", {{"batch.kubernetes.io/job-name", job["metadata"]["name"]}}}}},
      {"status",
       {{"phase", phase},
        {"containerStatuses",
         json::array(
             {{{"name", container},
               {"state", {{"terminated", {{"exitCode", exitCode}, {"message", message}}}}}}})}}}};
}

ReleaseObserved observed(const json& release, std::optional<json> env = runtimeEnv()) {
  ReleaseObserved o;
  o.release = release;
  o.runtimeEnv = std::move(env);
  o.now = kNow;
  o.nowUnix = kNowUnix;
  o.fetchCommand = {"sh", "-c", "fetch"};
  return o;
}

// The release with the plan's status written (as the shell does, status last).
json applied(json release, const ReleasePlan& plan) {
  release["status"] = plan.status;
  return release;
}

// One reconcile of `o` with prod's pods as `serving`: the plan, with its status
// written back to o.release for the next one.
ReleasePlan planWithServing(ReleaseObserved& o, ServingObserved serving) {
  o.serving = std::move(serving);
  ReleasePlan p = planRelease(o);
  o.release = applied(o.release, p);
  return p;
}

const json& stage(const ReleasePlan& p, const std::string& name) {
  for (const json& s : p.status["stages"]) {
    if (s["name"] == name) return s;
  }
  static json none;
  return none;
}

using plan_readers::condition;
using plan_readers::hasEvent;

// ---- first steps --------------------------------------------------------------

TEST(ReleasePlan, NewReleaseStartsTheFirstGateJob) {
  auto plan = planRelease(observed(ReleaseBuilder().gate("eval").gate("ci").build()));
  ASSERT_EQ(plan.jobsToCreate.size(), 1u);
  EXPECT_EQ(plan.jobsToCreate[0]["metadata"]["name"], "gpt2-v7-eval-1");
  EXPECT_EQ(plan.status["phase"], "Evaluating");
  EXPECT_EQ(plan.status["currentStage"], "eval");
  EXPECT_EQ(stage(plan, "eval")["phase"], "Running");
  EXPECT_EQ(stage(plan, "eval")["startedAt"], kNow);
  EXPECT_EQ(stage(plan, "ci")["phase"], "Pending");
  EXPECT_EQ(condition(plan, "Reconciling"), "True");
  EXPECT_EQ(condition(plan, "Ready"), "False");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "GateRunning");
  EXPECT_EQ(condition(plan, "Stalled"), "False");
  EXPECT_EQ(condition(plan, "Stale"), "False");
  EXPECT_EQ(plan.status["observedGeneration"], 1);
  EXPECT_TRUE(plan.statusChanged);
  EXPECT_TRUE(hasEvent(plan, "StageStarted", "gpt2-v7-eval-1"));
}

TEST(ReleasePlan, GateJobRunsThePackageByReferenceOnTheRuntimeImage) {
  auto plan = planRelease(observed(ReleaseBuilder().gate("eval").build()));
  ASSERT_EQ(plan.jobsToCreate.size(), 1u);
  const json& job = plan.jobsToCreate[0];
  EXPECT_EQ(job["metadata"]["namespace"], "ml");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["kind"], "ModelRelease");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 1800);
  const json& pod = job["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["labels"]["lockstep.dev/runtime-env"], "torch");
  EXPECT_EQ(pod["metadata"]["labels"]["lockstep.dev/release"], "gpt2-v7");
  EXPECT_EQ(pod["metadata"]["labels"]["lockstep.dev/stage"], "eval");
  EXPECT_EQ(pod["metadata"]["annotations"]["lockstep.dev/closure-hash"], kHash);
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], kImage);
  std::map<std::string, std::string> env;
  for (const json& e : c["env"]) env[e["name"]] = e["value"];
  EXPECT_EQ(env["LOCKSTEP_PACKAGE"], kPackage);
  EXPECT_EQ(env["LOCKSTEP_CLOSURE_HASH"], kHash);
  EXPECT_EQ(env["LOCKSTEP_RELEASE"], "gpt2-v7");
  EXPECT_EQ(env["LOCKSTEP_STAGE"], "eval");
  EXPECT_EQ(env["LOCKSTEP_MODEL_DIR"], "/model");
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/model");
  EXPECT_EQ(c["volumeMounts"][0]["readOnly"], true);
  const json& vol = pod["spec"]["volumes"][0];
  EXPECT_EQ(vol["name"], "lockstep-package");
  EXPECT_EQ(vol["image"]["reference"], kPackage);
  EXPECT_EQ(stage(plan, "eval")["packageMount"], "ImageVolume");
}

TEST(ReleasePlan, InitContainerModeFetchesThePackageIntoAnEmptyDir) {
  auto o = observed(ReleaseBuilder().gate("eval").build());
  o.mount = PackageMount::kInitContainer;
  auto plan = planRelease(o);
  ASSERT_EQ(plan.jobsToCreate.size(), 1u);
  const json& spec = plan.jobsToCreate[0]["spec"]["template"]["spec"];
  EXPECT_TRUE(spec["volumes"][0].contains("emptyDir"));
  EXPECT_FALSE(spec["volumes"][0].contains("image"));
  const json& fetch = spec["initContainers"][0];
  EXPECT_EQ(fetch["name"], "lockstep-fetch-package");
  EXPECT_EQ(fetch["image"], kImage);
  EXPECT_EQ(fetch["command"], json({"sh", "-c", "fetch"}));
  EXPECT_EQ(fetch["env"][0]["value"], kPackage);
  EXPECT_EQ(stage(plan, "eval")["packageMount"], "InitContainer");
}

TEST(ReleasePlan, TemplateNamingAnotherImageFailsTheStage) {
  auto plan = planRelease(
      observed(ReleaseBuilder().gate("eval").containerImage("busybox:1.36").gate("ci").build()));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "InvalidSpec");
  EXPECT_NE(stage(plan, "eval")["message"].get<std::string>().find(
                "container \"eval\" of stage \"eval\" names image \"busybox:1.36\""),
            std::string::npos);
}

// The package as the shell read it (package_reader.h): a ModelPack model is described
// in status.package and its gate Job mounts it as an image volume; a package that is
// neither an image nor ModelPack fails the release before any Job, naming its types;
// one the shell could not read goes on, saying why.
TEST(ReleasePlan, APackageIsDescribedRefusedOrLeftUnread) {
  PackageInfo info;
  info.digest = "sha256:" + std::string(64, 'c');
  info.kind = kPackageKindModelPack;
  info.mediaType = "application/vnd.oci.image.manifest.v1+json";
  info.artifactType = kModelPackArtifactType;
  info.layers = 2;
  info.model = ModelPackConfig{};
  info.model->format = "safetensors";
  info.model->paramSize = "124m";
  info.model->parameterCount = 124'000'000;

  ReleaseObserved o = observed(ReleaseBuilder().gate("eval").build());
  o.package = PackageObserved{info.digest, info, "", ""};
  auto plan = planRelease(o);
  ASSERT_EQ(plan.jobsToCreate.size(), 1u);
  EXPECT_EQ(plan.status["package"]["kind"], "ModelPack");
  EXPECT_EQ(plan.status["package"]["model"]["parameterCount"], 124'000'000);
  EXPECT_EQ(plan.jobsToCreate[0]["spec"]["template"]["spec"]["volumes"][0]["image"]["reference"],
            kPackage);

  const std::string why =
      "manifest sha256:cc…: artifactType: neither an image nor a ModelPack model "
      "(application/vnd.cncf.model.manifest.v1+json): the manifest has artifactType "
      "\"application/vnd.unknown.artifact.v1\"";
  o.package = PackageObserved{info.digest, std::nullopt, why, ""};
  plan = planRelease(o);
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "PackageRefused");
  EXPECT_EQ(condition(plan, "Ready", "message"),
            "package " + kPackage + " is neither an image nor a ModelPack model: " + why);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "PackageRefused");

  // A release whose first stage already ran (an older operator started it) goes on.
  json running = planRelease(observed(ReleaseBuilder().gate("eval").build())).status;
  o = observed(ReleaseBuilder().gate("eval").status(running).build());
  o.package = PackageObserved{info.digest, std::nullopt, why, ""};
  plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Evaluating");
  EXPECT_EQ(plan.status["package"]["message"], "refused: " + why);

  o = observed(ReleaseBuilder().gate("eval").build());
  o.package = PackageObserved{info.digest, std::nullopt, "", "registry.example: no such host"};
  plan = planRelease(o);
  EXPECT_EQ(plan.jobsToCreate.size(), 1u);
  EXPECT_EQ(
      plan.status["package"],
      json({{"digest", info.digest}, {"message", "not read: registry.example: no such host"}}));
}

TEST(ReleasePlan, LongNamesGiveShortDeterministicJobNames) {
  std::string longName(80, 'r');
  std::string a = gateJobName(longName, "eval", 1);
  EXPECT_LE(a.size(), 63u);
  EXPECT_EQ(a, gateJobName(longName, "eval", 1));
  EXPECT_NE(a, gateJobName(longName, "eval", 2));
  EXPECT_NE(a, gateJobName(longName + "x", "eval", 1));
  EXPECT_EQ(gateJobName("gpt2", "ci", 3), "gpt2-ci-3");
}

TEST(ReleasePlan, DurationsAndTimes) {
  EXPECT_EQ(parseStageDuration("30m"), 1800);
  EXPECT_EQ(parseStageDuration("1h30m15s"), 5415);
  EXPECT_EQ(parseStageDuration("45"), std::nullopt);
  EXPECT_EQ(parseStageDuration("m"), std::nullopt);
  EXPECT_EQ(parseStageDuration("10d"), std::nullopt);
  EXPECT_EQ(parseStageDuration(""), std::nullopt);
  EXPECT_EQ(parseRfc3339(kNow), kNowUnix);
  EXPECT_EQ(parseRfc3339("2026-11-30T10:00:00.123Z"), kNowUnix);
  EXPECT_EQ(parseRfc3339("yesterday"), std::nullopt);
}

// ---- gate results -------------------------------------------------------------

struct GateCase {
  std::string name;
  std::string jobType;  // Complete | Failed | "" (running)
  std::string jobReason;
  std::string podPhase;
  std::string message;
  std::string wantStage;  // eval's phase after
  std::string wantPhase;  // release phase after
  std::string wantText;   // substring of eval's message
  bool wantCiJob = false;
  std::string wantReason;  // Ready reason
};

void PrintTo(const GateCase& c, std::ostream* os) { *os << c.name; }

std::vector<GateCase> gateCases() {
  return {
      {"metrics above thresholds", "Complete", "", "Succeeded", R"({"accuracy":0.84,"loss":1.9})",
       "Succeeded", "Testing", "accuracy 0.84 >= 0.82", true, "GateRunning"},
      {"metric below threshold", "Complete", "", "Succeeded", R"({"accuracy":0.71})", "Failed",
       "Failed", "metric \"accuracy\" is 0.71, below the minimum 0.82", false, "GateFailed"},
      {"metric above maximum", "Complete", "", "Succeeded", R"({"accuracy":0.9,"loss":7.5})",
       "Failed", "Failed", "metric \"loss\" is 7.5, above the maximum 5", false, "GateFailed"},
      {"metric missing", "Complete", "", "Succeeded", R"({"loss":1.0})", "Failed", "Failed",
       "metric \"accuracy\" is missing from the termination message of container \"eval\"", false,
       "GateFailed"},
      {"metric not a number", "Complete", "", "Succeeded", R"({"accuracy":"high"})", "Failed",
       "Failed", "metric \"accuracy\" is \"high\", not a number", false, "GateFailed"},
      {"message not JSON", "Complete", "", "Succeeded", "done, accuracy=0.9", "Failed", "Failed",
       "is not a JSON object: \"done, accuracy=0.9\"", false, "GateFailed"},
      {"message is a JSON array", "Complete", "", "Succeeded", "[0.9]", "Failed", "Failed",
       "is not a JSON object", false, "GateFailed"},
      {"empty message with thresholds", "Complete", "", "Succeeded", "", "Failed", "Failed",
       "is empty; expected a JSON object with \"accuracy\"", false, "GateFailed"},
      {"message over 4 KiB", "Complete", "", "Succeeded",
       R"({"accuracy":0.9,"pad":")" + std::string(4100, 'x') + "\"}", "Failed", "Failed",
       "bytes; at most 4096 are allowed", false, "GateFailed"},
      {"deadline exceeded", "Failed", "DeadlineExceeded", "Failed", "", "Failed", "Failed",
       "timed out after 1800s (Job gpt2-v7-eval-1: DeadlineExceeded)", false, "GateTimedOut"},
      {"pod failed", "Failed", "BackoffLimitExceeded", "Failed", "CUDA error: no kernel image",
       "Failed", "Failed", "container \"eval\" exited 1: CUDA error: no kernel image", false,
       "GateFailed"},
      {"success criteria met is not final", "", "", "Running", "", "Running", "Evaluating", "",
       false, "GateRunning"},
  };
}

class GateResults : public ::testing::TestWithParam<GateCase> {};

TEST_P(GateResults, DecideTheStage) {
  const GateCase& c = GetParam();
  json release = ReleaseBuilder()
                     .gate("eval", json::array({metric("accuracy", 0.82), metric("loss", {}, 5.0)}))
                     .gate("ci")
                     .build();
  auto first = planRelease(observed(release));
  ASSERT_EQ(first.jobsToCreate.size(), 1u);
  json job = jobFor(first);
  if (c.jobType.empty()) {
    job = withUid(job);
    job["status"]["conditions"] =
        json::array({{{"type", "SuccessCriteriaMet"}, {"status", "True"}}});
  } else {
    job = finished(job, c.jobType, c.jobReason);
  }
  auto o = observed(applied(release, first));
  o.jobs = {job};
  o.pods = {podOf(job, c.podPhase, c.message, c.jobType == "Failed" ? 1 : 0)};
  auto plan = planRelease(o);
  EXPECT_EQ(stage(plan, "eval")["phase"], c.wantStage) << stage(plan, "eval").dump();
  EXPECT_EQ(plan.status["phase"], c.wantPhase);
  EXPECT_NE(stage(plan, "eval").value("message", "").find(c.wantText), std::string::npos)
      << stage(plan, "eval").dump();
  EXPECT_EQ(condition(plan, "Ready", "reason"), c.wantReason);
  bool ciJob =
      !plan.jobsToCreate.empty() && plan.jobsToCreate[0]["metadata"]["name"] == "gpt2-v7-ci-1";
  EXPECT_EQ(ciJob, c.wantCiJob);
  if (c.wantStage == "Failed") {
    EXPECT_EQ(condition(plan, "Stalled"), "True");
    EXPECT_TRUE(plan.jobsToCreate.empty());
    EXPECT_TRUE(hasEvent(plan, "StageFailed"));
    ASSERT_EQ(plan.outcomes.size(), 1u);
    EXPECT_EQ(plan.outcomes[0].result, c.wantReason == "GateTimedOut" ? "timed_out" : "failed");
    EXPECT_EQ(plan.outcomes[0].durationSeconds, 300);
  }
  if (c.wantStage == "Succeeded") {
    const json& eval = stage(plan, "eval");
    EXPECT_EQ(eval["metrics"]["accuracy"], 0.84);
    EXPECT_EQ(eval["evidence"]["package"], kPackage);
    EXPECT_EQ(eval["evidence"]["closureHash"], kHash);
    EXPECT_EQ(eval["evidence"]["image"], kImage);
    EXPECT_EQ(eval["evidence"]["jobUID"], "job-uid");
    EXPECT_EQ(eval["finishedAt"], "2026-11-30T10:05:00Z");
    EXPECT_EQ(plan.status["validatedClosureHash"], kHash);
    EXPECT_EQ(stage(plan, "ci")["phase"], "Running");
    EXPECT_TRUE(hasEvent(plan, "StageSucceeded", "accuracy 0.84"));
    ASSERT_EQ(plan.outcomes.size(), 1u);
    EXPECT_EQ(plan.outcomes[0].result, "succeeded");
  }
}

INSTANTIATE_TEST_SUITE_P(All, GateResults, ::testing::ValuesIn(gateCases()), [](const auto& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

TEST(ReleasePlan, CompleteJobWithoutItsPodInTheCacheWaits) {
  json release = ReleaseBuilder().gate("eval", json::array({metric("accuracy", 0.5)})).build();
  auto first = planRelease(observed(release));
  auto o = observed(applied(release, first));
  o.jobs = {finished(jobFor(first), "Complete", "", "2026-11-30T09:59:30Z")};
  auto plan = planRelease(o);
  EXPECT_EQ(stage(plan, "eval")["phase"], "Running");
  EXPECT_EQ(plan.requeueAfterSeconds, 2);
  EXPECT_EQ(condition(plan, "Ready", "reason"), "WaitingForMetrics");
  // Long after completion with no pod left: a clear failure, not a hang.
  o.jobs = {finished(jobFor(first), "Complete", "", "2026-11-30T09:50:00Z")};
  plan = planRelease(o);
  EXPECT_EQ(stage(plan, "eval")["phase"], "Failed");
  EXPECT_NE(stage(plan, "eval")["message"].get<std::string>().find("no succeeded pod"),
            std::string::npos);
}

TEST(ReleasePlan, NoThresholdsAndNoMessagePasses) {
  json release = ReleaseBuilder().gate("eval").build();
  auto first = planRelease(observed(release));
  auto o = observed(applied(release, first));
  json job = finished(jobFor(first), "Complete");
  o.jobs = {job};
  o.pods = {podOf(job, "Succeeded", "")};
  auto plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Validated");
  EXPECT_EQ(condition(plan, "Ready"), "True");
  EXPECT_EQ(condition(plan, "Reconciling"), "False");
  EXPECT_EQ(condition(plan, "Stalled"), "False");
  EXPECT_TRUE(hasEvent(plan, "Validated"));
  EXPECT_FALSE(plan.status.contains("currentStage"));
}

// ---- approvals and abort ------------------------------------------------------------

TEST(ReleasePlan, ManualStageWaitsForApprovalThenRecordsTheApprover) {
  json release = ReleaseBuilder().gate("eval").gate("ci").manual().build();
  json eval = finished(jobFor(planRelease(observed(release))), "Complete");
  auto o = observed(applied(release, planRelease(observed(release))));
  o.jobs = {eval};
  o.pods = {podOf(eval, "Succeeded", "")};
  auto waiting = planRelease(o);
  EXPECT_EQ(stage(waiting, "eval")["phase"], "Succeeded");
  EXPECT_EQ(stage(waiting, "ci")["phase"], "WaitingForApproval");
  EXPECT_TRUE(waiting.jobsToCreate.empty());
  EXPECT_EQ(waiting.status["phase"], "Testing");
  EXPECT_EQ(condition(waiting, "Ready", "reason"), "WaitingForApproval");
  EXPECT_EQ(condition(waiting, "Reconciling"), "False");
  EXPECT_TRUE(hasEvent(waiting, "WaitingForApproval", "\"ci\""));

  // Nothing changes on a re-plan: no churn, no repeated event.
  auto o2 = observed(applied(release, waiting));
  o2.jobs = o.jobs;
  o2.pods = o.pods;
  auto again = planRelease(o2);
  EXPECT_FALSE(again.statusChanged);
  EXPECT_TRUE(again.events.empty());

  // Approved (the webhook checked the user and the RBAC verb).
  json approved = applied(release, waiting);
  approved["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "alice";
  auto o3 = observed(approved);
  o3.jobs = o.jobs;
  o3.pods = o.pods;
  auto go = planRelease(o3);
  ASSERT_EQ(go.jobsToCreate.size(), 1u);
  EXPECT_EQ(go.jobsToCreate[0]["metadata"]["name"], "gpt2-v7-ci-1");
  EXPECT_EQ(stage(go, "ci")["approvedBy"], "alice");
  EXPECT_EQ(stage(go, "ci")["phase"], "Running");
  EXPECT_TRUE(hasEvent(go, "StageApproved", "alice"));
}

TEST(ReleasePlan, StaleCacheAfterCreateKeepsMountAndApprover) {
  // The Job exists, but the cached release predates the status write that recorded it.
  json release =
      ReleaseBuilder().gate("ci").manual().annotate("approve.lockstep.dev/ci", "alice").build();
  auto first = planRelease(observed(release));
  ASSERT_EQ(first.jobsToCreate.size(), 1u);
  auto o = observed(release);  // no status at all
  o.jobs = {withUid(jobFor(first))};
  auto plan = planRelease(o);
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(stage(plan, "ci")["phase"], "Running");
  EXPECT_EQ(stage(plan, "ci")["packageMount"], "ImageVolume");
  EXPECT_EQ(stage(plan, "ci")["approvedBy"], "alice");
  EXPECT_EQ(plan.status["packageMount"], "ImageVolume");
}

// Issue 29: a gate Job is credited only for the generation it was built for,
// and a Manual gate's only once the stage is approved.
TEST(ReleasePlan, AGateJobOfAnotherGenerationOrAnUnapprovedStageIsNeverCredited) {
  json release = ReleaseBuilder().gate("eval").gate("ci").build();
  auto first = planRelease(observed(release));
  ASSERT_EQ(first.jobsToCreate.size(), 1u);
  json job = jobFor(first);
  EXPECT_EQ(job["metadata"]["annotations"]["lockstep.dev/generation"], "1");
  // The spec changed (generation 2) after the Job was made, before the status froze it.
  json edited = applied(release, first);
  edited["metadata"]["generation"] = 2;
  auto o = observed(edited);
  o.jobs = {finished(job, "Complete")};
  o.pods = {podOf(o.jobs[0], "Succeeded", R"({"accuracy": 0.99})", 0)};
  auto plan = planRelease(o);
  EXPECT_EQ(plan.jobsToDelete, std::vector<std::string>{"gpt2-v7-eval-1"});
  EXPECT_NE(stage(plan, "eval")["phase"], "Succeeded") << "never credited";
  EXPECT_EQ(stage(plan, "eval")["attempt"], 2);
  EXPECT_TRUE(hasEvent(plan, "GateJobNotCredited",
                       "was built for generation 1 of the release, which is at generation 2"));
  // The next reconcile runs it again, for generation 2.
  auto again = observed(applied(edited, plan));
  auto rerun = planRelease(again);
  ASSERT_EQ(rerun.jobsToCreate.size(), 1u);
  EXPECT_EQ(rerun.jobsToCreate[0]["metadata"]["name"], "gpt2-v7-eval-2");
  EXPECT_EQ(rerun.jobsToCreate[0]["metadata"]["annotations"]["lockstep.dev/generation"], "2");
  // The same Job at its own generation is credited.
  o = observed(applied(release, first));
  o.jobs = {finished(job, "Complete")};
  o.pods = {podOf(o.jobs[0], "Succeeded", R"({"accuracy": 0.99})", 0)};
  EXPECT_TRUE(planRelease(o).jobsToDelete.empty());

  // A Job at the name of a Manual stage nobody approved: deleted, the stage waits.
  json manual = ReleaseBuilder().gate("ci").manual().build();
  json forged = withUid(jobFor(planRelease(observed(
      ReleaseBuilder().gate("ci").manual().annotate("approve.lockstep.dev/ci", "alice").build()))));
  auto m = observed(manual);
  m.jobs = {finished(forged, "Complete")};
  m.pods = {podOf(m.jobs[0], "Succeeded", "{}", 0)};
  plan = planRelease(m);
  EXPECT_EQ(plan.jobsToDelete, std::vector<std::string>{"gpt2-v7-ci-1"});
  EXPECT_EQ(stage(plan, "ci")["phase"], "WaitingForApproval");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "WaitingForApproval");
  EXPECT_TRUE(hasEvent(plan, "GateJobNotCredited", "stage \"ci\" is not approved"));
}

TEST(ReleasePlan, AbortDeletesTheRunningJobAndFailsTheRelease) {
  json release = ReleaseBuilder().gate("eval").gate("ci").build();
  auto first = planRelease(observed(release));
  json running = applied(release, first);
  running["metadata"]["annotations"]["lockstep.dev/abort"] = "bob";
  auto o = observed(running);
  o.jobs = {withUid(jobFor(first))};
  auto plan = planRelease(o);
  EXPECT_EQ(plan.jobsToDelete, std::vector<std::string>{"gpt2-v7-eval-1"});
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(stage(plan, "eval")["phase"], "Failed");
  EXPECT_EQ(stage(plan, "eval")["message"], "aborted by bob");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "Aborted");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "Aborted");
  EXPECT_TRUE(hasEvent(plan, "Aborted", "bob"));
  ASSERT_EQ(plan.outcomes.size(), 1u);
  EXPECT_EQ(plan.outcomes[0].result, "aborted");

  // After a crash that lost the delete, the terminal release still removes its Job.
  auto o2 = observed(applied(running, plan));
  o2.jobs = o.jobs;
  auto after = planRelease(o2);
  EXPECT_EQ(after.jobsToDelete, std::vector<std::string>{"gpt2-v7-eval-1"});
  EXPECT_FALSE(after.statusChanged);
}

// ---- the runtime ------------------------------------------------------------------------

TEST(ReleasePlan, StaleRuntimeStartsNothing) {
  json release = ReleaseBuilder().gate("eval").build();
  auto plan = planRelease(observed(release, runtimeEnv(kOtherHash)));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Pending");
  EXPECT_EQ(condition(plan, "Stale"), "True");
  EXPECT_NE(condition(plan, "Stale", "message").find(kOtherHash), std::string::npos);
  EXPECT_NE(condition(plan, "Stale", "message").find(kHash), std::string::npos);
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "RuntimeStale");
  EXPECT_TRUE(hasEvent(plan, "RuntimeStale"));
}

TEST(ReleasePlan, RuntimeMovingOnDuringEvalRecordsEvalButStartsNoCi) {
  json release =
      ReleaseBuilder().gate("eval", json::array({metric("accuracy", 0.5)})).gate("ci").build();
  auto first = planRelease(observed(release));
  json job = finished(jobFor(first), "Complete");
  auto o = observed(applied(release, first), runtimeEnv(kOtherHash, true, 2, 2));
  o.jobs = {job};
  o.pods = {podOf(job, "Succeeded", R"({"accuracy":0.9})")};
  auto plan = planRelease(o);
  EXPECT_EQ(stage(plan, "eval")["phase"], "Succeeded");
  EXPECT_EQ(stage(plan, "eval")["evidence"]["closureHash"], kHash);  // what it ran on
  EXPECT_EQ(stage(plan, "ci")["phase"], "Pending");
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Stale"), "True");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "RuntimeStale");
  EXPECT_EQ(plan.status["phase"], "Testing");
}

// Issue 29: an abort is honoured in every phase before the release ends, also
// while its prod stage waits for the runtime: it ends Failed (Aborted) and no
// canary is ever planned.
TEST(ReleasePlan, AnAbortWhileTheProdStageWaitsForItsRuntimeEndsTheRelease) {
  json release = ReleaseBuilder().serving("prod").annotate("lockstep.dev/abort", "bob").build();
  for (const std::optional<json>& env :
       {std::optional<json>(), std::optional<json>(runtimeEnv(kHash, false))}) {
    auto plan = planRelease(observed(release, env));
    EXPECT_FALSE(plan.prod.has_value()) << "no canary is planned";
    EXPECT_EQ(plan.status["phase"], "Failed");
    EXPECT_EQ(condition(plan, "Ready", "reason"), "Aborted");
    EXPECT_EQ(condition(plan, "Stalled", "reason"), "Aborted");
    EXPECT_EQ(stage(plan, "prod")["message"], "aborted by bob");
    EXPECT_TRUE(hasEvent(plan, "Aborted", "aborted by bob during stage \"prod\""));
  }
  // A status.canary written but unreadable (not an object) is a started
  // canary: the canary planner stalls on it (CanaryStatusUnreadable), the
  // abort does not end it as one that never started.
  json unreadable = release;
  unreadable["status"] = {{"phase", "Canary"}, {"canary", "Progressing"}};
  auto started = planRelease(observed(unreadable));
  EXPECT_TRUE(started.prod.has_value()) << started.status.dump(2);
  EXPECT_NE(started.status["phase"], "Failed");
  // Without the abort it waits.
  json waiting = ReleaseBuilder().serving("prod").build();
  auto plan = planRelease(observed(waiting, std::nullopt));
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeEnvNotFound");
  EXPECT_NE(plan.status["phase"], "Failed");
}

// Issue 29 (change windows): while the model's windows keep it closed, no gate
// Job and no canary starts (WaitingForWindow, requeued at the transition); a
// running gate Job is not touched.
TEST(ReleasePlan, AClosedChangeWindowStartsNoGateAndNoCanary) {
  ClosedWindow closed;
  closed.message = "closed by Deny window \"freeze\" (spec.changeWindows[0]) until later";
  closed.nextTransition = kNowUnix + 90;
  json release = ReleaseBuilder().gate("eval").serving("prod").build();
  auto o = observed(release);
  o.window = closed;
  auto plan = planRelease(o);
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Ready", "reason"), "WaitingForWindow");
  EXPECT_NE(condition(plan, "Ready", "message")
                .find("stage \"eval\" waits for the model's change window: closed by Deny "
                      "window \"freeze\""),
            std::string::npos)
      << condition(plan, "Ready", "message");
  EXPECT_EQ(plan.requeueAfterSeconds, 90);
  // Open: the Job starts.
  o.window.reset();
  auto open = planRelease(o);
  ASSERT_EQ(open.jobsToCreate.size(), 1u);
  // With eval passed, the canary does not start while closed.
  json evalDone = applied(release, open);
  evalDone["status"]["stages"][0]["phase"] = "Succeeded";
  auto atProd = observed(evalDone);
  atProd.window = closed;
  plan = planRelease(atProd);
  EXPECT_FALSE(plan.prod.has_value()) << "no canary";
  EXPECT_EQ(condition(plan, "Ready", "reason"), "WaitingForWindow");
  EXPECT_NE(condition(plan, "Ready", "message").find("stage \"prod\" (the canary) waits"),
            std::string::npos);
  atProd.window.reset();
  EXPECT_TRUE(planRelease(atProd).prod.has_value());
}

TEST(ReleasePlan, AdvisoriesAboveMaxSeverityStartNoGateAndNoCanary) {
  json env = runtimeEnv();
  env["status"]["advisories"] = {{"revision", 0},
                                 {"items", json::array({{{"id", "GHSA-h5c8-rqwp-cp95"},
                                                         {"package", "jinja2"},
                                                         {"version", "3.1.2"},
                                                         {"severity", "medium"},
                                                         {"fixed", "3.1.3"}},
                                                        {{"id", "GHSA-jjg7-2v4v-x38h"},
                                                         {"package", "idna"},
                                                         {"version", "3.4"},
                                                         {"severity", "high"}}})}};
  json release = ReleaseBuilder().gate("eval").serving("prod").build();
  release["spec"]["policy"] = {{"maxSeverity", "medium"}};
  auto plan = planRelease(observed(release, env));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Pending");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "AdvisoriesAboveMaxSeverity");
  const std::string m = condition(plan, "Ready", "message");
  EXPECT_NE(m.find("1 advisory(ies) above spec.policy.maxSeverity medium: GHSA-jjg7-2v4v-x38h "
                   "(idna 3.4, high)"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("jinja2"), std::string::npos) << "medium is not above medium: " << m;
  // A higher bar, or no bar: the gate starts.
  release["spec"]["policy"]["maxSeverity"] = "high";
  EXPECT_EQ(planRelease(observed(release, env)).jobsToCreate.size(), 1u);
  release["spec"].erase("policy");
  EXPECT_EQ(planRelease(observed(release, env)).jobsToCreate.size(), 1u);
  // Advisories recorded for another revision say nothing about this one.
  release["spec"]["policy"] = {{"maxSeverity", "low"}};
  json other = env;
  other["status"]["advisories"]["revision"] = 7;
  EXPECT_EQ(planRelease(observed(release, other)).jobsToCreate.size(), 1u);
  // Unless its entry of revisions[] (a pinned revision after the lock moved on) has them.
  json pinned = env;
  pinned["status"]["advisories"] = {
      {"revision", 7},
      {"items", json::array()},
      {"revisions",
       json::array({{{"revision", 7}, {"items", json::array()}},
                    {{"revision", 0}, {"items", env["status"]["advisories"]["items"]}}})}};
  auto held = planRelease(observed(release, pinned));
  EXPECT_TRUE(held.jobsToCreate.empty());
  EXPECT_EQ(condition(held, "Ready", "reason"), "AdvisoriesAboveMaxSeverity");
  EXPECT_NE(condition(held, "Ready", "message").find("revision 0 has 2 advisory(ies)"),
            std::string::npos)
      << condition(held, "Ready", "message");
  // The gate passed: the canary does not start while the advisory stands.
  auto first = planRelease(observed(release, runtimeEnv()));
  json job = finished(jobFor(first), "Complete");
  auto o = observed(applied(release, first), env);
  o.jobs = {job};
  o.pods = {podOf(job, "Succeeded", "")};
  auto prod = planRelease(o);
  EXPECT_EQ(stage(prod, "eval")["phase"], "Succeeded");
  EXPECT_FALSE(prod.prod.has_value());
  EXPECT_EQ(condition(prod, "Ready", "reason"), "AdvisoriesAboveMaxSeverity");
  EXPECT_NE(condition(prod, "Ready", "message").find("stage \"prod\" does not start"),
            std::string::npos);
}

// The runtime's spec.mirror.requiredForPromotion (issue 32): gates run, the canary does
// not start until Mirrored is True for the RuntimeEnv's generation and closure.
TEST(ReleasePlan, AnIncompleteMirrorHoldsTheCanaryNotTheGates) {
  json env = runtimeEnv();
  env["spec"]["mirror"] = {{"repository", "registry.example/mirror/torch"},
                           {"requiredForPromotion", true}};
  env["status"]["mirror"] = {{"closureHash", kHash}, {"result", "Missing"}};
  env["status"]["conditions"].push_back(
      {{"type", "Mirrored"},
       {"status", "False"},
       {"reason", "ArtifactsMissing"},
       {"message", "1 of 3 artifacts is missing from the mirror registry.example/mirror/torch"},
       {"observedGeneration", 1}});
  json release = ReleaseBuilder().gate("eval").serving("prod").build();
  auto first = planRelease(observed(release, env));
  ASSERT_EQ(first.jobsToCreate.size(), 1u) << "the gate runs";
  json job = finished(jobFor(first), "Complete");
  auto o = observed(applied(release, first), env);
  o.jobs = {job};
  o.pods = {podOf(job, "Succeeded", "")};
  auto held = planRelease(o);
  EXPECT_EQ(stage(held, "eval")["phase"], "Succeeded");
  EXPECT_FALSE(held.prod.has_value()) << "no canary";
  EXPECT_EQ(condition(held, "Ready", "reason"), "RuntimeNotMirrored");
  EXPECT_EQ(condition(held, "Ready", "message"),
            "stage \"prod\" does not start: RuntimeEnv \"torch\" requires its mirror for "
            "promotion: 1 of 3 artifacts is missing from the mirror registry.example/mirror/torch");
  // Mirrored, but for an older generation: still held.
  json mirrored = env;
  mirrored["status"]["conditions"][1]["status"] = "True";
  mirrored["metadata"]["generation"] = 2;
  mirrored["status"]["observedGeneration"] = 2;
  mirrored["status"]["conditions"][0]["observedGeneration"] = 2;
  o.runtimeEnv = mirrored;
  EXPECT_FALSE(planRelease(o).prod.has_value());
  // Mirrored for this generation and closure: the canary starts.
  mirrored["status"]["conditions"][1]["observedGeneration"] = 2;
  o.runtimeEnv = mirrored;
  EXPECT_TRUE(planRelease(o).prod.has_value()) << condition(planRelease(o), "Ready", "message");
  // Not required: never held.
  env["spec"]["mirror"]["requiredForPromotion"] = false;
  o.runtimeEnv = env;
  EXPECT_TRUE(planRelease(o).prod.has_value());
}

TEST(ReleasePlan, MissingOrUnreadyRuntimeWaits) {
  json release = ReleaseBuilder().gate("eval").build();
  auto plan = planRelease(observed(release, std::nullopt));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeEnvNotFound");
  EXPECT_EQ(condition(plan, "Stale"), "Unknown");
  EXPECT_EQ(condition(plan, "Stalled"), "False");
  plan = planRelease(observed(release, runtimeEnv(kHash, false)));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeEnvNotReady");
  // Ready, but for an older generation (its spec was just edited): not trusted.
  plan = planRelease(observed(release, runtimeEnv(kHash, true, 3, 2)));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_NE(condition(plan, "Ready", "message").find("not for generation 3"), std::string::npos);
}

TEST(ReleasePlan, ServingStageIsHandedToTheCanaryPlanner) {
  json release = ReleaseBuilder().gate("eval").serving("prod").build();
  auto first = planRelease(observed(release));
  EXPECT_FALSE(first.prod.has_value());
  json job = finished(jobFor(first), "Complete");
  auto o = observed(applied(release, first));
  o.jobs = {job};
  o.pods = {podOf(job, "Succeeded", "")};
  auto plan = planRelease(o);
  EXPECT_EQ(stage(plan, "eval")["phase"], "Succeeded");
  EXPECT_EQ(plan.status["currentStage"], "prod");
  EXPECT_EQ(plan.status["phase"], "Canary");
  EXPECT_EQ(stage(plan, "prod")["phase"], "Running");
  ASSERT_TRUE(plan.prod.has_value());
  EXPECT_EQ(plan.prod->stage, "prod");
  EXPECT_EQ(plan.prod->index, 1u);  // spec.stages[1], the serving stage
  EXPECT_TRUE(release["spec"]["stages"][plan.prod->index].contains("serving"));
  EXPECT_TRUE(plan.jobsToCreate.empty());

  // A stale runtime starts no canary.
  o.runtimeEnv = runtimeEnv("sha256:" + std::string(64, 'f'), true);
  plan = planRelease(o);
  EXPECT_FALSE(plan.prod.has_value());
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "RuntimeStale");
}

TEST(ReleasePlan, CanaryPlansFoldIntoPhasesAndConditions) {
  json release = ReleaseBuilder().serving("prod").build();
  auto plan = planRelease(observed(release));
  ASSERT_TRUE(plan.prod.has_value());
  json previous = release.value("status", json::object());

  CanaryPlan running;
  running.action = CanaryAction::kProgress;
  running.reason = kReasonCanaryPaused;
  running.message = "step 1/2 at weight 50%: paused";
  running.status = {{"phase", "Progressing"}, {"step", 0}};
  running.requeueAfterSeconds = 7;
  ReleasePlan p = plan;
  foldCanaryPlan(p, running, previous, 1, "2026-11-30T10:00:00Z");
  EXPECT_EQ(p.status["phase"], "Canary");
  EXPECT_EQ(p.status["canary"]["phase"], "Progressing");
  EXPECT_EQ(stage(p, "prod")["phase"], "Running");
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Ready", "reason"), "CanaryPaused");
  EXPECT_EQ(condition(p, "Reconciling"), "True");
  EXPECT_EQ(p.requeueAfterSeconds, 7);
  EXPECT_TRUE(p.statusChanged);

  CanaryPlan promoted = running;
  promoted.action = CanaryAction::kPromoted;
  promoted.reason = kReasonPromoted;
  promoted.message = "prod runs it";
  promoted.status["phase"] = "Promoted";
  promoted.replicas = {0, 3};
  p = plan;
  foldCanaryPlan(p, promoted, previous, 1, "2026-11-30T10:00:00Z");
  EXPECT_EQ(p.status["phase"], "Promoted");
  EXPECT_EQ(stage(p, "prod")["phase"], "Succeeded");
  EXPECT_EQ(condition(p, "Ready"), "True");
  EXPECT_EQ(condition(p, "Stalled"), "False");
  // Promoted with N Ready stable pods: not Degraded, from the first write on.
  EXPECT_EQ(condition(p, "Degraded"), "False");
  EXPECT_EQ(condition(p, "Degraded", "message"), "3/3 stable pods Ready");

  CanaryPlan rolledBack = running;
  rolledBack.action = CanaryAction::kRolledBack;
  rolledBack.reason = kReasonRollingBack;  // the pass that finishes a rollback says so
  rolledBack.message = "step 1/2 analysis: failed (1) > failureLimit (0)";
  rolledBack.status["phase"] = "RolledBack";
  rolledBack.status["reason"] = kReasonAnalysisFailed;
  p = plan;
  foldCanaryPlan(p, rolledBack, previous, 1, "2026-11-30T10:00:00Z");
  EXPECT_EQ(p.status["phase"], "RolledBack");
  EXPECT_EQ(stage(p, "prod")["phase"], "Failed");
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Stalled"), "True");
  EXPECT_EQ(condition(p, "Stalled", "reason"), "AnalysisFailed");

  p = plan;
  failProdStage(p, "stage \"prod\".canary.capacity \"x\" is not surge or drain", previous, 1,
                "2026-11-30T10:00:00Z");
  EXPECT_EQ(p.status["phase"], "Failed");
  EXPECT_EQ(condition(p, "Stalled", "reason"), "InvalidSpec");
  EXPECT_FALSE(p.prod.has_value());
}

TEST(ReleasePlan, PromotedReleaseIsSupersededWhenProdRunsAnother) {
  json release = ReleaseBuilder().serving("prod").build();
  release["status"] = {{"phase", "Promoted"}, {"stages", json::array()}};
  auto o = observed(release);
  o.promotedRelease = release["metadata"]["name"];
  auto plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Promoted");
  o.promotedRelease = "newer";
  plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Superseded");
  EXPECT_NE(condition(plan, "Ready", "message").find("newer"), std::string::npos);
  // A release in canary that lost the slot is Superseded too.
  release["status"]["phase"] = "Canary";
  o = observed(release);
  o.canaryRelease = "newer";
  o.promotedRelease = "older";
  EXPECT_EQ(planRelease(o).status["phase"], "Superseded");
  o.canaryRelease = release["metadata"]["name"];
  EXPECT_NE(planRelease(o).status["phase"], "Superseded");
}

// Superseded, the canary's end is recorded in its status.canary (typed,
// canary_status.h: every other member kept as written, those it does not know
// too); an unreadable one is kept as written and the message says why it has no end.
TEST(ReleasePlan, ASupersededCanaryRecordsItsEndOrSaysWhyItCannot) {
  json release = ReleaseBuilder().serving("prod").build();
  const json canary = {{"phase", "Progressing"},
                       {"step", 1},
                       {"futureMember", {{"kept", true}}},
                       {"analysis", {{"measurements", json::array({{{"value", 0}}})}}}};
  release["status"] = {{"phase", "Canary"}, {"stages", json::array()}, {"canary", canary}};
  auto o = observed(release);
  o.canaryRelease = "newer";
  o.promotedRelease = "older";
  auto plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Superseded");
  json ended = canary;
  ended["finishedAt"] = kNow;
  EXPECT_EQ(plan.status["canary"], ended);
  EXPECT_EQ(plan.status["canary"].dump(), ended.dump()) << "the same bytes, 0 stays 0";

  release["status"]["canary"]["step"] = "1";
  o.release = release;
  plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Superseded");
  EXPECT_EQ(plan.status["canary"], release["status"]["canary"]) << "kept as written";
  EXPECT_NE(condition(plan, "Ready", "message")
                .find("took the canary of model \"gpt2\"; status.canary cannot be read "
                      "(status.canary.step: must be an integer): its end is not recorded"),
            std::string::npos)
      << condition(plan, "Ready", "message");
}

// A stable pod of `release` as the model's pod cache holds it.
json stablePod(const std::string& release, int i, bool ready = true,
               const std::string& hash = kHash) {
  return {
      {"metadata",
       {{"name", "gpt2-stable-" + std::to_string(i)},
        {"labels",
         {{"lockstep.dev/model", "gpt2"},
          {"lockstep.dev/track", "stable"},
          {"lockstep.dev/release", release}}},
        {"annotations",
         {{"lockstep.dev/closure-hash", hash}, {"lockstep.dev/package", kPackage}}}}},
      {"status",
       {{"phase", "Running"},
        {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

// The stable Deployment on `release` with `ready` Ready pods of it (of `total`).
ServingObserved servingOf(const std::string& release, int ready, int total = -1) {
  ServingObserved s;
  s.stableRelease = release;
  s.stableSpecReplicas = total < 0 ? ready : total;
  for (int i = 0; i < s.stableSpecReplicas; ++i)
    s.pods.push_back(std::make_shared<const kube::Object>(stablePod(release, i, i < ready)));
  return s;
}

// A release that was promoted, then superseded by "gpt2-v8" (prod revision 4).
json supersededRelease() {
  json release = ReleaseBuilder().gate("eval").serving("prod").build();
  release["status"] = {{"phase", "Superseded"},
                       {"canary", {{"phase", "Promoted"}}},
                       {"stages", json::array({{{"name", "eval"}, {"phase", "Succeeded"}},
                                               {{"name", "prod"}, {"phase", "Succeeded"}}})},
                       {"conditions", json::array({{{"type", "Ready"},
                                                    {"status", "False"},
                                                    {"reason", "Superseded"},
                                                    {"message", "prod now runs gpt2-v8"}}})}};
  return release;
}

ReleaseObserved atRevision(const json& release, const std::string& revision = "4") {
  auto o = observed(release);
  o.promotedRelease = "gpt2-v8";
  o.modelRevision = revision;
  return o;
}

TEST(ReleasePlan, ManualRollbackRestoresAPromotedReleaseWithoutAnyGate) {
  json release = supersededRelease();
  // No request: a superseded release stays where it is.
  auto plan = planRelease(atRevision(release));
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Superseded");

  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  auto request = atRevision(release);
  request.serving = servingOf("gpt2-v8", 1);
  plan = planRelease(request);
  ASSERT_TRUE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.modelRollback->from, "gpt2-v8");
  EXPECT_EQ(plan.modelRollback->by, "alice");
  EXPECT_EQ(plan.modelRollback->revision, "4");
  EXPECT_EQ(plan.status["phase"], "Promoted");
  // Not Ready before the stable Deployment runs it with N Ready pods.
  EXPECT_EQ(condition(plan, "Ready"), "False");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "ManualRollback");
  EXPECT_NE(condition(plan, "Ready", "message").find("waiting for 1 Ready stable pods on its pair"),
            std::string::npos)
      << condition(plan, "Ready", "message");
  EXPECT_EQ(condition(plan, "Reconciling"), "True");
  EXPECT_EQ(plan.status["rollback"]["from"], "gpt2-v8");
  EXPECT_EQ(plan.status["rollback"]["requestedBy"], "alice");
  EXPECT_TRUE(plan.jobsToCreate.empty());  // no gate runs again
  EXPECT_FALSE(plan.prod.has_value());
  EXPECT_TRUE(hasEvent(plan, "ManualRollback", "alice"));

  // Once the anchor moved on (the shell bumped the revision and names this
  // release), the request is spent: the release stays Promoted, nothing replays.
  auto after = atRevision(applied(release, plan), "5");
  after.promotedRelease = "gpt2-v7";
  after.serving = servingOf("gpt2-v7", 1);
  auto again = planRelease(after);
  EXPECT_FALSE(again.modelRollback.has_value());
  EXPECT_EQ(again.status["phase"], "Promoted");
  EXPECT_EQ(condition(again, "Ready"), "True");
  EXPECT_EQ(condition(again, "Ready", "reason"), "ManualRollback");
  EXPECT_NE(condition(again, "Ready", "message")
                .find("prod runs this release again: model \"gpt2\" rolled back from "
                      "\"gpt2-v8\" by alice (1/1 stable pods Ready)"),
            std::string::npos)
      << condition(again, "Ready", "message");
  after.release = applied(after.release, again);
  EXPECT_FALSE(planRelease(after).statusChanged);

  // Later superseded again, the old annotation (revision 4) never fires by itself.
  auto later = atRevision(applied(release, plan), "6");
  json laterRelease = applied(release, plan);
  laterRelease["status"]["phase"] = "Superseded";
  later.release = laterRelease;
  EXPECT_FALSE(planRelease(later).modelRollback.has_value());
  EXPECT_EQ(planRelease(later).status["phase"], "Superseded");
}

// The same request asked on the Model (the shell found this release its
// target: modelRollbackBy): the same rollback, recorded as that user's; a
// status write lost after the Model moved is re-derived from the Model's spent
// request.
TEST(ReleasePlan, ARollbackAskedOnTheModelIsTheSameRollback) {
  json release = supersededRelease();
  auto request = atRevision(release);
  request.serving = servingOf("gpt2-v8", 1);
  request.modelRollbackBy = "alice";
  auto plan = planRelease(request);
  ASSERT_TRUE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.modelRollback->from, "gpt2-v8");
  EXPECT_EQ(plan.modelRollback->by, "alice");
  EXPECT_EQ(plan.modelRollback->revision, "4");
  EXPECT_EQ(plan.status["phase"], "Promoted");
  EXPECT_EQ(plan.status["rollback"]["requestedBy"], "alice");
  EXPECT_TRUE(hasEvent(plan, "ManualRollback", "alice"));

  // Crash after the Model moved, before the status write: the Model names this
  // release as prod at revision 5 with a Rollback entry from v8.
  auto after = atRevision(release, "5");
  after.promotedRelease = "gpt2-v7";
  after.rollbackFrom = "gpt2-v8";
  after.spentModelRollbackBy = "alice";
  after.serving = servingOf("gpt2-v7", 1);
  auto healed = planRelease(after);
  EXPECT_FALSE(healed.modelRollback.has_value()) << "the Model moved already";
  EXPECT_EQ(healed.status["phase"], "Promoted");
  EXPECT_EQ(healed.status["rollback"]["requestedBy"], "alice");
  EXPECT_EQ(healed.status["rollback"]["revision"], "4");
}

TEST(ReleasePlan, ManualRollbackIsRefusedOnAStaleRuntimeOrDuringACanary) {
  json release = supersededRelease();
  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  auto o = atRevision(release);
  o.runtimeEnv = runtimeEnv("sha256:" + std::string(64, 'f'));
  auto plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Superseded");
  EXPECT_NE(plan.status["rollback"].value("refused", "").find("now resolves to sha256:fff"),
            std::string::npos)
      << plan.status["rollback"];
  EXPECT_TRUE(hasEvent(plan, "RollbackRefused", "validated on"));
  // The refusal is said once, not on every reconcile.
  auto again = o;
  again.release = applied(release, plan);
  EXPECT_FALSE(hasEvent(planRelease(again), "RollbackRefused"));

  o = atRevision(release);
  o.canaryRelease = "gpt2-v9";
  plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_NE(plan.status["rollback"].value("refused", "").find("gpt2-v9"), std::string::npos);

  // A release never promoted cannot be rolled back to.
  json never = supersededRelease();
  never["status"]["canary"]["phase"] = "RolledBack";
  never["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  EXPECT_FALSE(planRelease(atRevision(never)).modelRollback.has_value());

  // An unreadable status.canary cannot tell: the request is refused with the
  // decoder's error naming the member, not ignored.
  json unreadable = supersededRelease();
  unreadable["status"]["canary"]["passedSteps"] = json::array({{{"weight", 50}}});
  plan = planRelease(atRevision(unreadable));
  EXPECT_FALSE(plan.status.contains("rollback")) << "no request, nothing said";
  EXPECT_EQ(plan.status["phase"], "Superseded");
  unreadable["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  plan = planRelease(atRevision(unreadable));
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Superseded");
  EXPECT_EQ(plan.status["rollback"].value("refused", ""),
            "status.canary cannot be read (status.canary.passedSteps[0].step: is required): "
            "whether prod ran this release is unknown; repair the status first");
  EXPECT_TRUE(hasEvent(plan, "RollbackRefused", "status.canary.passedSteps[0].step"));
}

// Issue 28: "the operator never trusts a status field that it cannot re-derive". A
// release whose status.canary says Promoted (forged, or restored from a backup) but that
// the Model's record never put in prod is refused as a rollback target.
TEST(ReleasePlan, ManualRollbackToAReleaseTheModelNeverRecordedIsRefused) {
  json release = supersededRelease();
  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  auto o = atRevision(release);
  ASSERT_TRUE(planRelease(o).modelRollback.has_value()) << "recorded: the rollback goes ahead";
  o.modelRecordsProdRan = false;
  auto plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Superseded");
  EXPECT_NE(plan.status["rollback"].value("refused", "").find("does not show that prod ran"),
            std::string::npos)
      << plan.status["rollback"];
  EXPECT_TRUE(hasEvent(plan, "RollbackRefused", "status.canary alone"));
}

TEST(ReleasePlan, AWindowWithRollbacksDenyRefusesAManualRollback) {
  json release = supersededRelease();
  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  auto o = atRevision(release);
  ClosedWindow closed;
  closed.rollbacksAllowed = false;
  closed.message = "closed by Deny window \"audit\" (spec.changeWindows[1])";
  o.window = closed;
  auto plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_NE(plan.status["rollback"]
                .value("refused", "")
                .find("the model's change window refuses manual rollbacks now (rollbacks: Deny)"),
            std::string::npos)
      << plan.status["rollback"];
  // A window that allows rollbacks lets it run.
  o.window->rollbacksAllowed = true;
  EXPECT_TRUE(planRelease(o).modelRollback.has_value());
}

TEST(ReleasePlan, ReleaseTheAnchorNamesAgainIsPromotedAgain) {
  // A rollback whose status write was lost: the anchor already names this release.
  json release = supersededRelease();
  auto o = atRevision(release, "5");
  o.promotedRelease = release["metadata"]["name"];
  o.serving = servingOf(release["metadata"]["name"], 1);
  auto plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Promoted");
  EXPECT_EQ(condition(plan, "Ready"), "True");
  EXPECT_FALSE(plan.status.contains("rollback")) << "no request on record: nothing to re-derive";

  // The request (made at revision 4) and the anchor's history entry re-derive
  // the record the lost write carried; the request never runs again.
  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  o = atRevision(release, "5");
  o.promotedRelease = release["metadata"]["name"];
  o.rollbackFrom = "gpt2-v8";
  plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Promoted");
  EXPECT_EQ(plan.status["rollback"]["from"], "gpt2-v8") << plan.status.dump(2);
  EXPECT_EQ(plan.status["rollback"]["requestedBy"], "alice");
  EXPECT_EQ(plan.status["rollback"]["revision"], "4");
}

// Issue 20: a manual rollback is Ready only once stable has N Ready pods of
// the target on its pair (not at the request, not on another pair's pods).
TEST(ReleasePlan, ManualRollbackIsReadyOnlyWithNReadyStablePodsOnItsPair) {
  json release = supersededRelease();
  release["spec"]["stages"][1]["serving"]["replicas"] = 3;
  // From its earlier time in prod.
  release["status"]["conditions"].push_back({{"type", "Degraded"},
                                             {"status", "False"},
                                             {"reason", "StablePodsReady"},
                                             {"message", "3/3 stable pods Ready"}});
  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  auto o = atRevision(release);
  o.serving = servingOf("gpt2-v8", 3);  // prod still runs the release it rolls back from
  auto asked = planRelease(o);
  ASSERT_TRUE(asked.modelRollback.has_value());
  EXPECT_EQ(condition(asked, "Ready"), "False");
  EXPECT_EQ(condition(asked, "Degraded"), "") << "cleared: prod starts again under it";
  EXPECT_NE(condition(asked, "Ready", "message").find("the stable Deployment runs gpt2-v8"),
            std::string::npos)
      << condition(asked, "Ready", "message");
  EXPECT_GT(asked.requeueAfterSeconds, 0);

  auto later = atRevision(applied(release, asked), "5");
  later.promotedRelease = "gpt2-v7";
  auto at = [&](ServingObserved s) {
    later.serving = std::move(s);
    return planRelease(later);
  };
  // Two of three Ready, a third Ready on another closure hash, a fourth Terminating.
  ServingObserved mixed = servingOf("gpt2-v7", 2, 2);
  mixed.pods.push_back(
      std::make_shared<const kube::Object>(stablePod("gpt2-v7", 7, true, kOtherHash)));
  json terminating = stablePod("gpt2-v7", 8);
  terminating["metadata"]["deletionTimestamp"] = kNow;
  mixed.pods.push_back(std::make_shared<const kube::Object>(terminating));
  auto p = at(mixed);
  EXPECT_EQ(p.status["phase"], "Promoted");
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Ready", "reason"), "ManualRollback");
  EXPECT_NE(condition(p, "Ready", "message").find("(2/3 stable pods Ready)"), std::string::npos)
      << condition(p, "Ready", "message");
  EXPECT_EQ(condition(p, "Degraded"), "") << "no Degraded before prod first served it";
  p = at(servingOf("gpt2-v7", 3));
  EXPECT_EQ(condition(p, "Ready"), "True");
  EXPECT_EQ(condition(p, "Ready", "reason"), "ManualRollback");
  EXPECT_EQ(condition(p, "Reconciling"), "False");
  EXPECT_EQ(condition(p, "Degraded"), "False");
}

// Issue 28 (must-show 4): a manual rollback keeps the Model's replicas (N is
// the Model's, not the target's serving.replicas), and one that has not got N
// Ready stable pods within the Model's spec.rollbackDeadlineSeconds fails
// clearly (Ready=False and Stalled=True, RollbackDeadlineExceeded, one Warning),
// then is Ready once the pods are.
TEST(ReleasePlan, ManualRollbackCountsTheModelsReplicasAndFailsPastItsDeadline) {
  json release = supersededRelease();  // written with serving.replicas 1
  release["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  auto o = atRevision(release);
  o.rollbackDeadlineSeconds = 120;
  o.serving = servingOf("gpt2-v8", 3);
  o.serving->modelReplicas = 3;
  auto asked = planRelease(o);
  ASSERT_TRUE(asked.modelRollback.has_value());
  EXPECT_EQ(asked.status["rollback"]["at"], kNow);

  auto later = atRevision(applied(release, asked), "5");
  later.promotedRelease = "gpt2-v7";
  later.rollbackDeadlineSeconds = 120;
  auto at = [&](int64_t secondsAfter, int ready) {
    later.nowUnix = kNowUnix + secondsAfter;
    later.now = formatRfc3339(later.nowUnix);
    later.serving = servingOf("gpt2-v7", ready, 3);
    later.serving->modelReplicas = 3;
    ReleasePlan p = planRelease(later);
    later.release = applied(later.release, p);
    return p;
  };
  // One Ready pod of the target is enough for the release's own 1, not for the Model's 3.
  auto p = at(60, 1);
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Ready", "reason"), "ManualRollback");
  EXPECT_NE(condition(p, "Ready", "message").find("waiting for 3 Ready stable pods"),
            std::string::npos)
      << condition(p, "Ready", "message");
  EXPECT_EQ(condition(p, "Stalled"), "False");
  EXPECT_GT(p.requeueAfterSeconds, 0);
  EXPECT_LE(p.requeueAfterSeconds, 5);
  EXPECT_FALSE(hasEvent(p, "RollbackDeadlineExceeded"));

  // Past the deadline: failed, said once.
  p = at(121, 2);
  EXPECT_EQ(p.status["phase"], "Promoted");
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Ready", "reason"), "RollbackDeadlineExceeded");
  EXPECT_EQ(condition(p, "Stalled"), "True");
  EXPECT_EQ(condition(p, "Stalled", "reason"), "RollbackDeadlineExceeded");
  EXPECT_NE(condition(p, "Ready", "message")
                .find("did not complete within 120s (the Model's spec.rollbackDeadlineSeconds): "
                      "waiting for 3 Ready stable pods on its pair (2/3 stable pods Ready)"),
            std::string::npos)
      << condition(p, "Ready", "message");
  EXPECT_TRUE(hasEvent(p, "RollbackDeadlineExceeded", "did not complete within 120s"));
  EXPECT_EQ(condition(p, "Degraded"), "") << "no Degraded before prod first served it";
  p = at(150, 2);
  EXPECT_FALSE(hasEvent(p, "RollbackDeadlineExceeded")) << "said once";
  EXPECT_EQ(condition(p, "Ready", "reason"), "RollbackDeadlineExceeded");
  EXPECT_GT(p.requeueAfterSeconds, 0);

  // The pods come after all: Ready, no longer Stalled.
  p = at(200, 3);
  EXPECT_EQ(condition(p, "Ready"), "True");
  EXPECT_EQ(condition(p, "Ready", "reason"), "ManualRollback");
  EXPECT_EQ(condition(p, "Stalled"), "False");
  EXPECT_EQ(condition(p, "Reconciling"), "False");
  EXPECT_EQ(condition(p, "Degraded"), "False");
}

// A release prod runs: Promoted, `replicas` serving replicas, Ready.
json promotedServingRelease(int replicas) {
  json release = ReleaseBuilder().serving("prod").build();
  release["spec"]["stages"][0]["serving"]["replicas"] = replicas;
  release["status"] = {{"phase", "Promoted"},
                       {"canary", {{"phase", "Promoted"}}},
                       {"stages", json::array({{{"name", "prod"}, {"phase", "Succeeded"}}})},
                       {"conditions", json::array({{{"type", "Ready"},
                                                    {"status", "True"},
                                                    {"reason", "Promoted"},
                                                    {"message", "prod runs it"}}})}};
  return release;
}

// A canary of another release moves prod's pods from stable to itself on
// purpose (the surge rule keeps N Ready between the tracks): the Promoted
// release is not Degraded for it, says so once, and its status does not move
// with each step; a pod down is still prod short. Before, each step of every
// canary turned the serving release Degraded with a Warning Event and rewrote
// its status (7 writes a canary in the bench's audit log).
TEST(ReleasePlan, APromotedReleaseSharesProdWithAnotherReleasesCanaryWithoutBeingDegraded) {
  json release = promotedServingRelease(4);
  auto o = observed(release);
  o.promotedRelease = "gpt2-v7";
  // Stable on gpt2-v7 with `stable` Ready pods of `stableSpec`, and the canary
  // of gpt2-v8 with `canary` pods, `canaryReady` of them Ready.
  auto shared = [](int stable, int stableSpec, int canary, int canaryReady) {
    ServingObserved s = servingOf("gpt2-v7", stable, stableSpec);
    s.canaryRelease = "gpt2-v8";
    for (int i = 0; i < canary; ++i) {
      json pod = stablePod("gpt2-v8", 10 + i, i < canaryReady, "sha256:other");
      pod["metadata"]["labels"]["lockstep.dev/track"] = "canary";
      pod["metadata"]["name"] = "gpt2-canary-" + std::to_string(i);
      s.pods.push_back(std::make_shared<const kube::Object>(std::move(pod)));
    }
    return s;
  };
  auto step = [&](ServingObserved s) { return planWithServing(o, std::move(s)); };
  auto p = step(servingOf("gpt2-v7", 4));
  EXPECT_EQ(condition(p, "Degraded", "message"), "4/4 stable pods Ready");

  // The canary starts: one status write that says prod is shared.
  p = step(shared(4, 4, 1, 0));
  EXPECT_TRUE(p.statusChanged);
  EXPECT_EQ(condition(p, "Degraded"), "False");
  EXPECT_EQ(condition(p, "Degraded", "message"),
            "4/4 pods Ready (stable, and the canary of gpt2-v8)");
  EXPECT_TRUE(p.events.empty());
  // Its steps: a surge pod, stable shrinking while the canary grows, a stable
  // pod terminating: Ready, no write, no Event.
  for (const ServingObserved& s :
       {shared(4, 4, 1, 1), shared(3, 3, 1, 1), shared(3, 3, 2, 1), shared(2, 2, 2, 2),
        shared(2, 2, 3, 3), shared(1, 1, 3, 3), shared(0, 0, 4, 4)}) {
    p = step(s);
    EXPECT_EQ(condition(p, "Ready"), "True") << condition(p, "Ready", "message");
    EXPECT_EQ(condition(p, "Degraded"), "False");
    EXPECT_FALSE(p.statusChanged) << condition(p, "Degraded", "message");
    EXPECT_TRUE(p.events.empty());
  }
  // A pod down with the canary on: prod is short, and says so.
  p = step(shared(2, 2, 2, 1));
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Degraded"), "True");
  EXPECT_EQ(condition(p, "Degraded", "message"),
            "3/4 pods Ready (stable, and the canary of gpt2-v8)");
  EXPECT_TRUE(hasEvent(p, "ProdShortOfReadyPods", "3/4 pods Ready"));
  // The canary's own pods count, not another release's or a terminating one.
  ServingObserved foreign = shared(2, 2, 2, 2);
  {
    json pod = *foreign.pods.back();
    pod["metadata"]["deletionTimestamp"] = "2026-12-06T00:00:00Z";
    foreign.pods.back() = std::make_shared<const kube::Object>(std::move(pod));
    json other = *foreign.pods[2];
    other["metadata"]["labels"]["lockstep.dev/release"] = "gpt2-v9";
    foreign.pods[2] = std::make_shared<const kube::Object>(std::move(other));
  }
  p = step(foreign);
  EXPECT_EQ(condition(p, "Degraded"), "True");
  EXPECT_EQ(condition(p, "Degraded", "message"),
            "2/4 pods Ready (stable, and the canary of gpt2-v8)");

  // The canary rolled back, the slot free: stable alone again.
  p = step(servingOf("gpt2-v7", 4));
  EXPECT_EQ(condition(p, "Degraded"), "False");
  EXPECT_EQ(condition(p, "Degraded", "message"), "4/4 stable pods Ready");
  EXPECT_TRUE(hasEvent(p, "StablePodsReady", "recovered: 4/4 stable pods Ready"));
}

// Issue 20: a Promoted release keeps being observed. Ready follows the stable
// Deployment; Degraded says when prod is short of Ready pods, with an Event
// on each change; only the release the anchor names as promoted.
TEST(ReleasePlan, APromotedReleasesReadyFollowsTheStableDeployment) {
  json release = promotedServingRelease(3);
  auto o = observed(release);
  o.promotedRelease = "gpt2-v7";
  auto step = [&](ServingObserved s) { return planWithServing(o, std::move(s)); };
  auto p = step(servingOf("gpt2-v7", 3));
  EXPECT_EQ(condition(p, "Ready"), "True");
  EXPECT_EQ(condition(p, "Ready", "message"), "prod runs it") << "a healthy prod keeps it";
  EXPECT_EQ(condition(p, "Degraded"), "False");
  EXPECT_EQ(condition(p, "Degraded", "reason"), "StablePodsReady");
  EXPECT_TRUE(p.events.empty());

  p = step(servingOf("gpt2-v7", 1, 3));
  EXPECT_EQ(p.status["phase"], "Promoted");
  EXPECT_EQ(condition(p, "Ready"), "False");
  EXPECT_EQ(condition(p, "Ready", "reason"), "ProdShortOfReadyPods");
  EXPECT_EQ(condition(p, "Degraded"), "True");
  EXPECT_EQ(condition(p, "Degraded", "reason"), "ProdShortOfReadyPods");
  EXPECT_EQ(condition(p, "Degraded", "message"), "1/3 stable pods Ready");
  EXPECT_TRUE(hasEvent(p, "ProdShortOfReadyPods", "1/3 stable pods Ready"));
  EXPECT_GT(p.requeueAfterSeconds, 0);
  p = step(servingOf("gpt2-v7", 2, 3));
  EXPECT_EQ(condition(p, "Degraded", "message"), "2/3 stable pods Ready");
  EXPECT_FALSE(hasEvent(p, "ProdShortOfReadyPods")) << "said once";

  // A stable pod re-created on a node where its onStart check fails
  // (spec.verify.onStart): Degraded names the pod and the check's report.
  ServingObserved failing = servingOf("gpt2-v7", 2, 3);
  json failingPod = *failing.pods[2];
  failingPod["status"]["initContainerStatuses"] =
      json::array({{{"name", "verify-host"},
                    {"restartCount", 2},
                    {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
                    {"lastState",
                     {{"terminated",
                       {{"exitCode", 1},
                        {"reason", "Error"},
                        {"message", "driver 535 < 570 (CUDA 12.8)"}}}}}}});
  failing.pods[2] = std::make_shared<const kube::Object>(std::move(failingPod));
  p = step(failing);
  EXPECT_EQ(condition(p, "Degraded"), "True");
  const std::string degraded = condition(p, "Degraded", "message");
  EXPECT_NE(degraded.find("2/3 stable pods Ready; stable pod "), std::string::npos) << degraded;
  EXPECT_NE(degraded.find("runtime verification failed: verify-host exited 1: driver 535 < 570"),
            std::string::npos)
      << degraded;
  p = step(servingOf("gpt2-v7", 2, 3));
  EXPECT_EQ(condition(p, "Degraded", "message"), "2/3 stable pods Ready");

  p = step(servingOf("gpt2-v7", 3));
  EXPECT_EQ(condition(p, "Ready"), "True");
  EXPECT_EQ(condition(p, "Ready", "reason"), "Promoted");
  EXPECT_EQ(condition(p, "Degraded"), "False");
  EXPECT_TRUE(hasEvent(p, "StablePodsReady", "recovered: 3/3 stable pods Ready"));

  // Superseded (the anchor names another) or RolledBack: not observed.
  o.promotedRelease = "gpt2-v8";
  p = step(servingOf("gpt2-v8", 0, 3));
  EXPECT_EQ(p.status["phase"], "Superseded");
  EXPECT_FALSE(hasEvent(p, "ProdShortOfReadyPods"));
  EXPECT_EQ(condition(p, "Degraded"), "") << "prod is another release's now";
  json rolledBack = release;
  rolledBack["status"]["phase"] = "RolledBack";
  auto rb = observed(rolledBack);
  rb.promotedRelease = "gpt2-v7";
  rb.serving = servingOf("gpt2-v7", 0, 3);
  p = planRelease(rb);
  EXPECT_EQ(condition(p, "Degraded"), "");
  EXPECT_EQ(condition(p, "Ready"), "True") << "its conditions stay as they were";
}

TEST(ReleasePlan, InvalidTimeoutIsAnInvalidSpec) {
  auto plan = planRelease(observed(ReleaseBuilder().gate("eval", json::array(), "soon").build()));
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "InvalidSpec");
  EXPECT_NE(condition(plan, "Stalled", "message").find("spec.stages[0].gate.timeout \"soon\""),
            std::string::npos);
}

// ---- a simulated world with a restart at every step ---------------------------------------

// Holds the API server's state; `reconcile` is one controller pass that may
// "crash" after creating Jobs and before writing status.
struct World {
  json release;
  std::vector<json> jobs;
  std::vector<json> pods;
  int creates = 0;
  int uid = 0;

  void reconcile(bool crashBeforeStatus) {
    auto o = observed(release);
    o.jobs = jobs;
    o.pods = pods;
    ReleasePlan p = planRelease(o);
    for (const json& j : p.jobsToCreate) {
      bool exists = false;
      for (const json& have : jobs)
        exists = exists || have["metadata"]["name"] == j["metadata"]["name"];
      if (exists) continue;  // AlreadyExists: done
      ++creates;
      jobs.push_back(withUid(j, "uid-" + std::to_string(++uid)));
    }
    if (crashBeforeStatus) return;
    if (p.statusChanged) release["status"] = p.status;
  }
  // The Job controller and KWOK: every running Job completes with `message`.
  void runJobs(const std::map<std::string, std::string>& messages) {
    for (json& j : jobs) {
      if (j["status"].contains("conditions")) continue;
      std::string stage = j["metadata"]["labels"]["lockstep.dev/stage"];
      j = finished(j, "Complete");
      pods.push_back(podOf(j, "Succeeded", messages.count(stage) ? messages.at(stage) : ""));
    }
  }
  std::string phase() const {
    return release.contains("status") ? release["status"].value("phase", "") : "";
  }
};

TEST(ReleasePlan, RestartAtEveryStepReachesTheSameEndWithOneJobPerStage) {
  json spec = ReleaseBuilder()
                  .gate("eval", json::array({metric("accuracy", 0.8)}))
                  .gate("ci")
                  .manual()
                  .gate("bench")
                  .build();
  const std::map<std::string, std::string> messages = {{"eval", R"({"accuracy":0.9})"}};

  // Uninterrupted run.
  World clean;
  clean.release = spec;
  for (int i = 0; i < 20 && clean.phase() != "Validated"; ++i) {
    clean.reconcile(false);
    clean.runJobs(messages);
    if (clean.phase() == "Testing" && !clean.release["metadata"].contains("annotations"))
      clean.release["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "alice";
  }
  ASSERT_EQ(clean.phase(), "Validated");
  EXPECT_EQ(clean.creates, 3);

  // Every step is followed by a crash (Jobs created, status lost) and a fresh operator.
  for (int crashAt = 0; crashAt < 8; ++crashAt) {
    SCOPED_TRACE("crash at step " + std::to_string(crashAt));
    World w;
    w.release = spec;
    for (int i = 0; i < 30 && w.phase() != "Validated"; ++i) {
      w.reconcile(i == crashAt);
      w.reconcile(false);  // the restarted operator
      if (i % 2 == 0) w.runJobs(messages);
      if (w.phase() == "Testing" && !w.release["metadata"].contains("annotations"))
        w.release["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "alice";
    }
    EXPECT_EQ(w.phase(), "Validated");
    EXPECT_EQ(w.creates, 3) << "a stage ran twice or was skipped";
    for (const char* s : {"eval", "ci", "bench"}) {
      const json* st = nullptr;
      for (const json& x : w.release["status"]["stages"])
        if (x["name"] == s) st = &x;
      ASSERT_NE(st, nullptr);
      EXPECT_EQ((*st)["phase"], "Succeeded") << s;
    }
    // A final re-plan changes nothing (the terminal state is stable).
    auto o = observed(w.release);
    o.jobs = w.jobs;
    o.pods = w.pods;
    auto last = planRelease(o);
    EXPECT_FALSE(last.statusChanged);
    EXPECT_TRUE(last.jobsToCreate.empty());
  }
}

TEST(ReleasePlan, TerminalReleaseIgnoresReapplyAndLateApprovals) {
  json release =
      ReleaseBuilder().gate("eval", json::array({metric("accuracy", 0.8)})).gate("ci").build();
  auto first = planRelease(observed(release));
  json job = finished(jobFor(first), "Complete");
  auto o = observed(applied(release, first));
  o.jobs = {job};
  o.pods = {podOf(job, "Succeeded", R"({"accuracy":0.1})")};
  auto failed = planRelease(o);
  ASSERT_EQ(failed.status["phase"], "Failed");
  json again = applied(release, failed);
  again["metadata"]["annotations"]["approve.lockstep.dev/ci"] = "alice";
  again["metadata"]["generation"] = 2;  // a GitOps re-apply with an edit
  auto o2 = observed(again);
  o2.jobs = o.jobs;
  o2.pods = o.pods;
  auto plan = planRelease(o2);
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(plan.status["observedGeneration"], 2);
}

// ---- approvals you can trust with prod (issue 20) -------------------------------------------

// Runs eval to success and returns the plan that follows it, with `annotations`.
ReleasePlan afterEval(json release, const std::map<std::string, std::string>& annotations) {
  json eval = finished(jobFor(planRelease(observed(release))), "Complete");
  json next = applied(release, planRelease(observed(release)));
  for (const auto& [k, v] : annotations) next["metadata"]["annotations"][k] = v;
  auto o = observed(next);
  o.jobs = {eval};
  o.pods = {podOf(eval, "Succeeded", "")};
  return planRelease(o);
}

TEST(ReleasePlan, ManualServingStageWaitsBeforeTheCanaryStarts) {
  json release = ReleaseBuilder()
                     .gate("eval")
                     .serving("prod")
                     .manual()
                     .annotate("lockstep.dev/created-by", "carol")
                     .build();
  auto waiting = afterEval(release, {});
  EXPECT_EQ(stage(waiting, "eval")["phase"], "Succeeded");
  EXPECT_EQ(stage(waiting, "prod")["phase"], "WaitingForApproval");
  EXPECT_FALSE(waiting.prod.has_value()) << "no canary before the approval";
  EXPECT_EQ(waiting.status["phase"], "Testing");
  EXPECT_EQ(condition(waiting, "Ready", "reason"), "WaitingForApproval");
  EXPECT_TRUE(hasEvent(waiting, "WaitingForApproval", "\"prod\""));
  // The creator's own approval does not count.
  auto self = afterEval(release, {{"approve.lockstep.dev/prod", "carol"}});
  EXPECT_FALSE(self.prod.has_value());
  EXPECT_NE(condition(self, "Ready", "message").find("creator \"carol\" cannot approve it"),
            std::string::npos)
      << condition(self, "Ready", "message");
  auto go = afterEval(release, {{"approve.lockstep.dev/prod", "bob"}});
  ASSERT_TRUE(go.prod.has_value());
  EXPECT_EQ(go.prod->stage, "prod");
  EXPECT_EQ(stage(go, "prod")["approvedBy"], "bob");
  EXPECT_EQ(stage(go, "prod")["approvedGeneration"], 1);
  EXPECT_TRUE(hasEvent(go, "StageApproved", "bob"));
  // Aborted while waiting: failed, the canary never starts.
  auto aborted = afterEval(release, {{"lockstep.dev/abort", "bob"}});
  EXPECT_FALSE(aborted.prod.has_value());
  EXPECT_EQ(aborted.status["phase"], "Failed");
}

TEST(ReleasePlan, CreatorNeverApprovesAndMinApproversCountsDistinctUsers) {
  json release =
      ReleaseBuilder().gate("eval").gate("ci").annotate("lockstep.dev/created-by", "carol").build();
  release["spec"]["stages"][1]["approval"] = {{"policy", "Manual"}, {"minApprovers", 2}};
  const std::vector<std::pair<std::map<std::string, std::string>, bool>> rows = {
      {{{"approve.lockstep.dev/ci", "alice"}}, false},
      {{{"approve.lockstep.dev/ci", "alice"}, {"approve.lockstep.dev/ci.2", "alice"}}, false},
      {{{"approve.lockstep.dev/ci", "alice"}, {"approve.lockstep.dev/ci.2", "carol"}}, false},
      {{{"approve.lockstep.dev/ci", "alice"}, {"approve.lockstep.dev/ci.2", "bob"}}, true},
  };
  for (const auto& [annotations, starts] : rows) {
    std::string what;
    for (const auto& [k, v] : annotations) what += k + "=" + v + " ";
    SCOPED_TRACE(what);
    auto p = afterEval(release, annotations);
    if (!starts) {
      EXPECT_TRUE(p.jobsToCreate.empty());
      EXPECT_EQ(stage(p, "ci")["phase"], "WaitingForApproval");
      EXPECT_NE(condition(p, "Ready", "message").find("of 2 distinct approver(s)"),
                std::string::npos)
          << condition(p, "Ready", "message");
      continue;
    }
    ASSERT_EQ(p.jobsToCreate.size(), 1u);
    EXPECT_EQ(stage(p, "ci")["approvers"], json::array({"alice", "bob"}));
    EXPECT_EQ(stage(p, "ci")["approvedBy"], "alice, bob");
  }
  // allowSelfApproval lets the creator count.
  release["spec"]["stages"][1]["approval"] = {{"policy", "Manual"}, {"allowSelfApproval", true}};
  EXPECT_EQ(afterEval(release, {{"approve.lockstep.dev/ci", "carol"}}).jobsToCreate.size(), 1u);
}

// Issue 29: approvers are people, in the groups the stage names; the status records each
// approver with the groups the API server authenticated them with (the approver-groups
// annotations the mutating webhook wrote), and a ServiceAccount never counts, even when its
// approval got in (the platform allowed it then, and no longer does).
TEST(ReleasePlan, FromGroupsCountsOnlyTheirMembersAndTheStatusKeepsTheirGroups) {
  json release =
      ReleaseBuilder().gate("eval").gate("ci").annotate("lockstep.dev/created-by", "carol").build();
  release["spec"]["stages"][1]["approval"] = {
      {"policy", "Manual"}, {"minApprovers", 2}, {"fromGroups", {"ml-leads"}}};
  const std::string leads = R"(["ml-leads","system:authenticated"])";
  const std::string interns = R"(["interns","system:authenticated"])";
  const std::string bot = "system:serviceaccount:team:approver-bot";
  // dave is not in ml-leads; alice's second approver is a ServiceAccount; bob's approval
  // recorded no groups (written before Lockstep recorded them): none of them count.
  for (const auto& [who, key, value, groups] :
       {std::tuple<std::string, std::string, std::string, std::string>{
            "an outsider", "approve.lockstep.dev/ci.2", "dave", interns},
        {"a ServiceAccount", "approve.lockstep.dev/ci.2", bot, leads},
        {"no groups recorded", "approve.lockstep.dev/ci.2", "bob", ""}}) {
    SCOPED_TRACE(who);
    std::map<std::string, std::string> annotations = {{"approve.lockstep.dev/ci", "alice"},
                                                      {"approver-groups.lockstep.dev/ci", leads},
                                                      {key, value}};
    if (!groups.empty()) annotations["approver-groups.lockstep.dev/ci.2"] = groups;
    auto p = afterEval(release, annotations);
    EXPECT_TRUE(p.jobsToCreate.empty());
    EXPECT_EQ(stage(p, "ci")["phase"], "WaitingForApproval");
    EXPECT_NE(condition(p, "Ready", "message").find("1 of 2 distinct approver(s)"),
              std::string::npos)
        << condition(p, "Ready", "message");
  }
  EXPECT_NE(condition(afterEval(release, {{"approve.lockstep.dev/ci", "alice"},
                                          {"approver-groups.lockstep.dev/ci", leads},
                                          {"approve.lockstep.dev/ci.2", "dave"},
                                          {"approver-groups.lockstep.dev/ci.2", interns}}),
                      "Ready", "message")
                .find("\"dave\" does not count: not in a group the stage takes approvals from "
                      "(fromGroups: \"ml-leads\")"),
            std::string::npos);
  const std::map<std::string, std::string> approved = {
      {"approve.lockstep.dev/ci", "alice"},
      {"approver-groups.lockstep.dev/ci", leads},
      {"approve.lockstep.dev/ci.2", "dave"},
      {"approver-groups.lockstep.dev/ci.2", R"(["ml-leads"])"}};
  auto go = afterEval(release, approved);
  ASSERT_EQ(go.jobsToCreate.size(), 1u);
  EXPECT_EQ(stage(go, "ci")["approvers"], json::array({"alice", "dave"}));
  EXPECT_EQ(stage(go, "ci")["approvals"],
            json::parse(R"([{"user":"alice","groups":["ml-leads","system:authenticated"]},
                            {"user":"dave","groups":["ml-leads"]}])"));
  // The next reconcile (the ci Job running) keeps them: the status is applied whole.
  json withApprovals = release;
  for (const auto& [k, v] : approved) withApprovals["metadata"]["annotations"][k] = v;
  json eval = finished(jobFor(planRelease(observed(release))), "Complete");
  auto o = observed(applied(withApprovals, go));
  o.jobs = {eval, withUid(jobFor(go), "ci-uid")};
  o.pods = {podOf(eval, "Succeeded", "")};
  auto running = planRelease(o);
  EXPECT_EQ(stage(running, "ci")["phase"], "Running") << running.status.dump(2);
  EXPECT_EQ(stage(running, "ci")["approvals"], stage(go, "ci")["approvals"]);
  // Without fromGroups, an approval with no recorded groups counts, recorded without groups.
  release["spec"]["stages"][1]["approval"] = {{"policy", "Manual"}};
  auto plain = afterEval(release, {{"approve.lockstep.dev/ci", "bob"}});
  ASSERT_EQ(plain.jobsToCreate.size(), 1u);
  EXPECT_EQ(stage(plain, "ci")["approvals"], json::parse(R"([{"user":"bob"}])"));
}

// ---- evidence stages (docs/fleet.md) -------------------------------------------------

EvidenceCheckObserved answer(const ReleasePlan& plan, bool passed, const std::string& reason = "",
                             const std::string& message = "") {
  EvidenceCheckObserved a;
  a.key = plan.evidenceCheck->key();
  a.result.passed = passed;
  a.result.reason = reason;
  a.result.message = message;
  if (passed) {
    a.result.statements = {{"eval", "https://slsa.dev/verification_summary/v1",
                            "sha256:" + std::string(64, 'd'), "sha256:" + std::string(64, 'e'),
                            "fleet-key", "sha256:" + std::string(64, 'f')}};
  }
  a.checkedAt = kNow;
  a.retryAfterSeconds = 20;
  return a;
}

TEST(ReleasePlanEvidence, AnEvidenceStageAsksTheRegistryAndStartsNoJob) {
  const json r = ReleaseBuilder().evidence("verified", {"eval", "ci"}).serving("prod").build();
  auto plan = planRelease(observed(r));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  ASSERT_TRUE(plan.evidenceCheck.has_value());
  const evidence::EvidenceRequirement& w = plan.evidenceCheck->requirement;
  EXPECT_EQ(plan.evidenceCheck->stage, "verified");
  EXPECT_EQ(w.stages, (std::vector<std::string>{"eval", "ci"}));
  EXPECT_EQ(w.policyName, "fleet");
  EXPECT_EQ(w.packageName, "registry.example/models/gpt2");
  EXPECT_EQ(w.packageDigest, "sha256:" + std::string(64, 'c'));
  EXPECT_EQ(w.closureHash, kHash);
  EXPECT_EQ(w.runtimeImageDigest, "sha256:" + std::string(64, '1'));
  EXPECT_EQ(stage(plan, "verified")["phase"], "Running");
  EXPECT_EQ(plan.status["phase"], "Evaluating");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "CheckingEvidence");
  EXPECT_FALSE(plan.prod.has_value());
}

TEST(ReleasePlanEvidence, HeldEvidenceKeepsTheStageRunningWithTheReasonAndWarnsOnce) {
  const json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  auto first = planRelease(observed(r));
  ReleaseObserved o = observed(applied(r, first));
  o.evidence = answer(first, false, "EvidenceUntrusted", "stage \"eval\": signed by another key");
  auto held = planRelease(o);
  EXPECT_TRUE(held.jobsToCreate.empty());
  EXPECT_EQ(stage(held, "verified")["phase"], "Running");
  EXPECT_EQ(stage(held, "verified")["reason"], "EvidenceUntrusted");
  EXPECT_EQ(condition(held, "Ready", "reason"), "EvidenceUntrusted");
  EXPECT_NE(condition(held, "Ready", "message").find("signed by another key"), std::string::npos);
  EXPECT_TRUE(hasEvent(held, "EvidenceUntrusted", "signed by another key"));
  EXPECT_EQ(held.requeueAfterSeconds, 20);
  ASSERT_TRUE(held.evidenceCheck.has_value());  // asked again
  EXPECT_FALSE(held.prod.has_value());
  // The same answer again: no second Warning.
  o.release = applied(r, held);
  auto again = planRelease(o);
  EXPECT_FALSE(hasEvent(again, "EvidenceUntrusted"));
  EXPECT_EQ(stage(again, "verified")["startedAt"], kNow);
}

TEST(ReleasePlanEvidence, VerifiedEvidencePassesTheStageAndTheCanaryStarts) {
  const json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  auto first = planRelease(observed(r));
  ReleaseObserved o = observed(applied(r, first));
  o.evidence = answer(first, true, "", "verified 1 statement for stage eval, signed by fleet-key");
  auto plan = planRelease(o);
  EXPECT_TRUE(plan.jobsToCreate.empty());
  const json st = stage(plan, "verified");
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << plan.status.dump();
  EXPECT_EQ(st["evidence"]["trustPolicy"], "fleet");
  EXPECT_EQ(st["evidence"]["closureHash"], kHash);
  EXPECT_EQ(st["evidence"]["statements"][0]["signedBy"], "fleet-key");
  EXPECT_EQ(plan.status["validatedClosureHash"], kHash);
  EXPECT_TRUE(hasEvent(plan, "EvidenceVerified", "signed by fleet-key"));
  ASSERT_TRUE(plan.prod.has_value());
  EXPECT_EQ(plan.prod->stage, "prod");
  EXPECT_EQ(plan.status["phase"], "Canary");
  EXPECT_FALSE(plan.evidenceCheck.has_value());
  // Passed is final: the next pass, without an answer, does not ask again.
  auto later = planRelease(observed(applied(r, plan)));
  EXPECT_FALSE(later.evidenceCheck.has_value());
  EXPECT_EQ(stage(later, "verified")["phase"], "Succeeded");
}

TEST(ReleasePlanEvidence, TheEvidenceControllersAnswerIsReadFromTheStatus) {
  const json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  auto first = planRelease(observed(r));
  // The request is recorded for the evidence controller.
  EXPECT_EQ(stage(first, "verified")["evidenceRequest"]["key"], first.evidenceCheck->key());
  EXPECT_EQ(stage(first, "verified")["evidenceRequest"]["image"], kImage);
  json answered = applied(r, first);
  answered["status"]["evidenceChecks"] = json::array(
      {evidenceAnswerJson("verified", answer(first, false, "EvidenceMissing", "none"))});
  auto held = planRelease(observed(answered));
  EXPECT_EQ(condition(held, "Ready", "reason"), "EvidenceMissing");
  answered["status"]["evidenceChecks"] =
      json::array({evidenceAnswerJson("verified", answer(first, true, "", "ok"))});
  auto plan = planRelease(observed(answered));
  EXPECT_EQ(stage(plan, "verified")["phase"], "Succeeded");
  EXPECT_EQ(stage(plan, "verified")["evidence"]["statements"][0]["signedBy"], "fleet-key");
  ASSERT_TRUE(plan.prod.has_value());
}

TEST(ReleasePlanEvidence, AnAnswerForAnotherRequestIsNotUsed) {
  const json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  auto first = planRelease(observed(r));
  ReleaseObserved o = observed(applied(r, first));
  o.evidence = answer(first, true);
  o.evidence->key = "sha256:" + std::string(64, '0');  // asked for other stages, another pin
  auto plan = planRelease(o);
  EXPECT_EQ(stage(plan, "verified")["phase"], "Running");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "CheckingEvidence");
  EXPECT_FALSE(plan.prod.has_value());
}

TEST(ReleasePlanEvidence, AbortEndsAHeldEvidenceStage) {
  const json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  auto first = planRelease(observed(r));
  json aborted = applied(r, first);
  aborted["metadata"]["annotations"]["lockstep.dev/abort"] = "alice";
  auto plan = planRelease(observed(aborted));
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(stage(plan, "verified")["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "Aborted");
  EXPECT_FALSE(plan.evidenceCheck.has_value());
}

TEST(ReleasePlanEvidence, AStaleRuntimeAsksNothing) {
  const json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  auto plan = planRelease(observed(r, runtimeEnv(kOtherHash)));
  EXPECT_FALSE(plan.evidenceCheck.has_value());
  EXPECT_EQ(condition(plan, "Ready", "reason"), "RuntimeStale");
}

TEST(ReleasePlanEvidence, GatesBeforeAnEvidenceStageRunFirst) {
  const json r =
      ReleaseBuilder().gate("smoke").evidence("verified", {"eval"}).serving("prod").build();
  auto plan = planRelease(observed(r));
  ASSERT_EQ(plan.jobsToCreate.size(), 1u);
  EXPECT_FALSE(plan.evidenceCheck.has_value());
}

// ---- the serving stage of a fleet rollout (docs/fleet.md "The serving side") --------

json fleetRelease() {
  json r = ReleaseBuilder().evidence("verified", {"eval"}).serving("prod").build();
  r["spec"]["stages"][1]["fleet"] = {{"trustPolicy", "hub"}};
  return r;
}

// The release after its evidence stage passed: the next pass reaches prod.
json atProdStage() {
  const json r = fleetRelease();
  auto first = planRelease(observed(r));
  ReleaseObserved o = observed(applied(r, first));
  o.evidence = answer(first, true, "", "verified");
  return applied(r, planRelease(o));
}

FleetCheckObserved fleetAnswer(const json& release, bool permitted, bool aborted = false,
                               const std::string& reason = "", const std::string& message = "") {
  FleetCheckObserved a;
  a.key = fleetCheckRequest(api::v1alpha1::decodeModelRelease(release))->key();
  a.cluster = "b";
  a.result.permitted = permitted;
  a.result.aborted = aborted;
  a.result.concerned = aborted;
  a.result.reason = reason;
  a.result.message = message;
  if (permitted) {
    a.result.permit = evidence::FleetStatementFound{
        "ml/llama-v7", "first", 0, 1796029200, "sha256:" + std::string(64, 'e'), "hub", ""};
  }
  if (aborted) {
    a.result.abort = evidence::FleetStatementFound{"ml/llama-v7",
                                                   "first",
                                                   0,
                                                   1796029300,
                                                   "sha256:" + std::string(64, 'f'),
                                                   "hub",
                                                   "c RolledBack (AnalysisFailed)"};
  }
  a.checkedAt = kNow;
  a.retryAfterSeconds = 15;
  return a;
}

TEST(ReleasePlanFleet, TheCanaryWaitsForItsWavePermitAndRecordsTheRequest) {
  const json r = atProdStage();
  ASSERT_EQ(r["status"]["phase"], "Testing") << r["status"].dump();
  auto plan = planRelease(observed(r));
  EXPECT_FALSE(plan.prod.has_value()) << "no canary without a permit";
  EXPECT_EQ(plan.status["phase"], "Testing");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "WaitingForPermit");
  const json st = stage(plan, "prod");
  EXPECT_EQ(st["fleetRequest"]["trustPolicy"], "hub");
  EXPECT_EQ(st["fleetRequest"]["key"],
            fleetCheckRequest(api::v1alpha1::decodeModelRelease(r))->key());
  // What the evidence controller is asked for once the request is recorded.
  const json asked = applied(r, plan);
  auto pending = pendingFleetRequest(asked);
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->trustPolicy, "hub");
  EXPECT_EQ(pending->stage, "prod");
  EXPECT_FALSE(pendingFleetRequest(fleetRelease()).has_value()) << "not before the planner asked";
}

TEST(ReleasePlanFleet, NoPermitAnUntrustedOneOrNoRegistryStartsNothing) {
  const json r = atProdStage();
  ReleaseObserved o = observed(r);
  o.fleet = fleetAnswer(r, false, false, "WaitingForPermit",
                        "no wave permit signed by a key TrustPolicy \"hub\" trusts names cluster "
                        "\"b\"");
  auto waiting = planRelease(o);
  EXPECT_FALSE(waiting.prod.has_value());
  EXPECT_EQ(condition(waiting, "Ready", "reason"), "WaitingForPermit");
  EXPECT_NE(condition(waiting, "Ready", "message").find("names cluster \"b\""), std::string::npos);
  EXPECT_EQ(waiting.requeueAfterSeconds, 15);
  EXPECT_FALSE(hasEvent(waiting, "WaitingForPermit")) << "waiting is no warning";

  o.fleet = fleetAnswer(r, false, false, "EvidenceUntrusted", "signed by an untrusted key");
  auto untrusted = planRelease(o);
  EXPECT_FALSE(untrusted.prod.has_value());
  EXPECT_EQ(condition(untrusted, "Ready", "reason"), "EvidenceUntrusted");
  EXPECT_TRUE(hasEvent(untrusted, "EvidenceUntrusted", "untrusted key"));

  o.fleet = fleetAnswer(r, false);
  o.fleet->unavailable = "registry.example: connection refused";
  auto down = planRelease(o);
  EXPECT_FALSE(down.prod.has_value());
  EXPECT_EQ(condition(down, "Ready", "reason"), "RegistryUnavailable");
  EXPECT_NE(condition(down, "Ready", "message").find("nothing starts without a permit"),
            std::string::npos);
  EXPECT_NE(down.status["phase"], "Failed");
}

TEST(ReleasePlanFleet, APermitStartsTheCanaryAndIsRecorded) {
  const json r = atProdStage();
  ReleaseObserved o = observed(r);
  o.fleet = fleetAnswer(r, true, false, "",
                        "wave \"first\" of the fleet rollout ml/llama-v7 "
                        "permits cluster \"b\"");
  auto plan = planRelease(o);
  ASSERT_TRUE(plan.prod.has_value());
  EXPECT_EQ(plan.status["phase"], "Canary");
  EXPECT_EQ(stage(plan, "prod")["permit"]["wave"], "first");
  EXPECT_EQ(stage(plan, "prod")["permit"]["signedBy"], "hub");
  EXPECT_TRUE(hasEvent(plan, "WavePermitted", "permits cluster \"b\""));
  // An answer to another request (the policy was edited) is not used.
  json edited = r;
  edited["spec"]["stages"][1]["fleet"]["trustPolicy"] = "other-hub";
  o.release = edited;
  EXPECT_FALSE(planRelease(o).prod.has_value());
}

TEST(ReleasePlanFleet, AnAbortBeforeTheCanaryFailsTheReleaseWithoutAPod) {
  const json r = atProdStage();
  ReleaseObserved o = observed(r);
  o.fleet =
      fleetAnswer(r, false, true, "FleetAborted", "the fleet rollout ml/llama-v7 was aborted");
  auto plan = planRelease(o);
  EXPECT_FALSE(plan.prod.has_value());
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_EQ(stage(plan, "prod")["phase"], "Failed");
  EXPECT_EQ(condition(plan, "Ready", "reason"), "FleetAborted");
  EXPECT_EQ(condition(plan, "Stalled", "reason"), "FleetAborted");
  EXPECT_TRUE(hasEvent(plan, "FleetAborted", "was aborted"));
  EXPECT_FALSE(pendingFleetRequest(applied(r, plan)).has_value()) << "final";
}

// The answer as the evidence controller writes it into the release's status.
json withAnswer(json release, const FleetCheckObserved& a) {
  release["status"]["evidenceChecks"] = json::array({fleetAnswerJson("prod", a)});
  return release;
}

TEST(ReleasePlanFleet, TheEvidenceControllerKeepsAnsweringUntilSettledOrAborted) {
  json r = atProdStage();
  r = applied(r, planRelease(observed(r)));  // asked
  ASSERT_TRUE(pendingFleetRequest(r).has_value());
  json promoted = withAnswer(r, fleetAnswer(r, true));
  promoted["status"]["phase"] = "Promoted";
  EXPECT_TRUE(pendingFleetRequest(promoted).has_value()) << "an abort may still come";
  FleetCheckObserved settled = fleetAnswer(r, true);
  settled.result.settled = true;
  EXPECT_FALSE(pendingFleetRequest(withAnswer(promoted, settled)).has_value());
  EXPECT_FALSE(pendingFleetRequest(withAnswer(promoted, fleetAnswer(r, true, true))).has_value());
  // The registry down is no answer: asked again.
  FleetCheckObserved down = fleetAnswer(r, false);
  down.unavailable = "connection refused";
  settled.unavailable = "";
  EXPECT_TRUE(pendingFleetRequest(withAnswer(promoted, down)).has_value());
  json rolledBack = promoted;
  rolledBack["status"]["phase"] = "RolledBack";
  EXPECT_FALSE(pendingFleetRequest(rolledBack).has_value());
  json deleted = promoted;
  deleted["metadata"]["deletionTimestamp"] = kNow;
  EXPECT_FALSE(pendingFleetRequest(deleted).has_value());
  // The stored answer round-trips.
  auto back = fleetAnswerOf(withAnswer(r, down)["status"], "prod");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->unavailable, "connection refused");
  EXPECT_EQ(back->cluster, "b");
}

TEST(ReleasePlanFleet, AnAbortOfItsWaveTakesProdBackToTheReleaseTheCanaryReplaced) {
  // gpt2-v8 promoted by a fleet canary that replaced gpt2-v7; the abort concerns it.
  json v8 = atProdStage();
  v8["metadata"]["name"] = "gpt2-v8";
  v8 = applied(v8, planRelease(observed(v8)));
  v8 = withAnswer(v8, fleetAnswer(v8, true, true));
  v8["status"]["phase"] = "Promoted";
  v8["status"]["canary"] = {{"phase", "Promoted"}, {"knownGood", {{"release", "gpt2-v7"}}}};
  const auto prod = api::v1alpha1::decodeModelRelease(v8);
  EXPECT_EQ(fleetRollbackBy(prod, "gpt2-v7"), "fleet abort of rollout ml/llama-v7");
  EXPECT_EQ(fleetRollbackBy(prod, "gpt2-v6"), "") << "only the release the canary replaced";
  EXPECT_EQ(
      fleetRollbackBy(api::v1alpha1::decodeModelRelease(withAnswer(v8, fleetAnswer(v8, true))),
                      "gpt2-v7"),
      "")
      << "no abort, no rollback";
  FleetCheckObserved earlierWave = fleetAnswer(v8, true, true);
  earlierWave.result.concerned = false;
  EXPECT_EQ(
      fleetRollbackBy(api::v1alpha1::decodeModelRelease(withAnswer(v8, earlierWave)), "gpt2-v7"),
      "")
      << "a cluster of an earlier, finished wave keeps serving";

  // gpt2-v7, superseded by v8, takes prod back as on a manual rollback.
  json v7 = supersededRelease();
  ASSERT_EQ(v7["metadata"]["name"], "gpt2-v7");
  auto o = atRevision(v7);
  o.fleetRollbackBy = fleetRollbackBy(prod, "gpt2-v7");
  o.serving = servingOf("gpt2-v8", 1);
  auto plan = planRelease(o);
  ASSERT_TRUE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.modelRollback->from, "gpt2-v8");
  EXPECT_EQ(plan.modelRollback->by, "fleet abort of rollout ml/llama-v7");
  EXPECT_EQ(plan.status["phase"], "Promoted");
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_TRUE(hasEvent(plan, "ManualRollback", "fleet abort of rollout ml/llama-v7"));
}

}  // namespace
}  // namespace lockstep::controllers
