// Evidence against the real control plane and a real registry (Debian's
// docker-registry 2.8 over TLS with htpasswd, which has no referrers API: the
// tag-schema fallback): the operator binary, with the chart's RBAC and a
// SigningConfig whose key and credentials Secrets sit in the operator's
// namespace, signs each passed stage's test result and decision and the prod
// record of a promoted release and pushes them as referrers of the package;
// `lockstep evidence list|verify` reads them back from the registry and
// refuses them under another key or another stage spec. On that registry and
// on go-containerregistry's (which has the referrers API), the independent
// tools agree: cosign v3 verify-attestation accepts each statement under the
// key and refuses it under another, and oras discover lists them. A registry that
// refuses the push (credentials revoked mid-promotion) never holds the
// release: EvidencePublished=False says why, and the statements land once the
// credentials are back. A serving namespace whose release has evidence stages
// instead of gates promotes by the gate cluster's statements alone, with no
// Job, and holds what is unsigned, signed by an untrusted key or made for
// other content, with the reason. The invariant monitor watches every test's
// model.
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/image_ref.h"
#include "common/base64.h"
#include "evidence/fleet_statement.h"
#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kRepo = "models/evidence";
// What a release with an eval gate and a prod stage publishes, in order.
const std::vector<std::string> kStatements = {"eval/test-result", "eval/decision", "prod/promoted",
                                              "bom"};

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
    // go-containerregistry's registry (cached after the first build); cosign and oras are
    // built on the first call of tool() (CI runs no case that needs them: tools/test.sh long).
    auto tools = run({sourcePath("tests/cluster/build-evidence-tools.sh"), "registry"});
    ASSERT_EQ(tools.exitCode, 0) << tools.err;
    tools_ = tools.out.substr(0, tools.out.find('\n'));
    setenv("LOCKSTEP_EVIDENCE_TOOLS_BIN", tools_.c_str(), 1);
    referrers_ = RegistryWorld::start(error, "referrers").release();
    ASSERT_NE(referrers_, nullptr) << error;
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
    run({"cp", referrers_->caFile(), dir_ + "/certs/referrers.crt"});
    run({"mkdir", "-p", dir_ + "/docker", dir_ + "/tuf"});
    std::ofstream(dir_ + "/auth.json") << dockerConfig(registry_->password());
    std::ofstream(dir_ + "/docker/config.json") << dockerConfig(registry_->password());
    // The operator's own --registry-ca-file trusts docker-registry's CA only; the
    // SigningConfig brings both (registryCABundle), so go-containerregistry's registry
    // is reached through the config's CA alone.
    ASSERT_EQ(run({"sh", "-c",
                   "cat '" + registry_->caFile() + "' '" + referrers_->caFile() + "' > '" + dir_ +
                       "/cas.pem'"})
                  .exitCode,
              0);
    const std::string configCas = readFile(dir_ + "/cas.pem");
    ASSERT_EQ(ReleaseWorld::startOperator(
                  {"--registry-ca-file=" + registry_->caFile(), "--cluster-name=test-east"},
                  [configCas] {
                    kubectl({"delete", "secret", "-n", kOperatorNamespace, "evidence-key",
                             "evidence-registry", "--ignore-not-found"});
                    auto key =
                        kubectl({"create", "secret", "generic", "evidence-key", "-n",
                                 kOperatorNamespace, "--from-file=key.pem=" + dir_ + "/key.pem"});
                    EXPECT_EQ(key.exitCode, 0) << key.err;
                    setRegistryPassword(registry_->password());
                    auto config = kubectl(
                        {"apply", "-f", "-"},
                        json{{"apiVersion", "lockstep.dev/v1alpha1"},
                             {"kind", "SigningConfig"},
                             {"metadata", {{"name", "test-evidence"}}},
                             {"spec",
                              {{"repositories", json::array({registry_->host() + "/models/",
                                                             referrers_->host() + "/models/"})},
                               {"keySecretRef", {{"name", "evidence-key"}}},
                               {"registryCredentialsSecretRef", {{"name", "evidence-registry"}}},
                               {"registryCABundle", configCas}}}}
                            .dump());
                    EXPECT_EQ(config.exitCode, 0) << config.err;
                  }),
              "");
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    delete referrers_;
    referrers_ = nullptr;
    kubectl({"delete", "signingconfig", "test-evidence", "--ignore-not-found"});
    if (!dir_.empty()) run({"rm", "-rf", dir_});
  }
  // A docker config with both registries' credentials; `password` for docker-registry's.
  static std::string dockerConfig(const std::string& password) {
    return json{
        {"auths",
         {{registry_->host(), {{"username", registry_->username()}, {"password", password}}},
          {referrers_->host(),
           {{"username", referrers_->username()}, {"password", referrers_->password()}}}}}}
        .dump();
  }
  // The push credentials of the SigningConfig (a wrong password: docker-registry refuses).
  static void setRegistryPassword(const std::string& password) {
    const std::string file = dir_ + "/push.json";
    std::ofstream(file) << dockerConfig(password);
    auto secret =
        kubectl({"create", "secret", "generic", "evidence-registry", "-n", kOperatorNamespace,
                 "--type=kubernetes.io/dockerconfigjson", "--from-file=.dockerconfigjson=" + file,
                 "--dry-run=client", "-o", "json"});
    ASSERT_EQ(secret.exitCode, 0) << secret.err;
    auto applied = kubectl({"apply", "-f", "-"}, secret.out);
    ASSERT_EQ(applied.exitCode, 0) << applied.err;
  }
  // An independent tool from the cache, with the test's docker config and no
  // Sigstore TUF cache of the machine's.
  static CommandResult tool(const std::string& name, std::vector<std::string> args) {
    if (::access((tools_ + "/" + name).c_str(), X_OK) != 0) {
      auto built = run({sourcePath("tests/cluster/build-evidence-tools.sh"), name});
      if (built.exitCode != 0) return built;
    }
    args.insert(args.begin(), {"env", "DOCKER_CONFIG=" + dir_ + "/docker",
                               "TUF_ROOT=" + dir_ + "/tuf", "HOME=" + dir_, tools_ + "/" + name});
    return run(args);
  }

  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "evidence", .monitor = true}), "");
    auto c = registry_->client();
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(*c);
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  std::string push(const std::string& salt, registry::RegistryClient* client = nullptr) {
    auto d = pushTestImage(client ? *client : *client_, kRepo, w_.ns() + "-" + salt);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? *d : "";
  }
  std::string pkg(const std::string& digest, const RegistryWorld* r = nullptr) {
    return (r ? r : registry_)->host() + "/" + kRepo + "@" + digest;
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
                 last.value("/status/evidence"_json_pointer, json::array()).size() == statements &&
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
  std::unique_ptr<registry::RegistryClient> referrersClient() {
    auto c = referrers_->client();
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? std::move(*c) : nullptr;
  }
  CommandResult evidence(std::vector<std::string> args) {
    args.insert(args.begin(), "evidence");
    for (const auto& a : access()) args.push_back(a);
    return lockstepCli(args);
  }

  static RegistryWorld* registry_;
  static RegistryWorld* referrers_;
  static std::string dir_, tools_;
  ReleaseWorld w_;
  std::unique_ptr<registry::RegistryClient> client_;
};

RegistryWorld* EvidenceClusterTest::registry_ = nullptr;
RegistryWorld* EvidenceClusterTest::referrers_ = nullptr;
std::string EvidenceClusterTest::dir_;
std::string EvidenceClusterTest::tools_;

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
  EXPECT_NE(listed.out.find("4 signed statements"), std::string::npos) << listed.out;

  auto verified = evidence({"verify", pkg(d1), "--key=" + dir_ + "/key.pub"});
  EXPECT_EQ(verified.exitCode, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("4 statements verified"), std::string::npos) << verified.out;

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

  // A TrustPolicy, validated by the API server and read back as kubectl prints it:
  // trusted for eval only, the prod record is refused; for eval and prod, all pass.
  auto trust = [&](const json& stages) {
    std::ifstream pub(dir_ + "/key.pub");
    std::stringstream pem;
    pem << pub.rdbuf();
    json policy = {
        {"apiVersion", "lockstep.dev/v1alpha1"},
        {"kind", "TrustPolicy"},
        {"metadata", {{"name", "evidence-test"}}},
        {"spec",
         {{"keys", json::array({{{"name", "release-key"}, {"publicKey", pem.str()}}})},
          {"rules", json::array({{{"repositories", json::array({registry_->host() + "/models/"})},
                                  {"stages", stages},
                                  {"keys", json::array({"release-key"})}}})}}}};
    auto applied = kubectl({"apply", "-f", "-"}, policy.dump());
    EXPECT_EQ(applied.exitCode, 0) << applied.err;
    auto yaml = kubectl({"get", "trustpolicies", "evidence-test", "-o", "yaml"});
    EXPECT_EQ(yaml.exitCode, 0) << yaml.err;
    std::ofstream(dir_ + "/policy.yaml") << yaml.out;
    return evidence({"verify", pkg(d1), "--policy=" + dir_ + "/policy.yaml"});
  };
  auto evalOnly = trust(json::array({"eval"}));
  EXPECT_EQ(evalOnly.exitCode, 1) << evalOnly.out << evalOnly.err;
  EXPECT_NE(evalOnly.out.find("signed by evidence-test/release-key, which the policy does not "
                              "trust for stage \"prod\""),
            std::string::npos)
      << evalOnly.out;
  auto evalAndProd = trust(json::array({"eval", "prod", "bom"}));
  EXPECT_EQ(evalAndProd.exitCode, 0) << evalAndProd.out << evalAndProd.err;
  EXPECT_NE(evalAndProd.out.find("4 statements verified"), std::string::npos) << evalAndProd.out;
  kubectl({"delete", "trustpolicy", "evidence-test"});

  // Tamper-evidence in the registry: whoever may push to the repository adds a
  // referrer of this package whose bundle was altered after signing (one byte of
  // the statement), and one whose statement is about another package.
  auto bundle = evidence({"get", pkg(d1), "--statement=eval/decision", "--bundle"});
  ASSERT_EQ(bundle.exitCode, 0) << bundle.err;
  json b = json::parse(bundle.out);
  std::string payload = *base64Decode(b["dsseEnvelope"]["payload"].get<std::string>());
  auto subject = client_->describe(kRepo, d1);
  ASSERT_TRUE(subject.isOk()) << subject.status().toString();
  auto pushForged = [&](const std::string& statement, const std::string& name) {
    json forged = b;
    forged["dsseEnvelope"]["payload"] = base64Encode(statement);
    registry::Artifact a{
        "application/vnd.dev.sigstore.bundle.v0.3+json",
        forged.dump(),
        {{"dev.sigstore.bundle.content", "dsse-envelope"},
         {"dev.sigstore.bundle.predicateType", "https://slsa.dev/verification_summary/v1"},
         {"dev.lockstep.statement", name}}};
    auto pushed = client_->pushReferrer(kRepo, *subject, a);
    ASSERT_TRUE(pushed.isOk()) << pushed.status().toString();
  };
  std::string altered = payload;
  const size_t at = altered.find("PASSED");
  ASSERT_NE(at, std::string::npos);
  altered.replace(at, 6, "PASSEd");
  pushForged(altered, "forged/altered");
  auto refused = evidence({"verify", pkg(d1), "--key=" + dir_ + "/key.pub"});
  EXPECT_EQ(refused.exitCode, 1) << refused.out;
  EXPECT_NE(refused.out.find("altered after signing"), std::string::npos) << refused.out;
  EXPECT_NE(refused.err.find("4 verified, 1 refused"), std::string::npos) << refused.err;
  // Signed with the trusted key, but about another package: refused as such.
  json aboutOther = json::parse(payload);
  aboutOther["subject"][0]["digest"]["sha256"] = std::string(64, 'e');
  std::ofstream(dir_ + "/other-subject.json") << aboutOther.dump();
  auto signedOther =
      lockstepCli({"evidence", "sign", "--key", dir_ + "/key.pem", dir_ + "/other-subject.json"});
  ASSERT_EQ(signedOther.exitCode, 0) << signedOther.err;
  json otherBundle = json::parse(signedOther.out);
  b = otherBundle;
  pushForged(aboutOther.dump(), "forged/other-subject");
  refused = evidence({"verify", pkg(d1), "--key=" + dir_ + "/key.pub"});
  EXPECT_EQ(refused.exitCode, 1) << refused.out;
  EXPECT_NE(refused.out.find("not the package " + d1), std::string::npos) << refused.out;
  EXPECT_NE(refused.err.find("4 verified, 2 refused"), std::string::npos) << refused.err;

  // The statement as JSON: the prod record names this cluster.
  auto got = evidence({"get", pkg(d1), "--statement=prod/promoted"});
  ASSERT_EQ(got.exitCode, 0) << got.err;
  json record = json::parse(got.out, nullptr, false);
  ASSERT_FALSE(record.is_discarded()) << got.out;
  EXPECT_EQ(record["predicate"]["cluster"], "test-east");
  EXPECT_EQ(record["predicate"]["outcome"], "Promoted");
  EXPECT_EQ(record["subject"][0]["digest"]["sha256"], d1.substr(7));

  // The ML-BOM: the pinned runtime's closure, the hash it gives is the release's.
  auto bomGot = evidence({"get", pkg(d1), "--statement=bom"});
  ASSERT_EQ(bomGot.exitCode, 0) << bomGot.err;
  json bomStatement = json::parse(bomGot.out, nullptr, false);
  ASSERT_FALSE(bomStatement.is_discarded()) << bomGot.out;
  const json& bom = bomStatement["predicate"];
  EXPECT_EQ(bom["specVersion"], "1.6");
  std::string bomHash;
  for (const json& p : bom["metadata"]["properties"])
    if (p["name"] == "lockstep:closure:hash") bomHash = p["value"];
  EXPECT_EQ(bomHash, v1["status"]["runtime"].value("closureHash", std::string("?")));
  EXPECT_EQ(bom["metadata"]["component"]["modelCard"]["quantitativeAnalysis"]["performanceMetrics"]
               [0]["type"],
            "score");

  // The operator restarted: nothing is pushed twice.
  ReleaseWorld::op().stop();
  ASSERT_EQ(ReleaseWorld::ensureOperator(), "");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(client_->referrers(kRepo, d1)->descriptors.size(), kStatements.size() + 2)
      << "the operator's four and the two forged ones";
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

// Must-show 4: the registry is down while a release is promoted. The promotion
// completes; EvidencePublished=False says why; once the registry is back (same
// address and data), every statement lands, once.
TEST_F(EvidenceClusterTest, ARegistryThatIsDownNeverHoldsThePromotionAndGetsTheEvidenceWhenBack) {
  const std::string d3 = push("v3");
  ASSERT_FALSE(d3.empty());
  ASSERT_TRUE(registry_->stop().isOk());
  struct Restart {  // for the next test, should this one stop early
    RegistryWorld* r;
    bool done = false;
    ~Restart() {
      if (!done) (void)r->startAgain();
    }
  } restart{registry_};
  ASSERT_EQ(createRelease("v3", pkg(d3)).exitCode, 0);
  json v3 = waitEvidence("v3", "False", kStatements.size());
  const std::string message = conditionField(v3, "EvidencePublished", "message");
  EXPECT_NE(message.find("registry " + registry_->host()), std::string::npos) << message;
  EXPECT_EQ(conditionField(v3, "Ready", "status"), "True") << v3["status"].dump(2);
  auto events = kubectlJson({"get", "events", "-n", w_.ns(), "--field-selector",
                             "involvedObject.name=v3,reason=EvidencePublishFailed"});
  EXPECT_GE(events["items"].size(), 1u) << events.dump(2);

  restart.done = true;
  ASSERT_TRUE(registry_->startAgain().isOk());
  json back = waitEvidence("v3", "True", kStatements.size());
  EXPECT_EQ(client_->referrers(kRepo, d3)->descriptors.size(), kStatements.size());
}

// Must-show 1 of issue 30: the operator's statements, as pushed, are accepted by
// cosign v3 under the key (and refused under another) and listed by oras, on a
// registry with the referrers API and on one without; lockstep agrees.
TEST_F(EvidenceClusterTest, CosignAndOrasAgreeWithLockstepOnBothRegistries) {
  auto referrers = referrersClient();
  ASSERT_NE(referrers, nullptr);
  const std::vector<std::pair<const RegistryWorld*, std::string>> packages = {
      {registry_, pkg(push("dist"), registry_)},
      {referrers_, pkg(push("ref", referrers.get()), referrers_)}};
  ASSERT_EQ(createRelease("dist", packages[0].second).exitCode, 0);
  json dist = waitEvidence("dist", "True", kStatements.size());
  ASSERT_EQ(createRelease("ref", packages[1].second).exitCode, 0);
  json ref = waitEvidence("ref", "True", kStatements.size());
  const std::vector<std::string> predicates = {
      "https://in-toto.io/attestation/test-result/v0.1", "https://slsa.dev/verification_summary/v1",
      "https://lockstep.dev/attestation/prod-record/v1", "https://cyclonedx.org/bom"};
  for (size_t i = 0; i < packages.size(); ++i) {
    const auto& [world, package] = packages[i];
    const json& release = i == 0 ? dist : ref;
    SCOPED_TRACE(package);
    for (const std::string& p : predicates) {
      auto ok = tool("cosign",
                     {"verify-attestation", "--key", dir_ + "/key.pub", "--insecure-ignore-tlog",
                      "--type", p, "--registry-cacert", world->caFile(), package});
      EXPECT_EQ(ok.exitCode, 0) << p << ":\n" << ok.out << ok.err;
      auto other = tool(
          "cosign", {"verify-attestation", "--key", dir_ + "/other.pub", "--insecure-ignore-tlog",
                     "--type", p, "--registry-cacert", world->caFile(), package});
      EXPECT_NE(other.exitCode, 0) << p << " verified under a key nobody trusts";
    }
    auto discovered =
        tool("oras", {"discover", "--ca-file", world->caFile(), "--format", "json", package});
    EXPECT_EQ(discovered.exitCode, 0) << discovered.err;
    for (const json& e : release["status"]["evidence"]) {
      EXPECT_NE(discovered.out.find(e.value("referrer", "?")), std::string::npos)
          << e.value("name", "") << " not listed by oras discover:\n"
          << discovered.out;
    }
    auto verified = evidence({"verify", package, "--key=" + dir_ + "/key.pub"});
    EXPECT_EQ(verified.exitCode, 0) << verified.out << verified.err;
    EXPECT_NE(verified.out.find("4 statements verified"), std::string::npos)
        << verified.out << evidence({"list", package, "--output=json"}).out;
    for (const json& e : release["status"]["evidence"]) {
      auto got = evidence({"get", package, "--referrer=" + e.value("referrer", "")});
      EXPECT_EQ(got.exitCode, 0) << got.err;
    }
  }
}

// Issue 31, must-show 1 and 3 on one control plane: a second namespace stands
// for a serving cluster that runs no gate. Its releases name an evidence stage
// instead; the operator reads the package's referrers and passes the stage on
// the gate cluster's trusted, matching decision: no Job is ever made there, and
// the release goes on to prod. Evidence under an untrusted key, or for a
// package digest nobody gated, holds the stage with a reason that names what is
// missing; trusting the key (a TrustPolicy edit) lets the held stage pass.
TEST_F(EvidenceClusterTest, AServingNamespacePromotesByEvidenceAloneAndHoldsWhatIsNotTrusted) {
  const std::string d1 = push("gated");
  const std::string d2 = push("ungated");
  ASSERT_FALSE(d1.empty());
  ASSERT_FALSE(d2.empty());
  ASSERT_EQ(createRelease("gated", pkg(d1)).exitCode, 0);
  waitEvidence("gated", "True", kStatements.size());

  auto readFile = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  auto policy = [&](const std::string& name, const std::string& pubFile) {
    return kubectl(
        {"apply", "-f", "-"},
        json{{"apiVersion", "lockstep.dev/v1alpha1"},
             {"kind", "TrustPolicy"},
             {"metadata", {{"name", name}}},
             {"spec",
              {{"keys", json::array({{{"name", "gate-cluster"},
                                      {"publicKey", readFile(dir_ + "/" + pubFile)}}})},
               {"rules",
                json::array({{{"repositories", json::array({registry_->host() + "/models/"})},
                              {"stages", json::array({"eval"})},
                              {"keys", json::array({"gate-cluster"})}}})}}}}
            .dump());
  };
  const std::string trusted = w_.ns() + "-trusted", other = w_.ns() + "-other";
  ASSERT_EQ(policy(trusted, "key.pub").exitCode, 0);
  ASSERT_EQ(policy(other, "other.pub").exitCode, 0);
  struct Cleanup {
    std::vector<std::string> names;
    ~Cleanup() {
      for (const auto& n : names) kubectl({"delete", "trustpolicy", n, "--ignore-not-found"});
    }
  } cleanup{{trusted, other}};

  ReleaseWorld b;
  ASSERT_EQ(b.setUp({.nsPrefix = "serving", .monitor = true}), "");
  auto evidenceStage = [](const std::string& policyName) {
    return json{{"name", "verified"},
                {"evidence", {{"stages", json::array({"eval"})}, {"trustPolicy", policyName}}}};
  };
  ASSERT_EQ(b.create(b.release("by-evidence", pkg(d1))
                         .withGate(evidenceStage(trusted))
                         .withProdStage(prodStage(json::array({json{{"weight", 50}}}))))
                .exitCode,
            0);
  ASSERT_EQ(b.create(b.release("untrusted", pkg(d1)).model("gpt2-u").withGate(evidenceStage(other)))
                .exitCode,
            0);
  ASSERT_EQ(b.create(b.release("ungated", pkg(d2)).model("gpt2-n").withGate(evidenceStage(trusted)))
                .exitCode,
            0);

  // Promoted by evidence alone.
  json promoted;
  ASSERT_TRUE(eventually(
      [&] {
        promoted = b.get("mr", "by-evidence");
        return promoted.value("/status/phase"_json_pointer, std::string()) == "Promoted";
      },
      std::chrono::seconds(180)))
      << promoted.value("status", json()).dump(2);
  const json stage = promoted["status"]["stages"][0];
  EXPECT_EQ(stage["phase"], "Succeeded");
  const json statements = stage["evidence"]["statements"];
  ASSERT_EQ(statements.size(), 2u) << stage.dump(2);  // the decision and the eval it cites
  EXPECT_EQ(statements[0]["predicateType"], "https://slsa.dev/verification_summary/v1");
  EXPECT_EQ(statements[1]["predicateType"], "https://in-toto.io/attestation/test-result/v0.1");
  for (const json& s : statements) EXPECT_EQ(s["signedBy"], "gate-cluster");
  // The decision verified is the one the gate namespace published.
  json gated = w_.get("mr", "gated");
  std::string decisionDigest;
  for (const json& e : gated["status"]["evidence"])
    if (e["name"] == "eval/decision") decisionDigest = e.value("statementDigest", "");
  EXPECT_EQ(statements[0]["payloadDigest"], decisionDigest);

  // Held, each with its reason, and never a Job.
  auto heldWith = [&](const std::string& name, const std::string& reason, const std::string& text) {
    json last;
    bool ok = eventually(
        [&] {
          last = b.get("mr", name);
          return conditionField(last, "Ready", "reason") == reason;
        },
        std::chrono::seconds(120));
    EXPECT_TRUE(ok) << name << ": " << last.value("status", json()).dump(2);
    const std::string message = conditionField(last, "Ready", "message");
    EXPECT_NE(message.find(text), std::string::npos) << message;
    EXPECT_EQ(last["status"]["stages"][0]["phase"], "Running");
  };
  heldWith("untrusted", "EvidenceUntrusted", "not trusted");
  heldWith("ungated", "EvidenceMissing",
           "no decision signed by a key TrustPolicy \"" + trusted + "\" trusts for " +
               registry_->host() + "/" + kRepo + "@" + d2);
  auto events = kubectlJson({"get", "events", "-n", b.ns(), "--field-selector",
                             "involvedObject.name=untrusted,reason=EvidenceUntrusted"});
  EXPECT_GE(events["items"].size(), 1u);

  // Trusting the gate cluster's key lets the held stage pass (a release with
  // no serving stage ends Validated).
  ASSERT_EQ(policy(other, "key.pub").exitCode, 0);
  json validated;
  EXPECT_TRUE(eventually(
      [&] {
        validated = b.get("mr", "untrusted");
        return validated.value("/status/phase"_json_pointer, std::string()) == "Validated";
      },
      std::chrono::seconds(120)))
      << validated.value("status", json()).dump(2);
  auto jobs = kubectlJson({"get", "jobs", "-n", b.ns()});
  EXPECT_TRUE(jobs["items"].empty()) << "an evidence stage never makes a Job: " << jobs.dump(2);
  heldWith("ungated", "EvidenceMissing", d2);
  b.tearDown(HasFailure());
}

// The serving side of a fleet rollout (docs/fleet.md "The serving side"): a
// release whose prod stage has `fleet` starts its canary only on a wave permit
// naming this cluster (--cluster-name=test-east) signed by a key its TrustPolicy
// trusts for stage fleet; a permit under another key, or naming another
// cluster, starts nothing. A fleet abort for its wave takes prod back to the
// release its canary replaced (no gate, no new pod of the aborted package), and
// fails a release that has not started, without a pod. The test plays the hub:
// it signs permits and the abort with the `lockstep evidence sign` CLI and pushes them.
TEST_F(EvidenceClusterTest, AFleetCanaryStartsOnItsWavePermitAndAnAbortTakesProdBack) {
  const std::string d0 = push("fleet-known-good");
  const std::string d1 = push("fleet-aborted");
  ASSERT_FALSE(d0.empty());
  ASSERT_FALSE(d1.empty());
  auto readFile = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  // The hub's key is "other"; the gate key ("key") is trusted for nothing here.
  const std::string hub = w_.ns() + "-hub";
  ASSERT_EQ(
      kubectl({"apply", "-f", "-"},
              json{{"apiVersion", "lockstep.dev/v1alpha1"},
                   {"kind", "TrustPolicy"},
                   {"metadata", {{"name", hub}}},
                   {"spec",
                    {{"keys", json::array({{{"name", "hub"},
                                            {"publicKey", readFile(dir_ + "/other.pub")}}})},
                     {"rules",
                      json::array({{{"repositories", json::array({registry_->host() + "/models/"})},
                                    {"stages", json::array({"fleet"})},
                                    {"keys", json::array({"hub"})}}})}}}}
                  .dump())
          .exitCode,
      0);
  struct Cleanup {
    std::string name;
    ~Cleanup() { kubectl({"delete", "trustpolicy", name, "--ignore-not-found"}); }
  } cleanup{hub};
  // Signs `statement` with `keyFile` and pushes it as a referrer of the package.
  int pushed = 0;
  auto hubWrites = [&](const StatusOr<nlohmann::ordered_json>& statement, const std::string& digest,
                       const std::string& keyFile, const std::string& name) {
    ASSERT_TRUE(statement.isOk()) << statement.status().toString();
    const std::string file = dir_ + "/fleet-" + std::to_string(++pushed) + ".json";
    std::ofstream(file) << statement->dump();
    auto bundle = lockstepCli({"evidence", "sign", "--key", dir_ + "/" + keyFile, file});
    ASSERT_EQ(bundle.exitCode, 0) << bundle.err;
    auto subject = client_->describe(kRepo, digest);
    ASSERT_TRUE(subject.isOk()) << subject.status().toString();
    registry::Artifact a{"application/vnd.dev.sigstore.bundle.v0.3+json",
                         bundle.out,
                         {{"dev.sigstore.bundle.content", "dsse-envelope"},
                          {"dev.sigstore.bundle.predicateType", (*statement)["predicateType"]},
                          {"dev.lockstep.statement", name}}};
    auto done = client_->pushReferrer(kRepo, *subject, a);
    ASSERT_TRUE(done.isOk()) << done.status().toString();
  };
  auto packageRef = [&](const std::string& digest) { return *api::parseImageRef(pkg(digest)); };
  const int64_t now = static_cast<int64_t>(::time(nullptr));
  auto permit = [&](const std::string& digest, const std::vector<std::string>& clusters) {
    evidence::WavePermit p;
    p.package = packageRef(digest);
    p.rollout = "hub/llama-v7";
    p.rolloutUid = "uid-hub-1";
    p.wave = "first";
    p.waveIndex = 0;
    p.clusters = clusters;
    p.issuedAt = now;
    p.model = "gpt2";
    return evidence::wavePermitStatement(p);
  };

  // Prod runs v1 (no fleet): the known-good the aborted canary replaces.
  ASSERT_EQ(w_.create(w_.release("v1", pkg(d0))
                          .withProdStage(prodStage(json::array({json{{"weight", 100}}}))))
                .exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  json fleetProd = prodStage(json::array({json{{"weight", 50}}})).build();
  fleetProd["fleet"] = {{"trustPolicy", hub}};
  ASSERT_EQ(w_.create(w_.release("v2", pkg(d1)).withProdStage(fleetProd)).exitCode, 0);
  auto waitReason = [&](const std::string& name, const std::string& reason,
                        const std::string& text) {
    json last;
    bool ok = eventually(
        [&] {
          last = w_.get("mr", name);
          return conditionField(last, "Ready", "reason") == reason &&
                 conditionField(last, "Ready", "message").find(text) != std::string::npos;
        },
        std::chrono::seconds(90));
    EXPECT_TRUE(ok) << name << " not " << reason << " (" << text
                    << "): " << last.value("status", json()).dump(2);
    return last;
  };
  waitReason("v2", "WaitingForPermit", "names cluster \"test-east\"");
  // A permit for another cluster, and one for this cluster under the gate's
  // key (not trusted for stage fleet): still nothing starts.
  hubWrites(permit(d1, {"test-west"}), d1, "other.pem", "fleet/permit");
  waitReason("v2", "WaitingForPermit", "1 trusted permit name other clusters");
  hubWrites(permit(d1, {"test-east"}), d1, "key.pem", "fleet/permit");
  std::this_thread::sleep_for(std::chrono::seconds(20));  // more than one recheck
  json waiting = w_.get("mr", "v2");
  EXPECT_NE(waiting.value("/status/phase"_json_pointer, std::string()), "Canary")
      << waiting["status"].dump(2);
  EXPECT_EQ(w_.readyPods().count("canary/v2"), 0u);
  EXPECT_EQ(w_.stableRelease(), "v1");

  // The hub's permit for this cluster: the canary runs and promotes.
  hubWrites(permit(d1, {"test-west", "test-east"}), d1, "other.pem", "fleet/permit");
  json v2 = w_.waitPhase("v2", "Promoted");
  json prodStatus;
  for (const json& st : v2["status"]["stages"])
    if (st["name"] == "prod") prodStatus = st;
  EXPECT_EQ(prodStatus["permit"]["wave"], "first") << v2["status"].dump(2);
  EXPECT_EQ(prodStatus["permit"]["signedBy"], "hub");
  EXPECT_EQ(prodStatus["permit"]["rollout"], "hub/llama-v7");
  EXPECT_EQ(w_.stableRelease(), "v2");

  // The hub aborts the wave: prod comes back to v1, by the abort, with no gate.
  evidence::FleetAbort abort;
  abort.package = packageRef(d1);
  abort.rollout = "hub/llama-v7";
  abort.rolloutUid = "uid-hub-1";
  abort.wave = "first";
  abort.failures = {{"test-west", evidence::kOutcomeRolledBack, now + 1,
                     "AnalysisFailed: error-rate 0.09 > 0.05"}};
  abort.issuedAt = now + 2;
  abort.model = "gpt2";
  hubWrites(evidence::fleetAbortStatement(abort), d1, "other.pem", "fleet/abort");
  json back;
  ASSERT_TRUE(eventually(
      [&] {
        back = w_.get("models.lockstep.dev", "gpt2");
        return back.value("/status/prod/release"_json_pointer, std::string()) == "v1";
      },
      std::chrono::seconds(120)))
      << back.value("status", json()).dump(2);
  json v1 = w_.get("mr", "v1");
  EXPECT_EQ(v1.value("/status/rollback/requestedBy"_json_pointer, std::string()),
            "fleet abort of rollout hub/llama-v7")
      << v1["status"].dump(2);
  EXPECT_EQ(v1.value("/status/rollback/from"_json_pointer, std::string()), "v2");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] >= 1; }));
  EXPECT_EQ(w_.stableRelease(), "v1");
  auto events = kubectlJson({"get", "events", "-n", w_.ns(), "--field-selector",
                             "involvedObject.name=v1,reason=ManualRollback"});
  ASSERT_GE(events["items"].size(), 1u);
  EXPECT_NE(events["items"][0].value("message", "").find("fleet abort of rollout hub/llama-v7"),
            std::string::npos);

  // The aborted package never starts again in this cluster: a new release of
  // it fails before its canary, with no pod.
  ASSERT_EQ(
      w_.create(w_.release("v3", pkg(d1)).model("gpt2-late").withProdStage(fleetProd)).exitCode, 0);
  json late = w_.waitPhase("v3", "Failed", std::chrono::seconds(90));
  EXPECT_EQ(conditionField(late, "Ready", "reason"), "FleetAborted") << late["status"].dump(2);
  EXPECT_NE(conditionField(late, "Ready", "message").find("was aborted in wave \"first\""),
            std::string::npos);
  auto pods = kubectlJson({"get", "pods", "-n", w_.ns(), "-l", "lockstep.dev/model=gpt2-late"});
  EXPECT_TRUE(pods["items"].empty()) << pods.dump(2);
}

}  // namespace
}  // namespace lockstep::testing
