// The operator's mirror check (RuntimeEnv spec.mirror, issue 32 must-show 1, second half)
// against the real control plane, the operator binary with the chart's RBAC
// (mirror.credentials) and a real registry (Debian's docker-registry over TLS with
// htpasswd, tests/cluster/registry.sh, blob deletion enabled): `lockstep mirror push`
// of a uv lock whose artifacts the test writes gives Mirrored=True; a blob deleted by
// the registry API (DELETE /v2/<repo>/blobs/<digest>) gives Mirrored=False naming it
// within one check interval, with a Warning Event and the metric. A Secret that does
// not lend itself to the repository is not used, a release on a runtime with
// requiredForPromotion waits in front of prod while artifacts are missing, and a
// registry that is down is Mirrored=Unknown, never True.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "closure/closure.h"
#include "tests/support/process.h"
#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kIntervalSeconds = 10;  // spec.mirror.interval (its minimum)

class RuntimeMirrorClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    registry_ = ReleaseWorld::registry(error);
    ASSERT_NE(registry_, nullptr) << error;
    // The chart's opt-in: get on Secrets in the watched namespaces (spec.mirror).
    ASSERT_EQ(
        ReleaseWorld::startOperator(
            {"--registry-ca-file=" + registry_->caFile()},
            [] {
              for (const auto& o : renderChart("templates/rbac.yaml", {"mirror.credentials=true"}))
                kubectl({"apply", "-n", kOperatorNamespace, "-f", "-"}, o.dump());
            }),
        "");
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    for (const auto& o : renderChart("templates/rbac.yaml"))
      kubectl({"apply", "-n", kOperatorNamespace, "-f", "-"}, o.dump());
  }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "mirror"}), "");
    char tmpl[] = "/tmp/lockstep-mirror-cluster.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    repo_ = registry_->host() + "/mirror/" + w_.ns();
    // The pull Secret, lent to this test's repositories.
    secret("mirror-pull", registry_->host() + "/mirror/" + w_.ns());
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << kubectl({"get", "events", "-n", w_.ns()}).out << std::endl;
    w_.tearDown(HasFailure());
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A dockerconfigjson Secret with the registry's credentials, lent to `lends` ("": not lent).
  void secret(const std::string& name, const std::string& lends) {
    auto r = kubectl({"create", "secret", "docker-registry", name, "-n", w_.ns(),
                      "--docker-server=" + registry_->host(),
                      "--docker-username=" + registry_->username(),
                      "--docker-password=" + registry_->password()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    if (lends.empty()) return;
    r = kubectl(
        {"annotate", "secret", name, "-n", w_.ns(), "lockstep.dev/mirror-repositories=" + lends});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  void write(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
  }

  // Three wheels (their bytes are the test's: the check needs only their digests) and a
  // uv lock naming them by URL, digest and size.
  std::string writeWheelsAndLock() {
    std::string lock =
        "version = 1\nrequires-python = \">=3.9\"\n\n[[package]]\nname = \"app\"\n"
        "version = \"0.1.0\"\nsource = { editable = \".\" }\n";
    for (const std::string name : {"alpha", "beta", "gamma"}) {
      const std::string file = name + "-1.0.0-py3-none-any.whl";
      const std::string bytes = "wheel " + name + " of " + w_.ns() + "\n";
      write(fs::path(dir_) / "wheels" / file, bytes);
      digests_[file] = "sha256:" + closure::sha256Hex(bytes);
      lock += "\n[[package]]\nname = \"" + name +
              "\"\nversion = \"1.0.0\"\nsource = { registry = \"https://pypi.example/simple\" }\n"
              "wheels = [\n    { url = \"https://files.example/packages/" +
              file + "\", hash = \"" + digests_[file] +
              "\", size = " + std::to_string(bytes.size()) + " },\n]\n";
    }
    write(fs::path(dir_) / "uv.lock", lock);
    return lock;
  }

  CommandResult mirrorPush() {
    write(fs::path(dir_) / "certs" / "ca.crt", registry_->caPem());
    json auth = {{"auths",
                  {{registry_->host(),
                    {{"username", registry_->username()}, {"password", registry_->password()}}}}}};
    write(fs::path(dir_) / "auth.json", auth.dump());
    return run({LOCKSTEP_CLI_BIN, "mirror", "push", "--lock", dir_ + "/uv.lock", "--to", repo_,
                "--from-dir", dir_ + "/wheels", "--authfile", dir_ + "/auth.json", "--cert-dir",
                dir_ + "/certs"});
  }

  // A RuntimeEnv on the test image with `lock` inline and `mirror` as spec.mirror.
  void applyRuntimeEnv(const std::string& name, const std::string& lock, const json& mirror) {
    json rte = {
        {"apiVersion", "lockstep.dev/v1alpha1"},
        {"kind", "RuntimeEnv"},
        {"metadata", {{"name", name}, {"namespace", w_.ns()}}},
        {"spec", {{"image", kTestImage}, {"lock", {{"inline", lock}}}, {"mirror", mirror}}}};
    auto r = kubectl({"apply", "-f", "-"}, rte.dump());
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }

  // Waits until RuntimeEnv `name` has Mirrored=`status` (and `reason` if given).
  json waitMirrored(const std::string& name, const std::string& status,
                    const std::string& reason = "",
                    std::chrono::seconds timeout = std::chrono::seconds(60)) {
    json rte;
    bool ok = eventually(
        [&] {
          rte = w_.get("rte", name);
          return conditionField(rte, "Mirrored") == status &&
                 (reason.empty() || conditionField(rte, "Mirrored", "reason") == reason);
        },
        timeout);
    EXPECT_TRUE(ok) << "Mirrored never became " << status << " " << reason << ":\n"
                    << rte["status"].dump(2);
    return rte;
  }

  bool eventSeen(const std::string& name, const std::string& reason, const std::string& type) {
    return eventually([&] {
      json events = kubectlJson({"get", "events", "-n", w_.ns(), "--field-selector",
                                 "involvedObject.name=" + name + ",reason=" + reason});
      for (const json& e : events.value("items", json::array()))
        if (e.value("type", "") == type) return true;
      return false;
    });
  }

  static RegistryWorld* registry_;
  ReleaseWorld w_;
  std::string dir_, repo_;
  std::map<std::string, std::string> digests_;  // wheel file -> sha256:…
};

RegistryWorld* RuntimeMirrorClusterTest::registry_ = nullptr;

// Must-show 1, second half: pushed, Mirrored=True; one blob deleted in the registry,
// Mirrored=False naming it within one check interval.
TEST_F(RuntimeMirrorClusterTest, APushedLockIsMirroredAndADeletedBlobIsNamedWithinAnInterval) {
  const std::string lock = writeWheelsAndLock();
  auto pushed = mirrorPush();
  ASSERT_EQ(pushed.exitCode, 0) << pushed.out << pushed.err;
  ASSERT_NE(pushed.out.find("3 pushed"), std::string::npos) << pushed.out;

  applyRuntimeEnv("app", lock,
                  {{"repository", repo_},
                   {"credentialsSecretRef", {{"name", "mirror-pull"}}},
                   {"interval", std::to_string(kIntervalSeconds) + "s"}});
  json rte = waitMirrored("app", "True", "MirrorComplete");
  const json& m = rte["status"]["mirror"];
  EXPECT_EQ(m["result"], "Complete") << m.dump(2);
  EXPECT_EQ(m["artifacts"], 3);
  EXPECT_EQ(m["missing"], 0);
  EXPECT_EQ(m["manifestPresent"], true);
  EXPECT_EQ(m["closureHash"], rte["status"]["closureHash"]);
  EXPECT_EQ(m["revision"], rte["status"]["currentRevision"]);
  EXPECT_TRUE(eventSeen("app", "MirrorComplete", "Normal"));

  // Delete beta's blob through the registry's API (storage.delete.enabled).
  const std::string beta = "beta-1.0.0-py3-none-any.whl";
  const std::string digest = digests_[beta];
  auto deleted =
      run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "--cacert",
           registry_->caFile(), "-u", registry_->username() + ":" + registry_->password(),
           "https://" + repo_.substr(0, repo_.find('/')) + "/v2/mirror/" + w_.ns() + "/blobs/" +
               digest});
  ASSERT_EQ(deleted.out, "202") << deleted.out << deleted.err;
  const auto gone = std::chrono::steady_clock::now();
  auto client = registry_->client();
  ASSERT_TRUE(client.isOk());
  auto size = (*client)->blobSize("mirror/" + w_.ns(), digest);
  ASSERT_TRUE(size.isOk()) << size.status().toString();
  ASSERT_FALSE(size->has_value()) << "the registry still has the blob";

  rte =
      waitMirrored("app", "False", "ArtifactsMissing", std::chrono::seconds(3 * kIntervalSeconds));
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - gone).count();
  std::cerr << "Mirrored=False " << seconds << " s after the blob was deleted (interval "
            << kIntervalSeconds << " s)" << std::endl;
  // Within one interval, plus the check itself and the status write on a loaded machine.
  EXPECT_LT(seconds, kIntervalSeconds + 5.0);
  const std::string message = conditionField(rte, "Mirrored", "message");
  EXPECT_NE(message.find("1 of 3 artifacts is missing from the mirror " + repo_), std::string::npos)
      << message;
  EXPECT_NE(message.find(beta + " (" + digest.substr(0, 19)), std::string::npos) << message;
  const json& after = rte["status"]["mirror"];
  EXPECT_EQ(after["missing"], 1);
  ASSERT_EQ(after["missingArtifacts"].size(), 1u) << after.dump(2);
  EXPECT_EQ(after["missingArtifacts"][0]["file"], beta);
  EXPECT_EQ(after["missingArtifacts"][0]["digest"], digest);
  EXPECT_EQ(after["missingArtifacts"][0]["purl"], "pkg:pypi/beta@1.0.0");
  EXPECT_TRUE(eventSeen("app", "ArtifactsMissing", "Warning"));
  const std::string metrics = ReleaseWorld::op().scrapeMetrics();
  EXPECT_NE(metrics.find("lockstep_runtime_mirror_missing_artifacts{namespace=\"" + w_.ns() +
                         "\",runtimeenv=\"app\"} 1"),
            std::string::npos)
      << metrics.substr(0, 3000);
}

// A Secret that does not lend itself is not used; with requiredForPromotion a release
// waits in front of prod naming what is missing; a registry that is down is Unknown.
TEST_F(RuntimeMirrorClusterTest, UnlentCredentialsMissingArtifactsAndADownRegistryAreNeverTrue) {
  secret("not-lent", "");
  // The world's RuntimeEnv "torch" (a pip lock of one wheel that was never pushed).
  json patch = {{"spec",
                 {{"mirror",
                   {{"repository", repo_},
                    {"credentialsSecretRef", {{"name", "not-lent"}}},
                    {"interval", std::to_string(kIntervalSeconds) + "s"},
                    {"requiredForPromotion", true}}}}}};
  auto r = kubectl({"patch", "rte", "torch", "-n", w_.ns(), "--type=merge", "-p", patch.dump()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  json rte = waitMirrored("torch", "Unknown", "MirrorCredentialsUnavailable");
  EXPECT_NE(
      conditionField(rte, "Mirrored", "message").find("does not lend its credentials to " + repo_),
      std::string::npos)
      << conditionField(rte, "Mirrored", "message");
  EXPECT_EQ(conditionField(rte, "Mirrored", "message").find(registry_->password()),
            std::string::npos);

  patch["spec"]["mirror"]["credentialsSecretRef"]["name"] = "mirror-pull";
  r = kubectl({"patch", "rte", "torch", "-n", w_.ns(), "--type=merge", "-p", patch.dump()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  rte = waitMirrored("torch", "False", "ArtifactsMissing");
  EXPECT_NE(conditionField(rte, "Mirrored", "message").find("numpy 1.26.4"), std::string::npos)
      << conditionField(rte, "Mirrored", "message");

  ASSERT_EQ(w_.create(w_.release("v1", testPackage('1'))
                          .withGate(gateStage("eval"))
                          .withProdStage(prodStage({canaryStep(100)}).replicas(1)))
                .exitCode,
            0);
  json mr;
  ASSERT_TRUE(eventually(
      [&] {
        mr = w_.get("mr", "v1");
        return conditionField(mr, "Ready", "reason") == "RuntimeNotMirrored";
      },
      std::chrono::seconds(90)))
      << mr["status"].dump(2);
  const std::string held = conditionField(mr, "Ready", "message");
  EXPECT_NE(held.find("stage \"prod\" does not start: RuntimeEnv \"torch\" requires its mirror "
                      "for promotion: 1 of 1 artifact is missing"),
            std::string::npos)
      << held;
  EXPECT_FALSE(mr["status"].contains("canary")) << mr["status"].dump(2);

  // The registry goes down: Unknown (never True) at the next check.
  ASSERT_TRUE(registry_->stop().isOk());
  rte = waitMirrored("torch", "Unknown", "MirrorUnreachable");
  ASSERT_TRUE(registry_->startAgain().isOk());
  EXPECT_EQ(rte["status"]["mirror"]["result"], "Unreachable");
  EXPECT_TRUE(eventSeen("torch", "MirrorUnreachable", "Warning"));
  EXPECT_EQ(conditionField(w_.get("mr", "v1"), "Ready", "reason"), "RuntimeNotMirrored");
}

}  // namespace
}  // namespace lockstep::testing
