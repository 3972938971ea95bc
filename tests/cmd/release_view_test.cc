#include "cmd/lockstep/release_view.h"

#include <gtest/gtest.h>

namespace lockstep::cli {
namespace {

using nlohmann::json;

const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'b');
const std::string kHash = "sha256:" + std::string(64, 'c');
const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, 'a');

// Builder of ModelRelease objects as the API server returns them.
class Release {
 public:
  explicit Release(std::string name = "gpt2-v7") {
    r_ = {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "ModelRelease"},
          {"metadata",
           {{"name", std::move(name)},
            {"namespace", "ml"},
            {"resourceVersion", "7"},
            {"creationTimestamp", "2030-01-01T10:00:00Z"}}},
          {"spec",
           {{"model", "gpt2"},
            {"package", kPackage},
            {"runtimeEnvRef", {{"name", "torch"}}},
            {"closureHash", kHash},
            {"stages", nlohmann::json::array()}}}};
  }
  Release& stage(const std::string& name, bool manual = false) {
    return stage(name, manual ? nlohmann::json("Manual") : nlohmann::json());
  }
  // A stage with `approval` as written ("Manual", {policy: Manual, minApprovers: 2}).
  Release& stage(const std::string& name, nlohmann::json approval) {
    nlohmann::json s = {{"name", name}, {"gate", {{"template", nlohmann::json::object()}}}};
    if (!approval.is_null()) s["approval"] = std::move(approval);
    r_["spec"]["stages"].push_back(s);
    return *this;
  }
  Release& phase(const std::string& p, const std::string& current = "") {
    r_["status"]["phase"] = p;
    if (!current.empty()) r_["status"]["currentStage"] = current;
    return *this;
  }
  Release& stageStatus(nlohmann::json s) {
    r_["status"]["stages"].push_back(std::move(s));
    return *this;
  }
  Release& condition(const std::string& type, const std::string& status, const std::string& reason,
                     const std::string& message) {
    r_["status"]["conditions"].push_back({{"type", type},
                                          {"status", status},
                                          {"reason", reason},
                                          {"message", message},
                                          {"lastTransitionTime", "2030-01-01T10:05:00Z"}});
    return *this;
  }
  Release& annotate(const std::string& k, const std::string& v) {
    r_["metadata"]["annotations"][k] = v;
    return *this;
  }
  nlohmann::json json() const { return r_; }

 private:
  nlohmann::json r_;
};

Release waitingForCi() {
  return Release()
      .stage("eval")
      .stage("ci", true)
      .phase("Testing", "ci")
      .stageStatus({{"name", "eval"},
                    {"phase", "Succeeded"},
                    {"attempt", 1},
                    {"jobName", "gpt2-v7-eval-1"},
                    {"startedAt", "2030-01-01T10:00:05Z"},
                    {"finishedAt", "2030-01-01T10:03:00Z"},
                    {"metrics", {{"accuracy", 0.84}, {"loss", 1.9}}},
                    {"message", "accuracy 0.84 >= 0.82"},
                    {"evidence",
                     {{"package", kPackage},
                      {"closureHash", kHash},
                      {"image", kImage},
                      {"jobUID", "6f1c-uid"}}}})
      .stageStatus({{"name", "ci"}, {"phase", "WaitingForApproval"}})
      .condition("Ready", "False", "WaitingForApproval", "stage ci waits for approval");
}

TEST(RenderTable, AlignsAndFillsEmptyCells) {
  EXPECT_EQ(renderTable({{"A", "LONG HEADER", "C"}, {"xyz", "", "multi\nline"}}),
            "A    LONG HEADER  C\n"
            "xyz  -            multi line\n");
}

TEST(FormatAge, LikeKubectl) {
  kube::Clock::WallTime now;
  ASSERT_TRUE(kube::parseTime("2030-01-03T10:00:00Z", &now));
  EXPECT_EQ(formatAge("2030-01-03T09:59:15Z", now), "45s");
  EXPECT_EQ(formatAge("2030-01-03T09:48:00Z", now), "12m");
  EXPECT_EQ(formatAge("2030-01-03T05:00:00Z", now), "5h");
  EXPECT_EQ(formatAge("2030-01-01T10:00:00Z", now), "2d");
  EXPECT_EQ(formatAge("", now), "<unknown>");
  EXPECT_EQ(formatAge("yesterday", now), "<unknown>");
}

TEST(RenderReleaseStatus, StagesMetricsEvidenceConditions) {
  std::string expected =
      "Name:               gpt2-v7\n"
      "Namespace:          ml\n"
      "Model:              gpt2\n"
      "Package:            " +
      kPackage +
      "\n"
      "RuntimeEnv:         torch\n"
      "Closure hash:       " +
      kHash +
      "\n"
      "Phase:              Testing\n"
      "Current stage:      ci\n"
      "\n"
      "Stages:\n"
      "STAGE  PHASE               ATTEMPT  JOB             STARTED               FINISHED      "
      "        APPROVAL  MESSAGE\n"
      "eval   Succeeded           1        gpt2-v7-eval-1  2030-01-01T10:00:05Z  "
      "2030-01-01T10:03:00Z  -         accuracy 0.84 >= 0.82\n"
      "ci     WaitingForApproval  -        -               -                     -             "
      "        Manual    -\n"
      "\n"
      "Metrics:\n"
      "STAGE  METRIC    VALUE\n"
      "eval   accuracy  0.84\n"
      "eval   loss      1.9\n"
      "\n"
      "Evidence:\n"
      "STAGE  PACKAGE" +
      std::string(kPackage.size() - 5, ' ') + "CLOSURE HASH" + std::string(kHash.size() - 10, ' ') +
      "IMAGE" + std::string(kImage.size() - 3, ' ') +
      "JOB UID\n"
      "eval   " +
      kPackage + "  " + kHash + "  " + kImage +
      "  6f1c-uid\n"
      "\n"
      "Conditions:\n"
      "TYPE   STATUS  REASON              SINCE                 MESSAGE\n"
      "Ready  False   WaitingForApproval  2030-01-01T10:05:00Z  stage ci waits for approval\n";
  EXPECT_EQ(renderReleaseStatus(waitingForCi().json()), expected);
}

TEST(RenderReleaseStatus, ApprovalColumnAndAbort) {
  json r = waitingForCi().annotate("approve.lockstep.dev/ci", "alice").json();
  EXPECT_NE(renderReleaseStatus(r).find("Manual (approved by alice, pending)"), std::string::npos);
  r["status"]["stages"][1]["approvedBy"] = "alice";
  r["status"]["stages"][1]["phase"] = "Running";
  EXPECT_NE(renderReleaseStatus(r).find("ci     Running    "), std::string::npos)
      << renderReleaseStatus(r);
  EXPECT_NE(renderReleaseStatus(r).find("approved by alice"), std::string::npos);
  r = Release().stage("eval").annotate("lockstep.dev/abort", "bob").json();
  std::string page = renderReleaseStatus(r);
  EXPECT_NE(page.find("Abort requested by: bob"), std::string::npos) << page;
  EXPECT_NE(page.find("Phase:              -"), std::string::npos) << page;  // no status yet
  EXPECT_NE(page.find("eval   Pending"), std::string::npos) << page;
  EXPECT_EQ(page.find("Metrics:"), std::string::npos);
}

// status.package (issue 32): what the operator read of the package, one line under it.
TEST(RenderReleaseStatus, DescribesTheModelPackOrImageItRead) {
  json r = Release().stage("eval").json();
  EXPECT_EQ(renderReleaseStatus(r).find("Package kind:"), std::string::npos)
      << "nothing read yet, nothing said";
  r["status"]["package"] = {{"digest", "sha256:" + std::string(64, 'b')},
                            {"kind", "ModelPack"},
                            {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                            {"artifactType", "application/vnd.cncf.model.manifest.v1+json"},
                            {"layers", 3},
                            {"size", 1250000},
                            {"model",
                             {{"format", "safetensors"},
                              {"architecture", "transformer"},
                              {"paramSize", "100k"},
                              {"parameterCount", 100000},
                              {"precision", "float32"}}}};
  std::string page = renderReleaseStatus(r);
  EXPECT_NE(page.find("Package:            " + kPackage +
                      "\nPackage kind:       ModelPack: "
                      "safetensors transformer, 100k parameters, float32; 3 layers, 1250000 "
                      "bytes\nRuntimeEnv:"),
            std::string::npos)
      << page;
  r["status"]["package"] = {{"digest", "sha256:" + std::string(64, 'b')},
                            {"kind", "ImageIndex"},
                            {"mediaType", "application/vnd.oci.image.index.v1+json"},
                            {"layers", 2},
                            {"size", 900}};
  page = renderReleaseStatus(r);
  EXPECT_NE(page.find("Package kind:       ImageIndex: 2 manifests, 900 bytes\n"),
            std::string::npos)
      << page;
  r["status"]["package"] = "not an object";
  EXPECT_EQ(renderReleaseStatus(r).find("Package kind:"), std::string::npos);
}

TEST(RenderReleaseStatus, ToleratesFieldsOfTheWrongType) {
  json r = waitingForCi().json();
  r["status"]["stages"][0]["metrics"] = "not an object";
  r["status"]["stages"][0]["attempt"] = "one";
  r["status"]["conditions"] = 3;
  r["spec"]["model"] = 5;
  EXPECT_NO_THROW(renderReleaseStatus(r));
}

TEST(RenderReleaseList, RowsSortedWithShortDigest) {
  json list = {{"items",
                {Release("b").phase("Validated").condition("Ready", "True", "Validated", "").json(),
                 Release("a").phase("Evaluating", "eval").json()}}};
  kube::Clock::WallTime now;
  ASSERT_TRUE(kube::parseTime("2030-01-01T10:07:00Z", &now));
  EXPECT_EQ(renderReleaseList(list, false, now),
            "NAME  MODEL  PHASE       STAGE  READY  PACKAGE       AGE\n"
            "a     gpt2   Evaluating  eval   -      bbbbbbbbbbbb  7m\n"
            "b     gpt2   Validated   -      True   bbbbbbbbbbbb  7m\n");
  EXPECT_EQ(renderReleaseList(list, true, now).substr(0, 16), "NAMESPACE  NAME ");
  EXPECT_EQ(renderReleaseList(json{{"items", json::array()}}, false, now),
            "No ModelReleases found.\n");
}

struct ApprovalCase {
  std::string name;
  json release;
  std::string requested;
  std::string wantStage;  // "" = error
  std::string wantError;  // substring
  std::string alreadyBy = "";
  std::string wantAnnotation = "";  // "" = approve.lockstep.dev/<wantStage>
};

// ci needs two approvers; `creator` created the release.
Release twoApprovers(const std::string& creator = "carol", bool allowSelf = false) {
  json policy = {{"policy", "Manual"}, {"minApprovers", 2}};
  if (allowSelf) policy["allowSelfApproval"] = true;
  return Release()
      .stage("eval")
      .stage("ci", policy)
      .phase("Testing", "ci")
      .stageStatus({{"name", "eval"}, {"phase", "Succeeded"}})
      .stageStatus({{"name", "ci"}, {"phase", "WaitingForApproval"}})
      .annotate("lockstep.dev/created-by", creator);
}

std::vector<ApprovalCase> approvalCases() {
  return {
      {"the waiting stage is chosen", waitingForCi().json(), "", "ci", ""},
      {"the waiting stage by name", waitingForCi().json(), "ci", "ci", ""},
      {"an unknown stage names the stages", waitingForCi().json(), "qa", "",
       "release \"ml/gpt2-v7\" has no stage \"qa\" (stages: eval, ci)"},
      {"a stage that is not waiting names its phase", waitingForCi().json(), "eval", "",
       "stage \"eval\" of release \"ml/gpt2-v7\" is not waiting for approval (phase: Succeeded; it "
       "does not require approval)"},
      {"a manual stage not reached yet",
       Release().stage("eval").stage("ci", true).phase("Evaluating", "eval").json(), "ci", "",
       "is not waiting for approval (phase: Pending)"},
      {"nothing waiting names the phases",
       Release()
           .stage("eval")
           .stage("ci", true)
           .phase("Evaluating", "eval")
           .stageStatus({{"name", "eval"}, {"phase", "Running"}})
           .json(),
       "", "",
       "no stage of release \"ml/gpt2-v7\" is waiting for approval (phase: Evaluating; stages: "
       "eval "
       "Running, ci Pending)"},
      {"already approved by me", waitingForCi().annotate("approve.lockstep.dev/ci", "alice").json(),
       "", "ci", "", "alice"},
      {"already approved by someone else",
       waitingForCi().annotate("approve.lockstep.dev/ci", "bob").json(), "", "",
       "was already approved by \"bob\"; the controller has not acted on it yet"},
      {"several waiting",
       Release()
           .stage("a", true)
           .stage("b", true)
           .stageStatus({{"name", "a"}, {"phase", "WaitingForApproval"}})
           .stageStatus({{"name", "b"}, {"phase", "WaitingForApproval"}})
           .json(),
       "", "", "several stages of release \"ml/gpt2-v7\" wait for approval (a, b): name one"},
      // minApprovers: each approver takes the next free slot (approve.lockstep.dev/ci.2, ...).
      {"the first of two approvers", twoApprovers().json(), "", "ci", ""},
      {"the second of two approvers takes slot 2",
       twoApprovers().annotate("approve.lockstep.dev/ci", "bob").json(), "", "ci", "", "",
       "approve.lockstep.dev/ci.2"},
      {"a free slot before a taken one",
       twoApprovers().annotate("approve.lockstep.dev/ci.2", "bob").json(), "", "ci", "", "",
       "approve.lockstep.dev/ci"},
      {"already approved in slot 2",
       twoApprovers()
           .annotate("approve.lockstep.dev/ci", "bob")
           .annotate("approve.lockstep.dev/ci.2", "alice")
           .json(),
       "", "ci", "", "alice", "approve.lockstep.dev/ci.2"},
      {"the creator cannot approve", twoApprovers("alice").json(), "", "", "",
       "was created by \"alice\", who cannot approve it (approval.allowSelfApproval is false)"},
      {"the creator may when the stage allows it", twoApprovers("alice", true).json(), "", "ci",
       ""},
      {"one approver, creator refused too",
       waitingForCi().annotate("lockstep.dev/created-by", "alice").json(), "", "", "",
       "who cannot approve it"},
  };
}

void PrintTo(const ApprovalCase& c, std::ostream* os) { *os << c.name; }

class PlanApprovalTest : public ::testing::TestWithParam<ApprovalCase> {};

TEST_P(PlanApprovalTest, Decides) {
  const ApprovalCase& c = GetParam();
  auto plan = planApproval(c.release, c.requested, "alice");
  if (c.wantStage.empty()) {
    ASSERT_FALSE(plan.isOk());
    EXPECT_NE(plan.status().message().find(c.wantError), std::string::npos)
        << plan.status().message();
    return;
  }
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  EXPECT_EQ(plan->stage, c.wantStage);
  EXPECT_EQ(plan->annotation,
            c.wantAnnotation.empty() ? "approve.lockstep.dev/" + c.wantStage : c.wantAnnotation);
  EXPECT_EQ(plan->alreadyBy, c.alreadyBy);
}

INSTANTIATE_TEST_SUITE_P(Table, PlanApprovalTest, ::testing::ValuesIn(approvalCases()),
                         [](const ::testing::TestParamInfo<ApprovalCase>& info) {
                           std::string n;
                           for (char ch : info.param.name)
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

TEST(PlanAbort, RefusesEndedReleases) {
  for (const char* phase : {"Validated", "Failed", "Promoted", "RolledBack", "Superseded"}) {
    auto plan = planAbort(Release().stage("eval").phase(phase).json());
    ASSERT_FALSE(plan.isOk()) << phase;
    EXPECT_NE(plan.status().message().find(std::string("already ended (phase: ") + phase + ")"),
              std::string::npos);
  }
  auto plan = planAbort(Release().stage("eval").phase("Evaluating", "eval").json());
  ASSERT_TRUE(plan.isOk());
  EXPECT_EQ(plan->annotation, "lockstep.dev/abort");
  EXPECT_EQ(plan->alreadyBy, "");
  EXPECT_EQ(planAbort(Release().annotate("lockstep.dev/abort", "bob").json())->alreadyBy, "bob");
  EXPECT_TRUE(planAbort(Release().json()).isOk());  // no status yet: Pending
}

TEST(PlanPromote, EndsTheCurrentStepsPauseOrSkipsAll) {
  json canary = {
      {"metadata", {{"name", "v2"}, {"namespace", "ml"}}},
      {"status", {{"phase", "Canary"}, {"canary", {{"phase", "Progressing"}, {"step", 1}}}}}};
  auto p = planPromote(canary, false, "alice");
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(p->annotation, "promote.lockstep.dev/1");
  EXPECT_EQ(p->alreadyBy, "");
  p = planPromote(canary, true, "alice");
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->annotation, "lockstep.dev/promote-full");
  canary["metadata"]["annotations"]["promote.lockstep.dev/1"] = "alice";
  EXPECT_EQ(planPromote(canary, false, "alice")->alreadyBy, "alice");
  auto other = planPromote(canary, false, "bob");
  ASSERT_FALSE(other.isOk());
  EXPECT_NE(other.status().message().find("already promoted"), std::string::npos);
  json done = {{"metadata", {{"name", "v1"}, {"namespace", "ml"}}},
               {"status", {{"phase", "Promoted"}}}};
  auto refused = planPromote(done, false, "alice");
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("not in its canary (phase: Promoted)"),
            std::string::npos)
      << refused.status().message();
}

// The step's annotation is named after status.canary.step: an unreadable
// status.canary is refused, never promoted as step 0.
TEST(PlanPromote, AnUnreadableCanaryStatusIsRefusedNamingTheField) {
  json canary = {
      {"metadata", {{"name", "v2"}, {"namespace", "ml"}}},
      {"status", {{"phase", "Canary"}, {"canary", {{"phase", "Progressing"}, {"step", "1"}}}}}};
  auto p = planPromote(canary, false, "alice");
  ASSERT_FALSE(p.isOk()) << p->annotation;
  EXPECT_NE(p.status().message().find("status.canary.step: must be an integer"), std::string::npos)
      << p.status().message();
  // --full names no step: it goes on.
  EXPECT_TRUE(planPromote(canary, true, "alice").isOk());
  // No status.canary yet: step 0.
  canary["status"].erase("canary");
  p = planPromote(canary, false, "alice");
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(p->annotation, "promote.lockstep.dev/0");
}

TEST(WaitState, ReachedWaitingOrEndedElsewhere) {
  EXPECT_EQ(waitState(Release().phase("Validated").json(), "Validated"), WaitState::kReached);
  EXPECT_EQ(waitState(Release().phase("Testing").json(), "Validated"), WaitState::kWaiting);
  EXPECT_EQ(waitState(Release().json(), "Validated"), WaitState::kWaiting);
  EXPECT_EQ(waitState(Release().phase("Failed").json(), "Validated"), WaitState::kEndedElsewhere);
  EXPECT_EQ(waitState(Release().phase("Failed").json(), "Failed"), WaitState::kReached);
  // Promoted can still become Superseded.
  EXPECT_EQ(waitState(Release().phase("Promoted").json(), "Superseded"), WaitState::kWaiting);
}

TEST(ReleaseSummary, NamesPhaseStageAndStallReason) {
  json r =
      Release()
          .stage("eval")
          .phase("Failed", "eval")
          .stageStatus({{"name", "eval"}, {"phase", "Failed"}, {"message", "accuracy 0.7 < 0.82"}})
          .condition("Stalled", "True", "GateFailed", "eval failed")
          .json();
  EXPECT_EQ(releaseSummary(r),
            "phase Failed, stage eval Failed: accuracy 0.7 < 0.82 (GateFailed: eval failed)");
  EXPECT_EQ(releaseSummary(Release().json()), "phase unknown (no status yet)");
}

}  // namespace
}  // namespace lockstep::cli
