// Table tests of the registry stage-tag decisions (tags/stage_tag_plan.h):
// which tags a release answers for, which are due now, back-off, and what is
// recorded; spec.registryTags as api/v1alpha1/model_release.h checks it.
#include "controllers/modelrelease/tags/stage_tag_plan.h"

#include "api/v1alpha1/model_release.h"

#include <gtest/gtest.h>

namespace lockstep::controllers {
namespace {

using nlohmann::json;

const std::string kD1 = "sha256:" + std::string(64, '1');
const std::string kD2 = "sha256:" + std::string(64, '2');
const std::string kPkg = "registry.example/models/gpt2@" + kD1;
const std::string kPrevPkg = "registry.example/models/gpt2@" + kD2;
constexpr int64_t kNow = 1796029200;  // 2026-11-30T09:00:00Z
constexpr const char* kNowText = "2026-11-30T09:00:00Z";

json release(json registryTags = json::object()) {
  json r = {{"metadata", {{"name", "gpt2-v7"}, {"namespace", "ml"}, {"generation", 1}}},
            {"spec",
             {{"model", "gpt2"},
              {"package", kPkg},
              {"stages",
               {{{"name", "eval"}, {"gate", json::object()}},
                {{"name", "ci"}, {"gate", json::object()}},
                {{"name", "prod"}, {"serving", json::object()}}}}}}};
  if (!registryTags.is_null()) r["spec"]["registryTags"] = registryTags;
  return r;
}

json status(const std::string& phase, const std::string& evalPhase, const std::string& ciPhase) {
  return {
      {"phase", phase},
      {"stages", {{{"name", "eval"}, {"phase", evalPhase}}, {{"name", "ci"}, {"phase", ciPhase}}}}};
}

std::vector<std::string> tags(const std::vector<StageTagTarget>& v) {
  std::vector<std::string> out;
  for (const auto& t : v) out.push_back(t.tag + "=" + t.package);
  return out;
}

StageTagsObserved observed(json st, std::string promoted = "", std::string promotedPkg = "") {
  return {release(), std::move(st), std::move(promoted), std::move(promotedPkg), kNowText, kNow};
}

TEST(StageTagSettings, DecodeAndErrors) {
  using api::v1alpha1::registryTagsOf;
  auto off = registryTagsOf(release(json()));
  ASSERT_TRUE(off.isOk());
  EXPECT_FALSE(off->enabled);
  auto on = registryTagsOf(release({{"secretRef", {{"name", "pull"}}}}));
  ASSERT_TRUE(on.isOk());
  EXPECT_TRUE(on->enabled);
  EXPECT_EQ(on->secretName, "pull");
  auto disabled = registryTagsOf(release({{"enabled", false}}));
  ASSERT_TRUE(disabled.isOk());
  EXPECT_FALSE(disabled->enabled);
  auto bad = registryTagsOf(release({{"secretRef", {{"name", ""}}}}));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("spec.registryTags.secretRef.name"), std::string::npos);
  auto badEnabled = registryTagsOf(release({{"enabled", "yes"}}));
  ASSERT_FALSE(badEnabled.isOk());
  EXPECT_NE(badEnabled.status().message().find("spec.registryTags.enabled"), std::string::npos);
}

TEST(StageTagsPlan, WantedFollowsTheStagesThatPassed) {
  struct Case {
    const char* name;
    json st;
    std::string promoted, promotedPkg;
    std::vector<std::string> want;
  } cases[] = {
      {"nothing passed", status("Evaluating", "Running", "Pending"), "", "", {}},
      {"eval passed", status("Testing", "Succeeded", "Running"), "", "", {"eval=" + kPkg}},
      {"eval failed", status("Failed", "Failed", "Pending"), "", "", {}},
      {"both gates, in canary",
       status("Canary", "Succeeded", "Succeeded"),
       "gpt2-v6",
       kPrevPkg,
       {"eval=" + kPkg, "ci=" + kPkg}},
      {"promoted",
       status("Promoted", "Succeeded", "Succeeded"),
       "gpt2-v7",
       kPkg,
       {"eval=" + kPkg, "ci=" + kPkg, "prod=" + kPkg}},
      // The anchor may not show the promotion yet: the release's own phase decides.
      {"promoted, anchor behind",
       status("Promoted", "Succeeded", "Succeeded"),
       "gpt2-v6",
       kPrevPkg,
       {"eval=" + kPkg, "ci=" + kPkg, "prod=" + kPkg}},
      {"rolled back: prod goes back to the known-good package",
       status("RolledBack", "Succeeded", "Succeeded"),
       "gpt2-v6",
       kPrevPkg,
       {"eval=" + kPkg, "ci=" + kPkg, "prod=" + kPrevPkg}},
      {"rolled back, no earlier release: prod untouched",
       status("RolledBack", "Succeeded", "Succeeded"),
       "",
       "",
       {"eval=" + kPkg, "ci=" + kPkg}},
      {"superseded: prod belongs to the newer release",
       status("Superseded", "Succeeded", "Succeeded"),
       "gpt2-v8",
       kPrevPkg,
       {"eval=" + kPkg, "ci=" + kPkg}},
  };
  for (const Case& c : cases) {
    StageTagsPlan p = planStageTags(observed(c.st, c.promoted, c.promotedPkg));
    EXPECT_EQ(tags(p.wanted), c.want) << c.name;
    EXPECT_EQ(tags(p.due), c.want) << c.name << " (nothing recorded yet: all due)";
    EXPECT_EQ(p.retryAfterSeconds, 0) << c.name;
  }
}

TEST(StageTagsPlan, RecordedTagsAreNotWrittenAgain) {
  json st = status("Promoted", "Succeeded", "Succeeded");
  st["registryTags"] = {{{"tag", "eval"}, {"digest", kD1}, {"phase", "Tagged"}},
                        {{"tag", "ci"}, {"digest", kD1}, {"phase", "Tagged"}},
                        // prod was tagged for another digest (an earlier attempt): due again
                        {{"tag", "prod"}, {"digest", kD2}, {"phase", "Tagged"}}};
  StageTagsPlan p = planStageTags(observed(st, "gpt2-v7", kPkg));
  EXPECT_EQ(tags(p.due), std::vector<std::string>{"prod=" + kPkg});
}

TEST(StageTagsPlan, FailedTagsBackOff) {
  json st = status("Testing", "Succeeded", "Running");
  // Third failure 30 s ago: the back-off after 3 attempts is 40 s, 10 s to go.
  st["registryTags"] = {{{"tag", "eval"},
                         {"digest", kD1},
                         {"phase", "Failed"},
                         {"attempts", 3},
                         {"lastAttemptAt", "2026-11-30T08:59:30Z"}}};
  StageTagsPlan p = planStageTags(observed(st));
  EXPECT_TRUE(p.due.empty());
  EXPECT_EQ(p.retryAfterSeconds, 10);
  StageTagsObserved later = observed(st);
  later.nowUnix = kNow + 10;
  StageTagsPlan q = planStageTags(later);
  EXPECT_EQ(tags(q.due), std::vector<std::string>{"eval=" + kPkg});
  EXPECT_EQ(q.retryAfterSeconds, 0);
}

TEST(StageTagsPlan, BackoffDoublesToFiveMinutes) {
  EXPECT_EQ(stageTagBackoffSeconds(1), 10);
  EXPECT_EQ(stageTagBackoffSeconds(2), 20);
  EXPECT_EQ(stageTagBackoffSeconds(3), 40);
  EXPECT_EQ(stageTagBackoffSeconds(5), 160);
  EXPECT_EQ(stageTagBackoffSeconds(6), 300);
  EXPECT_EQ(stageTagBackoffSeconds(60), 300);
}

StageTagResult result(const StageTagTarget& t, const std::string& digest, std::string error = "") {
  StageTagResult r;
  r.target = t;
  r.reference = "registry.example/models/gpt2:" + t.tag;
  r.digest = digest;
  r.moved = error.empty();
  r.error = std::move(error);
  return r;
}

TEST(StageTagsFold, SuccessFailureAndCondition) {
  json st = status("Promoted", "Succeeded", "Succeeded");
  st["registryTags"] = {{{"tag", "eval"}, {"digest", kD1}, {"phase", "Tagged"}},
                        {{"tag", "ci"},
                         {"digest", kD1},
                         {"phase", "Failed"},
                         {"attempts", 2},
                         {"lastAttemptAt", "2026-11-30T08:58:00Z"}}};
  StageTagsPlan p = planStageTags(observed(st, "gpt2-v7", kPkg));
  ASSERT_EQ(tags(p.due), (std::vector<std::string>{"ci=" + kPkg, "prod=" + kPkg}));
  std::vector<StageTagResult> results = {result(p.due[0], kD1, "HTTP 401: UNAUTHORIZED"),
                                         result(p.due[1], kD1)};
  StageTagsStatus out = foldStageTagResults(st, p.wanted, results, 1, kNowText);
  ASSERT_EQ(out.entries.size(), 3u);
  EXPECT_EQ(out.entries[1]["tag"], "ci");
  EXPECT_EQ(out.entries[1]["phase"], "Failed");
  EXPECT_EQ(out.entries[1]["attempts"], 3);
  EXPECT_EQ(out.entries[1]["lastAttemptAt"], kNowText);
  EXPECT_EQ(out.entries[2]["tag"], "prod");
  EXPECT_EQ(out.entries[2]["phase"], "Tagged");
  EXPECT_EQ(out.entries[2]["reference"], "registry.example/models/gpt2:prod");
  EXPECT_EQ(out.condition["type"], "RegistryTagged");
  EXPECT_EQ(out.condition["status"], "False");
  EXPECT_EQ(out.condition["reason"], "TagFailed");
  EXPECT_NE(out.condition["message"].get<std::string>().find("ci: HTTP 401"), std::string::npos);

  // The retry succeeds: every wanted tag in place.
  json after = st;
  after["registryTags"] = out.entries;
  StageTagsPlan again = planStageTags(observed(after, "gpt2-v7", kPkg));
  StageTagsObserved due = observed(after, "gpt2-v7", kPkg);
  due.nowUnix = kNow + stageTagBackoffSeconds(3);
  again = planStageTags(due);
  ASSERT_EQ(tags(again.due), std::vector<std::string>{"ci=" + kPkg});
  StageTagsStatus done =
      foldStageTagResults(after, again.wanted, {result(again.due[0], kD1)}, 1, kNowText);
  EXPECT_EQ(done.entries[1]["phase"], "Tagged");
  EXPECT_EQ(done.entries[1]["attempts"], 4);  // the fourth attempt succeeded
  EXPECT_EQ(done.condition["status"], "True");
  EXPECT_EQ(done.condition["reason"], "Tagged");
  EXPECT_EQ(done.condition["message"], "the registry tags eval, ci, prod are in place");
}

// A second pass from a stale cache finds the tag in place (nothing moved):
// the entry that recorded the move, and where the tag was before, stays.
TEST(StageTagsFold, AStalePassKeepsTheRecordedMove) {
  json st = status("RolledBack", "Succeeded", "Succeeded");
  st["registryTags"] = {{{"tag", "prod"},
                         {"digest", kD2},
                         {"phase", "Tagged"},
                         {"previousDigest", kD1},
                         {"attempts", 1}}};
  StageTagTarget t{"prod", kPrevPkg, "rolled back to release gpt2-v6"};
  StageTagResult again = result(t, kD2);
  again.moved = false;
  again.previousDigest = kD2;
  StageTagsStatus out = foldStageTagResults(st, {t}, {again}, 1, kNowText);
  ASSERT_EQ(out.entries.size(), 1u);
  EXPECT_EQ(out.entries[0]["previousDigest"], kD1);
  EXPECT_EQ(out.condition["status"], "True");
}

}  // namespace
}  // namespace lockstep::controllers
