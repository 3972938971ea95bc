// checkFleetPermit: a serving cluster starts a fleet release's canary only on
// a wave permit naming it (or the open permit) signed by a key its
// TrustPolicy trusts for stage fleet; a fleet abort stops it, and concerns
// (rolls back) only the clusters of the aborted wave (docs/fleet.md "The
// serving side").
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/fleet_permit.h"
#include "evidence/fleet_statement.h"

namespace lockstep::evidence {
namespace {

namespace v1 = api::v1alpha1;
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

WavePermit permit(const std::string& wave, int64_t index, std::vector<std::string> clusters,
                  int64_t at, const std::string& hex = kHex) {
  WavePermit p;
  p.package = package(hex);
  p.rollout = "ml/llama-v7";
  p.rolloutUid = "uid-1";
  p.wave = wave;
  p.waveIndex = index;
  p.clusters = std::move(clusters);
  p.allClusters = p.clusters.empty();
  p.issuedAt = at;
  p.model = "llama";
  return p;
}

FleetAbort abortIn(const std::string& wave, int64_t at) {
  FleetAbort a;
  a.package = package();
  a.rollout = "ml/llama-v7";
  a.rolloutUid = "uid-1";
  a.wave = wave;
  a.failures = {{"b", kOutcomeRolledBack, at - 10, "AnalysisFailed: error-rate 0.09 > 0.05"}};
  a.maxFailures = 0;
  a.issuedAt = at;
  a.model = "llama";
  return a;
}

int counter = 0;
ReferrerBundle signedBy(const StatusOr<nlohmann::ordered_json>& statement,
                        const std::string& keyFile, const std::string& name) {
  EXPECT_TRUE(statement.isOk()) << statement.status().toString();
  auto signer = parseP256PrivateKey(testdata(keyFile), keyFile);
  EXPECT_TRUE(signer.isOk());
  auto bundle = signStatement(statement->dump(), **signer);
  EXPECT_TRUE(bundle.isOk());
  const std::string n = std::to_string(++counter);
  return {"sha256:" + std::string(64 - n.size(), 'e') + n, name, bundle->dump(), ""};
}

ReferrerBundle permitBy(const WavePermit& p, const std::string& key = "signer.key") {
  return signedBy(wavePermitStatement(p), key, "fleet/permit");
}

// The hub's key ("hub") is trusted for stage fleet; the cluster's ("fleet") only for prod.
v1::TrustPolicySpec policy() {
  v1::TrustPolicySpec p;
  p.keys = {{"hub", testdata("signer.pub")}, {"cluster", testdata("other.pub")}};
  p.rules = {{{"registry.example/models/"}, {"fleet"}, {"hub"}},
             {{"registry.example/models/"}, {"prod"}, {"cluster"}}};
  return p;
}

FleetPermitRequirement want(const std::string& cluster) {
  FleetPermitRequirement w;
  w.packageName = kPackageName;
  w.packageDigest = "sha256:" + kHex;
  w.cluster = cluster;
  w.policyName = "hub";
  return w;
}

TEST(FleetPermit, APermitNamingTheClusterLetsItStart) {
  const std::vector<ReferrerBundle> refs = {permitBy(permit("first", 0, {"b"}, kT0))};
  FleetPermitResult r = checkFleetPermit(refs, policy(), want("b"));
  EXPECT_TRUE(r.mayStart()) << r.message;
  EXPECT_TRUE(r.permitted);
  EXPECT_FALSE(r.aborted);
  EXPECT_FALSE(r.settled) << "a later wave may still abort this one";
  EXPECT_EQ(r.reason, "");
  ASSERT_TRUE(r.permit);
  EXPECT_EQ(r.permit->wave, "first");
  EXPECT_EQ(r.permit->rollout, "ml/llama-v7");
  EXPECT_EQ(r.permit->signedBy, "hub");
  EXPECT_EQ(r.permit->issuedAt, kT0);
  EXPECT_NE(r.message.find("wave \"first\" of the fleet rollout ml/llama-v7 permits cluster \"b\""),
            std::string::npos)
      << r.message;
}

TEST(FleetPermit, AClusterNoPermitNamesWaits) {
  const std::vector<ReferrerBundle> refs = {permitBy(permit("first", 0, {"b"}, kT0))};
  FleetPermitResult r = checkFleetPermit(refs, policy(), want("c"));
  EXPECT_FALSE(r.mayStart());
  EXPECT_EQ(r.reason, kReasonWaitingForPermit);
  EXPECT_NE(r.message.find("no wave permit signed by a key TrustPolicy \"hub\" trusts names "
                           "cluster \"c\""),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("1 trusted permit name other clusters"), std::string::npos) << r.message;
  EXPECT_FALSE(checkFleetPermit({}, policy(), want("c")).mayStart());
}

TEST(FleetPermit, APermitUnderAnUntrustedKeyOrForAnotherPackageIsNoPermit) {
  // The cluster's own key is trusted, but only for stage prod.
  const std::vector<ReferrerBundle> untrusted = {
      permitBy(permit("first", 0, {"b"}, kT0), "other.key")};
  FleetPermitResult r = checkFleetPermit(untrusted, policy(), want("b"));
  EXPECT_FALSE(r.mayStart());
  EXPECT_EQ(r.reason, kReasonEvidenceUntrusted);
  EXPECT_NE(r.message.find("refused"), std::string::npos) << r.message;
  // Signed by the hub, but about another package digest.
  const std::vector<ReferrerBundle> other = {permitBy(permit("first", 0, {"b"}, kT0, kOtherHex))};
  r = checkFleetPermit(other, policy(), want("b"));
  EXPECT_FALSE(r.mayStart());
  EXPECT_EQ(r.reason, kReasonWaitingForPermit);
  EXPECT_NE(r.message.find(kOtherHex), std::string::npos) << r.message;
}

TEST(FleetPermit, APolicyTrustingNoKeyForTheFleetHoldsWithThatReason) {
  v1::TrustPolicySpec p = policy();
  p.rules.erase(p.rules.begin());
  FleetPermitResult r = checkFleetPermit({permitBy(permit("first", 0, {"b"}, kT0))}, p, want("b"));
  EXPECT_FALSE(r.mayStart());
  EXPECT_EQ(r.reason, kReasonEvidenceUntrusted);
  EXPECT_NE(r.message.find("trusts no key for stage \"fleet\""), std::string::npos) << r.message;
  p = policy();
  p.keys[1].publicKey = "not a key";
  r = checkFleetPermit({permitBy(permit("first", 0, {"b"}, kT0))}, p, want("b"));
  EXPECT_EQ(r.reason, kReasonEvidenceInvalid);
  EXPECT_NE(r.message.find("spec.keys[1] \"cluster\""), std::string::npos) << r.message;
}

TEST(FleetPermit, TheOpenPermitLetsAnyClusterStartAndSettlesIt) {
  const std::vector<ReferrerBundle> refs = {permitBy(permit("first", 0, {"b"}, kT0)),
                                            permitBy(permit("*", 2, {}, kT0 + 600))};
  FleetPermitResult late = checkFleetPermit(refs, policy(), want("e"));
  EXPECT_TRUE(late.mayStart()) << late.message;
  EXPECT_TRUE(late.settled);
  EXPECT_EQ(late.permit->wave, "*");
  EXPECT_NE(late.message.find("the open permit of the fleet rollout"), std::string::npos);
  // b keeps its own (earlier) permit, and is settled too.
  FleetPermitResult b = checkFleetPermit(refs, policy(), want("b"));
  EXPECT_EQ(b.permit->wave, "first");
  EXPECT_TRUE(b.settled);
}

TEST(FleetPermit, ALaterWavesPermitSettlesAnEarlierWave) {
  const std::vector<ReferrerBundle> refs = {permitBy(permit("first", 0, {"b"}, kT0)),
                                            permitBy(permit("rest", 1, {"c", "d"}, kT0 + 600))};
  EXPECT_TRUE(checkFleetPermit(refs, policy(), want("b")).settled);
  FleetPermitResult c = checkFleetPermit(refs, policy(), want("c"));
  EXPECT_TRUE(c.mayStart());
  EXPECT_FALSE(c.settled) << "the last wave may still be aborted";
}

TEST(FleetPermit, AnAbortStopsEveryClusterAndConcernsOnlyTheAbortedWave) {
  const std::vector<ReferrerBundle> refs = {
      permitBy(permit("first", 0, {"b"}, kT0)), permitBy(permit("rest", 1, {"c", "d"}, kT0 + 600)),
      signedBy(fleetAbortStatement(abortIn("rest", kT0 + 900)), "signer.key", "fleet/abort")};
  // c was permitted by the aborted wave: it stops and rolls back.
  FleetPermitResult c = checkFleetPermit(refs, policy(), want("c"));
  EXPECT_FALSE(c.mayStart());
  EXPECT_TRUE(c.aborted);
  EXPECT_TRUE(c.concerned);
  EXPECT_EQ(c.reason, kReasonFleetAborted);
  ASSERT_TRUE(c.abort);
  EXPECT_EQ(c.abort->wave, "rest");
  EXPECT_NE(c.message.find("was aborted in wave \"rest\""), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("b RolledBack (AnalysisFailed: error-rate 0.09 > 0.05)"),
            std::string::npos)
      << c.message;
  // b promoted in the first wave, which finished: it keeps serving.
  FleetPermitResult b = checkFleetPermit(refs, policy(), want("b"));
  EXPECT_TRUE(b.aborted);
  EXPECT_FALSE(b.concerned);
  EXPECT_NE(b.message.find("keeps serving"), std::string::npos) << b.message;
  // e was never permitted: it never starts (and has nothing to roll back).
  FleetPermitResult e = checkFleetPermit(refs, policy(), want("e"));
  EXPECT_FALSE(e.mayStart());
  EXPECT_TRUE(e.concerned);
}

TEST(FleetPermit, AnAbortUnderAnUntrustedKeyDecidesNothing) {
  const std::vector<ReferrerBundle> refs = {
      permitBy(permit("first", 0, {"b"}, kT0)),
      signedBy(fleetAbortStatement(abortIn("first", kT0 + 60)), "other.key", "fleet/abort")};
  FleetPermitResult r = checkFleetPermit(refs, policy(), want("b"));
  EXPECT_TRUE(r.mayStart()) << r.message;
  EXPECT_FALSE(r.aborted);
}

TEST(FleetPermit, TheEarliestPermitCountsAndTheAnswerRoundTrips) {
  const std::vector<ReferrerBundle> refs = {permitBy(permit("rest", 1, {"b"}, kT0 + 600)),
                                            permitBy(permit("first", 0, {"b"}, kT0))};
  FleetPermitResult r = checkFleetPermit(refs, policy(), want("b"));
  ASSERT_TRUE(r.permit);
  EXPECT_EQ(r.permit->wave, "first");
  auto back = FleetPermitResult::fromJson(r.toJson());
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->toJson(), r.toJson());
  auto bad = FleetPermitResult::fromJson(json{{"permit", {{"issuedAt", "yesterday"}}}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("fleet.permit.issuedAt"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::evidence
