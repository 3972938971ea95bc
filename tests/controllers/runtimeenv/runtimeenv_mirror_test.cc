// The mirror check (pure): when a check is due, which artifacts it asks for, how a
// result becomes status.mirror, the Mirrored condition, its Events and the metric, and
// the promotion rule the ModelRelease controller reads.
#include "controllers/runtimeenv/runtimeenv_mirror.h"

#include <string>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_mirror.h"
#include "closure/closure.h"
#include "controllers/runtimeenv/runtimeenv_plan.h"
#include "tests/support/builders.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons and types

constexpr int64_t kNow = 1796145630;  // 2026-12-01T17:20:30Z
const std::string kRepo = "registry.example:5000/mirror/app";

std::string hex(char c) { return std::string(64, c); }

// A uv lock of five registry packages, one wheel each (and the project itself, not mirrored).
std::string uvLock() {
  std::string out =
      "version = 1\nrequires-python = \">=3.9\"\n\n[[package]]\nname = \"app\"\n"
      "version = \"0.1.0\"\nsource = { editable = \".\" }\n";
  const char digits[] = {'a', 'b', 'c', 'd', 'e'};
  for (int i = 0; i < 5; ++i) {
    const std::string name = std::string("pkg") + static_cast<char>('1' + i);
    out += "\n[[package]]\nname = \"" + name +
           "\"\nversion = \"1.0\"\n"
           "source = { registry = \"https://pypi.example/simple\" }\n"
           "wheels = [\n    { url = \"https://files.example/" +
           name + "-1.0-py3-none-any.whl\", hash = \"sha256:" + hex(digits[i]) +
           "\", size = 10 },\n]\n";
  }
  return out;
}

const closure::Closure& theClosure() {
  static const closure::Closure c = [] {
    auto r = closure::computeClosure(uvLock(), {});
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return *r;
  }();
  return c;
}

MirrorSpec spec(int64_t interval = 600) {
  MirrorSpec s;
  s.repository = kRepo;
  s.intervalSeconds = interval;
  return s;
}

MirrorInput input() {
  MirrorInput in;
  in.spec = spec();
  in.name = "torch";
  in.revision = 2;
  in.closure = &theClosure();
  in.closureHash = theClosure().closureHash;
  in.nowUnix = kNow;
  return in;
}

MirrorCheckResult checked(std::vector<MissingArtifact> missing, bool manifest = true,
                          int64_t at = kNow - 5) {
  MirrorCheckResult r;
  r.repository = kRepo;
  r.closureHash = theClosure().closureHash;
  r.revision = 2;
  r.checkedAtUnix = at;
  r.artifacts = 5;
  r.manifestPresent = manifest;
  r.missing = std::move(missing);
  return r;
}

MissingArtifact missing(int i, char digit) {
  const std::string name = "pkg" + std::to_string(i);
  return {name + "-1.0-py3-none-any.whl", "pkg:pypi/" + name + "@1.0", "sha256:" + hex(digit)};
}

json asCondition(const kube::Condition& c) {
  return {{"type", c.type}, {"status", c.status}, {"reason", c.reason}, {"message", c.message}};
}

TEST(MirrorCheck, WithoutSpecMirrorNothingIsCheckedAndTheMetricGoes) {
  MirrorInput in = input();
  in.spec.reset();
  MirrorPlan p = planMirrorCheck(in);
  EXPECT_FALSE(p.keep);
  EXPECT_TRUE(p.status.is_null());
  EXPECT_FALSE(p.mirrored);
  EXPECT_FALSE(p.check);
  EXPECT_EQ(p.missingGauge, -1);
}

TEST(MirrorCheck, ANewRevisionIsCheckedAtOnceForEveryFileOfItsClosure) {
  MirrorPlan p = planMirrorCheck(input());
  ASSERT_TRUE(p.mirrored);
  EXPECT_EQ(p.mirrored->status, kStatusUnknown);
  EXPECT_EQ(p.mirrored->reason, kReasonMirrorCheckPending);
  EXPECT_NE(p.mirrored->message.find("checking 5 artifacts"), std::string::npos)
      << p.mirrored->message;
  EXPECT_TRUE(p.events.empty());  // pending is no news
  ASSERT_TRUE(p.check);
  EXPECT_EQ(p.check->repository, kRepo);
  EXPECT_EQ(p.check->where.registry, "registry.example:5000");
  EXPECT_EQ(p.check->where.repository, "mirror/app");
  EXPECT_EQ(p.check->closureHash, theClosure().closureHash);
  EXPECT_EQ(p.check->revision, 2);
  ASSERT_EQ(p.check->artifacts.size(), 5u);
  EXPECT_EQ(p.check->artifacts[0].digest, "sha256:" + hex('a'));
  EXPECT_EQ(p.check->artifacts[0].fileName, "pkg1-1.0-py3-none-any.whl");
  EXPECT_FALSE(p.missingGauge);  // nothing known yet
  EXPECT_GT(p.requeueAfterSeconds, 0);
}

TEST(MirrorCheck, EverythingPresentIsMirroredTrueUntilTheIntervalComesRound) {
  MirrorInput in = input();
  in.latest = checked({});
  MirrorPlan p = planMirrorCheck(in);
  ASSERT_TRUE(p.mirrored);
  EXPECT_EQ(p.mirrored->status, kStatusTrue);
  EXPECT_EQ(p.mirrored->reason, kReasonMirrorComplete);
  EXPECT_NE(p.mirrored->message.find("all 5 artifacts and the artifact manifest"),
            std::string::npos);
  EXPECT_FALSE(p.check);
  EXPECT_EQ(p.requeueAfterSeconds, 600 - 5);
  EXPECT_EQ(p.missingGauge, 0);
  EXPECT_EQ(p.status["result"], "Complete");
  EXPECT_EQ(p.status["checkedAt"], "2026-12-01T17:20:25Z");
  EXPECT_EQ(p.status["nextCheckAt"], "2026-12-01T17:30:25Z");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "Normal");
  EXPECT_EQ(p.events[0].reason, kReasonMirrorComplete);

  // Recorded: the next reconcile reads it from the status alone (an operator restart)
  // and says nothing new.
  MirrorInput again = input();
  again.previousStatus = p.status;
  again.previousCondition = asCondition(*p.mirrored);
  MirrorPlan q = planMirrorCheck(again);
  EXPECT_EQ(q.status, p.status);
  EXPECT_EQ(q.mirrored->reason, kReasonMirrorComplete);
  EXPECT_TRUE(q.events.empty());
  EXPECT_FALSE(q.check);

  // The interval has passed: checked again, the condition kept meanwhile.
  again.nowUnix = kNow + 600;
  MirrorPlan r = planMirrorCheck(again);
  EXPECT_TRUE(r.check);
  EXPECT_EQ(r.mirrored->reason, kReasonMirrorComplete);
  EXPECT_TRUE(r.events.empty());
}

TEST(MirrorCheck, MissingArtifactsAreNamedFirstThreeAndCounted) {
  MirrorInput in = input();
  in.latest = checked({missing(1, 'a'), missing(2, 'b'), missing(3, 'c'), missing(5, 'e')});
  MirrorPlan p = planMirrorCheck(in);
  ASSERT_TRUE(p.mirrored);
  EXPECT_EQ(p.mirrored->status, kStatusFalse);
  EXPECT_EQ(p.mirrored->reason, kReasonArtifactsMissing);
  EXPECT_EQ(p.mirrored->message,
            "4 of 5 artifacts are missing from the mirror " + kRepo + " (closure " +
                theClosure().closureHash +
                ", revision 2): pkg1-1.0-py3-none-any.whl (sha256:aaaaaaaaaaaa…), "
                "pkg2-1.0-py3-none-any.whl (sha256:bbbbbbbbbbbb…), pkg3-1.0-py3-none-any.whl "
                "(sha256:cccccccccccc…) and 1 more");
  EXPECT_EQ(p.missingGauge, 4);
  EXPECT_EQ(p.status["missing"], 4);
  EXPECT_EQ(p.status["missingArtifacts"].size(), 4u);
  EXPECT_EQ(p.status["missingArtifacts"][3]["digest"], "sha256:" + hex('e'));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "Warning");
  EXPECT_EQ(p.events[0].message, p.mirrored->message);

  // One more goes missing: a new Warning.
  MirrorInput later = input();
  later.previousStatus = p.status;
  later.previousCondition = asCondition(*p.mirrored);
  later.latest =
      checked({missing(1, 'a'), missing(2, 'b'), missing(3, 'c'), missing(4, 'd'), missing(5, 'e')},
              true, kNow + 1);
  MirrorPlan q = planMirrorCheck(later);
  EXPECT_EQ(q.missingGauge, 5);
  ASSERT_EQ(q.events.size(), 1u);
  EXPECT_NE(q.events[0].message.find("5 of 5 artifacts are missing"), std::string::npos);
}

TEST(MirrorCheck, OneMissingBlobAndAMissingManifest) {
  MirrorInput in = input();
  in.latest = checked({missing(2, 'b')}, false);
  MirrorPlan p = planMirrorCheck(in);
  EXPECT_EQ(p.mirrored->reason, kReasonArtifactsMissing);
  EXPECT_NE(p.mirrored->message.find("1 of 5 artifacts is missing"), std::string::npos)
      << p.mirrored->message;
  EXPECT_NE(p.mirrored->message.find("; the artifact manifest (tag closure-" +
                                     theClosure().closureHash.substr(7) + ") is missing too"),
            std::string::npos)
      << p.mirrored->message;

  in.latest = checked({}, false);
  p = planMirrorCheck(in);
  EXPECT_EQ(p.mirrored->status, kStatusFalse);
  EXPECT_NE(p.mirrored->message.find("the artifact manifest (tag closure-"), std::string::npos);
  EXPECT_NE(p.mirrored->message.find("all 5 artifacts are there"), std::string::npos);
}

TEST(MirrorCheck, AnUnreachableRegistryIsUnknownNeverTrueAndAskedAgainInAMinute) {
  MirrorInput in = input();
  // The last check found everything; the registry is down now.
  in.previousStatus = encodeMirrorStatus(recordOf(checked({}, true, kNow - 700), spec()));
  in.previousCondition = {{"type", "Mirrored"}, {"status", "True"}, {"reason", "MirrorComplete"}};
  MirrorCheckResult down = checked({}, false, kNow - 2);
  down.outcome = MirrorCheckResult::Outcome::kUnreachable;
  down.error = "registry registry.example:5000: connection refused";
  in.latest = down;
  MirrorPlan p = planMirrorCheck(in);
  EXPECT_EQ(p.mirrored->status, kStatusUnknown);
  EXPECT_EQ(p.mirrored->reason, kReasonMirrorUnreachable);
  EXPECT_NE(p.mirrored->message.find("could not be checked: registry registry.example:5000: "
                                     "connection refused"),
            std::string::npos);
  EXPECT_EQ(p.status["result"], "Unreachable");
  EXPECT_EQ(p.requeueAfterSeconds, 60 - 2);
  EXPECT_FALSE(p.missingGauge);  // the last known count stands
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "Warning");

  MirrorCheckResult refused = down;
  refused.outcome = MirrorCheckResult::Outcome::kCredentials;
  refused.error = "Secret ml/pull does not lend its credentials to " + kRepo;
  in.latest = refused;
  p = planMirrorCheck(in);
  EXPECT_EQ(p.mirrored->status, kStatusUnknown);
  EXPECT_EQ(p.mirrored->reason, kReasonMirrorCredentialsUnavailable);
  EXPECT_NE(p.mirrored->message.find("could not be checked: Secret ml/pull does not lend"),
            std::string::npos)
      << p.mirrored->message;
}

TEST(MirrorCheck, ARecordOfAnotherClosureOrRepositoryDoesNotCount) {
  MirrorInput in = input();
  MirrorCheckResult old = checked({});
  old.closureHash = "sha256:" + hex('0');
  old.revision = 1;
  in.previousStatus = encodeMirrorStatus(recordOf(old, spec()));
  in.latest = old;
  MirrorPlan p = planMirrorCheck(in);
  EXPECT_EQ(p.mirrored->reason, kReasonMirrorCheckPending);
  EXPECT_TRUE(p.check);
  EXPECT_EQ(p.status, in.previousStatus);  // kept: it names what it describes

  MirrorInput moved = input();
  moved.latest = checked({});
  moved.spec->repository = "registry.example:5000/mirror/other";
  p = planMirrorCheck(moved);
  EXPECT_EQ(p.mirrored->reason, kReasonMirrorCheckPending);
  ASSERT_TRUE(p.check);
  EXPECT_EQ(p.check->where.repository, "mirror/other");
}

TEST(MirrorCheck, AnUnresolvedLockLeavesTheRecordAlone) {
  MirrorInput in = input();
  in.closure = nullptr;
  MirrorPlan p = planMirrorCheck(in);
  EXPECT_TRUE(p.keep);
  EXPECT_FALSE(p.check);
}

TEST(MirrorCheck, ARuntimeEnvBeingDeletedIsNotCheckedAgain) {
  MirrorInput in = input();
  in.beingDeleted = true;
  MirrorPlan p = planMirrorCheck(in);
  EXPECT_TRUE(p.keep);
  EXPECT_FALSE(p.check);
  EXPECT_EQ(p.missingGauge, -1);
}

TEST(MirrorCheck, AMalformedSpecIsInvalidMirrorNamingTheField) {
  MirrorInput in = input();
  in.spec->repository = "not a repository";
  MirrorPlan p = planMirrorCheck(in);
  ASSERT_TRUE(p.mirrored);
  EXPECT_EQ(p.mirrored->status, kStatusFalse);
  EXPECT_EQ(p.mirrored->reason, kReasonInvalidMirror);
  EXPECT_EQ(p.mirrored->message.rfind("spec.mirror.repository: ", 0), 0u) << p.mirrored->message;
  EXPECT_FALSE(p.check);

  json rte = {{"metadata", {{"name", "t"}}},
              {"spec", {{"mirror", {{"repository", kRepo}, {"interval", "5s"}}}}}};
  auto decoded = decodeMirrorSpec(rte);
  ASSERT_FALSE(decoded.isOk());
  EXPECT_NE(decoded.status().message().find("spec.mirror.interval"), std::string::npos);
  rte["spec"]["mirror"] = {{"repository", kRepo}, {"credentialsSecretRef", {{"name", 3}}}};
  decoded = decodeMirrorSpec(rte);
  ASSERT_FALSE(decoded.isOk());
  EXPECT_NE(decoded.status().message().find("spec.mirror.credentialsSecretRef.name"),
            std::string::npos);
  rte["spec"]["mirror"] = {{"repository", kRepo},
                           {"credentialsSecretRef", {{"name", "pull"}}},
                           {"interval", "2m"},
                           {"requiredForPromotion", true}};
  decoded = decodeMirrorSpec(rte);
  ASSERT_TRUE(decoded.isOk() && decoded->has_value());
  EXPECT_EQ((*decoded)->credentialsSecret, "pull");
  EXPECT_EQ((*decoded)->intervalSeconds, 120);
  EXPECT_TRUE((*decoded)->requiredForPromotion);
}

TEST(MirrorCheck, ASecretLendsItselfOnlyToTheRepositoriesItNames) {
  const mirror::RepositoryRef repo{"registry.example:5000", "mirror/app"};
  EXPECT_TRUE(secretLendsTo("registry.example:5000/mirror/app", repo));
  EXPECT_TRUE(secretLendsTo("other.example/x, registry.example:5000/mirror/", repo));
  EXPECT_TRUE(secretLendsTo("registry.example:5000/mirror", repo));
  EXPECT_FALSE(secretLendsTo("registry.example:5000/mirror/ap", repo));
  EXPECT_FALSE(secretLendsTo("registry.example:5000/mirror/app/sub", repo));
  EXPECT_FALSE(secretLendsTo("registry.example:5000", repo));  // a bare host lends nothing
  EXPECT_FALSE(secretLendsTo("registry.example/mirror/app", repo));
  EXPECT_FALSE(secretLendsTo("", repo));
}

json mirroredRte(const std::string& conditionStatus, int64_t observed = 3, bool required = true) {
  const std::string hash = theClosure().closureHash;
  return {{"metadata", {{"name", "torch"}, {"generation", 3}}},
          {"spec", {{"mirror", {{"repository", kRepo}, {"requiredForPromotion", required}}}}},
          {"status",
           {{"closureHash", hash},
            {"mirror", {{"closureHash", hash}, {"repository", kRepo}, {"result", "Complete"}}},
            {"conditions", json::array({{{"type", "Mirrored"},
                                         {"status", conditionStatus},
                                         {"reason", "X"},
                                         {"message", "4 of 5 artifacts are missing"},
                                         {"observedGeneration", observed}}})}}}};
}

TEST(MirrorCheck, RequiredForPromotionHoldsUntilMirroredForTheCurrentClosure) {
  EXPECT_EQ(mirrorBlocksPromotion(mirroredRte("True")), std::nullopt);
  EXPECT_EQ(mirrorBlocksPromotion(mirroredRte("False", 3, false)), std::nullopt);
  EXPECT_EQ(mirrorBlocksPromotion(mirroredRte("False")).value_or(""),
            "RuntimeEnv \"torch\" requires its mirror for promotion: 4 of 5 artifacts are missing");
  EXPECT_NE(mirrorBlocksPromotion(mirroredRte("True", 2)).value_or("").find("is not checked yet"),
            std::string::npos);
  json newClosure = mirroredRte("True");
  newClosure["status"]["closureHash"] = "sha256:" + hex('9');
  EXPECT_NE(mirrorBlocksPromotion(newClosure).value_or("").find("is not checked yet"),
            std::string::npos);
  json noCondition = mirroredRte("True");
  noCondition["status"]["conditions"] = json::array();
  EXPECT_TRUE(mirrorBlocksPromotion(noCondition));
}

// Through the RuntimeEnv planner: status.mirror, the condition and the Event.
TEST(MirrorCheck, TheRuntimeEnvPlanCarriesTheMirror) {
  const std::string image =
      "registry.example/runtimes/"
      "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
  json rte = testing::runtimeEnv("torch").image(image).inlineLock(uvLock()).build();
  rte["spec"]["mirror"] = {{"repository", kRepo}, {"interval", "10m"}};
  RuntimeEnvObserved o;
  o.runtimeEnv = std::make_shared<const json>(rte);
  o.nowUnix = kNow;
  RuntimeEnvPlan p = planRuntimeEnv(o, "2026-12-01T17:20:30Z");
  ASSERT_TRUE(p.mirror.check);
  auto c = kube::findCondition(p.status["conditions"], kConditionMirrored);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["reason"], kReasonMirrorCheckPending);

  MirrorCheckResult r = checked({missing(3, 'c')});
  r.revision = p.status.value("currentRevision", 0);
  o.mirrorLatest = r;
  p = planRuntimeEnv(o, "2026-12-01T17:20:30Z");
  c = kube::findCondition(p.status["conditions"], kConditionMirrored);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["status"], "False");
  EXPECT_EQ(p.status["mirror"]["missing"], 1);
  bool warned = false;
  for (const auto& e : p.events) warned |= e.reason == kReasonArtifactsMissing;
  EXPECT_TRUE(warned);
}

// A Nix path-info lock (`nix path-info --json --recursive`, Nix 2.8): its NARs are
// artifacts like wheels, one HEAD each under the narHash's sha256.
TEST(MirrorCheck, NixNarsAreCheckedAndCountedLikeOtherArtifacts) {
  const std::string lock =
      R"([{"path":"/nix/store/3v48v4c4czb950lyipir65701lisxkxg-top","narHash":"sha256-9nIg+WAQEqHLTZpTWkskv/aRvzmN9iX8P/27mE5UXBA=","narSize":168,"references":["/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep"]},)"
      R"({"path":"/nix/store/d15qq4w4xqa7g8ahbz0lwxvxvhjcd1is-dep","narHash":"sha256-FVcImz9sWhSb74L5u30+1KrcOHzTY1SsY5uBlqln5/M=","narSize":480,"references":[]}])";
  auto c = closure::computeClosure(lock, {});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  MirrorInput in = input();
  in.closure = &*c;
  in.closureHash = c->closureHash;
  MirrorPlan p = planMirrorCheck(in);
  ASSERT_TRUE(p.check);
  ASSERT_EQ(p.check->artifacts.size(), 2u);
  EXPECT_EQ(p.check->artifacts[1].digest,
            "sha256:f67220f9601012a1cb4d9a535a4b24bff691bf398df625fc3ffdbb984e545c10");
  EXPECT_EQ(p.check->artifacts[1].fileName, "3v48v4c4czb950lyipir65701lisxkxg-top.nar");
  EXPECT_NE(p.mirrored->message.find("checking 2 artifacts"), std::string::npos)
      << p.mirrored->message;

  MirrorCheckResult r;
  r.repository = kRepo;
  r.closureHash = c->closureHash;
  r.revision = 2;
  r.checkedAtUnix = kNow - 5;
  r.artifacts = 2;
  r.manifestPresent = true;
  r.missing = {
      {"3v48v4c4czb950lyipir65701lisxkxg-top.nar", "pkg:nix/top", p.check->artifacts[1].digest}};
  in.latest = r;
  MirrorPlan q = planMirrorCheck(in);
  EXPECT_EQ(q.mirrored->reason, kReasonArtifactsMissing);
  EXPECT_NE(q.mirrored->message.find("1 of 2 artifacts is missing"), std::string::npos)
      << q.mirrored->message;
  EXPECT_NE(
      q.mirrored->message.find("3v48v4c4czb950lyipir65701lisxkxg-top.nar (sha256:f67220f96010"),
      std::string::npos)
      << q.mirrored->message;
  EXPECT_EQ(q.missingGauge, 1);
}

}  // namespace
}  // namespace lockstep::controllers
