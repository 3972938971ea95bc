// Evidence against the real control plane and a real registry (Debian's
// docker-registry 2.8 over TLS with htpasswd, which has no referrers API: the
// tag-schema fallback): the operator binary, with the chart's RBAC and a
// SigningConfig whose key and credentials Secrets sit in the operator's
// namespace, signs each passed stage's test result and decision and the prod
// record of a promoted release and pushes them as referrers of the package;
// `lockstep evidence list|verify` reads them back from the registry and
// refuses them under another key or another stage spec. A registry that
// refuses the push (credentials revoked mid-promotion) never holds the
// release: EvidencePublished=False says why, and the statements land once the
// credentials are back. The invariant monitor watches every test's model.
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "operator/registry/connect.h"
#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kRepo = "models/evidence";
// What a release with an eval gate and a prod stage publishes, in order.
const std::vector<std::string> kStatements = {"eval/test-result", "eval/decision",
                                              "prod/promoted"};

CommandResult lockstepCli(std::vector<std::string> args) {
  args.insert(args.begin(), LOCKSTEP_CLI_BIN);
  return run(args);
}

class EvidenceClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    registry_ = ReleaseWorld::registry(error);
    ASSERT_NE(registry_, nullptr) << error;
    auto dir = run({"mktemp", "-d"});
    ASSERT_EQ(dir.exitCode, 0);
    dir_ = dir.out.substr(0, dir.out.find('\n'));
    // The signing key, another key nobody trusts, and the CLI's registry access.
    for (const std::string& k : {"key", "other"}) {
      ASSERT_EQ(run({"openssl", "ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out",
                     dir_ + "/" + k + ".sec1"})
                    .exitCode,
                0);
      ASSERT_EQ(run({"openssl", "pkcs8", "-topk8", "-nocrypt", "-in", dir_ + "/" + k + ".sec1",
                     "-out", dir_ + "/" + k + ".pem"})
                    .exitCode,
                0);
      ASSERT_EQ(run({"openssl", "ec", "-in", dir_ + "/" + k + ".pem", "-pubout", "-out",
                     dir_ + "/" + k + ".pub"})
                    .exitCode,
                0);
    }
    run({"mkdir", "-p", dir_ + "/certs"});
    run({"cp", registry_->caFile(), dir_ + "/certs/ca.crt"});
    std::ofstream(dir_ + "/auth.json")
        << json{{"auths",
                 {{registry_->host(),
                   {{"username", registry_->username()}, {"password", registry_->password()}}}}}}
               .dump();
    ASSERT_EQ(ReleaseWorld::startOperator(
                  {"--registry-ca-file=" + registry_->caFile(), "--cluster-name=test-east"},
                  [] {
                    kubectl({"delete", "secret", "-n", kOperatorNamespace, "evidence-key",
                             "evidence-registry", "--ignore-not-found"});
                    auto key = kubectl({"create", "secret", "generic", "evidence-key", "-n",
                                        kOperatorNamespace, "--from-file=key.pem=" + dir_ +
                                                                "/key.pem"});
                    EXPECT_EQ(key.exitCode, 0) << key.err;
                    setRegistryPassword(registry_->password());
                    auto config = kubectl(
                        {"apply", "-f", "-"},
                        json{{"apiVersion", "lockstep.dev/v1alpha1"},
                             {"kind", "SigningConfig"},
                             {"metadata", {{"name", "test-evidence"}}},
                             {"spec",
                              {{"repositories", json::array({registry_->host() + "/models/"})},
                               {"keySecretRef", {{"name", "evidence-key"}}},
                               {"registryCredentialsSecretRef", {{"name", "evidence-registry"}}}}}}
                            .dump());
                    EXPECT_EQ(config.exitCode, 0) << config.err;
                  }),
              "");
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    kubectl({"delete", "signingconfig", "test-evidence", "--ignore-not-found"});
    if (!dir_.empty()) run({"rm", "-rf", dir_});
  }
  // The push credentials of the SigningConfig (a wrong password: the registry refuses).
  static void setRegistryPassword(const std::string& password) {
    auto secret = kubectl({"create", "secret", "docker-registry", "evidence-registry", "-n",
                           kOperatorNamespace, "--docker-server=" + registry_->host(),
                           "--docker-username=" + registry_->username(),
                           "--docker-password=" + password, "--dry-run=client", "-o", "json"});
    ASSERT_EQ(secret.exitCode, 0) << secret.err;
    auto applied = kubectl({"apply", "-f", "-"}, secret.out);
    ASSERT_EQ(applied.exitCode, 0) << applied.err;
  }

  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "evidence", .monitor = true}), "");
    registry::ConnectOptions co;
    co.caPem = registry_->caPem();
    auto c = registry::connectRegistry(
        registry_->host(), registry::Credentials{registry_->username(), registry_->password(), ""},
        co);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(*c);
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  std::string push(const std::string& salt) {
    auto d = pushTestImage(*client_, kRepo, w_.ns() + "-" + salt);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? *d : "";
  }
  std::string pkg(const std::string& digest) {
    return registry_->host() + "/" + kRepo + "@" + digest;
  }
  CommandResult createRelease(const std::string& name, const std::string& package) {
    return w_.create(w_.release(name, package)
                         .withGate(gateStage("eval", R"({"score": 0.9})", "1s",
                                             json::array({{{"name", "score"}, {"min", 0.5}}})))
                         .withProdStage(prodStage(json::array({json{{"weight", 50}}}))));
  }
  // Waits until the release is Promoted and EvidencePublished has `status`
  // over all `statements` (the prod record is planned once the canary ended).
  json waitEvidence(const std::string& name, const std::string& status, size_t statements) {
    json last;
    bool ok = eventually(
        [&] {
          last = w_.get("mr", name);
          return !last.is_discarded() &&
                 last.value("/status/phase"_json_pointer, std::string()) == "Promoted" &&
                 last.value("/status/evidence"_json_pointer, json::array()).size() ==
                     statements &&
                 conditionField(last, "EvidencePublished", "status") == status;
        },
        std::chrono::seconds(180));
    EXPECT_TRUE(ok) << name << ": not Promoted with EvidencePublished=" << status << ": "
                    << last.value("status", json()).dump(2);
    return last;
  }
  std::vector<std::string> access() {
    return {"--authfile=" + dir_ + "/auth.json", "--cert-dir=" + dir_ + "/certs"};
  }
  CommandResult evidence(std::vector<std::string> args) {
    args.insert(args.begin(), "evidence");
    for (const auto& a : access()) args.push_back(a);
    return lockstepCli(args);
  }

  static RegistryWorld* registry_;
  static std::string dir_;
  ReleaseWorld w_;
  std::unique_ptr<registry::RegistryClient> client_;
};

RegistryWorld* EvidenceClusterTest::registry_ = nullptr;
std::string EvidenceClusterTest::dir_;

TEST_F(EvidenceClusterTest, PromotionPublishesSignedStatementsThatTheCliVerifies) {
  const std::string d1 = push("v1");
  ASSERT_FALSE(d1.empty());
  ASSERT_EQ(createRelease("v1", pkg(d1)).exitCode, 0);
  json v1 = waitEvidence("v1", "True", kStatements.size());
  const json& entries = v1["status"]["evidence"];
  ASSERT_EQ(entries.size(), kStatements.size()) << entries.dump(2);
  for (size_t i = 0; i < kStatements.size(); ++i) {
    EXPECT_EQ(entries[i]["name"], kStatements[i]);
    EXPECT_EQ(entries[i]["phase"], "Published") << entries[i].dump();
    EXPECT_EQ(entries[i].value("referrer", "").rfind("sha256:", 0), 0u);
  }
  // The gate Job committed the stage spec digest before it ran.
  const std::string specDigest =
      v1["status"]["stages"][0]["evidence"].value("specDigest", std::string());
  EXPECT_EQ(specDigest.rfind("sha256:", 0), 0u) << v1["status"]["stages"].dump(2);

  // Docker-registry 2.8 has no referrers API: the index under the fallback tag.
  auto list = client_->referrers(kRepo, d1);
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  EXPECT_TRUE(list->viaTag);
  EXPECT_EQ(list->descriptors.size(), kStatements.size());

  auto listed = evidence({"list", pkg(d1)});
  EXPECT_EQ(listed.exitCode, 0) << listed.err;
  for (const std::string& s : kStatements)
    EXPECT_NE(listed.out.find(s), std::string::npos) << s << " in\n" << listed.out;
  EXPECT_NE(listed.out.find("3 signed statements"), std::string::npos) << listed.out;

  auto verified = evidence({"verify", pkg(d1), "--key=" + dir_ + "/key.pub"});
  EXPECT_EQ(verified.exitCode, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("3 statements verified"), std::string::npos) << verified.out;

  auto eval = evidence({"verify", pkg(d1), "--key=" + dir_ + "/key.pub", "--stage=eval",
                        "--spec-digest=" + specDigest});
  EXPECT_EQ(eval.exitCode, 0) << eval.out << eval.err;
  EXPECT_NE(eval.out.find("2 statements verified"), std::string::npos) << eval.out;

  // Tamper-evidence: another key, another stage spec.
  auto other = evidence({"verify", pkg(d1), "--key=" + dir_ + "/other.pub"});
  EXPECT_EQ(other.exitCode, 1) << other.out;
  EXPECT_NE(other.out.find("not trusted"), std::string::npos) << other.out;
  auto changed = evidence({"verify", pkg(d1), "--key=" + dir_ + "/key.pub", "--stage=eval",
                           "--spec-digest=sha256:" + std::string(64, '0')});
  EXPECT_EQ(changed.exitCode, 1) << changed.out;
  EXPECT_NE(changed.out.find("the stage changed since"), std::string::npos) << changed.out;

  // The statement as JSON: the prod record names this cluster.
  auto got = evidence({"get", pkg(d1), "--statement=prod/promoted"});
  ASSERT_EQ(got.exitCode, 0) << got.err;
  json record = json::parse(got.out, nullptr, false);
  ASSERT_FALSE(record.is_discarded()) << got.out;
  EXPECT_EQ(record["predicate"]["cluster"], "test-east");
  EXPECT_EQ(record["predicate"]["outcome"], "Promoted");
  EXPECT_EQ(record["subject"][0]["digest"]["sha256"], d1.substr(7));

  // The operator restarted: nothing is pushed twice.
  ReleaseWorld::op().stop();
  ASSERT_EQ(ReleaseWorld::ensureOperator(), "");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(client_->referrers(kRepo, d1)->descriptors.size(), kStatements.size());
}

TEST_F(EvidenceClusterTest, ARegistryThatRefusesThePushNeverHoldsThePromotion) {
  const std::string d2 = push("v2");
  ASSERT_FALSE(d2.empty());
  setRegistryPassword("revoked");
  ASSERT_EQ(createRelease("v2", pkg(d2)).exitCode, 0);
  json v2 = waitEvidence("v2", "False", kStatements.size());
  const std::string message = conditionField(v2, "EvidencePublished", "message");
  EXPECT_NE(message.find("HTTP 401"), std::string::npos) << message;
  EXPECT_NE(message.find("retrying"), std::string::npos) << message;
  EXPECT_EQ(conditionField(v2, "Ready", "status"), "True") << v2["status"].dump(2);
  EXPECT_TRUE(client_->referrers(kRepo, d2)->descriptors.empty());

  setRegistryPassword(registry_->password());
  json back = waitEvidence("v2", "True", kStatements.size());
  EXPECT_EQ(back["status"]["evidence"].size(), kStatements.size());
  for (const json& e : back["status"]["evidence"]) EXPECT_GE(e.value("attempts", 0), 2) << e;
  EXPECT_EQ(client_->referrers(kRepo, d2)->descriptors.size(), kStatements.size());
}

}  // namespace
}  // namespace lockstep::testing
