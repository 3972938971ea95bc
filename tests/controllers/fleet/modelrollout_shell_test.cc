// The pure parts of the hub's ModelRollout shell: which referrers the planner
// counts (readFleetReferrers: prod records under keys trusted for stage prod,
// permits and aborts under keys trusted for stage fleet or the hub's own; the
// rest skipped or listed as ignored with the reason) and the status written
// (rolloutStatus: the plan, WaitingForRegistry keeping what was last seen,
// Stalled problems, conditions that do not churn).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "controllers/fleet/fleet_referrers.h"
#include "controllers/fleet/rollout_status.h"
#include "controllers/fleet/wave_plan.h"
#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/statement.h"

namespace lockstep::controllers {
namespace {

using evidence::ReferrerBundle;
using nlohmann::json;

const std::string kHex = "ab12" + std::string(60, '0');
const std::string kOtherHex = "cd34" + std::string(60, '0');
constexpr char kPackageName[] = "registry.example/models/llama";
constexpr int64_t kT0 = 1796029200;  // 2026-11-30T09:00:00Z

std::string testdata(const std::string& name) {
  std::ifstream in(std::string(LOCKSTEP_EVIDENCE_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

api::ImageRef package(const std::string& hex = kHex) {
  return *api::parseImageRef(std::string(kPackageName) + "@sha256:" + hex);
}

evidence::TrustedKey key(const std::string& name, const std::string& pub) {
  auto k = evidence::parseP256PublicKey(testdata(pub), pub);
  EXPECT_TRUE(k.isOk()) << k.status().toString();
  return {name, *k};
}

// The cluster's key ("other") for prod; the hub's ("signer") for fleet.
FleetKeys keys() {
  FleetKeys k;
  k.prod = {key("cluster", "other.pub")};
  k.fleet = {key("hub", "signer.pub")};
  return k;
}

int counter = 0;
ReferrerBundle signedBy(const StatusOr<nlohmann::ordered_json>& statement,
                        const std::string& keyFile) {
  EXPECT_TRUE(statement.isOk()) << statement.status().toString();
  auto signer = evidence::parseP256PrivateKey(testdata(keyFile), keyFile);
  EXPECT_TRUE(signer.isOk());
  auto bundle = evidence::signStatement(statement->dump(), **signer);
  EXPECT_TRUE(bundle.isOk());
  const std::string n = std::to_string(++counter);
  return {"sha256:" + std::string(64 - n.size(), 'e') + n, "", bundle->dump(), ""};
}

evidence::WavePermit permit(const std::string& wave, std::vector<std::string> clusters) {
  evidence::WavePermit p;
  p.package = package();
  p.rollout = "ml/llama-v7";
  p.rolloutUid = "uid-1";
  p.wave = wave;
  p.clusters = std::move(clusters);
  p.issuedAt = kT0;
  p.model = "llama";
  return p;
}

ReferrerBundle record(const std::string& cluster, const std::string& outcome,
                      const std::string& keyFile = "other.key", const std::string& hex = kHex) {
  evidence::ProdRecordInput in;
  in.package = package(hex);
  in.outcome = outcome;
  in.cluster = cluster;
  in.ns = "ml";
  in.model = "llama";
  in.release = "llama-v7";
  in.releaseUid = "r-" + cluster;
  in.since = "2026-11-30T09:05:00Z";
  if (outcome == "RolledBack") in.reason = "AnalysisFailed: error-rate 0.09 > 0.05";
  return signedBy(evidence::prodRecordStatement(in), keyFile);
}

TEST(FleetReferrers, CountsRecordsUnderProdKeysAndPermitsUnderFleetKeys) {
  std::vector<ReferrerBundle> refs = {
      record("b", "Promoted"), record("c", "RolledBack"),
      signedBy(evidence::wavePermitStatement(permit("first", {"b"})), "signer.key")};
  FleetReferrers r = readFleetReferrers(refs, keys(), "sha256:" + kHex);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].cluster, "b");
  EXPECT_EQ(r.records[0].outcome, "Promoted");
  EXPECT_EQ(r.records[1].outcome, "RolledBack") << "a failure counts as much as a success";
  EXPECT_EQ(r.records[1].reason, "AnalysisFailed: error-rate 0.09 > 0.05");
  ASSERT_EQ(r.permits.size(), 1u);
  EXPECT_EQ(r.permits[0], permit("first", {"b"}));
  EXPECT_TRUE(r.aborts.empty());
  EXPECT_TRUE(r.ignored.empty());
}

TEST(FleetReferrers, AKeyTrustedForOneStageSignsNothingOfTheOther) {
  // A cluster's key cannot permit, nor the hub's key speak for a cluster.
  std::vector<ReferrerBundle> refs = {
      signedBy(evidence::wavePermitStatement(permit("first", {"b"})), "other.key"),
      record("b", "Promoted", "signer.key")};
  FleetReferrers r = readFleetReferrers(refs, keys(), "sha256:" + kHex);
  EXPECT_TRUE(r.permits.empty());
  EXPECT_TRUE(r.records.empty());
  ASSERT_EQ(r.ignored.size(), 2u);
  EXPECT_EQ(r.ignored[0].referrer, refs[0].manifestDigest);
  EXPECT_EQ(r.ignored[0].predicateType, evidence::kWavePermitPredicate);
  EXPECT_NE(r.ignored[0].reason.find("not trusted"), std::string::npos) << r.ignored[0].reason;
  EXPECT_EQ(r.ignored[1].predicateType, evidence::kProdRecordPredicate);
}

TEST(FleetReferrers, StatementsAboutAnotherDigestAreIgnoredWithTheReason) {
  std::vector<ReferrerBundle> refs = {record("b", "Promoted", "other.key", kOtherHex)};
  FleetReferrers r = readFleetReferrers(refs, keys(), "sha256:" + kHex);
  EXPECT_TRUE(r.records.empty());
  ASSERT_EQ(r.ignored.size(), 1u);
  EXPECT_NE(r.ignored[0].reason.find("not the package sha256:" + kHex), std::string::npos)
      << r.ignored[0].reason;
}

TEST(FleetReferrers, OtherEvidenceIsSkippedAndUnreadableReferrersListed) {
  evidence::GateResult gate;
  gate.stage = "eval";
  gate.stageSpecDigest = "sha256:" + kHex;
  evidence::EvalStatementInput eval;
  eval.package = package();
  eval.gate = gate;
  std::vector<ReferrerBundle> refs = {signedBy(evidence::evalStatement(eval), "other.key"),
                                      {"sha256:" + std::string(64, 'f'), "", "", "layer missing"}};
  FleetReferrers r = readFleetReferrers(refs, keys(), "sha256:" + kHex);
  EXPECT_TRUE(r.records.empty());
  ASSERT_EQ(r.ignored.size(), 1u) << "an eval statement is none of the hub's business";
  EXPECT_EQ(r.ignored[0].referrer, "sha256:" + std::string(64, 'f'));
  EXPECT_NE(r.ignored[0].reason.find("layer missing"), std::string::npos);
}

TEST(FleetReferrers, APermitPushedTwiceCountsOnceAndAbortsCount) {
  evidence::FleetAbort a;
  a.package = package();
  a.rollout = "ml/llama-v7";
  a.rolloutUid = "uid-1";
  a.wave = "first";
  a.failures = {{"b", evidence::kOutcomeRolledBack, kT0, "AnalysisFailed"}};
  a.issuedAt = kT0 + 10;
  a.model = "llama";
  const auto st = evidence::wavePermitStatement(permit("first", {"b"}));
  std::vector<ReferrerBundle> refs = {signedBy(st, "signer.key"), signedBy(st, "signer.key"),
                                      signedBy(evidence::fleetAbortStatement(a), "signer.key")};
  FleetReferrers r = readFleetReferrers(refs, keys(), "sha256:" + kHex);
  EXPECT_EQ(r.permits.size(), 1u);
  ASSERT_EQ(r.aborts.size(), 1u);
  EXPECT_EQ(r.aborts[0], a);
}

// rolloutStatus ---------------------------------------------------------------

WavePlan planIn(const std::string& phase) {
  WavePlan p;
  p.phase = phase;
  p.status = {{"phase", phase},
              {"currentWave", phase == kRolloutSucceeded ? "" : "first"},
              {"waves", json::array({{{"name", "first"}, {"phase", "Progressing"}}})},
              {"clusters", json::array({{{"name", "b"}, {"state", "Permitted"}}})},
              {"failures", 0},
              {"maxFailures", 0},
              {"message", "wave first (1 of 1): 1 in flight"}};
  return p;
}

std::string condition(const json& status, const std::string& type, const std::string& field) {
  for (const json& c : status.value("conditions", json::array()))
    if (c.value("type", "") == type) return c.value(field, "");
  return "<none>";
}

TEST(RolloutStatus, APlanGivesItsFieldsAndConditions) {
  RolloutObserved o;
  o.generation = 3;
  o.now = "2026-11-30T09:00:00Z";
  o.plan = planIn(kRolloutProgressing);
  json s = rolloutStatus(o);
  EXPECT_EQ(s["phase"], "Progressing");
  EXPECT_EQ(s["currentWave"], "first");
  EXPECT_EQ(s["clusters"][0]["state"], "Permitted");
  EXPECT_EQ(s["observedGeneration"], 3);
  EXPECT_EQ(condition(s, "Ready", "status"), "False");
  EXPECT_EQ(condition(s, "Ready", "reason"), "Progressing");
  EXPECT_EQ(condition(s, "Ready", "message"), "wave first (1 of 1): 1 in flight");
  EXPECT_EQ(condition(s, "Stalled", "status"), "False");
  EXPECT_FALSE(s.contains("ignored"));

  o.plan = planIn(kRolloutSucceeded);
  EXPECT_EQ(condition(rolloutStatus(o), "Ready", "status"), "True");
  o.plan = planIn(kRolloutAborted);
  json aborted = rolloutStatus(o);
  EXPECT_EQ(condition(aborted, "Ready", "status"), "False");
  EXPECT_EQ(condition(aborted, "Stalled", "status"), "True");
  EXPECT_EQ(condition(aborted, "Stalled", "reason"), "Aborted");
}

TEST(RolloutStatus, TheSamePassWritesTheSameStatus) {
  RolloutObserved o;
  o.generation = 1;
  o.now = "2026-11-30T09:00:00Z";
  o.plan = planIn(kRolloutProgressing);
  o.status = rolloutStatus(o);
  o.now = "2026-11-30T09:00:15Z";
  EXPECT_EQ(rolloutStatus(o), o.status) << "nothing changed: nothing to write";
  o.plan = planIn(kRolloutSucceeded);
  json next = rolloutStatus(o);
  EXPECT_EQ(condition(next, "Ready", "lastTransitionTime"), "2026-11-30T09:00:15Z");
  EXPECT_EQ(condition(next, "Stalled", "lastTransitionTime"), "2026-11-30T09:00:00Z");
}

TEST(RolloutStatus, ARegistryErrorKeepsWhatWasLastSeen) {
  RolloutObserved o;
  o.generation = 1;
  o.now = "2026-11-30T09:00:00Z";
  o.plan = planIn(kRolloutProgressing);
  o.status = rolloutStatus(o);
  o.plan.reset();
  o.registryError = "reading the referrers of pkg: connection refused";
  json s = rolloutStatus(o);
  EXPECT_EQ(s["phase"], "WaitingForRegistry");
  EXPECT_EQ(s["message"], "reading the referrers of pkg: connection refused");
  EXPECT_EQ(s["clusters"], o.status["clusters"]) << "the clusters as last seen";
  EXPECT_EQ(s["waves"], o.status["waves"]);
  EXPECT_EQ(condition(s, "Ready", "reason"), "WaitingForRegistry");
  EXPECT_EQ(condition(s, "Stalled", "status"), "False") << "retried: not stalled";
}

TEST(RolloutStatus, AProblemStallsWithItsReason) {
  RolloutObserved o;
  o.generation = 2;
  o.now = "2026-11-30T09:00:00Z";
  o.problem = RolloutProblem{kReasonRolloutInvalidSpec, "spec.waves: must not be empty"};
  json s = rolloutStatus(o);
  EXPECT_EQ(condition(s, "Stalled", "status"), "True");
  EXPECT_EQ(condition(s, "Stalled", "reason"), "InvalidSpec");
  EXPECT_EQ(condition(s, "Stalled", "message"), "spec.waves: must not be empty");
  EXPECT_EQ(condition(s, "Ready", "status"), "False");
  EXPECT_EQ(s["observedGeneration"], 2);
  EXPECT_FALSE(s.contains("phase"));

  // With a plan (it could not sign what it planned): the plan's view, stalled.
  o.plan = planIn(kRolloutProgressing);
  o.problem = RolloutProblem{kReasonSigningConfigNotFound, "no SigningConfig signs for x"};
  s = rolloutStatus(o);
  EXPECT_EQ(s["phase"], "Progressing");
  EXPECT_EQ(s["message"], "no SigningConfig signs for x");
  EXPECT_EQ(condition(s, "Stalled", "reason"), "SigningConfigNotFound");
}

TEST(RolloutStatus, IgnoredStatementsAreListedThenDropped) {
  RolloutObserved o;
  o.generation = 1;
  o.now = "2026-11-30T09:00:00Z";
  o.plan = planIn(kRolloutProgressing);
  o.ignored = {{"sha256:1", evidence::kProdRecordPredicate, "signed by a key that is not trusted"}};
  o.status = rolloutStatus(o);
  ASSERT_EQ(o.status["ignored"].size(), 1u);
  EXPECT_EQ(o.status["ignored"][0]["predicateType"], evidence::kProdRecordPredicate);
  o.ignored.clear();
  EXPECT_FALSE(rolloutStatus(o).contains("ignored"));
}

}  // namespace
}  // namespace lockstep::controllers
