// Admission by revision against the real control plane (must show 4): the
// operator binary serves the chart's pod webhook from its informer caches.
// Only the RuntimeEnv controller runs (--controllers=runtimeenv): the test
// writes the ModelRelease's status (Promoted) itself, as the release
// controller would, so the RuntimeEnv records it as pinning its revision.
// Pods are created with --dry-run=server: admission runs, nothing is stored.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string& kImage = kClusterTestImage;

std::string pipLock(const std::string& numpy) {
  return "numpy==" + numpy + " --hash=sha256:" + std::string(64, 'a') + "\n";
}

json pod(const std::string& hash, const std::string& release = "",
         const std::string& revisionAnnotation = "") {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", "serve-0"},
              {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
              {"annotations", {{"lockstep.dev/closure-hash", hash}}}}},
            {"spec", {{"containers", json::array({{{"name", "main"}, {"image", kImage}}})}}}};
  if (!release.empty()) p["metadata"]["labels"]["lockstep.dev/release"] = release;
  if (!revisionAnnotation.empty())
    p["metadata"]["annotations"]["lockstep.dev/runtime-revision"] = revisionAnnotation;
  return p;
}

class RevisionAdmissionTest : public OperatorSuite<RevisionAdmissionTest> {
 protected:
  static void SetUpTestSuite() { startOperator({"--controllers=runtimeenv"}); }
  void TearDown() override {
    printOperatorLogOnFailure();
    kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  void applyRte(const std::string& lock) {
    json rte = {
        {"apiVersion", "lockstep.dev/v1alpha1"},
        {"kind", "RuntimeEnv"},
        {"metadata", {{"name", "torch"}}},
        {"spec", {{"image", kImage}, {"lock", {{"inline", lock}}}, {"revisionHistoryLimit", 0}}}};
    auto r = kubectl({"apply", "-n", ns_, "-f", "-"}, rte.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  json waitRevision(int64_t revision) {
    json o;
    EXPECT_TRUE(eventually([&] {
      o = kubectlJson({"get", "rte", "torch", "-n", ns_});
      return !o.is_discarded() && o.contains("status") &&
             o["status"].value("observedGeneration", -1) == o["metadata"].value("generation", 0) &&
             o["status"].value("currentRevision", 0) == revision;
    })) << o.dump(2);
    return o;
  }
  CommandResult create(const json& p) {
    return kubectl({"create", "-n", ns_, "--dry-run=server", "-f", "-"}, p.dump());
  }
  // Waits until the webhook answers `p` with the wanted outcome (the namespace mode and the
  // RuntimeEnv reach the webhook's informer caches a moment after they are written).
  CommandResult createUntil(const json& p, bool admitted) {
    CommandResult r;
    eventually([&] {
      r = create(p);
      return (r.exitCode == 0) == admitted;
    });
    return r;
  }

  std::string ns_;
};

TEST_F(RevisionAdmissionTest, OldPinnedRevisionIsAdmittedOnlyForThePinningRelease) {
  ns_ = uniqueName("revadm");
  ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  ASSERT_EQ(kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce"}).exitCode, 0);
  applyRte(pipLock("1.26.4"));
  const std::string h1 = waitRevision(1)["status"]["closureHash"];

  // v1 was validated on revision 1 and is in prod.
  json mr = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "v1"}}},
      {"spec",
       {{"model", "gpt2"},
        {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
        {"runtimeEnvRef", {{"name", "torch"}}},
        {"closureHash", h1},
        {"stages", json::array({{{"name", "eval"}, {"gate", {{"template", json::object()}}}}})}}}};
  ASSERT_EQ(kubectl({"create", "-n", ns_, "-f", "-"}, mr.dump()).exitCode, 0);
  // As the operator (the chart's status policy admits no one else to a release's status).
  ASSERT_EQ(patchStatusAsOperator("mr", ns_, "v1",
                                  {{"phase", "Promoted"}, {"canary", {{"phase", "Promoted"}}}})
                .exitCode,
            0);
  json pinned;
  ASSERT_TRUE(eventually([&] {
    pinned = kubectlJson({"get", "rte", "torch", "-n", ns_});
    return pinned["status"].value("pinnedRevisions", 0) == 1;
  })) << pinned.dump(2);

  // The platform engineer edits the lock in place: revision 2 is current.
  applyRte(pipLock("1.26.5"));
  const std::string h2 = waitRevision(2)["status"]["closureHash"];
  ASSERT_NE(h1, h2);

  // A pod on the current revision: admitted, whatever release it names.
  CommandResult current = createUntil(pod(h2), true);
  EXPECT_EQ(current.exitCode, 0) << current.err;

  // A pod on revision 1 that names no release: refused, naming what it claims and the
  // current and pinned revisions.
  CommandResult orphan = createUntil(pod(h1), false);
  ASSERT_NE(orphan.exitCode, 0);
  EXPECT_NE(orphan.err.find("pods.lockstep.dev"), std::string::npos) << orphan.err;
  EXPECT_NE(orphan.err.find("the pod claims closure \"" + h1 + "\" on image(s) \"" + kImage +
                            "\" and names no release"),
            std::string::npos)
      << orphan.err;
  EXPECT_NE(orphan.err.find("has it as revision 1 (image \"" + kImage + "\", closure \"" + h1 +
                            "\"), pinned only by release(s) \"v1\""),
            std::string::npos)
      << orphan.err;
  const size_t from = orphan.err.find("the pod claims");
  const std::string summary = orphan.err.substr(from, orphan.err.find('\n', from) - from);

  // The same pod naming the pinning release: admitted (an evicted stable pod comes back).
  CommandResult stable = create(pod(h1, "v1"));
  EXPECT_EQ(stable.exitCode, 0) << stable.err;
  // Naming another release: refused.
  EXPECT_NE(create(pod(h1, "v9")).exitCode, 0);

  // A warn-mode namespace warns with the same text.
  ASSERT_EQ(
      kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=warn", "--overwrite"}).exitCode, 0);
  CommandResult warned = createUntil(pod(h1), true);
  EXPECT_EQ(warned.exitCode, 0) << warned.err;
  EXPECT_NE(warned.err.find("Warning:"), std::string::npos) << warned.err;
  EXPECT_NE(warned.err.find(summary), std::string::npos) << "want: " << summary << "\n"
                                                         << warned.err;
  ASSERT_EQ(
      kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce", "--overwrite"}).exitCode,
      0);
  ASSERT_NE(createUntil(pod(h1), false).exitCode, 0);

  // Another lock edit (revisionHistoryLimit 0): revision 2, unpinned, is pruned. A pod built
  // from it is refused with the revision named.
  applyRte(pipLock("1.26.6"));
  json r3 = waitRevision(3);
  std::vector<int64_t> kept;
  for (const auto& r : r3["status"]["revisions"]) kept.push_back(r["number"]);
  ASSERT_EQ(kept, (std::vector<int64_t>{1, 3}));
  CommandResult pruned = createUntil(pod(h2, "v1", "2"), false);
  ASSERT_NE(pruned.exitCode, 0);
  EXPECT_NE(pruned.err.find("revision 2 (annotation lockstep.dev/runtime-revision) was pruned "
                            "from the RuntimeEnv (retained: 1, 3)"),
            std::string::npos)
      << pruned.err;
  // v1's own revision is still admitted after the second edit.
  EXPECT_EQ(create(pod(h1, "v1")).exitCode, 0);
}

}  // namespace
}  // namespace lockstep::testing
