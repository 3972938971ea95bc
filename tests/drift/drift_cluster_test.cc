// The runtime's supply chain against the real control plane (issue 32). Drift of running
// pods (must show 3):
// the operator (RuntimeEnv controller and the drift scan every 2 s) reports a pod
// admitted in warn mode on another image in its namespace's PolicyReport within
// one scan, writes nothing while nothing changes, names a pod whose revision was
// pruned, drops a deleted pod's result, and without the PolicyReport kind sends
// a Warning Event instead. Advisories (must show 2): with real OSV records
// (tests/advisories/testdata/osv) the RuntimeEnv of a real lock lists them, and a release
// whose maxSeverity is below one starts nothing.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/cluster_env.h"
#include "tests/support/operator_process.h"
#include "tests/support/operator_suite.h"
#include "tests/support/process.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string& kImage = kClusterTestImage;
const std::string kOtherImage =
    "registry.example/runtimes/torch@sha256:" + std::string(63, '0') + "9";

std::string pipLock(const std::string& numpy) {
  return "numpy==" + numpy + " --hash=sha256:" + std::string(64, 'a') + "\n";
}

std::string crdPath() {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/tests/drift/policyreport-crd.yaml";
}

json pod(const std::string& name, const std::string& image, const std::string& hash,
         const std::string& revision = "") {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name},
              {"labels", {{"lockstep.dev/runtime-env", "torch"}}},
              {"annotations", {{"lockstep.dev/closure-hash", hash}}}}},
            {"spec", {{"containers", json::array({{{"name", "main"}, {"image", image}}})}}}};
  if (!revision.empty()) p["metadata"]["annotations"]["lockstep.dev/runtime-revision"] = revision;
  return p;
}

class DriftClusterTest : public OperatorSuite<DriftClusterTest> {
 protected:
  static void SetUpTestSuite() {
    CommandResult crd = kubectl({"apply", "-f", crdPath()});
    ASSERT_EQ(crd.exitCode, 0) << crd.err;
    ASSERT_EQ(kubectl({"wait", "--for", "condition=Established", "-f", crdPath(), "--timeout=60s"})
                  .exitCode,
              0);
    startOperator(
        {"--controllers=runtimeenv,modelrelease", "--drift-scan-interval=2s",
         "--osv-export=" + std::string(LOCKSTEP_SOURCE_DIR) + "/tests/advisories/testdata/osv"});
  }
  static void TearDownTestSuite() {
    kubectl({"delete", "-f", crdPath(), "--ignore-not-found", "--wait=false"});
    OperatorSuite<DriftClusterTest>::TearDownTestSuite();
  }
  void TearDown() override {
    printOperatorLogOnFailure();
    if (!ns_.empty()) kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  void makeNamespace(const std::string& prefix, const std::string& mode) {
    ns_ = uniqueName(prefix);
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
    ASSERT_EQ(kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=" + mode}).exitCode, 0);
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
  std::string waitRevision(int64_t revision) {
    json o;
    EXPECT_TRUE(eventually([&] {
      o = kubectlJson({"get", "rte", "torch", "-n", ns_});
      return !o.is_discarded() && o.contains("status") &&
             o["status"].value("observedGeneration", -1) == o["metadata"].value("generation", 0) &&
             o["status"].value("currentRevision", 0) == revision;
    })) << o.dump(2);
    return o["status"].value("closureHash", "");
  }
  // Creates the pod; the admission webhook may refuse while the namespace mode and the
  // RuntimeEnv reach its caches, so try until it admits (warn mode admits with a warning).
  CommandResult create(const json& p) {
    CommandResult r;
    eventually([&] {
      r = kubectl({"create", "-n", ns_, "-f", "-"}, p.dump());
      return r.exitCode == 0;
    });
    return r;
  }
  json report() {
    return kubectlJson({"get", "policyreport", "lockstep-runtime-drift", "-n", ns_});
  }
  // The report's results as "<pod> <rule>" lines, sorted.
  static std::vector<std::string> results(const json& r) {
    std::vector<std::string> out;
    if (r.is_discarded() || !r.contains("results")) return out;
    for (const json& x : r["results"])
      out.push_back(x["resources"][0].value("name", "") + " " + x.value("rule", ""));
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string ns_;
};

TEST_F(DriftClusterTest, AWarnModePodOnAnotherImageIsReportedWithinOneScan) {
  makeNamespace("drift", "warn");
  applyRte(pipLock("1.26.4"));
  const std::string h1 = waitRevision(1);
  ASSERT_FALSE(h1.empty());

  CommandResult good = create(pod("good", kImage, h1));
  ASSERT_EQ(good.exitCode, 0) << good.err;
  // Warn mode admits a pod on another image, with a warning: the scan must still see it.
  CommandResult stray = create(pod("stray", kOtherImage, h1));
  ASSERT_EQ(stray.exitCode, 0) << stray.err;
  EXPECT_NE(stray.err.find("Warning:"), std::string::npos) << stray.err;

  json r;
  ASSERT_TRUE(eventually(
      [&] {
        r = report();
        return results(r) == std::vector<std::string>{"stray foreign-image"} &&
               r["summary"].value("pass", -1) == 1 && r["summary"].value("fail", -1) == 1;
      },
      std::chrono::seconds(30)))
      << r.dump(2);
  const json& result = r["results"][0];
  EXPECT_EQ(result["result"], "fail");
  EXPECT_EQ(result["policy"], "lockstep-runtime");
  EXPECT_EQ(result["severity"], "high");
  EXPECT_NE(result.value("message", "").find("runs image \"" + kOtherImage + "\""),
            std::string::npos)
      << result.dump(2);
  EXPECT_EQ(result["resources"][0]["uid"],
            kubectlJson({"get", "pod", "stray", "-n", ns_})["metadata"]["uid"]);

  // Several scans with nothing changed leave the report as it is (first-seen times kept).
  const std::string version = r["metadata"]["resourceVersion"];
  std::this_thread::sleep_for(std::chrono::seconds(7));
  EXPECT_EQ(report()["metadata"]["resourceVersion"], version)
      << "an unchanged scan changed the report";

  // The lock is edited and revision 1, pinned by no release, is pruned: the good pod
  // now runs a revision the RuntimeEnv no longer records.
  ASSERT_EQ(
      kubectl({"annotate", "pod", "good", "-n", ns_, "lockstep.dev/runtime-revision=1"}).exitCode,
      0);
  applyRte(pipLock("1.26.5"));
  const std::string h2 = waitRevision(2);
  ASSERT_NE(h1, h2);
  ASSERT_TRUE(eventually(
      [&] {
        r = report();
        return results(r) ==
               std::vector<std::string>{"good pruned-revision", "stray unrecorded-pair"};
      },
      std::chrono::seconds(30)))
      << r.dump(2);

  // `lockstep drift` sees what the operator reports, from its own lists.
  CommandResult cli = run({LOCKSTEP_CLI_BIN, "drift", "-n", ns_, "--kubeconfig", kubeconfigPath()});
  EXPECT_EQ(cli.exitCode, 1) << cli.out << cli.err;
  EXPECT_NE(cli.out.find(ns_ + "\tgood\ttorch\tpruned-revision\t"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find(ns_ + "\tstray\ttorch\tunrecorded-pair\t"), std::string::npos) << cli.out;

  // A deleted pod's result goes with it.
  ASSERT_EQ(kubectl({"delete", "pod", "stray", "-n", ns_, "--wait=false"}).exitCode, 0);
  ASSERT_TRUE(eventually(
      [&] {
        r = report();
        return results(r) == std::vector<std::string>{"good pruned-revision"};
      },
      std::chrono::seconds(30)))
      << r.dump(2);
}

TEST_F(DriftClusterTest, AnAdvisoryAboveMaxSeverityHoldsTheReleaseBeforeAnyJob) {
  makeNamespace("advisories", "warn");
  const std::string lock =
      readFile(std::string(LOCKSTEP_SOURCE_DIR) +
               "/tests/closure/testdata/lockfiles/pip/"
               "torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt");
  ASSERT_FALSE(lock.empty());
  applyRte(lock);
  const std::string hash = waitRevision(1);
  json rte;
  ASSERT_TRUE(eventually([&] {
    rte = kubectlJson({"get", "rte", "torch", "-n", ns_});
    return rte.contains("status") && rte["status"].contains("advisories");
  })) << rte.dump(2);
  const json& advisories = rte["status"]["advisories"];
  EXPECT_EQ(advisories["revision"], 1);
  EXPECT_EQ(advisories["closureHash"], hash);
  json jinja;
  for (const json& a : advisories["items"])
    if (a["id"] == "GHSA-h5c8-rqwp-cp95") jinja = a;
  ASSERT_FALSE(jinja.is_null()) << advisories.dump(2);
  EXPECT_EQ(jinja["package"], "jinja2");
  EXPECT_EQ(jinja["version"], "3.1.2");
  EXPECT_EQ(jinja["fixed"], "3.1.3");
  EXPECT_EQ(advisories["highest"], "high") << advisories.dump(2);

  auto release = [&](const std::string& name, const std::string& maxSeverity) {
    json mr = {
        {"apiVersion", "lockstep.dev/v1alpha1"},
        {"kind", "ModelRelease"},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"model", "gpt2"},
          {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
          {"runtimeEnvRef", {{"name", "torch"}}},
          {"closureHash", hash},
          {"policy", {{"maxSeverity", maxSeverity}}},
          {"stages",
           json::array(
               {{{"name", "eval"},
                 {"gate",
                  {{"template",
                    {{"spec", {{"containers", json::array({{{"name", "eval"}}})}}}}}}}}})}}}};
    CommandResult r = kubectl({"create", "-n", ns_, "-f", "-"}, mr.dump());
    EXPECT_EQ(r.exitCode, 0) << r.err;
  };
  // medium: the idna advisory (high) holds it, and no gate Job is made.
  release("held", "medium");
  json held;
  ASSERT_TRUE(eventually([&] {
    held = kubectlJson({"get", "mr", "held", "-n", ns_});
    return conditionField(held, "Ready", "reason") == "AdvisoriesAboveMaxSeverity";
  })) << held.dump(2);
  EXPECT_EQ(held["status"]["phase"], "Pending");
  const std::string message = conditionField(held, "Ready", "message");
  EXPECT_NE(
      message.find("above spec.policy.maxSeverity medium: GHSA-jjg7-2v4v-x38h (idna 3.4, high"),
      std::string::npos)
      << message;
  // critical: nothing above it, the gate starts.
  release("starts", "critical");
  json jobs;
  ASSERT_TRUE(eventually([&] {
    jobs = kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=starts"});
    return jobs.contains("items") && jobs["items"].size() == 1;
  })) << jobs.dump(2)
      << kubectlJson({"get", "mr", "starts", "-n", ns_}).dump(2);
  jobs = kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=held"});
  EXPECT_TRUE(jobs["items"].empty()) << jobs.dump(2);
}

TEST_F(DriftClusterTest, WithoutThePolicyReportKindAFindingIsAWarningEventOnThePod) {
  ASSERT_EQ(kubectl({"delete", "-f", crdPath(), "--wait=true"}).exitCode, 0);
  makeNamespace("drift-ev", "audit");
  applyRte(pipLock("1.26.4"));
  const std::string h1 = waitRevision(1);
  CommandResult stray = create(pod("stray", kOtherImage, h1));
  ASSERT_EQ(stray.exitCode, 0) << stray.err;
  json events;
  ASSERT_TRUE(eventually(
      [&] {
        events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                              "involvedObject.name=stray,reason=RuntimeDrift"});
        return events.contains("items") && events["items"].size() == 1;
      },
      std::chrono::seconds(90)))
      << events.dump(2);
  const json& e = events["items"][0];
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_NE(e.value("message", "").find("foreign-image"), std::string::npos) << e.dump(2);
  EXPECT_NE(e.value("message", "").find(kOtherImage), std::string::npos) << e.dump(2);
  // Once: later scans do not repeat it.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                        "involvedObject.name=stray,reason=RuntimeDrift"});
  ASSERT_EQ(events["items"].size(), 1u);
  EXPECT_EQ(events["items"][0].value("count", 1), 1) << events.dump(2);
}

}  // namespace
}  // namespace lockstep::testing
