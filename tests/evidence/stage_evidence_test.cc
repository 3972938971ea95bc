// checkStageEvidence: an evidence stage passes on a trusted, matching decision
// and the statements it cites, and holds with a reason naming what is missing,
// untrusted or mismatched (docs/fleet.md "Evidence stages").
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/stage_evidence.h"
#include "evidence/statement.h"

namespace lockstep::evidence {
namespace {

namespace v1 = api::v1alpha1;

constexpr char kDigest[] =
    "sha256:ab12000000000000000000000000000000000000000000000000000000000000";
constexpr char kOtherDigest[] =
    "sha256:cd34000000000000000000000000000000000000000000000000000000000000";
constexpr char kStageEvidenceSpec[] =
    "sha256:5e0c000000000000000000000000000000000000000000000000000000000000";
constexpr char kClosure[] =
    "sha256:c105000000000000000000000000000000000000000000000000000000000000";
constexpr char kImageDigest[] =
    "sha256:1a6e000000000000000000000000000000000000000000000000000000000000";
constexpr char kStageEvidencePackageName[] = "registry.example/models/gpt2";

std::string testdataStageEvidence(const std::string& name) {
  std::ifstream in(std::string(LOCKSTEP_EVIDENCE_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

api::ImageRef packageStageEvidence(const std::string& digest = kDigest) {
  auto r = api::parseImageRef(std::string(kStageEvidencePackageName) + "@" + digest);
  EXPECT_TRUE(r.isOk());
  return *r;
}

// One stage's statements, as the evidence publisher makes them.
struct StageStatements {
  std::string eval, decision;  // payloads
};

StageStatements statements(const std::string& stage, const std::string& digest = kDigest,
                           const std::string& closure = kClosure,
                           const std::string& image = std::string("registry.example/rt@") +
                                                      kImageDigest,
                           bool passed = true) {
  EvalStatementInput e;
  e.package = packageStageEvidence(digest);
  e.gate.stage = stage;
  e.gate.stageSpecDigest = kStageEvidenceSpec;
  e.gate.metrics = {{"accuracy", passed ? 0.9 : 0.1, 0.5, std::nullopt}};
  e.closureHash = closure;
  e.runtimeImage = image;
  auto eval = evalStatement(e);
  EXPECT_TRUE(eval.isOk()) << eval.status().message();
  StageStatements out;
  out.eval = eval->dump();
  DecisionInput d;
  d.package = packageStageEvidence(digest);
  d.stage = stage;
  d.stageSpecDigest = kStageEvidenceSpec;
  d.passed = passed;
  d.inputs = {{stage, sha256Digest(out.eval)}};
  d.closureHash = closure;
  d.runtimeImage = image;
  auto decision = decisionStatement(d);
  EXPECT_TRUE(decision.isOk()) << decision.status().message();
  out.decision = decision->dump();
  return out;
}

ReferrerBundle signedByStageEvidence(const std::string& payload, const std::string& keyFile,
                                     const std::string& name) {
  auto signer = parseP256PrivateKey(testdataStageEvidence(keyFile), keyFile);
  EXPECT_TRUE(signer.isOk());
  auto bundle = signStatement(payload, **signer);
  EXPECT_TRUE(bundle.isOk());
  return {"sha256:" + std::string(64, name.size() % 2 ? 'a' : 'b').substr(0, 60) +
              std::to_string(1000 + name.size()),
          name, bundle->dump(), ""};
}

v1::TrustPolicySpec policyStageEvidence(const std::vector<std::string>& stages = {}) {
  v1::TrustPolicySpec p;
  p.keys = {{"fleet", testdataStageEvidence("signer.pub")},
            {"other", testdataStageEvidence("other.pub")}};
  p.rules = {{{"registry.example/models/"}, stages, {"fleet"}}};
  return p;
}

EvidenceRequirement requirement(std::vector<std::string> stages = {"eval", "ci"}) {
  EvidenceRequirement w;
  w.packageName = kStageEvidencePackageName;
  w.packageDigest = kDigest;
  w.stages = std::move(stages);
  w.closureHash = kClosure;
  w.runtimeImageDigest = kImageDigest;
  w.policyName = "fleet";
  return w;
}

std::vector<ReferrerBundle> published(const std::string& keyFile = "signer.key") {
  std::vector<ReferrerBundle> out;
  for (const char* stage : {"eval", "ci"}) {
    StageStatements s = statements(stage);
    out.push_back(signedByStageEvidence(s.eval, keyFile, std::string(stage) + "/test-result"));
    out.push_back(signedByStageEvidence(s.decision, keyFile, std::string(stage) + "/decision"));
  }
  return out;
}

TEST(StageEvidence, PassesOnTrustedDecisionsAndTheStatementsTheyCite) {
  StageEvidenceResult r = checkStageEvidence(published(), policyStageEvidence(), requirement());
  ASSERT_TRUE(r.passed) << r.message;
  EXPECT_EQ(r.reason, "");
  // Per stage: the decision and the eval statement it cites.
  ASSERT_EQ(r.statements.size(), 4u);
  EXPECT_EQ(r.statements[0].stage, "eval");
  EXPECT_EQ(r.statements[0].predicateType, kVerificationSummaryPredicate);
  EXPECT_EQ(r.statements[1].predicateType, kTestResultPredicate);
  EXPECT_EQ(r.statements[1].payloadDigest, sha256Digest(statements("eval").eval));
  EXPECT_EQ(r.statements[0].signedBy, "fleet");
  EXPECT_EQ(r.statements[0].specDigest, kStageEvidenceSpec);
  EXPECT_EQ(r.statements[2].stage, "ci");
  EXPECT_NE(r.message.find("verified 4 statements for stages eval, ci, signed by fleet"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(r.toJson()["passed"].get<bool>());
}

TEST(StageEvidence, NothingPublishedIsMissingAndNamesTheStage) {
  StageEvidenceResult r = checkStageEvidence({}, policyStageEvidence(), requirement());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, kReasonEvidenceMissing);
  EXPECT_NE(r.message.find("stage \"eval\": no decision signed by a key TrustPolicy \"fleet\" "
                           "trusts for registry.example/models/gpt2@" +
                           std::string(kDigest) + " among 0 referrers"),
            std::string::npos)
      << r.message;
}

TEST(StageEvidence, OnlyOneStagePublishedHoldsOnTheOther) {
  std::vector<ReferrerBundle> refs = published();
  refs.resize(2);  // eval's only
  StageEvidenceResult r = checkStageEvidence(refs, policyStageEvidence(), requirement());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, kReasonEvidenceMissing);
  EXPECT_EQ(r.message.rfind("stage \"ci\":", 0), 0u) << r.message;
  EXPECT_TRUE(r.statements.empty());
}

TEST(StageEvidence, SignedByAnUntrustedKeyIsUntrusted) {
  StageEvidenceResult r =
      checkStageEvidence(published("other.key"), policyStageEvidence(), requirement());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, kReasonEvidenceUntrusted);
  EXPECT_NE(r.message.find("not trusted"), std::string::npos) << r.message;
}

TEST(StageEvidence, AKeyTrustedForAnotherStageOnlyIsUntrusted) {
  // The rule trusts "fleet" for eval only: ci's decision is not evidence.
  StageEvidenceResult r =
      checkStageEvidence(published(), policyStageEvidence({"eval"}), requirement());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, kReasonEvidenceUntrusted);
  EXPECT_NE(r.message.find("trusts no key for stage \"ci\""), std::string::npos) << r.message;
}

TEST(StageEvidence, AnotherRuntimeIsAMismatchNamingBothClosures) {
  EvidenceRequirement w = requirement();
  w.closureHash = "sha256:" + std::string(64, '9');
  StageEvidenceResult r = checkStageEvidence(published(), policyStageEvidence(), w);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, kReasonEvidenceMismatch);
  EXPECT_NE(r.message.find(std::string("made on closure \"") + kClosure + "\", not the pinned " +
                           w.closureHash),
            std::string::npos)
      << r.message;
}

TEST(StageEvidence, AnotherRuntimeImageDigestIsAMismatchButAMirrorRepositoryIsNot) {
  EvidenceRequirement w = requirement();
  w.runtimeImageDigest = "sha256:" + std::string(64, '7');
  StageEvidenceResult r = checkStageEvidence(published(), policyStageEvidence(), w);
  EXPECT_EQ(r.reason, kReasonEvidenceMismatch);
  EXPECT_NE(r.message.find("runtime image"), std::string::npos) << r.message;
  // Statements about the same image digest under another repository pass.
  std::vector<ReferrerBundle> refs;
  for (const char* stage : {"eval", "ci"}) {
    StageStatements s =
        statements(stage, kDigest, kClosure, std::string("mirror.internal/rt@") + kImageDigest);
    refs.push_back(
        signedByStageEvidence(s.eval, "signer.key", std::string(stage) + "/test-result"));
    refs.push_back(
        signedByStageEvidence(s.decision, "signer.key", std::string(stage) + "/decision"));
  }
  EXPECT_TRUE(checkStageEvidence(refs, policyStageEvidence(), requirement()).passed);
}

TEST(StageEvidence, APinnedSpecDigestMustMatch) {
  EvidenceRequirement w = requirement();
  w.specDigests["ci"] = "sha256:" + std::string(64, '5');
  StageEvidenceResult r = checkStageEvidence(published(), policyStageEvidence(), w);
  EXPECT_EQ(r.reason, kReasonEvidenceMismatch);
  EXPECT_NE(r.message.find(std::string("it is for stage spec ") + kStageEvidenceSpec),
            std::string::npos)
      << r.message;
  w.specDigests["ci"] = kStageEvidenceSpec;
  EXPECT_TRUE(checkStageEvidence(published(), policyStageEvidence(), w).passed);
}

TEST(StageEvidence, AStatementAboutAnotherPackageAttachedHereIsAMismatch) {
  std::vector<ReferrerBundle> refs;
  for (const char* stage : {"eval", "ci"}) {
    StageStatements s = statements(stage, kOtherDigest);
    refs.push_back(
        signedByStageEvidence(s.eval, "signer.key", std::string(stage) + "/test-result"));
    refs.push_back(
        signedByStageEvidence(s.decision, "signer.key", std::string(stage) + "/decision"));
  }
  StageEvidenceResult r = checkStageEvidence(refs, policyStageEvidence(), requirement());
  EXPECT_EQ(r.reason, kReasonEvidenceMismatch);
  EXPECT_NE(r.message.find(std::string("about ") + kOtherDigest), std::string::npos) << r.message;
}

TEST(StageEvidence, AFailedDecisionIsNoEvidence) {
  std::vector<ReferrerBundle> refs;
  for (const char* stage : {"eval", "ci"}) {
    StageStatements s =
        statements(stage, kDigest, kClosure, std::string("r.example/rt@") + kImageDigest, false);
    refs.push_back(
        signedByStageEvidence(s.eval, "signer.key", std::string(stage) + "/test-result"));
    refs.push_back(
        signedByStageEvidence(s.decision, "signer.key", std::string(stage) + "/decision"));
  }
  StageEvidenceResult r = checkStageEvidence(refs, policyStageEvidence(), requirement());
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason, kReasonEvidenceMismatch);
}

TEST(StageEvidence, ADecisionWhoseCitedStatementIsGoneOrUntrustedHolds) {
  std::vector<ReferrerBundle> refs = published();
  refs.erase(refs.begin());  // eval's test-result
  StageEvidenceResult r = checkStageEvidence(refs, policyStageEvidence(), requirement());
  EXPECT_EQ(r.reason, kReasonEvidenceMissing);
  EXPECT_NE(r.message.find("cites \"eval\""), std::string::npos) << r.message;
  // The cited statement signed by an untrusted key does not count either.
  refs = published();
  refs[0] = signedByStageEvidence(statements("eval").eval, "other.key", "eval/test-result");
  r = checkStageEvidence(refs, policyStageEvidence(), requirement());
  EXPECT_EQ(r.reason, kReasonEvidenceMissing);
}

TEST(StageEvidence, AlteredPayloadIsUntrusted) {
  std::vector<ReferrerBundle> refs = published();
  // Swap ci's decision bundle's signature onto eval's decision: the signature no longer fits.
  nlohmann::json a = nlohmann::json::parse(refs[1].bundle);
  nlohmann::json b = nlohmann::json::parse(refs[3].bundle);
  a["dsseEnvelope"]["signatures"] = b["dsseEnvelope"]["signatures"];
  refs[1].bundle = a.dump();
  StageEvidenceResult r = checkStageEvidence(refs, policyStageEvidence(), requirement());
  EXPECT_EQ(r.reason, kReasonEvidenceUntrusted);
  EXPECT_NE(r.message.find("altered"), std::string::npos) << r.message;
}

TEST(StageEvidence, ABrokenPolicyKeyIsInvalidAndNamed) {
  v1::TrustPolicySpec p = policyStageEvidence();
  p.keys[1].publicKey = "not a key";
  StageEvidenceResult r = checkStageEvidence(published(), p, requirement());
  EXPECT_EQ(r.reason, kReasonEvidenceInvalid);
  EXPECT_NE(r.message.find("TrustPolicy \"fleet\" spec.keys[1] \"other\""), std::string::npos)
      << r.message;
}

TEST(StageEvidence, AnUnreadableReferrerIsShownWhenNothingElseIsThere) {
  StageEvidenceResult r =
      checkStageEvidence({{"sha256:" + std::string(64, 'e'), "eval/decision", "", "HTTP 500"}},
                         policyStageEvidence(), requirement());
  EXPECT_EQ(r.reason, kReasonEvidenceMissing);
  EXPECT_NE(r.message.find("could not be read: HTTP 500"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace lockstep::evidence
