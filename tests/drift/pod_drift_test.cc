// The drift scan (drift/pod_drift.h): each kind of drift, what is not drift, and
// the PolicyReport of a scan.
#include "drift/pod_drift.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/runtime_revision.h"

#include <string>
#include <vector>

namespace lockstep::drift {
namespace {

using nlohmann::json;
using webhooks::NamespaceMode;
using webhooks::RevisionView;
using webhooks::RuntimeEnvView;

const std::string kImageA = "registry.test/rt/torch@sha256:" + std::string(64, 'a');
const std::string kImageB = "registry.test/rt/torch@sha256:" + std::string(64, 'b');
const std::string kHash1 = "sha256:" + std::string(64, '1');
const std::string kHash2 = "sha256:" + std::string(64, '2');
const std::string kCli = "registry.test/lockstep/cli@sha256:" + std::string(64, 'c');

// A RuntimeEnv "torch" recording revision 2 (kHash1 on image A) and 3 (kHash2 on
// image A, current); revision 1 was pruned.
RuntimeEnvView torch() {
  RuntimeEnvView env;
  env.name = "torch";
  env.ns = "team";
  env.closureHash = kHash2;
  env.image = kImageA;
  env.ready = true;
  env.currentRevision = 3;
  env.revisions = {RevisionView{2, kImageA, kHash1}, RevisionView{3, kImageA, kHash2}};
  return env;
}

RuntimeEnvFinder finder(std::optional<RuntimeEnvView> env = torch()) {
  return [env](std::string_view name) -> std::optional<RuntimeEnvView> {
    if (env && name == env->name) return env;
    return std::nullopt;
  };
}

json pod(const std::string& name, const std::string& image, const std::string& hash,
         const std::string& env = "torch") {
  json p = {{"metadata", {{"name", name}, {"uid", "uid-" + name}, {"namespace", "team"}}},
            {"spec", {{"containers", json::array({{{"name", "server"}, {"image", image}}})}}},
            {"status", {{"phase", "Running"}}}};
  if (!env.empty()) p["metadata"]["labels"][std::string(api::v1alpha1::kRuntimeEnvLabel)] = env;
  if (!hash.empty())
    p["metadata"]["annotations"][std::string(api::v1alpha1::kClosureHashAnnotation)] = hash;
  return p;
}

std::vector<DriftFinding> drift(const json& p, NamespaceMode mode = NamespaceMode::kWarn,
                                const RuntimeEnvFinder& f = finder()) {
  return podDrift(p, mode, f, kCli);
}

TEST(PodDrift, APodOnTheCurrentOrAnOlderRecordedRevisionIsNoDrift) {
  EXPECT_TRUE(drift(pod("current", kImageA, kHash2)).empty());
  // Revision 2 is no longer current and no release pins it: a running pod on it
  // still runs exactly what was locked.
  EXPECT_TRUE(drift(pod("older", kImageA, kHash1)).empty());
  // The same image named another way (docker.io defaults are not involved here, so
  // only the digest form counts).
  EXPECT_TRUE(
      drift(pod("same", "registry.test/rt/torch@sha256:" + std::string(64, 'a'), kHash2)).empty());
}

TEST(PodDrift, AnotherImageOnARecordedClosureIsAForeignImage) {
  auto found = drift(pod("swapped", kImageB, kHash2));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, DriftKind::kForeignImage);
  EXPECT_EQ(found[0].pod, "swapped");
  EXPECT_EQ(found[0].uid, "uid-swapped");
  EXPECT_NE(found[0].message.find("container \"server\" runs image \"" + kImageB),
            std::string::npos)
      << found[0].message;
  EXPECT_NE(found[0].message.find("revision 3"), std::string::npos) << found[0].message;
  // A tag is never the recorded pair either.
  auto tagged = drift(pod("tagged", "registry.test/rt/torch:latest", kHash2));
  ASSERT_EQ(tagged.size(), 1u);
  EXPECT_EQ(tagged[0].kind, DriftKind::kForeignImage);
}

TEST(PodDrift, AnImageSwapKeepsTheClosureAndBothImagesAreRecorded) {
  RuntimeEnvView env = torch();
  env.revisions.push_back(RevisionView{4, kImageB, kHash2});  // the image swap
  EXPECT_TRUE(drift(pod("old-image", kImageA, kHash2), NamespaceMode::kWarn, finder(env)).empty());
  EXPECT_TRUE(drift(pod("new-image", kImageB, kHash2), NamespaceMode::kWarn, finder(env)).empty());
}

TEST(PodDrift, AClosureNoRevisionRecordsIsAnUnrecordedPair) {
  const std::string other = "sha256:" + std::string(64, '9');
  auto found = drift(pod("stray", kImageA, other));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, DriftKind::kUnrecordedPair);
  EXPECT_NE(found[0].message.find("recorded: 2, 3"), std::string::npos) << found[0].message;
  auto none = drift(pod("bare", kImageA, ""));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].kind, DriftKind::kUnrecordedPair);
  EXPECT_NE(none[0].message.find("runs closure (none)"), std::string::npos) << none[0].message;
}

TEST(PodDrift, APodOfAPrunedRevisionSaysSo) {
  json p = pod("old", kImageA, "sha256:" + std::string(64, '0'));
  p["metadata"]["annotations"][std::string(api::v1alpha1::kRuntimeRevisionAnnotation)] = "1";
  auto found = drift(p);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, DriftKind::kPrunedRevision);
  EXPECT_NE(found[0].message.find("of revision 1"), std::string::npos) << found[0].message;
  // A revision the RuntimeEnv still records, named by a pod whose closure is another:
  // not pruned, an unrecorded pair.
  p["metadata"]["annotations"][std::string(api::v1alpha1::kRuntimeRevisionAnnotation)] = "2";
  auto other = drift(p);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].kind, DriftKind::kUnrecordedPair);
}

TEST(PodDrift, NoOrAnUnknownRuntimeEnvUnderPolicy) {
  auto none = drift(pod("plain", kImageB, "", ""));
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].kind, DriftKind::kNoRuntimeEnv);
  EXPECT_NE(none[0].message.find("mode warn"), std::string::npos) << none[0].message;
  auto unknown = drift(pod("lost", kImageA, kHash2, "jax"));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].kind, DriftKind::kUnknownRuntimeEnv);
  EXPECT_EQ(unknown[0].runtimeEnv, "jax");
}

TEST(PodDrift, OnlyPodsUnderPolicyAreChecked) {
  // An unlabelled namespace checks only the pods that declare a RuntimeEnv.
  EXPECT_TRUE(drift(pod("plain", kImageB, "", ""), NamespaceMode::kUnset).empty());
  EXPECT_EQ(drift(pod("swapped", kImageB, kHash2), NamespaceMode::kUnset).size(), 1u);
  // Mode off: nothing.
  EXPECT_TRUE(drift(pod("swapped", kImageB, kHash2), NamespaceMode::kOff).empty());
}

TEST(PodDrift, TheVerificationInitContainersAreTrustedOthersOnTheCliImageAreNot) {
  json p = pod("verified", kImageA, kHash2);
  p["spec"]["initContainers"] = json::array({{{"name", "verify-env"}, {"image", kCli}}});
  EXPECT_TRUE(drift(p).empty());
  p["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", kCli}});
  auto found = drift(p);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, DriftKind::kForeignImage);
  EXPECT_NE(found[0].message.find("\"sidecar\""), std::string::npos) << found[0].message;
}

TEST(PodDrift, AnImageVolumeNotPinnedByDigest) {
  json p = pod("tagged-volume", kImageA, kHash2);
  p["spec"]["volumes"] =
      json::array({{{"name", "model"}, {"image", {{"reference", "registry.test/models/llama:v1"}}}},
                   {{"name", "pinned"}, {"image", {{"reference", kImageB}}}}});
  auto found = drift(p);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, DriftKind::kUnpinnedVolume);
  EXPECT_NE(found[0].message.find("\"model\""), std::string::npos) << found[0].message;
}

TEST(ScanNamespace, SkipsFinishedAndDeletedPodsAndCountsThePodsUnderPolicy) {
  json ok = pod("ok", kImageA, kHash2);
  json bad = pod("bad", kImageB, kHash2);
  json done = pod("done", kImageB, kHash2);
  done["status"]["phase"] = "Succeeded";
  json going = pod("going", kImageB, kHash2);
  going["metadata"]["deletionTimestamp"] = "2026-12-03T00:00:00Z";
  json outside = pod("outside", kImageB, "", "");
  int lookups = 0;
  RuntimeEnvFinder counting = [&](std::string_view name) {
    ++lookups;
    return finder()(name);
  };
  NamespaceScan unset = scanNamespace("team", NamespaceMode::kUnset,
                                      {&ok, &bad, &done, &going, &outside}, counting, kCli);
  EXPECT_EQ(unset.checked, 2);
  ASSERT_EQ(unset.findings.size(), 1u);
  EXPECT_EQ(unset.findings[0].pod, "bad");
  EXPECT_EQ(lookups, 1) << "one lookup per RuntimeEnv per scan";
  NamespaceScan warn = scanNamespace("team", NamespaceMode::kWarn,
                                     {&ok, &bad, &done, &going, &outside}, finder(), kCli);
  EXPECT_EQ(warn.checked, 3);
  ASSERT_EQ(warn.findings.size(), 2u);
  EXPECT_EQ(warn.findings[0].pod, "bad");
  EXPECT_EQ(warn.findings[1].pod, "outside");
}

TEST(PolicyReport, OneFailResultPerFindingAndPassesCounted) {
  json ok = pod("ok", kImageA, kHash2);
  json bad = pod("bad", kImageB, kHash2);
  json plain = pod("plain", kImageB, "", "");
  NamespaceScan scan =
      scanNamespace("team", NamespaceMode::kWarn, {&ok, &bad, &plain}, finder(), kCli);
  json report = policyReport(scan, {}, 1000);
  EXPECT_EQ(report["apiVersion"], "wgpolicyk8s.io/v1alpha2");
  EXPECT_EQ(report["kind"], "PolicyReport");
  EXPECT_EQ(report["metadata"]["name"], kReportName);
  EXPECT_EQ(report["metadata"]["namespace"], "team");
  EXPECT_EQ(report["summary"]["pass"], 1);
  EXPECT_EQ(report["summary"]["fail"], 2);
  ASSERT_EQ(report["results"].size(), 2u);
  const json& r = report["results"][0];
  EXPECT_EQ(r["policy"], kPolicyName);
  EXPECT_EQ(r["rule"], "foreign-image");
  EXPECT_EQ(r["result"], "fail");
  EXPECT_EQ(r["severity"], "high");
  EXPECT_EQ(r["timestamp"]["seconds"], 1000);
  EXPECT_EQ(r["resources"][0]["kind"], "Pod");
  EXPECT_EQ(r["resources"][0]["name"], "bad");
  EXPECT_EQ(r["resources"][0]["uid"], "uid-bad");
  EXPECT_EQ(r["properties"]["runtimeEnv"], "torch");
  EXPECT_EQ(report["results"][1]["rule"], "no-runtime-env");
  EXPECT_EQ(report["results"][1]["severity"], "medium");
}

TEST(PolicyReport, FirstSeenTimesAreKeptSoAnUnchangedScanWritesTheSameReport) {
  json bad = pod("bad", kImageB, kHash2);
  NamespaceScan scan = scanNamespace("team", NamespaceMode::kWarn, {&bad}, finder(), kCli);
  json first = policyReport(scan, {}, 1000);
  json later = policyReport(scan, sinceOf(first), 5000);
  EXPECT_EQ(first, later);
  EXPECT_EQ(sinceOf(first).at("uid-bad/foreign-image"), 1000);
}

TEST(PolicyReport, PastMaxResultsTheReportSaysHowManyItLeftOut) {
  std::vector<json> pods;
  for (int i = 0; i < 5; ++i) pods.push_back(pod("bad-" + std::to_string(i), kImageB, kHash2));
  std::vector<const json*> ptrs;
  for (const json& p : pods) ptrs.push_back(&p);
  NamespaceScan scan = scanNamespace("team", NamespaceMode::kWarn, ptrs, finder(), kCli);
  json report = policyReport(scan, {}, 1, 3);
  EXPECT_EQ(report["results"].size(), 3u);
  EXPECT_EQ(report["summary"]["fail"], 5);
  EXPECT_EQ(report["metadata"]["annotations"]["lockstep.dev/results-left-out"], "2");
}

TEST(PodFieldMask, KeepsWhatTheScanReads) {
  const json& mask = podFieldMask();
  EXPECT_TRUE(mask["metadata"].contains("uid"));
  EXPECT_TRUE(mask["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(mask["status"].contains("phase"));
  EXPECT_TRUE(mask["spec"].contains("containers"));
}

}  // namespace
}  // namespace lockstep::drift
