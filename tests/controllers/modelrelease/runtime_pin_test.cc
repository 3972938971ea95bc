// Table tests of the release side of runtime revisions (pure, fakes only):
// the pin rule (api/v1alpha1/runtime_revision.h pinFor), the release's runtime
// on its RuntimeEnv (controllers/modelrelease/runtime_env_state.h), the pin
// written at the first stage and the gate Job built from it, Stale by pin, and
// a manual rollback to a retained or pruned revision (release_plan.h,
// api/v1alpha1/model_release.h rollbackRuntime).
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "controllers/modelrelease/release_plan.h"
#include "controllers/modelrelease/runtime_env_state.h"
#include "tests/controllers/modelrelease/release_plan_readers.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

std::string img(char c) { return "registry.example/runtimes/torch@sha256:" + std::string(64, c); }
std::string hash(char c) { return "sha256:" + std::string(64, c); }
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');
const std::string kNow = "2026-12-01T10:00:00Z";

v1::RuntimeRevision rev(int64_t n, const std::string& image, const std::string& h,
                        std::vector<std::string> pinnedBy = {}) {
  v1::RuntimeRevision r;
  r.number = n;
  r.image = image;
  r.closureHash = h;
  r.pinnedBy = std::move(pinnedBy);
  return r;
}

// A Ready RuntimeEnv "torch" whose spec.image is `specImage`, at revision
// `current` of `revisions`; status.closureHash is the current revision's.
json runtimeEnv(const std::vector<v1::RuntimeRevision>& revisions, int64_t current,
                const std::string& specImage = "") {
  json revs = json::array();
  std::string currentHash, currentImage;
  for (const v1::RuntimeRevision& r : revisions) {
    revs.push_back(v1::encodeRevision(r));
    if (r.number == current) {
      currentHash = r.closureHash;
      currentImage = r.image;
    }
  }
  return {{"metadata", {{"name", "torch"}, {"namespace", "ml"}, {"generation", 1}}},
          {"spec", {{"image", specImage.empty() ? currentImage : specImage}}},
          {"status",
           {{"observedGeneration", 1},
            {"closureHash", currentHash},
            {"currentRevision", current},
            {"revisions", revs},
            {"conditions", json::array({{{"type", "Ready"},
                                         {"status", "True"},
                                         {"reason", "Resolved"},
                                         {"message", "m"}}})}}}};
}

json gateStage(const std::string& name) {
  return {
      {"name", name},
      {"gate",
       {{"template",
         {{"spec", {{"containers", json::array({{{"name", name}, {"command", {"run"}}}})}}}}}}}};
}

json release(const std::string& name = "gpt2-v1", const std::string& closureHash = hash('a')) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "ModelRelease"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-1"}, {"generation", 1}}},
          {"spec",
           {{"model", "gpt2"},
            {"package", kPackage},
            {"runtimeEnvRef", {{"name", "torch"}}},
            {"closureHash", closureHash},
            {"stages", json::array({gateStage("eval"), gateStage("ci")})}}}};
}

ReleaseObserved observed(const json& r, const json& env) {
  ReleaseObserved o;
  o.release = r;
  o.runtimeEnv = env;
  o.now = kNow;
  o.nowUnix = 1796119200;
  return o;
}

using plan_readers::condition;
using plan_readers::hasEvent;

const json& container(const json& job) { return job["spec"]["template"]["spec"]["containers"][0]; }
std::string envValue(const json& c, const std::string& name) {
  for (const json& e : c["env"]) {
    if (e["name"] == name) return e["value"];
  }
  return "";
}

// ---- the pin rule ---------------------------------------------------------------------

TEST(PinRule, TheCurrentRevisionWinsElseTheNewestMatching) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a')), rev(2, img('2'), hash('a')),
                                           rev(3, img('3'), hash('b'))};
  // Current matches: it is the one (even when a newer one has the hash).
  auto p = v1::pinFor(revs, 1, hash('a'), "");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->revision, 1);
  EXPECT_EQ(p->image, img('1'));
  // Current does not match: the newest that does.
  p = v1::pinFor(revs, 3, hash('a'), "");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->revision, 2);
  // spec.runtimeImage narrows it down.
  p = v1::pinFor(revs, 3, hash('a'), img('1'));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->revision, 1);
  EXPECT_FALSE(v1::pinFor(revs, 3, hash('c'), ""));
  EXPECT_FALSE(v1::pinFor(revs, 3, hash('b'), img('1')));
  // A recorded pin is never re-chosen.
  v1::RuntimePin pinned{1, img('1'), hash('a')};
  EXPECT_EQ(v1::runtimeOf(pinned, revs, 2, hash('a'), "")->revision, 1);
  EXPECT_EQ(v1::recordedRevision(revs, {0, img('2'), hash('a')}), 2);
  EXPECT_EQ(v1::recordedRevision(revs, {0, img('2'), hash('b')}), 0);
}

// releasePins() (what the RuntimeEnv controller writes in pinnedBy) and the
// release side agree on a release not pinned yet: both use pinFor.
TEST(PinRule, ReleasePinsAgreesWithTheReleaseSide) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a')),
                                           rev(2, img('2'), hash('a'))};
  v1::ReleasePinFacts f;
  f.name = "gpt2-v1";
  f.model = "gpt2";
  f.runtimeEnv = "torch";
  f.closureHash = hash('a');
  f.phase = "Evaluating";
  // The image was swapped back: revision 1 is current again.
  auto pins = v1::releasePins("torch", {f}, revs, 1, 5);
  ASSERT_EQ(pins.size(), 1u);
  EXPECT_EQ(pins[0].revision, 1);
  const RuntimeEnvState env = runtimeEnvState(runtimeEnv(revs, 1));
  const ReleaseRuntime rt = releaseRuntime(env, v1::decodeModelRelease(release()));
  ASSERT_TRUE(rt.pin);
  EXPECT_EQ(rt.pin->revision, pins[0].revision);
}

// ---- the release's runtime ------------------------------------------------------------

TEST(ReleaseRuntime, StaleByPinAfterAnImageSwapWithTheSameLock) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a'), {"gpt2-v1"}),
                                           rev(2, img('2'), hash('a'))};
  json r = release();
  r["status"]["runtime"] = v1::encodeRuntimePin({1, img('1'), hash('a')});
  const ReleaseRuntime rt =
      releaseRuntime(runtimeEnvState(runtimeEnv(revs, 2)), v1::decodeModelRelease(r));
  EXPECT_TRUE(rt.stale);
  EXPECT_EQ(rt.staleReason, v1::kReasonRuntimeRevisionChanged);
  EXPECT_NE(rt.message.find("revision 2 (" + img('2')), std::string::npos) << rt.message;
  EXPECT_NE(rt.message.find("pinned to revision 1 (" + img('1')), std::string::npos);
  EXPECT_FALSE(rt.newPin);
  ASSERT_TRUE(rt.pin);
  EXPECT_EQ(rt.pin->image, img('1'));

  // The lock edited (another hash): ClosureHashChanged.
  revs.push_back(rev(3, img('1'), hash('b')));
  const ReleaseRuntime edited =
      releaseRuntime(runtimeEnvState(runtimeEnv(revs, 3)), v1::decodeModelRelease(r));
  EXPECT_TRUE(edited.stale);
  EXPECT_EQ(edited.staleReason, v1::kReasonClosureHashChanged);

  // Back on revision 1: not stale.
  EXPECT_FALSE(
      releaseRuntime(runtimeEnvState(runtimeEnv(revs, 1)), v1::decodeModelRelease(r)).stale);
}

TEST(ReleaseRuntime, ARuntimeImageThatIsNotTheCurrentOneIsAFailureNamingBoth) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a'))};
  json r = release();
  r["spec"]["runtimeImage"] = img('9');
  auto plan = planRelease(observed(r, runtimeEnv(revs, 1)));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(plan.status["phase"], "Failed");
  EXPECT_FALSE(plan.status.contains("runtime"));
  EXPECT_EQ(condition(plan, "Stalled", "reason"), v1::kReasonRuntimeImageMismatch);
  const std::string msg = condition(plan, "Ready", "message");
  EXPECT_NE(msg.find(img('9')), std::string::npos) << msg;
  EXPECT_NE(msg.find(img('1')), std::string::npos) << msg;
  EXPECT_TRUE(hasEvent(plan, v1::kReasonRuntimeImageMismatch, img('9')));

  // The matching image pins.
  r["spec"]["runtimeImage"] = img('1');
  plan = planRelease(observed(r, runtimeEnv(revs, 1)));
  EXPECT_EQ(plan.status["runtime"]["revision"], 1);
  EXPECT_EQ(plan.jobsToCreate.size(), 1u);
}

// spec.runtimeImage in another spelling of the revision's image (as admission compares
// images: api::sameImage) is that image: the release pins, and releasePins() agrees.
TEST(ReleaseRuntime, ARuntimeImageInAnotherSpellingOfTheCurrentOneIsThatImage) {
  const std::string digest = "sha256:" + std::string(64, '7');
  std::vector<v1::RuntimeRevision> revs = {rev(1, "docker.io/library/torch@" + digest, hash('a'))};
  for (const std::string spelling :
       {"torch@" + digest, "index.docker.io/library/torch:2.5@" + digest,
        "docker.io/library/torch@" + digest}) {
    json r = release();
    r["spec"]["runtimeImage"] = spelling;
    auto plan = planRelease(observed(r, runtimeEnv(revs, 1)));
    EXPECT_NE(plan.status.value("phase", ""), "Failed") << spelling << plan.status.dump();
    EXPECT_EQ(plan.status["runtime"]["revision"], 1) << spelling;
    EXPECT_EQ(plan.jobsToCreate.size(), 1u) << spelling;
    auto p = v1::pinFor(revs, 1, hash('a'), spelling);
    ASSERT_TRUE(p) << spelling;
    EXPECT_EQ(p->image, "docker.io/library/torch@" + digest) << "the revision's own spelling";
  }
  // Another repository with the same digest is another image.
  json r = release();
  r["spec"]["runtimeImage"] = "registry.example/torch@" + digest;
  EXPECT_EQ(condition(planRelease(observed(r, runtimeEnv(revs, 1))), "Stalled", "reason"),
            v1::kReasonRuntimeImageMismatch);
  EXPECT_FALSE(v1::pinFor(revs, 1, hash('a'), "registry.example/torch@" + digest));
}

// ---- the pin at the first gate, gate Jobs from it ---------------------------------------

TEST(ReleasePin, TheFirstGatePinsTheCurrentRevisionAndEveryJobRunsThePinnedPair) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a'))};
  json r = release();
  auto first = planRelease(observed(r, runtimeEnv(revs, 1)));
  ASSERT_EQ(first.jobsToCreate.size(), 1u);
  EXPECT_EQ(first.status["runtime"],
            json({{"revision", 1}, {"image", img('1')}, {"closureHash", hash('a')}}));
  EXPECT_TRUE(hasEvent(first, "RuntimePinned", "revision 1"));
  const json& c = container(first.jobsToCreate[0]);
  EXPECT_EQ(c["image"], img('1'));
  EXPECT_EQ(envValue(c, "LOCKSTEP_CLOSURE_HASH"), hash('a'));
  EXPECT_EQ(first.jobsToCreate[0]["spec"]["template"]["metadata"]["annotations"]
                              ["lockstep.dev/runtime-revision"],
            "1");

  // The eval Job passed. The RuntimeEnv's spec names another image (an edit
  // not resolved into a revision yet, as the fake allows): the ci Job still
  // runs the pinned pair, never the RuntimeEnv's current spec.
  json done = first.jobsToCreate[0];
  done["metadata"]["uid"] = "job-uid";
  done["status"]["conditions"] =
      json::array({{{"type", "SuccessCriteriaMet"}, {"status", "True"}},
                   {{"type", "Complete"}, {"status", "True"}, {"lastTransitionTime", kNow}}});
  done["status"]["completionTime"] = kNow;
  json pinned = r;
  pinned["status"] = first.status;
  auto o = observed(pinned, runtimeEnv(revs, 1, img('7')));
  o.jobs = {done};
  o.pods = {
      {{"metadata",
        {{"name", "gpt2-v1-eval-1-x"},
         {"labels", {{"batch.kubernetes.io/job-name", "gpt2-v1-eval-1"}}}}},
       {"status",
        {{"phase", "Succeeded"},
         {"containerStatuses",
          json::array({{{"name", "eval"},
                        {"state", {{"terminated", {{"exitCode", 0}, {"message", ""}}}}}}})}}}}};
  auto second = planRelease(o);
  ASSERT_EQ(second.jobsToCreate.size(), 1u) << second.status.dump(2);
  EXPECT_EQ(second.jobsToCreate[0]["metadata"]["name"], "gpt2-v1-ci-1");
  EXPECT_EQ(container(second.jobsToCreate[0])["image"], img('1'));
  EXPECT_EQ(second.status["runtime"], first.status["runtime"]);  // never changes
}

TEST(ReleasePin, APinnedRevisionThatIsNotCurrentStartsNoNewStage) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a'), {"gpt2-v1"}),
                                           rev(2, img('2'), hash('a'))};
  json r = release();
  r["status"] = {{"phase", "Testing"},
                 {"runtime", v1::encodeRuntimePin({1, img('1'), hash('a')})},
                 {"stages", json::array({{{"name", "eval"}, {"phase", "Succeeded"}},
                                         {{"name", "ci"}, {"phase", "Pending"}}})}};
  auto plan = planRelease(observed(r, runtimeEnv(revs, 2)));
  EXPECT_TRUE(plan.jobsToCreate.empty());
  EXPECT_EQ(condition(plan, "Stale"), "True");
  EXPECT_EQ(condition(plan, "Stale", "reason"), v1::kReasonRuntimeRevisionChanged);
  EXPECT_EQ(condition(plan, "Stalled", "reason"), v1::kReasonRuntimeStale);
  EXPECT_NE(condition(plan, "Ready", "message").find("stage \"ci\" does not start"),
            std::string::npos);
  EXPECT_EQ(plan.status["runtime"]["revision"], 1);
}

TEST(ReleasePin, APromotedReleaseOnAnOldRevisionIsStaleAndSaysProdKeepsIt) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a'), {"gpt2-v1"}),
                                           rev(2, img('1'), hash('b'))};
  json r = release();
  r["status"] = {{"phase", "Promoted"},
                 {"runtime", v1::encodeRuntimePin({1, img('1'), hash('a')})},
                 {"canary", {{"phase", "Promoted"}}},
                 {"stages", json::array({{{"name", "eval"}, {"phase", "Succeeded"}},
                                         {{"name", "ci"}, {"phase", "Succeeded"}}})}};
  auto o = observed(r, runtimeEnv(revs, 2));
  o.promotedRelease = "gpt2-v1";
  auto plan = planRelease(o);
  EXPECT_EQ(plan.status["phase"], "Promoted");
  EXPECT_EQ(condition(plan, "Stale"), "True");
  EXPECT_EQ(condition(plan, "Stale", "reason"), v1::kReasonClosureHashChanged);
  EXPECT_TRUE(hasEvent(plan, v1::kReasonRuntimeStale, "prod keeps running"));
}

// ---- manual rollback --------------------------------------------------------------------

json rollbackTarget() {
  json r = release("gpt2-v1");
  r["metadata"]["annotations"]["rollback.lockstep.dev/4"] = "alice";
  r["status"] = {{"phase", "Superseded"},
                 {"runtime", v1::encodeRuntimePin({1, img('1'), hash('a')})},
                 {"canary", {{"phase", "Promoted"}}},
                 {"stages", json::array({{{"name", "eval"}, {"phase", "Succeeded"}},
                                         {{"name", "ci"}, {"phase", "Succeeded"}}})}};
  return r;
}

TEST(ManualRollback, ARetainedRevisionRunsWithAWarningThatTheRuntimeMovedOn) {
  std::vector<v1::RuntimeRevision> revs = {rev(1, img('1'), hash('a'), {"gpt2-v1"}),
                                           rev(2, img('1'), hash('b'), {"gpt2-v2"})};
  auto o = observed(rollbackTarget(), runtimeEnv(revs, 2));
  o.promotedRelease = "gpt2-v2";
  o.modelRevision = "4";
  auto plan = planRelease(o);
  ASSERT_TRUE(plan.modelRollback.has_value()) << plan.status.dump(2);
  EXPECT_EQ(plan.status["phase"], "Promoted");
  EXPECT_TRUE(hasEvent(plan, v1::kReasonRuntimeMovedOn, "revision 1 (" + img('1')));
  EXPECT_TRUE(hasEvent(plan, v1::kReasonRuntimeMovedOn, "moved on to revision 2"));

  // On the current revision: no Warning.
  o.runtimeEnv = runtimeEnv(revs, 1);
  plan = planRelease(o);
  ASSERT_TRUE(plan.modelRollback.has_value());
  EXPECT_FALSE(hasEvent(plan, v1::kReasonRuntimeMovedOn));
}

TEST(ManualRollback, APrunedRevisionIsRefusedNamingIt) {
  std::vector<v1::RuntimeRevision> revs = {rev(2, img('1'), hash('b'), {"gpt2-v2"})};
  auto o = observed(rollbackTarget(), runtimeEnv(revs, 2));
  o.promotedRelease = "gpt2-v2";
  o.modelRevision = "4";
  auto plan = planRelease(o);
  EXPECT_FALSE(plan.modelRollback.has_value());
  EXPECT_EQ(plan.status["phase"], "Superseded");
  const std::string refused = plan.status["rollback"].value("refused", "");
  EXPECT_NE(refused.find("revision 1 (" + img('1') + ", closure " + hash('a') + ")"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("pruned"), std::string::npos) << refused;
  EXPECT_TRUE(hasEvent(plan, "RollbackRefused", "pruned"));

  // The shared rule (the CLI asks the same function).
  const v1::RuntimeEnv env = v1::decodeRuntimeEnv(runtimeEnv(revs, 2));
  const v1::RollbackRuntime rr =
      v1::rollbackRuntime(v1::decodeModelRelease(rollbackTarget()), &env);
  EXPECT_EQ(rr.refusal, refused);
}

// Which RuntimeEnv changes wake its releases: not the pin lists the RuntimeEnv
// controller rewrites as releases move (with 10,000 releases on one RuntimeEnv,
// every such write would wake them all), but everything a release reads.
TEST(RuntimeEnvWakesReleases, OnlyForWhatAReleaseReadsNotForItsPinLists) {
  const json before = json::parse(R"({
    "metadata": {"name": "torch", "namespace": "ml", "resourceVersion": "7", "generation": 2,
                 "managedFields": [{"manager": "lockstep"}]},
    "spec": {"image": "img"},
    "status": {"closureHash": "sha256:a", "currentRevision": 2, "observedGeneration": 2,
               "conditions": [{"type": "Ready", "status": "True"}],
               "revisions": [{"number": 1, "closureHash": "sha256:0", "pinnedBy": ["a"]},
                             {"number": 2, "closureHash": "sha256:a", "pinnedBy": ["b"],
                              "pinnedByCount": 1}]}})");
  json pins = before;
  pins["metadata"]["resourceVersion"] = "8";
  pins["metadata"]["managedFields"] = json::array();
  pins["status"]["revisions"][0]["pinnedBy"] = json::array();
  pins["status"]["revisions"][1]["pinnedBy"] = {"b", "c"};
  pins["status"]["revisions"][1]["pinnedByCount"] = 2;
  EXPECT_FALSE(runtimeEnvChangeConcernsReleases(before, pins));
  EXPECT_FALSE(runtimeEnvChangeConcernsReleases(before, before));

  json hashMoved = pins;
  hashMoved["status"]["closureHash"] = "sha256:b";
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, hashMoved));
  json notReady = pins;
  notReady["status"]["conditions"][0]["status"] = "False";
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, notReady));
  json pruned = pins;
  pruned["status"]["revisions"].erase(0);
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, pruned));
  json newRevision = pins;
  newRevision["status"]["revisions"].push_back({{"number", 3}, {"closureHash", "sha256:c"}});
  newRevision["status"]["currentRevision"] = 3;
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, newRevision));
  json advisories = pins;
  advisories["status"]["advisories"] = {{"revision", 2}};
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, advisories));
  json deleting = pins;
  deleting["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z";
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, deleting));
  json edited = pins;
  edited["metadata"]["generation"] = 3;
  edited["spec"]["image"] = "img2";
  EXPECT_TRUE(runtimeEnvChangeConcernsReleases(before, edited));
}

}  // namespace
}  // namespace lockstep::controllers
