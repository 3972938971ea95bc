// Registry stage tags against the real control plane and a real registry
// (Debian's docker-registry over TLS with htpasswd, tests/cluster/registry.sh):
// the operator binary, deployed with the chart's RBAC and registryTags.enabled,
// tags each release's package `<repo>:<stage>` as its stages pass, keeps
// `:prod` on the promoted release when a canary is rolled back automatically
// (Prometheus analysis, must-show 2 of issue 14), and moves `:prod` back when
// it had been pointed at a release that is then rolled back. On the same
// registry, a ModelPack model pushed with oras and the model-spec's media types
// (tests/cluster/modelpack-push.sh) is described in status.package and mounted in
// its gate pod, and an artifact of an unknown media type is refused before any
// Job (issue 32, must-show 4). The invariant monitor watches every test's model
// (tests/support/release_world.h).
#include <cstdlib>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kRepo = "models/gpt2";

class StageTagsClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    registry_ = ReleaseWorld::registry(error);
    ASSERT_NE(registry_, nullptr) << error;
    // The chart's opt-in: get on Secrets in the watched namespaces.
    ASSERT_EQ(ReleaseWorld::startOperator(
                  {"--registry-ca-file=" + registry_->caFile()},
                  [] {
                    for (const auto& o :
                         renderChart("templates/rbac.yaml", {"registryTags.enabled=true"}))
                      kubectl({"apply", "-n", kOperatorNamespace, "-f", "-"}, o.dump());
                  }),
              "");
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    // Back to the chart's default RBAC for the other tests.
    for (const auto& o : renderChart("templates/rbac.yaml"))
      kubectl({"apply", "-n", kOperatorNamespace, "-f", "-"}, o.dump());
  }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "tags", .prometheus = true, .monitor = true}), "");
    ns_ = w_.ns();
    auto c = registry_->client();
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(*c);
    auto secret = kubectl({"create", "secret", "docker-registry", "pull", "-n", ns_,
                           "--docker-server=" + registry_->host(),
                           "--docker-username=" + registry_->username(),
                           "--docker-password=" + registry_->password()});
    ASSERT_EQ(secret.exitCode, 0) << secret.err;
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  std::string push(const std::string& salt) {
    auto d = pushTestImage(*client_, kRepo, ns_ + "-" + salt);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? *d : "";
  }
  std::string pkg(const std::string& digest) {
    return registry_->host() + "/" + kRepo + "@" + digest;
  }
  std::string tagDigest(const std::string& tag) {
    auto d = client_->resolveTag(kRepo, tag);
    return d.isOk() ? *d : d.status().toString();
  }

  json analysedStep(int weight, int count) { return w_.analysedStep(weight, count); }

  CommandResult createRelease(const std::string& name, const std::string& package, json prodSteps) {
    return w_.create(w_.release(name, package)
                         .spec("registryTags", {{"secretRef", {{"name", "pull"}}}})
                         .withGate(gateStage("eval", R"({"score": 1})"))
                         .withGate(gateStage("ci", R"({"score": 1})"))
                         .withProdStage(prodStage(std::move(prodSteps))));
  }

  json get(const std::string& name) { return w_.get("mr", name); }

  // oras, from the evidence tools (built and cached by the script when CI did not).
  static std::string oras() {
    if (const char* bin = std::getenv("LOCKSTEP_EVIDENCE_TOOLS_BIN");
        bin && *bin && access((std::string(bin) + "/oras").c_str(), X_OK) == 0)
      return std::string(bin) + "/oras";
    auto tools = run({sourcePath("tests/cluster/build-evidence-tools.sh"), "oras"});
    EXPECT_EQ(tools.exitCode, 0) << tools.err;
    return tools.out.substr(0, tools.out.find('\n')) + "/oras";
  }
  // Pushes with tests/cluster/modelpack-push.sh; the package reference by digest.
  std::string pushModelPack(const std::string& repo, const std::string& mode = "") {
    std::vector<std::string> args = {"bash",
                                     sourcePath("tests/cluster/modelpack-push.sh"),
                                     oras(),
                                     registry_->caFile(),
                                     registry_->username(),
                                     registry_->host() + "/" + repo + ":" + ns_};
    if (!mode.empty()) args.push_back(mode);
    auto pushed = run(args, registry_->password());
    EXPECT_EQ(pushed.exitCode, 0) << pushed.err;
    const std::string digest = pushed.out.substr(0, pushed.out.find('\n'));
    EXPECT_EQ(digest.rfind("sha256:", 0), 0u) << pushed.out;
    return registry_->host() + "/" + repo + "@" + digest;
  }

  // Waits for phase and for status.registryTags to show every tag in `tags` Tagged.
  json waitTagged(const std::string& name, const std::string& phase,
                  const std::map<std::string, std::string>& tags) {
    json last;
    bool ok = eventually(
        [&] {
          last = get(name);
          // A release just created has no status yet.
          if (last.is_discarded() ||
              last.value("/status/phase"_json_pointer, std::string()) != phase)
            return false;
          size_t found = 0;
          for (const json& e : last.value("/status/registryTags"_json_pointer, json::array())) {
            auto it = tags.find(e.value("tag", ""));
            if (it != tags.end() && e.value("digest", "") == it->second &&
                e.value("phase", "") == "Tagged")
              ++found;
          }
          return found == tags.size();
        },
        std::chrono::seconds(180));
    EXPECT_TRUE(ok) << name << ": not " << phase << " with its tags: " << last.dump(2);
    return last;
  }

  static std::string condition(const json& mr, const std::string& type, const char* field) {
    return conditionField(mr, type, field);
  }

  static RegistryWorld* registry_;
  ReleaseWorld w_;
  std::unique_ptr<registry::RegistryClient> client_;
  std::string ns_;
};

RegistryWorld* StageTagsClusterTest::registry_ = nullptr;

// Must-show 1 and 2 (`:prod`): v1 and v2 pass eval, ci and prod and carry all
// three tags in turn; v3's canary errors: automatic rollback, `:prod` stays on v2.
TEST_F(StageTagsClusterTest, StagesTagThePackageAndARollbackLeavesProdOnThePromotedRelease) {
  const std::string d1 = push("v1"), d2 = push("v2"), d3 = push("v3");
  ASSERT_FALSE(d1.empty() || d2.empty() || d3.empty());

  ASSERT_EQ(createRelease("v1", pkg(d1), json::array({analysedStep(50, 2)})).exitCode, 0);
  json v1 = waitTagged("v1", "Promoted", {{"eval", d1}, {"ci", d1}, {"prod", d1}});
  EXPECT_EQ(condition(v1, "RegistryTagged", "status"), "True") << v1["status"].dump(2);
  EXPECT_EQ(condition(v1, "Ready", "status"), "True");
  EXPECT_EQ(tagDigest("eval"), d1);
  EXPECT_EQ(tagDigest("ci"), d1);
  EXPECT_EQ(tagDigest("prod"), d1);
  // Events are written off the reconcile path: they may trail the status.
  json events;
  EXPECT_TRUE(eventually([&] {
    events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                          "involvedObject.name=v1,reason=RegistryTagged"});
    return events["items"].size() >= 3u;
  }));
  EXPECT_EQ(events["items"].size(), 3u) << events.dump(2);

  ASSERT_EQ(createRelease("v2", pkg(d2), json::array({analysedStep(50, 2)})).exitCode, 0);
  json v2 = waitTagged("v2", "Promoted", {{"eval", d2}, {"ci", d2}, {"prod", d2}});
  EXPECT_EQ(tagDigest("prod"), d2);
  for (const json& e : v2["status"]["registryTags"]) {
    if (e["tag"] == "prod") {
      EXPECT_EQ(e.value("previousDigest", ""), d1) << e.dump();
    }
  }

  // v3 passes its gates (eval, ci move to v3) but its canary serves errors.
  ASSERT_TRUE(w_.prom().setRate("v3", 0.5));
  ASSERT_EQ(createRelease("v3", pkg(d3), json::array({analysedStep(50, 3), json{{"weight", 100}}}))
                .exitCode,
            0);
  json v3 = waitTagged("v3", "RolledBack", {{"eval", d3}, {"ci", d3}, {"prod", d2}});
  EXPECT_EQ(condition(v3, "Stalled", "reason"), "AnalysisFailed") << v3["status"].dump(2);
  EXPECT_EQ(tagDigest("eval"), d3);
  EXPECT_EQ(tagDigest("ci"), d3);
  EXPECT_EQ(tagDigest("prod"), d2);  // unchanged: never pointed at v3
  EXPECT_EQ(get("v2")["status"]["phase"], "Promoted");
}

// A rolled-back release moves `:prod` back to the last known-good package even
// when something had pointed it at the release (here: the test, mid-canary).
TEST_F(StageTagsClusterTest, RollbackMovesProdBackToTheKnownGoodPackage) {
  const std::string d1 = push("good"), d2 = push("bad");
  ASSERT_FALSE(d1.empty() || d2.empty());
  ASSERT_EQ(
      createRelease("good", pkg(d1), json::array({json{{"weight", 50}, {"pause", "1s"}}})).exitCode,
      0);
  waitTagged("good", "Promoted", {{"eval", d1}, {"ci", d1}, {"prod", d1}});

  ASSERT_EQ(
      createRelease("bad", pkg(d2), json::array({json{{"weight", 50}, {"pause", "Indefinite"}}}))
          .exitCode,
      0);
  // In canary with its gate tags written: the operator has nothing more to
  // write for it, so the test's own tag write does not race one of its writes
  // (docker-registry 2.8 answers a GET of a manifest whose link file another
  // request is rewriting with HTTP 500).
  waitTagged("bad", "Canary", {{"eval", d2}, {"ci", d2}});
  auto moved = client_->tag(registry::PackageRef{registry_->host(), kRepo, d2}, "prod");
  ASSERT_TRUE(moved.isOk()) << moved.status().toString();
  ASSERT_EQ(tagDigest("prod"), d2);

  auto who = kubectl({"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  ASSERT_EQ(who.exitCode, 0) << who.err;
  auto abort = kubectl({"annotate", "mr", "bad", "-n", ns_, "lockstep.dev/abort=" + who.out});
  ASSERT_EQ(abort.exitCode, 0) << abort.err;
  json bad = waitTagged("bad", "RolledBack", {{"prod", d1}});
  EXPECT_EQ(tagDigest("prod"), d1);
  for (const json& e : bad["status"]["registryTags"]) {
    if (e["tag"] == "prod") {
      EXPECT_EQ(e.value("previousDigest", ""), d2) << e.dump();
    }
  }
  // Events are written off the reconcile path: they may trail the status.
  json events;
  bool sawProd = false;
  EXPECT_TRUE(eventually([&] {
    events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                          "involvedObject.name=bad,reason=RegistryTagged"});
    for (const json& e : events["items"])
      sawProd = sawProd || e.value("message", "").find(":prod -> " + d1) != std::string::npos;
    return sawProd;
  }));
  EXPECT_TRUE(sawProd) << events.dump(2);
}

// Must-show 4 of issue 32: a ModelPack model (oras with the model-spec's media types;
// modctl is not served to this project) is read before the first stage: status.package
// describes its config and the gate pod mounts it as an image volume. An artifact whose
// blob has an unknown media type is refused before any Job, the type named.
TEST_F(StageTagsClusterTest, AModelPackPackageIsDescribedAndMountedAndAnUnknownOneRefused) {
  const std::string model = pushModelPack("models/tiny-modelpack");
  const std::string unknown = pushModelPack("models/unknown-artifact", "--unknown");
  ASSERT_FALSE(HasFailure());
  auto secretRef = json{{"secretRef", {{"name", "pull"}}}};
  ASSERT_EQ(w_.create(w_.release("mp", model)
                          .spec("registryTags", secretRef)
                          .withGate(gateStage("eval", R"({"score": 1})")))
                .exitCode,
            0);
  ASSERT_EQ(w_.create(w_.release("unknown", unknown)
                          .spec("registryTags", secretRef)
                          .withGate(gateStage("eval", R"({"score": 1})")))
                .exitCode,
            0);

  json mp = w_.waitPhase("mp", "Validated");
  const json& pkg = mp["status"]["package"];
  EXPECT_EQ(pkg.value("kind", ""), "ModelPack") << mp["status"].dump(2);
  EXPECT_EQ(pkg.value("digest", ""), model.substr(model.find('@') + 1));
  EXPECT_EQ(pkg.value("artifactType", ""), "application/vnd.cncf.model.manifest.v1+json");
  EXPECT_EQ(pkg.value("layers", 0), 2);
  EXPECT_EQ(pkg["model"], json::parse(R"({"name": "tiny-gpt2", "family": "gpt2",
      "version": "1.0", "format": "safetensors", "architecture": "transformer",
      "paramSize": "0.1m", "parameterCount": 100000, "precision": "float32",
      "licenses": ["MIT"], "inputTypes": ["text"], "outputTypes": ["text"],
      "configDigest": ")" + pkg["model"].value("configDigest", "") +
                                      R"("})"))
      << pkg.dump(2);
  // The gate pod mounts the package itself, by digest, as an image volume.
  json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/release=mp"});
  ASSERT_EQ(pods["items"].size(), 1u) << pods.dump();
  bool mounted = false;
  for (const json& v : pods["items"][0]["spec"]["volumes"])
    mounted = mounted || v.value("/image/reference"_json_pointer, std::string()) == model;
  EXPECT_TRUE(mounted) << pods["items"][0]["spec"]["volumes"].dump(2);

  json refused = w_.waitPhase("unknown", "Failed");
  EXPECT_EQ(condition(refused, "Stalled", "reason"), "PackageRefused") << refused["status"].dump(2);
  const std::string message = condition(refused, "Ready", "message");
  EXPECT_NE(message.find("\"application/vnd.example.unknown.v1\""), std::string::npos) << message;
  EXPECT_EQ(message.rfind("package " + unknown + " is neither an image nor a ModelPack model", 0),
            0u)
      << message;
  EXPECT_TRUE(kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=unknown"})["items"]
                  .empty());
}

}  // namespace
}  // namespace lockstep::testing
