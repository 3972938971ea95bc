// `lockstep fleet status` against a real registry (Debian's docker-registry
// 2.8 over TLS with htpasswd, which has no referrers API: the tag-schema
// fallback), started by the test: a hub's permits and a cluster's prod record
// pushed as referrers of a package the way the operator pushes them, read back
// by the CLI binary with the registry's credentials and CA, verified under a
// TrustPolicy, and shown with the ModelRollout's planner and without it. No
// Kubernetes cluster.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evidence/bundle.h"
#include "operator/registry/bundle_referrers.h"
#include "tests/cmd/fleet_statements.h"
#include "tests/support/process.h"
#include "tests/support/registry_world.h"

namespace lockstep::testing {
namespace {

using fleet::kT0;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr int64_t kMinute = 60;
const std::string kRepo = "models/llama";

CommandResult lockstep(std::vector<std::string> args) {
  args.insert(args.begin(), LOCKSTEP_CLI_BIN);
  return run(args);
}

class FleetCliRegistryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    world_ = RegistryWorld::start(error).release();
    ASSERT_NE(world_, nullptr) << error;
    auto dir = run({"mktemp", "-d"});
    ASSERT_EQ(dir.exitCode, 0);
    dir_ = dir.out.substr(0, dir.out.find('\n'));
    ASSERT_EQ(run({"mkdir", "-p", dir_ + "/certs"}).exitCode, 0);
    ASSERT_EQ(run({"cp", world_->caFile(), dir_ + "/certs/ca.crt"}).exitCode, 0);
    std::ofstream(dir_ + "/auth.json") << dockerConfig(world_->password());
    std::ofstream(dir_ + "/wrong-auth.json") << dockerConfig("not-the-password");

    auto client = world_->client();
    ASSERT_TRUE(client.isOk()) << client.status().toString();
    client_ = client->release();
    auto digest = pushTestImage(*client_, kRepo, "llama-v7");
    ASSERT_TRUE(digest.isOk()) << digest.status().toString();
    package_ = world_->host() + "/" + kRepo + "@" + *digest;
    auto ref = api::parseImageRef(package_);
    ASSERT_TRUE(ref.isOk()) << ref.status().toString();
    ref_ = *ref;

    // The hub signs with signer.key, the clusters with other.key.
    std::ofstream(dir_ + "/trust.yaml")
        << "apiVersion: lockstep.dev/v1alpha1\nkind: TrustPolicy\nmetadata: {name: fleet}\n"
           "spec:\n  keys:\n  - name: hub\n    publicKey: " +
               json(fleet::testdata("signer.pub")).dump() +
               "\n  - name: clusters\n    publicKey: " + json(fleet::testdata("other.pub")).dump() +
               "\n  rules:\n  - {stages: [fleet], keys: [hub]}\n"
               "  - {stages: [prod], keys: [clusters]}\n";
    std::ofstream(dir_ + "/rollout.yaml")
        << "apiVersion: lockstep.dev/v1alpha1\nkind: ModelRollout\n"
           "metadata: {name: llama-v7, namespace: ml}\nspec:\n  package: " +
               package_ +
               "\n  model: llama\n  waves:\n  - {name: first, clusters: [b]}\n"
               "  - {name: rest, clusters: [c, d]}\n"
               "  strategy: {maxConcurrency: 1, maxFailures: 1, minSuccessTime: 10m, "
               "progressDeadline: 30m}\n  trustPolicy: fleet\n";

    push(fleet::permit("first", 0, {"b"}, kT0, ref_), "signer.key", "fleet/permit-first");
    push(fleet::record("b", "Promoted", kT0 + 2 * kMinute, "", ref_), "other.key", "prod/promoted");
    push(fleet::permit("rest", 1, {"c"}, kT0 + 13 * kMinute, ref_), "signer.key",
         "fleet/permit-rest");
    // Signed by a cluster's key, which is not trusted for the hub's stage.
    push(fleet::permit("rest", 1, {"d"}, kT0 + 14 * kMinute, ref_), "other.key",
         "fleet/permit-rest");
  }

  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
    delete world_;
    world_ = nullptr;
    if (!dir_.empty()) run({"rm", "-rf", dir_});
  }

  static std::string dockerConfig(const std::string& password) {
    return json{
        {"auths", {{world_->host(), {{"username", world_->username()}, {"password", password}}}}}}
        .dump();
  }

  // Signed and pushed as the operator pushes a statement (controllers/evidence).
  static void push(const ordered_json& statement, const std::string& key, const std::string& name) {
    auto subject = client_->describe(kRepo, ref_.digest);
    ASSERT_TRUE(subject.isOk()) << subject.status().toString();
    registry::Artifact artifact;
    artifact.artifactType = evidence::kBundleMediaType;
    artifact.bytes = fleet::signedBundle(statement, key);
    artifact.annotations = {
        {"dev.sigstore.bundle.content", "dsse-envelope"},
        {registry::kBundlePredicateAnnotation, statement.value("predicateType", "")},
        {registry::kBundleStatementAnnotation, name}};
    auto pushed = client_->pushReferrer(kRepo, *subject, artifact);
    ASSERT_TRUE(pushed.isOk()) << pushed.status().toString();
  }

  static std::vector<std::string> access(const std::string& auth = "auth.json") {
    return {"--authfile=" + dir_ + "/" + auth, "--cert-dir=" + dir_ + "/certs"};
  }

  static RegistryWorld* world_;
  static registry::RegistryClient* client_;
  static std::string dir_, package_;
  static api::ImageRef ref_;
};
RegistryWorld* FleetCliRegistryTest::world_ = nullptr;
registry::RegistryClient* FleetCliRegistryTest::client_ = nullptr;
std::string FleetCliRegistryTest::dir_;
std::string FleetCliRegistryTest::package_;
api::ImageRef FleetCliRegistryTest::ref_;

TEST_F(FleetCliRegistryTest, ShowsTheRolloutFromTheRegistryAlone) {
  std::vector<std::string> args = {"fleet",
                                   "status",
                                   "--rollout=" + dir_ + "/rollout.yaml",
                                   "--policy=" + dir_ + "/trust.yaml",
                                   "--now",
                                   evidence::statementTime(kT0 + 20 * kMinute),
                                   "-o",
                                   "json"};
  for (const std::string& a : access()) args.push_back(a);
  auto r = lockstep(args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["package"], package_);
  EXPECT_EQ(s["rollout"], "ml/llama-v7");
  EXPECT_EQ(s["phase"], "Progressing") << s.dump(2);
  EXPECT_EQ(s["waves"][0]["phase"], "Succeeded");
  EXPECT_EQ(s["clusters"][0]["state"], "Soaked");
  EXPECT_EQ(s["clusters"][1]["state"], "Permitted");
  EXPECT_EQ(s["clusters"][2]["state"], "Pending") << "d's permit is signed by an untrusted key";
  ASSERT_EQ(s["refused"].size(), 1u);
  EXPECT_EQ(s["refused"][0]["statement"], "fleet/permit-rest");
  EXPECT_NE(s["refused"][0]["reason"].get<std::string>().find("not trusted for stage \"fleet\""),
            std::string::npos);

  // Without the rollout, by the package, as a table; --key files are trusted for
  // every stage.
  args = {"fleet", "status", package_,
          "--key=" + sourcePath("tests/evidence/testdata/signer.pub") + "," +
              sourcePath("tests/evidence/testdata/other.pub")};
  for (const std::string& a : access()) args.push_back(a);
  r = lockstep(args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("PHASE    Progressing: 3 clusters in 3 permits and 1 prod record"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nd        rest   Permitted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 permits, 1 prod records, 0 aborts verified; 0 refused"),
            std::string::npos)
      << r.out;
}

TEST_F(FleetCliRegistryTest, SaysWhatTheRegistryOrAFileRefused) {
  std::vector<std::string> args = {"fleet", "status", package_, "--policy=" + dir_ + "/trust.yaml"};
  for (const std::string& a : access("wrong-auth.json")) args.push_back(a);
  auto r = lockstep(args);
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_NE(r.err.find("401"), std::string::npos) << r.err;

  std::ofstream(dir_ + "/bad-rollout.yaml")
      << "apiVersion: lockstep.dev/v1alpha1\nkind: ModelRollout\nmetadata: {name: x}\nspec:\n"
         "  package: " +
             package_ + "\n  model: llama\n  waves:\n  - {name: first}\n";
  args = {"fleet", "status", "--rollout=" + dir_ + "/bad-rollout.yaml",
          "--policy=" + dir_ + "/trust.yaml"};
  for (const std::string& a : access()) args.push_back(a);
  r = lockstep(args);
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_EQ(r.err, "fleet status: " + dir_ +
                       "/bad-rollout.yaml:8: spec.waves[0]: names no clusters and has no "
                       "clusterSelector\n");
}

}  // namespace
}  // namespace lockstep::testing
