// DSSE, ECDSA P-256 and Sigstore bundles against fixed vectors made with the
// openssl command-line tool (testdata/make_vectors.sh), and the refusals of
// verifyBundle: another subject, another key, a payload changed after signing,
// a verdict for another stage spec.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "common/base64.h"
#include "evidence/bundle.h"
#include "evidence/dsse.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/statement.h"
#include "evidence/verify.h"

namespace lockstep::evidence {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kSubject[] =
    "sha256:ab12000000000000000000000000000000000000000000000000000000000000";
constexpr char kSpec[] = "sha256:5e0c000000000000000000000000000000000000000000000000000000000000";
constexpr char kSigningPackage[] =
    "registry.example/models/gpt2-small@sha256:"
    "ab12000000000000000000000000000000000000000000000000000000000000";

std::string testdataSigning(const std::string& name) {
  std::ifstream in(std::string(LOCKSTEP_EVIDENCE_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<const PublicKey> publicKey(const std::string& file) {
  auto k = parseP256PublicKey(testdataSigning(file), file);
  EXPECT_TRUE(k.isOk()) << k.status().message();
  return k.isOk() ? *k : nullptr;
}

std::unique_ptr<Signer> signer(const std::string& file) {
  auto k = parseP256PrivateKey(testdataSigning(file), file);
  EXPECT_TRUE(k.isOk()) << k.status().message();
  return k.isOk() ? std::move(*k) : nullptr;
}

Expectation evalExpectation() {
  Expectation want;
  want.subjectDigest = kSubject;
  want.stage = "eval";
  want.stageSpecDigest = kSpec;
  return want;
}

// The bundle with its payload replaced by `edit(payload)`, signature untouched.
std::string withPayload(const std::string& bundle, const std::function<void(std::string&)>& edit) {
  Json j = Json::parse(bundle);
  std::string payload = *base64Decode(j["dsseEnvelope"]["payload"].get<std::string>());
  edit(payload);
  j["dsseEnvelope"]["payload"] = base64Encode(payload);
  return j.dump();
}

TEST(Dsse, PaeIsTheSpecsExample) {
  // secure-systems-lab/dsse, implementation/signing_spec.py.
  EXPECT_EQ(pae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  EXPECT_EQ(pae("", ""), "DSSEv1 0  0 ");
}

TEST(Dsse, PaeMatchesTheOpensslVector) {
  EXPECT_EQ(pae(kInTotoPayloadType, testdataSigning("statement.json")),
            testdataSigning("statement.pae"));
}

TEST(Dsse, EnvelopeRoundTripsAndTakesUrlSafeBase64) {
  Envelope e{"application/vnd.in-toto+json", std::string("\xfb\xff{}", 4), {{"k1", "\xfb\xff"}}};
  Json j = envelopeJson(e);
  EXPECT_EQ(j.dump(), R"({"payload":"+/97fQ==","payloadType":"application/vnd.in-toto+json",)"
                      R"("signatures":[{"keyid":"k1","sig":"+/8="}]})");
  j["payload"] = "-_97fQ";  // the URL-safe alphabet, no padding: verifiers MUST accept it
  auto back = parseEnvelope(nlohmann::json::parse(j.dump()), "e");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back->payload, e.payload);
  EXPECT_EQ(back->signatures[0].sig, "\xfb\xff");
  EXPECT_EQ(parseEnvelope(nlohmann::json::parse(R"({"payloadType":"t","signatures":[]})"), "e")
                .status()
                .message(),
            "e.payload: missing or not a string");
}

TEST(EcdsaP256, VerifiesTheOpensslSignatureAndHint) {
  auto key = publicKey("signer.pub");
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(key->verify(testdataSigning("statement.pae"), testdataSigning("statement.sig")));
  EXPECT_FALSE(publicKey("other.pub")
                   ->verify(testdataSigning("statement.pae"), testdataSigning("statement.sig")));
  std::string changed = testdataSigning("statement.pae");
  changed[changed.size() - 10] ^= 1;
  EXPECT_FALSE(key->verify(changed, testdataSigning("statement.sig")));
  // base64(sha256(DER SubjectPublicKeyInfo)), as openssl pkey | openssl dgst computed it.
  std::string hint = testdataSigning("signer.hint");
  hint.pop_back();  // the newline
  EXPECT_EQ(key->hint(), hint);
  EXPECT_EQ(key->pem(), testdataSigning("signer.pub"));
}

TEST(EcdsaP256, SignsWhatTheKeyVerifies) {
  auto s = signer("signer.key");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->publicKey().hint(), publicKey("signer.pub")->hint());
  auto sig = s->sign("message");
  ASSERT_TRUE(sig.isOk());
  EXPECT_TRUE(publicKey("signer.pub")->verify("message", *sig));
  EXPECT_FALSE(publicKey("signer.pub")->verify("messagE", *sig));
}

TEST(EcdsaP256, RefusesOtherKeys) {
  EXPECT_EQ(parseP256PublicKey(testdataSigning("p384.pub"), "p384.pub").status().message(),
            "p384.pub: not a P-256 (prime256v1) key");
  EXPECT_EQ(parseP256PrivateKey(testdataSigning("p384.key"), "p384.key").status().message(),
            "p384.key: not a P-256 (prime256v1) key");
  auto garbage = parseP256PublicKey("not a key", "key.pem");
  ASSERT_FALSE(garbage.isOk());
  EXPECT_EQ(garbage.status().message().rfind("key.pem: not a PEM public key: ", 0), 0u)
      << garbage.status().message();
  // A public key is no private key.
  EXPECT_FALSE(parseP256PrivateKey(testdataSigning("signer.pub"), "signer.pub").isOk());
}

TEST(Verify, AcceptsTheOpensslBundle) {
  Refusal why = Refusal::kMalformed;
  auto v = verifyBundle(testdataSigning("bundle.json"), {{"signer", publicKey("signer.pub")}},
                        evalExpectation(), "bundle.json", &why);
  ASSERT_TRUE(v.isOk()) << v.status().message();
  EXPECT_EQ(why, Refusal::kNone);
  EXPECT_EQ(v->keyName, "signer");
  EXPECT_EQ(v->predicateType, kTestResultPredicate);
  EXPECT_EQ(v->stage, "eval");
  EXPECT_EQ(v->stageSpecDigest, kSpec);
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->payload, testdataSigning("statement.json"));
}

TEST(Verify, RefusesAStatementAboutAnotherDigest) {
  Expectation want = evalExpectation();
  want.subjectDigest = "sha256:cd34000000000000000000000000000000000000000000000000000000000000";
  Refusal why = Refusal::kNone;
  auto v = verifyBundle(testdataSigning("bundle.json"), {{"signer", publicKey("signer.pub")}}, want,
                        "bundle.json", &why);
  EXPECT_EQ(why, Refusal::kOtherSubject);
  EXPECT_EQ(v.status().message(),
            std::string("bundle.json: the statement is about ") + kSubject +
                ", not the package "
                "sha256:cd34000000000000000000000000000000000000000000000000000000000000");
}

TEST(Verify, RefusesAKeyThatIsNotTrusted) {
  Refusal why = Refusal::kNone;
  auto v = verifyBundle(testdataSigning("bundle.json"), {{"other", publicKey("other.pub")}},
                        evalExpectation(), "bundle.json", &why);
  EXPECT_EQ(why, Refusal::kUntrustedKey);
  std::string hint = testdataSigning("signer.hint");
  hint.pop_back();
  EXPECT_EQ(v.status().message(), "bundle.json: signed by a key that is not trusted (key hint " +
                                      hint + "; trusted: other)");
  // Without a hint the verifier tries every trusted key, and still refuses.
  Json j = Json::parse(testdataSigning("bundle.json"));
  j["verificationMaterial"]["publicKey"].erase("hint");
  j["dsseEnvelope"]["signatures"][0].erase("keyid");
  v = verifyBundle(j.dump(), {{"other", publicKey("other.pub")}}, evalExpectation(), "b", &why);
  EXPECT_EQ(why, Refusal::kUntrustedKey);
  EXPECT_EQ(v.status().message(),
            "b: no trusted key verifies the signature (trusted: other): signed by another key, "
            "or altered after signing");
  // … and accepts when the signer's key is among them.
  EXPECT_TRUE(verifyBundle(j.dump(),
                           {{"other", publicKey("other.pub")}, {"signer", publicKey("signer.pub")}},
                           evalExpectation(), "b")
                  .isOk());
}

TEST(Verify, RefusesAPayloadChangedAfterSigning) {
  // One byte: the measured accuracy 0.84 becomes 0.94.
  const std::string tampered = withPayload(testdataSigning("bundle.json"), [](std::string& p) {
    const size_t at = p.find("\"value\":0.84");
    ASSERT_NE(at, std::string::npos);
    p[at + 10] = '9';
  });
  Refusal why = Refusal::kNone;
  auto v = verifyBundle(tampered, {{"signer", publicKey("signer.pub")}}, evalExpectation(),
                        "bundle.json", &why);
  EXPECT_EQ(why, Refusal::kBadSignature);
  EXPECT_EQ(v.status().message(),
            "bundle.json: the signature does not verify with trusted key signer: the statement or "
            "its signature was altered after signing");
}

TEST(Verify, RefusesAVerdictForAnotherStageSpec) {
  Expectation want = evalExpectation();
  want.stageSpecDigest = "sha256:5e0d000000000000000000000000000000000000000000000000000000000000";
  Refusal why = Refusal::kNone;
  auto v = verifyBundle(testdataSigning("bundle.json"), {{"signer", publicKey("signer.pub")}}, want,
                        "bundle.json", &why);
  EXPECT_EQ(why, Refusal::kOtherSpec);
  EXPECT_EQ(v.status().message(),
            std::string("bundle.json: a verdict for stage spec ") + kSpec +
                ", not this release's "
                "sha256:5e0d000000000000000000000000000000000000000000000000000000000000: the "
                "stage changed since (thresholds, gate); no evidence for it");
  want = evalExpectation();
  want.stage = "ci";
  v = verifyBundle(testdataSigning("bundle.json"), {{"signer", publicKey("signer.pub")}}, want, "b",
                   &why);
  EXPECT_EQ(why, Refusal::kOtherStage);
  EXPECT_EQ(v.status().message(), "b: a statement for stage \"eval\", not \"ci\"");
}

TEST(Verify, RefusesMalformedBundles) {
  const std::string good = testdataSigning("bundle.json");
  auto refusal = [](const std::string& text) {
    Refusal why = Refusal::kNone;
    auto v =
        verifyBundle(text, {{"signer", publicKey("signer.pub")}}, evalExpectation(), "b", &why);
    EXPECT_EQ(why, Refusal::kMalformed) << text;
    return v.status().message();
  };
  Json j = Json::parse(good);
  j["mediaType"] = "application/json";
  EXPECT_EQ(refusal(j.dump()),
            "b: mediaType: \"application/json\" is not a Sigstore bundle v0.2 or v0.3");
  j = Json::parse(good);
  j["dsseEnvelope"]["signatures"].push_back(j["dsseEnvelope"]["signatures"][0]);
  EXPECT_EQ(refusal(j.dump()),
            "b: dsseEnvelope.signatures: 2 signatures; a bundle's envelope has exactly one");
  j = Json::parse(good);
  j["dsseEnvelope"]["signatures"][0]["keyid"] = "another";
  EXPECT_EQ(refusal(j.dump()).rfind("b: dsseEnvelope.signatures[0].keyid \"another\" differs", 0),
            0u);
  j = Json::parse(good);
  j["verificationMaterial"] = Json{{"certificate", {{"rawBytes", "AA=="}}}};
  EXPECT_EQ(refusal(j.dump()),
            "b: verificationMaterial: a certificate (keyless signing) is not supported yet; sign "
            "with a key");
  EXPECT_EQ(refusal("{"), "b: not a JSON object");
}

// Statements made by Lockstep, signed and verified end to end.
class Statements : public ::testing::Test {
 protected:
  GateResult gate() const {
    GateResult g;
    g.stage = "eval";
    g.stageSpecDigest = kSpec;
    g.jobUid = "6f1b9c8e-0000-4000-8000-000000000001";
    g.image =
        "registry.example/runtimes/torch@sha256:"
        "4f1c000000000000000000000000000000000000000000000000000000000000";
    g.command = {"python", "eval.py"};
    g.metrics = {{"accuracy", 0.84, 0.82, std::nullopt}};
    return g;
  }
  api::ImageRef package() const { return *api::parseImageRef(kSigningPackage); }
  std::unique_ptr<Signer> signer_ = signer("signer.key");
  std::vector<TrustedKey> keys_ = {{"signer", publicKey("signer.pub")}};
};

TEST_F(Statements, EvalStatementIsATestResult) {
  auto s = evalStatement({package(), gate(),
                          "sha256:9c0e000000000000000000000000000000000000000000000000000000000000",
                          ""});
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ((*s)["_type"], kStatementType);
  EXPECT_EQ((*s)["subject"], Json::parse(R"([{"name":"registry.example/models/gpt2-small",
      "digest":{"sha256":"ab12000000000000000000000000000000000000000000000000000000000000"}}])"));
  const Json& p = (*s)["predicate"];
  EXPECT_EQ(p["result"], "PASSED");
  EXPECT_EQ(p["configuration"][0]["digest"]["sha256"],
            "5e0c000000000000000000000000000000000000000000000000000000000000");
  EXPECT_EQ(
      p["configuration"][1]["uri"],
      "pkg:oci/torch@sha256%3A4f1c000000000000000000000000000000000000000000000000000000000000"
      "?repository_url=registry.example/runtimes/torch");
  EXPECT_EQ(p["passedTests"], Json::array({"accuracy"}));
  EXPECT_EQ(p["lockstep"]["metrics"], Json::parse(R"([{"metric":"accuracy","value":0.84,
      "comparator":">=","threshold":0.82,"passed":true}])"));
  EXPECT_EQ(p["lockstep"]["gateJob"]["uid"], "6f1b9c8e-0000-4000-8000-000000000001");
  EXPECT_EQ(p["lockstep"]["gateJob"]["command"], Json::array({"python", "eval.py"}));
}

TEST_F(Statements, FailedMetricFailsTheResult) {
  GateResult g = gate();
  g.metrics.push_back({"latency_p99", 0.5, std::nullopt, 0.2});
  auto s = evalStatement({package(), g, "", ""});
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ((*s)["predicate"]["result"], "FAILED");
  EXPECT_EQ((*s)["predicate"]["failedTests"], Json::array({"latency_p99"}));
  auto bundle = signStatement(s->dump(), *signer_);
  ASSERT_TRUE(bundle.isOk());
  Refusal why = Refusal::kNone;
  auto v = verifyBundle(bundle->dump(), keys_, evalExpectation(), "b", &why);
  EXPECT_EQ(why, Refusal::kNotPassed);
}

TEST_F(Statements, DecisionIsAVerificationSummaryOverTheEvalStatement) {
  auto eval = evalStatement({package(), gate(), "", ""});
  ASSERT_TRUE(eval.isOk());
  const std::string evalBytes = eval->dump();
  DecisionInput d;
  d.package = package();
  d.stage = "eval";
  d.stageSpecDigest = kSpec;
  d.passed = true;
  d.inputs = {{"eval", sha256Digest(evalBytes)}};
  d.approvers = {{"alice", {"ml-leads", "system:authenticated"}, "2026-12-02T04:10:00Z"}};
  d.closureHash = "sha256:9c0e000000000000000000000000000000000000000000000000000000000000";
  d.runtimeImage = gate().image;
  d.revision = "torch-2-5-cu124-9c0e0000";
  d.timeVerified = "2026-12-02T04:10:01Z";
  d.verifierVersion = "0.1.0";
  auto s = decisionStatement(d);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  const Json& p = (*s)["predicate"];
  EXPECT_EQ((*s)["predicateType"], kVerificationSummaryPredicate);
  EXPECT_EQ(p["policy"]["digest"]["sha256"],
            "5e0c000000000000000000000000000000000000000000000000000000000000");
  EXPECT_EQ(p["inputAttestations"][0]["digest"]["sha256"], sha256Digest(evalBytes).substr(7));
  EXPECT_EQ(p["verificationResult"], "PASSED");
  EXPECT_EQ(p["verifiedLevels"], Json::array({"LOCKSTEP_STAGE_PASSED"}));
  EXPECT_EQ(p["lockstep"]["approvers"][0]["groups"],
            Json::array({"ml-leads", "system:authenticated"}));
  EXPECT_EQ(p["lockstep"]["revision"], "torch-2-5-cu124-9c0e0000");

  auto bundle = signStatement(s->dump(), *signer_);
  ASSERT_TRUE(bundle.isOk());
  EXPECT_EQ((*bundle)["mediaType"], "application/vnd.dev.sigstore.bundle.v0.3+json");
  EXPECT_EQ((*bundle)["verificationMaterial"]["publicKey"]["hint"], signer_->publicKey().hint());
  // No keyid: cosign's DSSE verifier skips a signature whose keyid is not its own fingerprint.
  EXPECT_FALSE((*bundle)["dsseEnvelope"]["signatures"][0].contains("keyid"));
  Expectation want = evalExpectation();
  want.predicateType = kVerificationSummaryPredicate;
  auto v = verifyBundle(bundle->dump(), keys_, want, "decision");
  ASSERT_TRUE(v.isOk()) << v.status().message();
  EXPECT_EQ(v->stageSpecDigest, kSpec);
  EXPECT_EQ(v->statement["predicate"]["lockstep"]["closureHash"], d.closureHash);
  // The same decision for an older spec (thresholds changed since) is no evidence.
  d.stageSpecDigest = "sha256:0ld0000000000000000000000000000000000000000000000000000000000000";
  EXPECT_FALSE(decisionStatement(d).isOk());  // not a digest at all
  d.stageSpecDigest = "sha256:01d0000000000000000000000000000000000000000000000000000000000000";
  auto older = signStatement(decisionStatement(d)->dump(), *signer_);
  Refusal why = Refusal::kNone;
  EXPECT_FALSE(verifyBundle(older->dump(), keys_, want, "decision", &why).isOk());
  EXPECT_EQ(why, Refusal::kOtherSpec);
  // Asking for the eval predicate refuses the decision.
  want.predicateType = kTestResultPredicate;
  EXPECT_FALSE(verifyBundle(bundle->dump(), keys_, want, "decision", &why).isOk());
  EXPECT_EQ(why, Refusal::kOtherPredicate);
}

TEST_F(Statements, StageSpecDigestIgnoresKeyOrder) {
  EXPECT_EQ(
      stageSpecDigest(nlohmann::json::parse(
          R"({"name":"eval","gate":{"timeout":"30m","metrics":[{"name":"accuracy","min":0.82}]}})")),
      stageSpecDigest(nlohmann::json::parse(
          R"({"gate":{"metrics":[{"min":0.82,"name":"accuracy"}],"timeout":"30m"},"name":"eval"})")));
  EXPECT_NE(stageSpecDigest(nlohmann::json::parse(
                R"({"name":"eval","gate":{"metrics":[{"name":"accuracy","min":0.82}]}})")),
            stageSpecDigest(nlohmann::json::parse(
                R"({"name":"eval","gate":{"metrics":[{"name":"accuracy","min":0.8}]}})")));
}

TEST_F(Statements, RefuseUnpinnedSubjects) {
  auto s = evalStatement({*api::parseImageRef("registry.example/models/gpt2:v1"), gate(), "", ""});
  EXPECT_EQ(s.status().message(),
            "subject: package registry.example/models/gpt2 is not pinned by digest (@sha256:…)");
}

}  // namespace
}  // namespace lockstep::evidence
