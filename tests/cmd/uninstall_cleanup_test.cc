// `uninstall-cleanup` (the chart's post-delete hook): which finalizers go, the
// guarded patch, the flags, and the run against a scripted API server: it waits
// for the operator's pods, frees only Lockstep's finalizers, re-reads on
// Conflict, and names the object and the API error when a write fails.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <sstream>

#include "cmd/lockstep/uninstall_cleanup.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_transport.h"

namespace lockstep::cli::uninstall_cleanup_test {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeTransport;

json withFinalizers(const std::string& kind, const std::string& ns, const std::string& name,
                    const std::string& rv, const std::vector<std::string>& finalizers) {
  return {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", kind},
      {"metadata",
       {{"name", name}, {"namespace", ns}, {"resourceVersion", rv}, {"finalizers", finalizers}}}};
}

TEST(UninstallCleanupPure, KeepsEveryForeignFinalizerInOrder) {
  auto kept = finalizersKept(
      withFinalizers("RuntimeEnv", "ml", "torch", "7",
                     {"example.com/backup", "lockstep.dev/runtimeenv-in-use",
                      "lockstep.dev/release-cleanup", "lockstep.dev/other", "kubernetes"}));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(*kept,
            (std::vector<std::string>{"example.com/backup", "lockstep.dev/other", "kubernetes"}));
  auto onlyOurs = finalizersKept(
      withFinalizers("ModelRelease", "ml", "v2", "8", {"lockstep.dev/release-cleanup"}));
  ASSERT_TRUE(onlyOurs.has_value());
  EXPECT_TRUE(onlyOurs->empty());
  EXPECT_FALSE(
      finalizersKept(withFinalizers("Model", "ml", "m", "9", {"example.com/backup"})).has_value());
  EXPECT_FALSE(finalizersKept(json{{"metadata", {{"name", "x"}}}}).has_value());
  EXPECT_FALSE(isLockstepFinalizer("lockstep.dev/other"));
}

TEST(UninstallCleanupPure, ThePatchIsGuardedByTheResourceVersion) {
  json o = withFinalizers("RuntimeEnv", "ml", "torch", "42",
                          {"example.com/backup", "lockstep.dev/runtimeenv-in-use"});
  EXPECT_EQ(
      finalizersPatch(o, *finalizersKept(o)),
      json::parse(R"({"metadata":{"finalizers":["example.com/backup"],"resourceVersion":"42"}})"));
  EXPECT_EQ(finalizersPatch(o, {}),
            json::parse(R"({"metadata":{"finalizers":[],"resourceVersion":"42"}})"));
}

TEST(UninstallCleanupPure, PodsThatMayStillRun) {
  std::vector<json> pods = {
      {{"metadata", {{"name", "op-1"}, {"namespace", "ls"}}}, {"status", {{"phase", "Running"}}}},
      {{"metadata",
        {{"name", "op-2"}, {"namespace", "ls"}, {"deletionTimestamp", "2026-12-05T01:00:00Z"}}},
       {"status", {{"phase", "Running"}}}},
      {{"metadata", {{"name", "op-3"}, {"namespace", "ls"}}}, {"status", {{"phase", "Succeeded"}}}},
      {{"metadata", {{"name", "op-4"}, {"namespace", "ls"}}}, {"status", {{"phase", "Failed"}}}}};
  EXPECT_EQ(podsStillThere(pods), (std::vector<std::string>{"ls/op-1", "ls/op-2 (terminating)"}));
}

TEST(UninstallCleanupArgs, ParsesAndNamesWhatIsWrong) {
  auto c = parseUninstallCleanupArgs({"--operator-namespace=ls", "--operator-selector",
                                      "app=lockstep", "--namespaces=a,b", "--wait-timeout=90s",
                                      "--kubeconfig", "k", "--context=c"});
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->operatorNamespace, "ls");
  EXPECT_EQ(c->operatorSelector, "app=lockstep");
  EXPECT_EQ(c->namespaces, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c->waitTimeout, std::chrono::seconds(90));
  EXPECT_EQ(c->kube.kubeconfig, "k");
  EXPECT_EQ(c->kube.context, "c");
  EXPECT_TRUE(parseUninstallCleanupArgs({"--help"})->help);
  EXPECT_EQ(parseUninstallCleanupArgs({"--operator-selector=a=b"}).status().message(),
            "--operator-namespace is required (the namespace the chart was in)");
  EXPECT_EQ(parseUninstallCleanupArgs({"--operator-namespace=ls"}).status().message(),
            "--operator-selector is required (the label selector of the operator's pods)");
  EXPECT_EQ(parseUninstallCleanupArgs({"--operator-namespace=ls", "--bogus"}).status().message(),
            "unknown flag --bogus");
  EXPECT_EQ(parseUninstallCleanupArgs({"--operator-namespace=ls", "x"}).status().message(),
            "unexpected argument x");
  EXPECT_EQ(parseUninstallCleanupArgs(
                {"--operator-namespace=ls", "--operator-selector=a", "--wait-timeout=soon"})
                .status()
                .message(),
            "--wait-timeout: invalid duration \"soon\" (examples: 90s, 5m, 1h30m)");
  EXPECT_EQ(parseUninstallCleanupArgs({"--operator-namespace"}).status().message(),
            "--operator-namespace needs a value");
}

// A tiny API server: objects by path, the operator's pods for the first `podReads`
// reads, a Conflict on the first patch of `conflictPath` (after which a foreign
// finalizer has been added), and 403 on patches of `forbiddenPath`.
class UninstallCleanupRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.setAutoAdvance(true);
    transport_->setHandler([this](const kube::Request& r) -> std::optional<testing::FakeReply> {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string base = "/apis/lockstep.dev/v1alpha1/";
      if (r.method == "GET" && r.path == "/api/v1/namespaces/ls/pods") {
        std::vector<json> pods;
        if (podReads_-- > 0)
          pods.push_back({{"metadata", {{"name", "op-1"}, {"namespace", "ls"}}},
                          {"status", {{"phase", "Running"}}}});
        return FakeTransport::list(pods, "1");
      }
      for (const char* plural : {"runtimeenvs", "modelreleases", "models"}) {
        if (r.method == "GET" && r.path == base + plural) {
          if (!served_)
            return FakeTransport::status(404, "NotFound",
                                         "the server could not find the requested resource");
          std::vector<json> items;
          for (const auto& [path, o] : objects_)
            if (path.find(std::string("/") + plural + "/") != std::string::npos) items.push_back(o);
          return FakeTransport::list(items, "10");
        }
      }
      auto it = objects_.find(r.path);
      if (r.method == "GET" && it != objects_.end()) return FakeTransport::ok(it->second);
      if (r.method == "PATCH" && it != objects_.end()) {
        patches_.push_back(r.path + " " + r.body);
        if (r.path == forbiddenPath_)
          return FakeTransport::status(403, "Forbidden", "modelreleases is forbidden: no");
        if (r.path == conflictPath_ && !conflicted_) {
          conflicted_ = true;
          json& o = it->second;
          o["metadata"]["finalizers"].push_back("example.com/added-meanwhile");
          o["metadata"]["resourceVersion"] = "99";
          return FakeTransport::status(409, "Conflict", "the object has been modified");
        }
        json patch = json::parse(r.body);
        if (patch["metadata"]["resourceVersion"] != it->second["metadata"]["resourceVersion"])
          return FakeTransport::status(409, "Conflict", "stale resourceVersion");
        it->second["metadata"]["finalizers"] = patch["metadata"]["finalizers"];
        return FakeTransport::ok(it->second);
      }
      return FakeTransport::status(404, "NotFound", r.method + " " + r.path);
    });
  }
  void add(const std::string& plural, const json& o) {
    objects_["/apis/lockstep.dev/v1alpha1/namespaces/" +
             o["metadata"]["namespace"].get<std::string>() + "/" + plural + "/" +
             o["metadata"]["name"].get<std::string>()] = o;
  }
  json finalizersOf(const std::string& path) {
    return objects_.at("/apis/lockstep.dev/v1alpha1/namespaces/" + path)["metadata"]["finalizers"];
  }
  int run(const std::vector<std::string>& args) {
    auto cmd = parseUninstallCleanupArgs(args);
    EXPECT_TRUE(cmd.isOk()) << cmd.status().toString();
    return runUninstallCleanup(*cmd, io_);
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  kube::Client client_{transport_};
  FakeClock clock_;
  std::ostringstream out_, err_;
  ReleaseIo io_{client_, clock_, out_, err_, "lockstep"};
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::vector<std::string> patches_;
  int podReads_ = 0;
  bool served_ = true, conflicted_ = false;
  std::string conflictPath_, forbiddenPath_;
};

const std::vector<std::string> kArgs = {"--operator-namespace=ls",
                                        "--operator-selector=app.kubernetes.io/name=lockstep",
                                        "--wait-timeout=30s"};

TEST_F(UninstallCleanupRunTest, WaitsForTheOperatorThenFreesOnlyLockstepsFinalizers) {
  podReads_ = 3;  // the operator is still terminating for the first three reads
  add("runtimeenvs", withFinalizers("RuntimeEnv", "ml", "torch", "5",
                                    {"example.com/backup", "lockstep.dev/runtimeenv-in-use"}));
  add("modelreleases",
      withFinalizers("ModelRelease", "ml", "v2", "6", {"lockstep.dev/release-cleanup"}));
  add("modelreleases", withFinalizers("ModelRelease", "ml", "v1", "7", {"example.com/backup"}));
  conflictPath_ = "/apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/v2";

  EXPECT_EQ(run(kArgs), 0) << err_.str();
  EXPECT_EQ(podReads_, -1) << "read the pods until none was left";
  EXPECT_EQ(finalizersOf("ml/runtimeenvs/torch"), json({"example.com/backup"}));
  EXPECT_EQ(finalizersOf("ml/modelreleases/v2"), json({"example.com/added-meanwhile"}))
      << "the finalizer added between the read and the patch is kept";
  EXPECT_EQ(finalizersOf("ml/modelreleases/v1"), json({"example.com/backup"}));
  EXPECT_EQ(out_.str(),
            "waiting for the operator's pods to go: ls/op-1\n"
            "freed RuntimeEnv ml/torch: lockstep.dev/runtimeenv-in-use\n"
            "freed ModelRelease ml/v2: lockstep.dev/release-cleanup\n"
            "2 object(s) freed\n");
  ASSERT_EQ(patches_.size(), 3u) << ::testing::PrintToString(patches_);
  EXPECT_NE(patches_[0].find(R"("resourceVersion":"5")"), std::string::npos) << patches_[0];
  EXPECT_NE(patches_[2].find(R"("resourceVersion":"99")"), std::string::npos) << patches_[2];

  // Idempotent: nothing left, nothing written.
  out_.str("");
  EXPECT_EQ(run(kArgs), 0) << err_.str();
  EXPECT_EQ(patches_.size(), 3u);
  EXPECT_EQ(out_.str(), "no Lockstep finalizer left on RuntimeEnvs, ModelReleases or Models\n");
}

TEST_F(UninstallCleanupRunTest, AnOperatorThatStaysIsAnErrorAndNothingIsWritten) {
  podReads_ = 1000000;
  add("modelreleases",
      withFinalizers("ModelRelease", "ml", "v2", "6", {"lockstep.dev/release-cleanup"}));
  EXPECT_EQ(run(kArgs), 1);
  EXPECT_EQ(err_.str(),
            "lockstep uninstall-cleanup: the operator's pods are still there after 30s (selector "
            "app.kubernetes.io/name=lockstep): ls/op-1; its finalizers are not removed while it "
            "may add them back\n");
  EXPECT_TRUE(patches_.empty());
  EXPECT_EQ(finalizersOf("ml/modelreleases/v2"), json({"lockstep.dev/release-cleanup"}));
}

TEST_F(UninstallCleanupRunTest, AFailedWriteNamesTheObjectAndTheErrorAndTheRestIsFreed) {
  add("runtimeenvs",
      withFinalizers("RuntimeEnv", "ml", "torch", "5", {"lockstep.dev/runtimeenv-in-use"}));
  add("modelreleases",
      withFinalizers("ModelRelease", "ml", "v2", "6", {"lockstep.dev/release-cleanup"}));
  forbiddenPath_ = "/apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/v2";
  EXPECT_EQ(run(kArgs), 1);
  EXPECT_NE(err_.str().find("lockstep uninstall-cleanup: ModelRelease ml/v2: removing its Lockstep "
                            "finalizers: modelreleases is forbidden: no"),
            std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("1 failure(s); 1 object(s) freed"), std::string::npos) << err_.str();
  EXPECT_EQ(finalizersOf("ml/runtimeenvs/torch"), json::array());
}

TEST_F(UninstallCleanupRunTest, CrdsAlreadyDeletedLeaveNothingToFree) {
  served_ = false;
  EXPECT_EQ(run(kArgs), 0) << err_.str();
  EXPECT_EQ(out_.str(), "no Lockstep finalizer left on RuntimeEnvs, ModelReleases or Models\n");
}

TEST_F(UninstallCleanupRunTest, WatchedNamespacesOnly) {
  EXPECT_EQ(run({"--operator-namespace=ls", "--operator-selector=a=b", "--namespaces=t1,t2"}), 0);
  // The namespaced lists: every one of the three kinds in each of the two namespaces.
  std::vector<std::string> lists;
  for (const kube::Request& r : transport_->requests())
    if (r.path.find("/apis/lockstep.dev/") == 0) lists.push_back(r.path);
  EXPECT_EQ(lists,
            (std::vector<std::string>{"/apis/lockstep.dev/v1alpha1/namespaces/t1/runtimeenvs",
                                      "/apis/lockstep.dev/v1alpha1/namespaces/t2/runtimeenvs",
                                      "/apis/lockstep.dev/v1alpha1/namespaces/t1/modelreleases",
                                      "/apis/lockstep.dev/v1alpha1/namespaces/t2/modelreleases",
                                      "/apis/lockstep.dev/v1alpha1/namespaces/t1/models",
                                      "/apis/lockstep.dev/v1alpha1/namespaces/t2/models"}));
}

}  // namespace lockstep::cli::uninstall_cleanup_test
