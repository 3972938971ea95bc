// Admission by revision (pod_validator.h): a pod is admitted on its RuntimeEnv's
// current revision, or on a pinned revision when its lockstep.dev/release label
// names a release pinning exactly that revision. Pure: no server, no cluster.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/webhooks/builders.h"
#include "webhooks/admission/pod_validator.h"

namespace lockstep::webhooks {
namespace {

using testing::PodBuilder;
using testing::sha;

const std::string kImage1 = "registry.example/runtimes/torch@" + sha('1');
const std::string kImage2 = "registry.example/runtimes/torch@" + sha('2');
const std::string kHash1 = sha('a');
const std::string kHash2 = sha('b');
const std::string kHash3 = sha('d');

// Revisions: 1 (image1, hash1) pinned by v1, 2 (image1, hash2) unpinned, 3 (image2, hash3)
// current. Revision 0 never existed; a revision 4+ would be newer than the record.
RuntimeEnvView torchPodRevisionAdmission(bool ready = true) {
  RuntimeEnvView v{"torch", "ml", kHash3, kImage2, ready};
  v.currentRevision = 3;
  v.revisions = {{1, kImage1, kHash1, {"v1"}}, {2, kImage1, kHash2, {}}, {3, kImage2, kHash3, {}}};
  return v;
}

PodBuilder podOn(const std::string& image, const std::string& hash) {
  return PodBuilder("web-1").env("torch").hash(hash).container("app", image);
}

Verdict check(const nlohmann::json& pod, NamespaceMode mode = NamespaceMode::kUnset,
              std::optional<RuntimeEnvView> env = torchPodRevisionAdmission()) {
  PodReview r;
  r.ns = "ml";
  r.pod = &pod;
  r.mode = mode;
  r.runtimeEnv = std::move(env);
  return validatePod(r);
}

TEST(PodRevisionAdmission, CurrentRevisionIsAdmittedWithOrWithoutARelease) {
  EXPECT_EQ(check(podOn(kImage2, kHash3).json()).decision, Decision::kAllowed);
  EXPECT_EQ(check(podOn(kImage2, kHash3).release("v9").json()).decision, Decision::kAllowed);
}

TEST(PodRevisionAdmission, PinnedRevisionNeedsThePinningRelease) {
  // Must show 4: on an old pinned revision, without a release: refused.
  Verdict none = check(podOn(kImage1, kHash1).json());
  EXPECT_EQ(none.decision, Decision::kDenied);
  EXPECT_NE(none.message.find("the pod claims closure \"" + kHash1 + "\" on image(s) \"" + kImage1 +
                              "\" and names no release (label lockstep.dev/release)"),
            std::string::npos)
      << none.message;
  EXPECT_NE(none.message.find("has it as revision 1 (image \"" + kImage1 + "\", closure \"" +
                              kHash1 + "\"), pinned only by release(s) \"v1\""),
            std::string::npos)
      << none.message;
  // What the current revision wanted is still said.
  EXPECT_NE(none.message.find("expected \"" + kHash3 + "\""), std::string::npos) << none.message;

  // The same pod naming the pinning release: admitted.
  Verdict v1 = check(podOn(kImage1, kHash1).release("v1").json());
  EXPECT_EQ(v1.decision, Decision::kAllowed) << v1.message;
  EXPECT_TRUE(v1.violations.empty());

  // Naming another release: refused, with the release it named.
  Verdict v2 = check(podOn(kImage1, kHash1).release("v2").json());
  EXPECT_EQ(v2.decision, Decision::kDenied);
  EXPECT_NE(v2.message.find("for release \"v2\""), std::string::npos) << v2.message;
}

TEST(PodRevisionAdmission, AReleaseAdmitsOnlyExactlyThePairItPins) {
  // v1 pins (image1, hash1): the right hash on another image, or the right image on another
  // hash (a recorded, unpinned revision), is no pinned revision.
  for (const auto& [image, hash] : std::vector<std::pair<std::string, std::string>>{
           {kImage2, kHash1}, {kImage1, kHash2}, {kImage1, kHash3}}) {
    SCOPED_TRACE(image + " " + hash);
    Verdict v = check(podOn(image, hash).release("v1").json());
    EXPECT_EQ(v.decision, Decision::kDenied);
    EXPECT_NE(v.message.find("current: revision 3 (image \"" + kImage2 + "\", closure \"" + kHash3 +
                             "\"); pinned: revision 1 (image \"" + kImage1 + "\", closure \"" +
                             kHash1 + "\") for release(s) \"v1\""),
              std::string::npos)
        << v.message;
  }
  // Every container counts: an init container on the current image is not on revision 1.
  Verdict mixed = check(podOn(kImage1, kHash1).release("v1").init("setup", kImage2).json());
  EXPECT_EQ(mixed.decision, Decision::kDenied);
}

TEST(PodRevisionAdmission, PrunedRevisionIsNamed) {
  // Built from a revision 7 that is not recorded any more (pruned).
  Verdict v = check(
      podOn(kImage1, sha('e')).release("v0").annotate("lockstep.dev/runtime-revision", "7").json());
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("revision 7 (annotation lockstep.dev/runtime-revision) was pruned "
                           "from the RuntimeEnv (retained: 1, 2, 3)"),
            std::string::npos)
      << v.message;
  // The annotation admits nothing by itself: a recorded revision the pod is not on.
  Verdict w = check(
      podOn(kImage1, sha('e')).release("v1").annotate("lockstep.dev/runtime-revision", "1").json());
  EXPECT_EQ(w.decision, Decision::kDenied);
  EXPECT_NE(w.message.find("names revision 1, whose image and closure the pod does not match"),
            std::string::npos)
      << w.message;
}

TEST(PodRevisionAdmission, WarnModeWarnsWithTheSameText) {
  const nlohmann::json pod = podOn(kImage1, kHash1).json();
  Verdict denied = check(pod, NamespaceMode::kEnforce);
  Verdict warned = check(pod, NamespaceMode::kWarn);
  EXPECT_EQ(denied.decision, Decision::kDenied);
  EXPECT_EQ(warned.decision, Decision::kWarned);
  EXPECT_TRUE(warned.allowed());
  EXPECT_EQ(warned.violations, denied.violations);
  std::string joined;
  for (const auto& w : warned.warnings) {
    joined += (joined.empty() ? "" : "; ") + w.substr(w.find(": ", w.find("pod \"")) + 2);
  }
  EXPECT_EQ("lockstep: pod \"ml/web-1\": " + joined, denied.message);
}

TEST(PodRevisionAdmission, PinnedRevisionsStayAdmissibleWhileTheLockIsBroken) {
  // A lock edit that does not resolve: Ready=False. The current revision admits nothing, but
  // prod pods of the pinning release are still admitted (a lock edit never takes prod down).
  EXPECT_EQ(check(podOn(kImage1, kHash1).release("v1").json(), NamespaceMode::kUnset,
                  torchPodRevisionAdmission(false))
                .decision,
            Decision::kAllowed);
  Verdict v =
      check(podOn(kImage2, kHash3).json(), NamespaceMode::kUnset, torchPodRevisionAdmission(false));
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_NE(v.message.find("is not Ready"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("(not Ready)"), std::string::npos) << v.message;
}

TEST(PodRevisionAdmission, UpdatesAreCheckedAgainstThePodsRevision) {
  // An ephemeral container added to a running pod of v1 on revision 1: it must be on image1.
  const nlohmann::json old = podOn(kImage1, kHash1).release("v1").json();
  const nlohmann::json good = podOn(kImage1, kHash1).release("v1").ephemeral("dbg", kImage1).json();
  const nlohmann::json bad =
      podOn(kImage1, kHash1).release("v1").ephemeral("dbg", "busybox@" + sha('f')).json();
  for (const auto& [pod, want] : std::vector<std::pair<const nlohmann::json*, Decision>>{
           {&good, Decision::kAllowed}, {&bad, Decision::kDenied}}) {
    PodReview r;
    r.operation = Operation::kUpdate;
    r.ns = "ml";
    r.pod = pod;
    r.oldPod = &old;
    r.runtimeEnv = torchPodRevisionAdmission();
    EXPECT_EQ(validatePod(r).decision, want);
  }
}

TEST(PodRevisionAdmission, WithoutRecordedRevisionsTheMessageIsUnchanged) {
  // A RuntimeEnv status written before revisions existed: only the current pair, as before.
  RuntimeEnvView legacy{"torch", "ml", kHash3, kImage2, true};
  Verdict v = check(podOn(kImage1, kHash1).release("v1").json(), NamespaceMode::kUnset, legacy);
  EXPECT_EQ(v.decision, Decision::kDenied);
  EXPECT_EQ(v.message.find("the pod claims"), std::string::npos) << v.message;
}

}  // namespace
}  // namespace lockstep::webhooks
