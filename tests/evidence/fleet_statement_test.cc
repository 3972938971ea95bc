// Fleet statements: wave permits and fleet aborts built to the same bytes from
// the same inputs and parsed back, parsers that name the field they refuse,
// the prod record read as the hub reads it, and a permit signed and verified
// as a fleet-stage record.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/fleet_statement.h"
#include "evidence/statement.h"
#include "evidence/verify.h"

namespace lockstep::evidence {
namespace {

using nlohmann::json;

const std::string kFleetStatementHex = "ab12" + std::string(60, '0');
const std::string kPackage = "registry.example/models/llama@sha256:" + kFleetStatementHex;
constexpr int64_t kFleetStatementT0 = 1796029200;  // 2026-11-30T09:00:00Z

api::ImageRef packageFleetStatement() { return *api::parseImageRef(kPackage); }

WavePermit permitFleetStatement() {
  WavePermit p;
  p.package = packageFleetStatement();
  p.rollout = "ml/llama-v7";
  p.rolloutUid = "uid-1";
  p.wave = "rest";
  p.waveIndex = 1;
  p.clusters = {"c", "d"};
  p.issuedAt = kFleetStatementT0;
  p.model = "llama";
  return p;
}

FleetAbort abort() {
  FleetAbort a;
  a.package = packageFleetStatement();
  a.rollout = "ml/llama-v7";
  a.rolloutUid = "uid-1";
  a.wave = "first";
  a.failures = {{"b", kOutcomeRolledBack, kFleetStatementT0 + 60, "analysis error-rate failed"},
                {"c", kOutcomeTimedOut, kFleetStatementT0 + 1800,
                 "no prod record within progressDeadline 30m"}};
  a.maxFailures = 1;
  a.issuedAt = kFleetStatementT0 + 1900;
  a.model = "llama";
  return a;
}

// The statement as a verifier hands it over: parsed from its bytes.
json verified(const StatusOr<nlohmann::ordered_json>& s) {
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  return json::parse(s->dump());
}

TEST(WavePermit, IsAnInTotoStatementAboutThePackage) {
  auto s = wavePermitStatement(permitFleetStatement());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->dump(),
            R"({"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"registry.example/)"
            R"(models/llama","digest":{"sha256":")" +
                kFleetStatementHex +
                R"("}}],"predicateType":"https://lockstep.dev/attestation/wave-permit/v1",)"
                R"("predicate":{"rollout":"ml/llama-v7","rolloutUid":"uid-1","wave":"rest",)"
                R"("waveIndex":1,"clusters":["c","d"],"issuedAt":"2026-11-30T09:00:00Z",)"
                R"("model":"llama"}})");
  EXPECT_EQ(wavePermitStatement(permitFleetStatement())->dump(), s->dump())
      << "the same inputs, the same bytes";
}

TEST(WavePermit, RoundTripsAndSaysWhomItPermits) {
  auto p = parseWavePermit(verified(wavePermitStatement(permitFleetStatement())));
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(*p, permitFleetStatement());
  EXPECT_TRUE(permits(*p, "c"));
  EXPECT_TRUE(permits(*p, "d"));
  EXPECT_FALSE(permits(*p, "b"));

  WavePermit open = permitFleetStatement();
  open.clusters.clear();
  open.allClusters = true;
  open.wave = kOpenPermitWave;
  open.waveIndex = 2;
  auto s = wavePermitStatement(open);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_FALSE(s->at("predicate").contains("clusters"));
  EXPECT_EQ(s->at("predicate").at("allClusters"), true);
  auto back = parseWavePermit(verified(s));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, open);
  EXPECT_TRUE(permits(*back, "a-cluster-added-later"));
}

TEST(WavePermit, BuilderRefusesWhatNoClusterCouldUse) {
  WavePermit p = permitFleetStatement();
  p.package.digest.clear();
  EXPECT_EQ(wavePermitStatement(p).status().message(),
            "subject: package registry.example/models/llama is not pinned by digest (@sha256:…)");
  p = permitFleetStatement();
  p.clusters.clear();
  EXPECT_EQ(wavePermitStatement(p).status().message(),
            "clusters: must name at least one cluster (or allClusters)");
  p = permitFleetStatement();
  p.allClusters = true;
  EXPECT_EQ(wavePermitStatement(p).status().message(),
            "clusters: must be empty in the open permit (allClusters)");
  p = permitFleetStatement();
  p.clusters = {"c", "c"};
  EXPECT_EQ(wavePermitStatement(p).status().message(), "clusters[1]: \"c\" is listed twice");
}

TEST(WavePermit, ParserNamesTheField) {
  const json good = verified(wavePermitStatement(permitFleetStatement()));
  auto errorOf = [](const json& s) { return parseWavePermit(s).status().message(); };
  json s = good;
  s["predicate"]["clusters"][1] = "";
  EXPECT_EQ(errorOf(s), "predicate.clusters[1]: must be a non-empty string");
  s = good;
  s["predicate"].erase("clusters");
  EXPECT_EQ(errorOf(s),
            "predicate.clusters: must name at least one cluster (or allClusters: true)");
  s = good;
  s["predicate"]["issuedAt"] = "yesterday";
  EXPECT_EQ(errorOf(s), "predicate.issuedAt: \"yesterday\" is not an RFC 3339 time");
  s = good;
  s["predicate"]["waveIndex"] = "1";
  EXPECT_EQ(errorOf(s), "predicate.waveIndex: must be an integer of at least 0");
  s = good;
  s["predicate"].erase("rolloutUid");
  EXPECT_EQ(errorOf(s), "predicate.rolloutUid: is required");
  s = good;
  s["predicate"]["allClusters"] = true;
  EXPECT_EQ(errorOf(s), "predicate.clusters: must be absent in the open permit (allClusters)");
  s = good;
  s["predicateType"] = kFleetAbortPredicate;
  EXPECT_EQ(errorOf(s), std::string("predicateType: \"") + kFleetAbortPredicate + "\" is not " +
                            kWavePermitPredicate);
  s = good;
  s["subject"][0]["digest"]["sha256"] = "abc";
  EXPECT_EQ(errorOf(s), "subject[0].digest.sha256: \"abc\" is not 64 lowercase hex digits");
  s = good;
  s["subject"] = 7;
  EXPECT_EQ(errorOf(s), "subject: must list the package");
  EXPECT_EQ(errorOf(json::array()), "statement: must be a JSON object");
}

TEST(FleetAbort, RoundTripsWithItsFailures) {
  auto s = fleetAbortStatement(abort());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s->at("predicateType"), kFleetAbortPredicate);
  EXPECT_EQ(s->at("predicate").at("failures").at(1).dump(),
            R"({"cluster":"c","outcome":"TimedOut","at":"2026-11-30T09:30:00Z",)"
            R"("reason":"no prod record within progressDeadline 30m"})");
  auto back = parseFleetAbort(verified(s));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, abort());
}

TEST(FleetAbort, ErrorsNameTheField) {
  FleetAbort a = abort();
  a.failures[0].outcome = "Promoted";
  EXPECT_EQ(fleetAbortStatement(a).status().message(),
            "failures[0].outcome: \"Promoted\" is not RolledBack or TimedOut");
  json s = verified(fleetAbortStatement(abort()));
  s["predicate"]["failures"][1]["at"] = 5;
  EXPECT_EQ(parseFleetAbort(s).status().message(),
            "predicate.failures[1].at: must be an RFC 3339 time");
  s = verified(fleetAbortStatement(abort()));
  s["predicate"]["failures"][0]["outcome"] = "Lost";
  EXPECT_EQ(parseFleetAbort(s).status().message(),
            "predicate.failures[0].outcome: \"Lost\" is not RolledBack or TimedOut");
  s = verified(fleetAbortStatement(abort()));
  s["predicate"]["maxFailures"] = -1;
  EXPECT_EQ(parseFleetAbort(s).status().message(),
            "predicate.maxFailures: must be an integer of at least 0");
}

ProdRecordInput record(const std::string& outcome) {
  ProdRecordInput in;
  in.package = packageFleetStatement();
  in.outcome = outcome;
  in.cluster = "b";
  in.ns = "ml";
  in.model = "llama";
  in.release = "llama-v7";
  in.releaseUid = "rel-uid";
  in.since = "2026-11-30T09:05:00.250Z";
  in.closureHash = "sha256:" + std::string(64, 'c');
  in.runtimeImage = "registry.example/runtimes/torch@sha256:" + std::string(64, 'd');
  if (outcome == "RolledBack") {
    in.reason = "AnalysisFailed";
    in.failedStep = {{"step", 2}, {"analysis", {{"failed", 3}}}};
  }
  return in;
}

TEST(ProdRecord, ParsesWhatTheClustersPublish) {
  auto r = parseProdRecord(verified(prodRecordStatement(record("Promoted"))));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->package.digest, "sha256:" + kFleetStatementHex);
  EXPECT_EQ(r->cluster, "b");
  EXPECT_EQ(r->outcome, kOutcomePromoted);
  EXPECT_EQ(r->since, kFleetStatementT0 + 300) << "fractions of a second dropped";
  EXPECT_EQ(r->releaseUid, "rel-uid");
  EXPECT_EQ(r->closureHash, "sha256:" + std::string(64, 'c'));
  EXPECT_EQ(r->runtimeImage, "registry.example/runtimes/torch@sha256:" + std::string(64, 'd'));
  EXPECT_TRUE(r->failedStep.is_null());

  r = parseProdRecord(verified(prodRecordStatement(record("RolledBack"))));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->outcome, kOutcomeRolledBack);
  EXPECT_EQ(r->reason, "AnalysisFailed");
  EXPECT_EQ(r->failedStep.at("step"), 2);
}

TEST(ProdRecord, ErrorsNameTheField) {
  json s = verified(prodRecordStatement(record("Promoted")));
  s["predicate"]["since"] = "soon";
  EXPECT_EQ(parseProdRecord(s).status().message(),
            "predicate.since: \"soon\" is not an RFC 3339 time");
  s = verified(prodRecordStatement(record("Promoted")));
  s["predicate"]["outcome"] = "Canary";
  EXPECT_EQ(parseProdRecord(s).status().message(),
            "predicate.outcome: \"Canary\" is not Promoted or RolledBack");
  s = verified(prodRecordStatement(record("Promoted")));
  s["predicate"].erase("cluster");
  EXPECT_EQ(parseProdRecord(s).status().message(), "predicate.cluster: is required");
  s = verified(prodRecordStatement(record("Promoted")));
  s["predicate"]["release"] = "llama-v7";
  EXPECT_EQ(parseProdRecord(s).status().message(),
            "predicate.release: must be an object {name, uid}");
  EXPECT_EQ(
      parseProdRecord(verified(wavePermitStatement(permitFleetStatement()))).status().message(),
      std::string("predicateType: \"") + kWavePermitPredicate + "\" is not " +
          kProdRecordPredicate);
}

TEST(StatementTime, IsRfc3339UtcInWholeSeconds) {
  EXPECT_EQ(statementTime(kFleetStatementT0), "2026-11-30T09:00:00Z");
  EXPECT_EQ(parseStatementTime("2026-11-30T09:00:00Z"), kFleetStatementT0);
  EXPECT_EQ(parseStatementTime("2026-11-30T10:00:00.999+01:00"), kFleetStatementT0);
  EXPECT_EQ(parseStatementTime("2026-11-30"), std::nullopt);
}

// A permit signed by the hub verifies as a record of the fleet stage: a
// TrustPolicy rule for stage "fleet" trusts the hub's key for it.
TEST(WavePermit, VerifiesAsAFleetStageRecord) {
  auto read = [](const std::string& name) {
    std::ifstream in(std::string(LOCKSTEP_EVIDENCE_TESTDATA) + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  auto signer = parseP256PrivateKey(read("signer.key"), "signer.key");
  ASSERT_TRUE(signer.isOk()) << signer.status().toString();
  auto key = parseP256PublicKey(read("signer.pub"), "signer.pub");
  ASSERT_TRUE(key.isOk()) << key.status().toString();
  auto bundle = signStatement(wavePermitStatement(permitFleetStatement())->dump(), **signer);
  ASSERT_TRUE(bundle.isOk()) << bundle.status().toString();
  Expectation want;
  want.subjectDigest = "sha256:" + kFleetStatementHex;
  want.predicateType = kWavePermitPredicate;
  want.stage = kFleetStage;
  auto v = verifyBundle(bundle->dump(), {{"hub", *key}}, want, "permit");
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v->stage, "fleet");
  EXPECT_TRUE(v->passed) << "a permit is a record: its signature is what counts";
  auto p = parseWavePermit(v->statement);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(*p, permitFleetStatement());

  bundle = signStatement(fleetAbortStatement(abort())->dump(), **signer);
  ASSERT_TRUE(bundle.isOk()) << bundle.status().toString();
  want.predicateType = kFleetAbortPredicate;
  v = verifyBundle(bundle->dump(), {{"hub", *key}}, want, "abort");
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(v->stage, "fleet");
}

}  // namespace
}  // namespace lockstep::evidence
