// RuntimeEnv revisions and in-use protection against the real control plane:
// the operator binary with the chart's RBAC. Only the RuntimeEnv controller
// runs (--controllers=runtimeenv), so the test plays the ModelRelease side by
// writing release status (phase, prod history) itself, as the release
// controller would: what is under test is how the RuntimeEnv controller
// records revisions and pins from it.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"

#ifndef LOCKSTEP_CLI_BIN
#error "LOCKSTEP_CLI_BIN must name the lockstep CLI"
#endif

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string& kImage = kClusterTestImage;
const std::string kSwappedImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000002";

std::string pipLock(const std::string& numpy) {
  return "numpy==" + numpy + " --hash=sha256:" + std::string(64, 'a') + "\n";
}

class RuntimeEnvRevisionsTest : public OperatorSuite<RuntimeEnvRevisionsTest> {
 protected:
  static void SetUpTestSuite() { startOperator({"--controllers=runtimeenv"}); }
  void SetUp() override {
    ns_ = uniqueName("rterev");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  }
  void TearDown() override {
    printOperatorLogOnFailure();
    kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  void applyRte(const std::string& name, const std::string& image, const std::string& lock) {
    json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "RuntimeEnv"},
                {"metadata", {{"name", name}}},
                {"spec", {{"image", image}, {"lock", {{"inline", lock}}}}}};
    auto r = kubectl({"apply", "-n", ns_, "-f", "-"}, rte.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  json rte(const std::string& name) { return kubectlJson({"get", "rte", name, "-n", ns_}); }

  // Waits until status.currentRevision is `revision` for the current generation.
  json waitRevision(const std::string& name, int64_t revision) {
    json o;
    EXPECT_TRUE(eventually([&] {
      o = rte(name);
      return !o.is_discarded() && o.contains("status") &&
             o["status"].value("observedGeneration", -1) == o["metadata"].value("generation", 0) &&
             o["status"].value("currentRevision", 0) == revision;
    })) << o.dump(2);
    return o;
  }

  // A ModelRelease of model gpt2 on `rte`, built for `hash`; its status is the test's to write.
  void createRelease(const std::string& name, const std::string& rteName, const std::string& hash) {
    json mr = {{"apiVersion", "lockstep.dev/v1alpha1"},
               {"kind", "ModelRelease"},
               {"metadata", {{"name", name}}},
               {"spec",
                {{"model", "gpt2"},
                 {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
                 {"runtimeEnvRef", {{"name", rteName}}},
                 {"closureHash", hash},
                 {"stages",
                  json::array({{{"name", "eval"}, {"gate", {{"template", json::object()}}}}})}}}};
    auto r = kubectl({"create", "-n", ns_, "-f", "-"}, mr.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  void setReleaseStatus(const std::string& name, const json& status) {
    // As the operator: the chart's status policy admits no one else (a release's status
    // stands in for what the ModelRelease controller would have written).
    auto r = patchStatusAsOperator("mr", ns_, name, status);
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // The one data row of `kubectl get ... -o wide`, by column header: a cell starts where
  // its header does (an empty cell prints nothing).
  static std::map<std::string, std::string> wideRow(const std::string& table) {
    std::istringstream lines(table);
    std::string header;
    std::string data;
    std::getline(lines, header);
    std::getline(lines, data);
    std::vector<std::pair<std::string, size_t>> columns;
    for (size_t i = 0; i < header.size();) {
      if (header[i] == ' ') {
        ++i;
        continue;
      }
      size_t end = header.find(' ', i);
      if (end == std::string::npos) end = header.size();
      columns.emplace_back(header.substr(i, end - i), i);
      i = end;
    }
    std::map<std::string, std::string> out;
    for (size_t c = 0; c < columns.size(); ++c) {
      const size_t from = columns[c].second;
      const size_t to = c + 1 < columns.size() ? columns[c + 1].second : data.size();
      std::string cell = from < data.size() ? data.substr(from, to - from) : "";
      while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      out[columns[c].first] = cell;
    }
    return out;
  }

  static std::vector<int64_t> numbers(const json& o) {
    std::vector<int64_t> out;
    for (const auto& r : o["status"].value("revisions", json::array())) out.push_back(r["number"]);
    return out;
  }

  std::string ns_;
};

TEST_F(RuntimeEnvRevisionsTest, LockEditsAndImageSwapsAreRevisions) {
  applyRte("torch", kImage, pipLock("1.26.4"));
  json r1 = waitRevision("torch", 1);
  const std::string h1 = r1["status"]["closureHash"];

  // A lock edit in place: a new closure hash, revision 2.
  applyRte("torch", kImage, pipLock("1.26.5"));
  json r2 = waitRevision("torch", 2);
  const std::string h2 = r2["status"]["closureHash"];
  ASSERT_NE(h1, h2);
  ASSERT_EQ(numbers(r2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r2["status"]["revisions"][0]["closureHash"], h1);
  EXPECT_EQ(r2["status"]["revisions"][1]["closureHash"], h2);
  EXPECT_EQ(r2["status"]["revisions"][1]["image"], kImage);
  EXPECT_TRUE(r2["status"]["revisions"][1]["lockDigest"].get<std::string>().rfind("sha256:", 0) ==
              0);

  // The image swapped with the same lock: the same hash, still a new revision.
  applyRte("torch", kSwappedImage, pipLock("1.26.5"));
  json r3 = waitRevision("torch", 3);
  EXPECT_EQ(r3["status"]["closureHash"], h2);
  ASSERT_EQ(numbers(r3), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(r3["status"]["revisions"][2]["image"], kSwappedImage);
  EXPECT_EQ(r3["status"]["revisions"][2]["closureHash"], h2);

  // kubectl get rte -o wide: the current revision and the pinned count.
  auto wide = kubectl({"get", "rte", "torch", "-n", ns_, "-o", "wide"});
  ASSERT_EQ(wide.exitCode, 0) << wide.err;
  std::map<std::string, std::string> row = wideRow(wide.out);
  EXPECT_EQ(row["REVISION"], "3") << wide.out;
  EXPECT_EQ(row["PINNED"], "0") << wide.out;
  // Not in the default columns.
  auto narrow = kubectl({"get", "rte", "torch", "-n", ns_});
  EXPECT_EQ(narrow.out.find("REVISION"), std::string::npos) << narrow.out;

  // lockstep runtime history: newest first, the current one marked.
  auto h = run({LOCKSTEP_CLI_BIN, "runtime", "history", "torch", "-n", ns_, "--kubeconfig",
                kubeconfigPath()});
  ASSERT_EQ(h.exitCode, 0) << h.err;
  EXPECT_NE(h.out.find("current revision 3"), std::string::npos) << h.out;
  const size_t at3 = h.out.find("\n3  ");
  const size_t at1 = h.out.find("\n1  ");
  ASSERT_NE(at3, std::string::npos) << h.out;
  ASSERT_NE(at1, std::string::npos) << h.out;
  EXPECT_LT(at3, at1) << h.out;
  EXPECT_NE(h.out.find(kSwappedImage), std::string::npos) << h.out;

  // Events name the revisions.
  EXPECT_TRUE(eventually([&] {
    return kubectl({"get", "events", "-n", ns_, "--field-selector",
                    "involvedObject.name=torch,reason=RevisionCreated"})
               .out.find("revision 3") != std::string::npos;
  }));
}

TEST_F(RuntimeEnvRevisionsTest, PromotedReleaseKeepsItsRevisionThroughALockEdit) {
  applyRte("torch", kImage, pipLock("1.26.4"));
  const std::string h1 = waitRevision("torch", 1)["status"]["closureHash"];
  createRelease("v1", "torch", h1);
  setReleaseStatus("v1", {{"phase", "Promoted"}, {"canary", {{"phase", "Promoted"}}}});
  json pinned;
  ASSERT_TRUE(eventually([&] {
    pinned = rte("torch");
    return pinned["status"].value("pinnedRevisions", 0) == 1;
  })) << pinned.dump(2);
  EXPECT_EQ(pinned["status"]["revisions"][0]["pinnedBy"], json::array({"v1"}));

  // The lock is edited twice with revisionHistoryLimit 0: revision 2 is pruned, 1 stays.
  json spec = pinned["spec"];
  spec["revisionHistoryLimit"] = 0;
  spec["lock"]["inline"] = pipLock("1.26.5");
  ASSERT_EQ(kubectl({"patch", "rte", "torch", "-n", ns_, "--type=merge", "-p",
                     json{{"spec", spec}}.dump()})
                .exitCode,
            0);
  waitRevision("torch", 2);
  applyRte("torch", kImage, pipLock("1.26.6"));
  json r3 = waitRevision("torch", 3);
  EXPECT_EQ(numbers(r3), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(r3["status"]["revisions"][0]["pinnedBy"], json::array({"v1"}));

  // The release is superseded and falls out of the model's last promoted ones (limit 0):
  // nothing pins revision 1 any more, and it is pruned.
  setReleaseStatus("v1", {{"phase", "Superseded"}});
  json unpinned;
  EXPECT_TRUE(eventually([&] {
    unpinned = rte("torch");
    return numbers(unpinned) == std::vector<int64_t>{3};
  })) << unpinned.dump(2);
  EXPECT_EQ(unpinned["status"]["pinnedRevisions"], 0);
}

// Must show 5: a RuntimeEnv pinned by a live release is not deleted while it is pinned.
TEST_F(RuntimeEnvRevisionsTest, DeletingAnInUseRuntimeEnvWaitsForItsReleases) {
  applyRte("torch", kImage, pipLock("1.26.4"));
  const std::string h1 = waitRevision("torch", 1)["status"]["closureHash"];
  createRelease("v1", "torch", h1);
  createRelease("v2", "torch", h1);
  setReleaseStatus("v1", {{"phase", "Evaluating"}});
  setReleaseStatus("v2", {{"phase", "Canary"}});
  json held;
  ASSERT_TRUE(eventually([&] {
    held = rte("torch");
    for (const auto& f : held["metadata"].value("finalizers", json::array())) {
      if (f == "lockstep.dev/runtimeenv-in-use") return true;
    }
    return false;
  })) << held.dump(2);

  auto del = kubectl({"delete", "rte", "torch", "-n", ns_, "--wait=false"});
  ASSERT_EQ(del.exitCode, 0) << del.err;
  json waiting;
  EXPECT_TRUE(eventually([&] {
    waiting = rte("torch");
    return conditionField(waiting, "Terminating") == "True";
  })) << waiting.dump(2);
  EXPECT_FALSE(waiting["metadata"].value("deletionTimestamp", "").empty());
  EXPECT_EQ(conditionField(waiting, "Terminating", "reason"), "InUse");
  const std::string m = conditionField(waiting, "Terminating", "message");
  EXPECT_NE(m.find("v1 (revision 1, in a gate or the canary)"), std::string::npos) << m;
  EXPECT_NE(m.find("v2 (revision 1, in a gate or the canary)"), std::string::npos) << m;

  // One release goes: still held, the condition names the other one only.
  ASSERT_EQ(kubectl({"delete", "mr", "v1", "-n", ns_}).exitCode, 0);
  EXPECT_TRUE(eventually([&] {
    waiting = rte("torch");
    const std::string msg = conditionField(waiting, "Terminating", "message");
    return msg.find("v1 (") == std::string::npos && msg.find("v2 (") != std::string::npos;
  })) << waiting.dump(2);
  EXPECT_FALSE(waiting.is_discarded());

  // The last one goes: the deletion completes.
  ASSERT_EQ(kubectl({"delete", "mr", "v2", "-n", ns_}).exitCode, 0);
  EXPECT_TRUE(eventually([&] {
    return kubectl({"get", "rte", "torch", "-n", ns_, "--ignore-not-found", "-o", "name"}).out ==
           "";
  })) << rte("torch").dump(2);
}

TEST_F(RuntimeEnvRevisionsTest, AnUnusedRuntimeEnvIsDeletedAtOnce) {
  applyRte("plain", kImage, pipLock("1.26.4"));
  json o = waitRevision("plain", 1);
  EXPECT_FALSE(o["metadata"].contains("finalizers")) << o.dump(2);
  // Without the operator's help: no finalizer, so the API server deletes it itself.
  auto del = kubectl({"delete", "rte", "plain", "-n", ns_, "--timeout=5s"});
  EXPECT_EQ(del.exitCode, 0) << del.err;
  EXPECT_EQ(kubectl({"get", "rte", "plain", "-n", ns_, "--ignore-not-found", "-o", "name"}).out,
            "");
}

}  // namespace
}  // namespace lockstep::testing
