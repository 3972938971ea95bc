// Advisories of a RuntimeEnv from an OSV-compatible HTTP endpoint, and of its pinned
// revisions, against the real control plane (issue 32). The endpoint is the test OSV
// server (tests/tools/osv-server, over TLS with its own CA) serving the real records of
// tests/advisories/testdata/osv; the operator runs with --osv-url and --osv-ca-file and
// looks closures up again every 3 s.
//
// One case: a real lock (torch 2.1, five advisories) is revision 1, which a release pins
// by starting its gate; status.advisories comes from the endpoint. The lock is edited to
// a clean one (revision 2): the status lists revision 2 (none) and the pinned revision 1
// (the five), matched from the closure revision 1 kept. The endpoint stops: the next
// lookups fail, and both revisions keep their last match with the error naming the URL.
#include <signal.h>

#include <chrono>
#include <string>

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

std::string fixture(const std::string& name) {
  return readFile(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/closure/testdata/lockfiles/pip/" +
                  name);
}

// The test OSV server, started in the background; its URL and CA once it listens.
struct OsvServer {
  std::string dir;
  std::string url;
  std::string caFile;
  int pid = -1;

  std::string start() {
    CommandResult built = run({sourcePath("tests/cluster/build-osv-server.sh")});
    if (built.exitCode != 0) return "build-osv-server.sh: " + built.out + built.err;
    const std::string bin = built.out.substr(0, built.out.find('\n'));
    dir = "/tmp/" + uniqueName("lockstep-osv");
    caFile = dir + "/ca.pem";
    CommandResult started =
        run({"sh", "-c",
             "mkdir -p \"$1\" && \"$0\" --data \"$2\" --ca-out \"$1/ca.pem\" --url-out "
             "\"$1/url\" --page-size 1 >\"$1/server.log\" 2>&1 & echo $!",
             bin, dir, std::string(LOCKSTEP_SOURCE_DIR) + "/tests/advisories/testdata/osv"});
    if (started.exitCode != 0) return "starting the OSV server: " + started.err;
    pid = std::stoi(started.out);
    if (!eventually([&] { return !readFile(dir + "/url").empty(); }, std::chrono::seconds(30)))
      return "the OSV server did not start: " + readFile(dir + "/server.log");
    url = readFile(dir + "/url");
    url.erase(url.find_last_not_of("\n") + 1);
    return "";
  }
  void stop() {
    if (pid > 0) kill(pid, SIGTERM);
    pid = -1;
  }
};

class AdvisoriesClusterTest : public OperatorSuite<AdvisoriesClusterTest> {
 protected:
  static void SetUpTestSuite() {
    server_ = new OsvServer();
    ASSERT_EQ(server_->start(), "");
    startOperator({"--controllers=runtimeenv,modelrelease", "--osv-url=" + server_->url,
                   "--osv-ca-file=" + server_->caFile, "--osv-refresh=3s"});
  }
  static void TearDownTestSuite() {
    server_->stop();
    run({"rm", "-rf", server_->dir});
    delete server_;
    server_ = nullptr;
    OperatorSuite<AdvisoriesClusterTest>::TearDownTestSuite();
  }
  void TearDown() override {
    printOperatorLogOnFailure();
    if (HasFailure() && server_ != nullptr)
      std::cerr << "OSV server log:\n" << readFile(server_->dir + "/server.log") << "\n";
    if (!ns_.empty()) kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  void applyRte(const std::string& lock) {
    json rte = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "RuntimeEnv"},
                {"metadata", {{"name", "torch"}}},
                {"spec", {{"image", kImage}, {"lock", {{"inline", lock}}}}}};
    auto r = kubectl({"apply", "-n", ns_, "-f", "-"}, rte.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  // The RuntimeEnv once `probe` holds for it.
  json waitRte(const std::function<bool(const json&)>& probe,
               std::chrono::seconds timeout = std::chrono::seconds(60)) {
    json o;
    EXPECT_TRUE(eventually(
        [&] {
          o = kubectlJson({"get", "rte", "torch", "-n", ns_});
          return !o.is_discarded() && o.contains("status") && probe(o["status"]);
        },
        timeout))
        << o.dump(2);
    return o;
  }
  static const json* revisionEntry(const json& advisories, int64_t revision) {
    if (!advisories.is_object() || !advisories.contains("revisions")) return nullptr;
    for (const json& e : advisories["revisions"])
      if (e.value("revision", int64_t{0}) == revision) return &e;
    return nullptr;
  }

  std::string ns_;
  static inline OsvServer* server_ = nullptr;
};

TEST_F(AdvisoriesClusterTest, TheEndpointsAdvisoriesCoverCurrentAndPinnedRevisionsAndOutliveIt) {
  ns_ = uniqueName("osv");
  ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
  ASSERT_EQ(kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=warn"}).exitCode, 0);
  const std::string torch =
      fixture("torch-2.1-cu12-tensorflow-sigstore-model-transparency.requirements.txt");
  const std::string clean = fixture("requests-only-mozilla-translations-splitter.requirements.txt");
  ASSERT_FALSE(torch.empty());
  ASSERT_FALSE(clean.empty());
  applyRte(torch);
  json rte = waitRte([](const json& s) {
    return s.value("currentRevision", 0) == 1 && s.contains("advisories") &&
           s["advisories"].contains("count");
  });
  const std::string hash1 = rte["status"].value("closureHash", "");
  const json& a1 = rte["status"]["advisories"];
  EXPECT_EQ(a1["source"], server_->url + " (OSV API)");
  EXPECT_EQ(a1["revision"], 1);
  EXPECT_EQ(a1["count"], 5) << a1.dump(2);
  EXPECT_EQ(a1["highest"], "high");
  EXPECT_FALSE(a1.value("checkedAt", "").empty());
  EXPECT_FALSE(a1.contains("error")) << a1.dump(2);
  EXPECT_FALSE(rte["status"]["revisions"][0].value("packages", "").empty());

  // A release starts its gate on revision 1: it pins it.
  json mr = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "ModelRelease"},
      {"metadata", {{"name", "v1"}}},
      {"spec",
       {{"model", "gpt2"},
        {"package", "registry.example/models/gpt2@sha256:" + std::string(64, 'c')},
        {"runtimeEnvRef", {{"name", "torch"}}},
        {"closureHash", hash1},
        {"stages",
         json::array({{{"name", "eval"},
                       {"gate",
                        {{"template",
                          {{"spec", {{"containers", json::array({{{"name", "eval"}}})}}}}}}}}})}}}};
  CommandResult created = kubectl({"create", "-n", ns_, "-f", "-"}, mr.dump());
  ASSERT_EQ(created.exitCode, 0) << created.err;
  json release;
  ASSERT_TRUE(eventually([&] {
    release = kubectlJson({"get", "mr", "v1", "-n", ns_});
    return release.contains("status") &&
           release["status"].value("/runtime/revision"_json_pointer, int64_t{0}) == 1;
  })) << release.dump(2);

  // The lock moves on: revision 2 is current and clean; revision 1 is still matched.
  applyRte(clean);
  rte = waitRte([](const json& s) {
    const json a = s.value("advisories", json::object());
    const json* r1 = revisionEntry(a, 1);
    return s.value("currentRevision", 0) == 2 && a.value("revision", 0) == 2 &&
           a.contains("count") && r1 != nullptr && r1->contains("count");
  });
  const json& a2 = rte["status"]["advisories"];
  EXPECT_EQ(a2["count"], 0) << a2.dump(2);
  const json* r1 = revisionEntry(a2, 1);
  ASSERT_NE(r1, nullptr) << a2.dump(2);
  EXPECT_EQ((*r1)["closureHash"], hash1);
  EXPECT_EQ((*r1)["count"], 5) << r1->dump(2);
  EXPECT_EQ((*r1)["highest"], "high");
  const json* r2 = revisionEntry(a2, 2);
  ASSERT_NE(r2, nullptr) << a2.dump(2);
  EXPECT_EQ((*r2)["current"], true);

  // The endpoint stops: the next lookups fail; the last answers stay, with the error.
  server_->stop();
  rte = waitRte(
      [](const json& s) {
        const json a = s.value("advisories", json::object());
        const json* one = revisionEntry(a, 1);
        return a.value("error", "") != "" && one != nullptr && one->value("error", "") != "";
      },
      std::chrono::seconds(90));
  const json& down = rte["status"]["advisories"];
  EXPECT_NE(down.value("error", "").find(server_->url + "/v1/querybatch: unreachable"),
            std::string::npos)
      << down.dump(2);
  EXPECT_EQ(down["count"], 0);
  r1 = revisionEntry(down, 1);
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ((*r1)["count"], 5) << r1->dump(2);
  EXPECT_NE((*r1).value("error", "").find("unreachable"), std::string::npos) << r1->dump(2);
}

}  // namespace
}  // namespace lockstep::testing
