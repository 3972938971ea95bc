// `lockstep fleet status` without a registry: manifests read with their lines,
// trust from TrustPolicy text, the fleet statements verified and refused, and
// the status with and without the ModelRollout at fixed times.
#include "cmd/lockstep/fleet_status.h"

#include <gtest/gtest.h>

#include "cmd/lockstep/manifest_file.h"
#include "cmd/lockstep/verifier_trust.h"
#include "tests/cmd/fleet_statements.h"

namespace lockstep::cli {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
namespace fleet = testing::fleet;
using fleet::kT0;

constexpr int64_t kMinute = 60;

std::string indent(const std::string& pem, const std::string& by) {
  std::string out;
  size_t start = 0;
  while (start < pem.size()) {
    const size_t end = pem.find('\n', start);
    out += by + pem.substr(start, end == std::string::npos ? end : end - start) + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// The hub signs with signer.key (trusted for stage fleet), the clusters with
// other.key (trusted for stage prod).
std::string policyText() {
  return "apiVersion: lockstep.dev/v1alpha1\n"
         "kind: TrustPolicy\n"
         "metadata: {name: fleet}\n"
         "spec:\n"
         "  keys:\n"
         "  - name: hub\n"
         "    publicKey: |\n" +
         indent(fleet::testdata("signer.pub"), "      ") +
         "  - name: clusters\n"
         "    publicKey: |\n" +
         indent(fleet::testdata("other.pub"), "      ") +
         "  rules:\n"
         "  - {repositories: [registry.example/models/], stages: [fleet], keys: [hub]}\n"
         "  - {stages: [prod], keys: [clusters]}\n";
}

VerifierTrust policyTrust() {
  VerifierTrust t;
  Status s = addTrustPolicies(policyText(), "trust.yaml", t);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return t;
}

const char* kRolloutYaml = R"(apiVersion: lockstep.dev/v1alpha1
kind: ModelRollout
metadata: {name: llama-v7, namespace: ml, uid: uid-1}
spec:
  package: registry.example/models/llama@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  model: llama
  waves:
  - {name: first, clusters: [b]}
  - name: rest
    clusterSelector: {matchLabels: {region: eu}}
  inventory:
  - {name: c, labels: {region: eu}}
  - {name: d, labels: {region: eu}}
  strategy:
    maxConcurrency: 1
    maxFailures: 1
    minSuccessTime: 10m
    progressDeadline: 30m
  trustPolicy: fleet
)";

FleetRollout rollout(const std::string& text = kRolloutYaml) {
  auto file = ManifestFile::parse(text, "rollout.yaml");
  EXPECT_TRUE(file.isOk()) << file.status().toString();
  auto r = decodeRolloutManifest(*file);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return *r;
}

// Builder of what the registry lists.
class Referrers {
 public:
  Referrers& add(const ordered_json& statement, const std::string& key,
                 const std::string& name = "") {
    const std::string n = std::to_string(list_.size());
    list_.push_back({"sha256:" + std::string(63, '0') + n.substr(n.size() - 1), name,
                     statement.value("predicateType", ""), fleet::signedBundle(statement, key),
                     ""});
    return *this;
  }
  Referrers& permit(const std::string& wave, int64_t index, std::vector<std::string> clusters,
                    int64_t at) {
    return add(fleet::permit(wave, index, std::move(clusters), at), "signer.key", "fleet/permit");
  }
  Referrers& record(const std::string& cluster, const std::string& outcome, int64_t since,
                    const std::string& reason = "") {
    return add(fleet::record(cluster, outcome, since, reason), "other.key", "prod/record");
  }
  Referrers& unreadable(const std::string& why) {
    list_.push_back({"sha256:" + std::string(64, 'e'), "prod/promoted",
                     evidence::kProdRecordPredicate, "", why});
    return *this;
  }
  FleetEvidence read(const VerifierTrust& trust = policyTrust()) const {
    return readFleetEvidence(list_, fleet::kRepository, fleet::kDigest, trust);
  }

 private:
  std::vector<FleetReferrer> list_;
};

const ordered_json* cluster(const ordered_json& status, const std::string& name) {
  for (const auto& c : status["clusters"])
    if (c.value("name", "") == name) return &c;
  return nullptr;
}

TEST(ManifestFile, ResolvesYamlTypesAsTheApiServerSeesThem) {
  auto m = ManifestFile::parse(
      "a: 1\nb: \"1\"\nc: true\nd: 50%\ne: 10m\nf: ~\ng: 1.5\nh: 'true'\ni: [x, 2]\n", "f.yaml");
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->json(), json::parse(R"({"a": 1, "b": "1", "c": true, "d": "50%", "e": "10m",
      "f": null, "g": 1.5, "h": "true", "i": ["x", 2]})"));
}

TEST(ManifestFile, SaysTheLineOfAFieldOrOfItsNearestEnclosingOne) {
  auto m = ManifestFile::parse(kRolloutYaml, "rollout.yaml");
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->at("spec.strategy.maxFailures"), "rollout.yaml:16");
  EXPECT_EQ(m->at("spec.waves[1].clusterSelector"), "rollout.yaml:10");
  EXPECT_EQ(m->at("spec.waves[1].clusters[0]"), "rollout.yaml:9");  // absent: the wave
  EXPECT_EQ(m->at("spec.inventory[1].labels.lockstep.dev/x"), "rollout.yaml:13");
  EXPECT_EQ(m->locate("spec.model: must be a string"),
            "rollout.yaml:6: spec.model: must be a string");
  EXPECT_EQ(m->locate("something else"), "rollout.yaml: something else");
}

TEST(ManifestFile, ASyntaxErrorNamesTheFileAndLine) {
  auto m = ManifestFile::parse("kind: ModelRollout\nspec:\n  waves: [a\n", "r.yaml");
  ASSERT_FALSE(m.isOk());
  EXPECT_EQ(m.status().message().rfind("r.yaml:", 0), 0u) << m.status().message();
}

TEST(RolloutManifest, ErrorsNameTheFileLineAndField) {
  std::string text = kRolloutYaml;
  text.replace(text.find("maxFailures: 1"), 14, "maxFailures: x%");
  auto file = ManifestFile::parse(text, "rollout.yaml");
  ASSERT_TRUE(file.isOk());
  auto r = decodeRolloutManifest(*file);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(),
            "rollout.yaml:16: spec.strategy.maxFailures: \"x%\" is not an integer or a "
            "percentage (\"20%\")");

  file = ManifestFile::parse("apiVersion: v1\nkind: ConfigMap\n", "cm.yaml");
  ASSERT_TRUE(file.isOk());
  EXPECT_EQ(decodeRolloutManifest(*file).status().message(), "cm.yaml:2: kind: not a ModelRollout");
}

// The hub's example in gitops/fleet decodes with the kind's one decoder, and its
// selectors resolve as docs/fleet.md says.
TEST(RolloutManifest, TheGitOpsExampleDecodes) {
  auto file =
      ManifestFile::read(std::string(LOCKSTEP_SOURCE_DIR) + "/gitops/fleet/hub/modelrollout.yaml");
  ASSERT_TRUE(file.isOk()) << file.status().toString();
  auto r = decodeRolloutManifest(*file);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const auto waves =
      api::v1alpha1::resolveWaves(r->spec, api::v1alpha1::rolloutInventory(r->spec, {}));
  ASSERT_EQ(waves.size(), 3u);
  EXPECT_EQ(waves[0].clusters, std::vector<std::string>{"eu-west-1"});
  EXPECT_EQ(waves[1].clusters, std::vector<std::string>{"eu-central-1"});
  EXPECT_EQ(waves[2].clusters, (std::vector<std::string>{"us-east-1", "us-west-2"}));
}

TEST(VerifierTrust, PolicyErrorsNameTheFileLineAndField) {
  VerifierTrust t;
  std::string text = policyText();
  text.replace(text.find("keys: [clusters]"), 16, "keys: [old]");
  Status s = addTrustPolicies(text, "trust.yaml", t);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().substr(0, s.message().find(" (")),
            "trust.yaml:" + std::to_string(std::count(text.begin(), text.end(), '\n')) +
                ": spec.rules[1].keys[0]: \"old\" is not a name in spec.keys");
}

TEST(FleetEvidence, CountsOnlyStatementsSignedByKeysTrustedForTheirStage) {
  const FleetEvidence ev =
      Referrers()
          .permit("first", 0, {"b"}, kT0)
          .record("b", "Promoted", kT0 + 2 * kMinute)
          // A record signed with the hub's key: trusted for fleet, not prod.
          .add(fleet::record("c", "Promoted", kT0), "signer.key", "prod/promoted")
          // A permit signed with a cluster's key.
          .add(fleet::permit("rest", 1, {"c", "d"}, kT0), "other.key", "fleet/permit")
          // A permit for another package digest.
          .add(fleet::permit("rest", 1, {"c"}, kT0,
                             fleet::packageRef("sha256:" + std::string(64, 'f'))),
               "signer.key", "fleet/permit")
          .unreadable("blob sha256:eee…: 404 Not Found")
          .read();
  ASSERT_EQ(ev.permits.size(), 1u);
  EXPECT_EQ(ev.permits[0].value.clusters, std::vector<std::string>{"b"});
  EXPECT_EQ(ev.permits[0].signedBy, "fleet/hub");
  ASSERT_EQ(ev.records.size(), 1u);
  EXPECT_EQ(ev.records[0].value.cluster, "b");
  EXPECT_EQ(ev.records[0].signedBy, "fleet/clusters");
  ASSERT_EQ(ev.refused.size(), 4u);
  EXPECT_EQ(ev.refused[0].reason,
            "signed by fleet/hub, which is not trusted for stage \"prod\" of "
            "registry.example/models/llama");
  EXPECT_EQ(ev.refused[1].reason,
            "signed by fleet/clusters, which is not trusted for stage \"fleet\" of "
            "registry.example/models/llama");
  EXPECT_NE(ev.refused[2].reason.find("not the package " + fleet::kDigest), std::string::npos)
      << ev.refused[2].reason;
  EXPECT_EQ(ev.refused[3].reason, "blob sha256:eee…: 404 Not Found");
}

TEST(FleetEvidence, KeyFilesAreTrustedForEveryStageAndOtherEvidenceIsNotRead) {
  auto keys = evidence::parseP256PublicKey(fleet::testdata("signer.pub"), "hub.pub");
  ASSERT_TRUE(keys.isOk());
  VerifierTrust trust;
  trust.keyFiles.push_back({"hub.pub", *keys});
  ordered_json eval = fleet::permit("first", 0, {"b"}, kT0);
  eval["predicateType"] = evidence::kTestResultPredicate;
  const FleetEvidence ev = Referrers()
                               .permit("first", 0, {"b"}, kT0)
                               .record("b", "Promoted", kT0)  // other.key: not given
                               .add(eval, "signer.key", "eval/test-result")
                               .read(trust);
  EXPECT_EQ(ev.permits.size(), 1u);
  EXPECT_EQ(ev.otherStatements, 1);
  ASSERT_EQ(ev.refused.size(), 1u);
  EXPECT_NE(ev.refused[0].reason.find("not trusted"), std::string::npos) << ev.refused[0].reason;
}

TEST(FleetStatus, WithTheRolloutRunsTheHubsPlannerAtTheTimeGiven) {
  const FleetRollout r = rollout();
  const FleetEvidence ev = Referrers()
                               .permit("first", 0, {"b"}, kT0)
                               .record("b", "Promoted", kT0 + 2 * kMinute)
                               .permit("rest", 1, {"c"}, kT0 + 13 * kMinute)
                               .read();
  const ordered_json s = fleetStatus(fleet::kPackage, ev, &r, kT0 + 20 * kMinute);
  EXPECT_EQ(s["phase"], "Progressing");
  EXPECT_EQ(s["rollout"], "ml/llama-v7");
  EXPECT_FALSE(s.contains("next")) << "c is in flight and maxConcurrency is 1";
  EXPECT_EQ(s["waves"][0]["phase"], "Succeeded");
  EXPECT_EQ(s["waves"][1]["phase"], "Progressing");
  EXPECT_EQ(s["waves"][1]["clusters"], json::array({"c", "d"}));
  EXPECT_EQ((*cluster(s, "b"))["state"], "Soaked");
  EXPECT_EQ((*cluster(s, "c"))["state"], "Permitted");
  EXPECT_EQ((*cluster(s, "c"))["permittedAt"], "2026-11-30T09:13:00Z");
  EXPECT_EQ((*cluster(s, "d"))["state"], "Pending");

  // Ten minutes after b's record: still soaking, so the hub holds wave rest.
  const FleetEvidence early =
      Referrers().permit("first", 0, {"b"}, kT0).record("b", "Promoted", kT0 + 2 * kMinute).read();
  const ordered_json soaking = fleetStatus(fleet::kPackage, early, &r, kT0 + 5 * kMinute);
  EXPECT_EQ(soaking["phase"], "Soaking");
  EXPECT_EQ((*cluster(soaking, "b"))["state"], "Promoted");
  EXPECT_EQ((*cluster(soaking, "b"))["reason"], "soaking until 2026-11-30T09:12:00Z");
}

TEST(FleetStatus, WhatTheHubWouldWriteIsSaidNotShownAsDone) {
  const FleetRollout r = rollout();
  // c timed out (its deadline was 09:43); one failure is within maxFailures 1.
  const FleetEvidence ev = Referrers()
                               .permit("first", 0, {"b"}, kT0)
                               .record("b", "Promoted", kT0 + 2 * kMinute)
                               .permit("rest", 1, {"c"}, kT0 + 13 * kMinute)
                               .read();
  const ordered_json s = fleetStatus(fleet::kPackage, ev, &r, kT0 + 50 * kMinute);
  EXPECT_EQ((*cluster(s, "c"))["state"], "TimedOut");
  EXPECT_EQ((*cluster(s, "d"))["state"], "Pending");
  EXPECT_EQ((*cluster(s, "d"))["reason"], "the hub permits it on its next pass");
  EXPECT_FALSE(cluster(s, "d")->contains("permittedAt"));
  EXPECT_EQ(s["next"], "the hub permits d (wave rest)");
  EXPECT_EQ(s["failures"], 1);
  EXPECT_EQ(s["maxFailures"], 1);

  // A second failure: the hub would abort.
  const FleetEvidence two = Referrers()
                                .permit("first", 0, {"b"}, kT0)
                                .record("b", "RolledBack", kT0 + 2 * kMinute, "AnalysisFailed")
                                .permit("rest", 1, {"c"}, kT0 + 13 * kMinute)
                                .read();
  const ordered_json aborting = fleetStatus(fleet::kPackage, two, &r, kT0 + 50 * kMinute);
  EXPECT_EQ(aborting["phase"], "Aborted");
  EXPECT_EQ(aborting["next"],
            "the hub writes the fleet abort (wave rest, 2 failures, maxFailures 1)");
}

TEST(FleetStatus, AnAbortInTheRegistryIsFinal) {
  const FleetRollout r = rollout();
  const FleetEvidence ev =
      Referrers()
          .permit("first", 0, {"b"}, kT0)
          .record("b", "RolledBack", kT0 + 2 * kMinute, "AnalysisFailed")
          .add(fleet::abort("first", {{"b", "RolledBack", kT0 + 2 * kMinute, "AnalysisFailed"}},
                            kT0 + 3 * kMinute),
               "signer.key", "fleet/abort")
          .read();
  ASSERT_EQ(ev.aborts.size(), 1u);
  const ordered_json s = fleetStatus(fleet::kPackage, ev, &r, kT0 + 4 * kMinute);
  EXPECT_EQ(s["phase"], "Aborted");
  EXPECT_FALSE(s.contains("next"));
  EXPECT_EQ(s["aborts"][0]["failures"][0]["cluster"], "b");
  EXPECT_EQ(s["aborts"][0]["signedBy"], "fleet/hub");
}

TEST(FleetStatus, WithoutTheRolloutShowsTheClustersTheRegistryNames) {
  const FleetEvidence ev = Referrers()
                               .permit("first", 0, {"b"}, kT0)
                               .record("b", "Promoted", kT0 + 2 * kMinute)
                               .permit("rest", 1, {"c", "d"}, kT0 + 13 * kMinute)
                               .record("d", "RolledBack", kT0 + 15 * kMinute, "AnalysisFailed")
                               .record("x", "Promoted", kT0 + 16 * kMinute)
                               .read();
  const ordered_json s = fleetStatus(fleet::kPackage, ev, nullptr, kT0 + 50 * kMinute);
  EXPECT_EQ(s["phase"], "Progressing");
  EXPECT_FALSE(s.contains("waves"));
  ASSERT_EQ(s["clusters"].size(), 4u);
  EXPECT_EQ(s["clusters"][0], ordered_json::parse(R"({"name": "b", "wave": "first",
      "state": "Promoted", "permittedAt": "2026-11-30T09:00:00Z",
      "since": "2026-11-30T09:02:00Z"})"))
      << "no soak without the rollout's minSuccessTime";
  EXPECT_EQ((*cluster(s, "c"))["state"], "Permitted") << "no deadline without the rollout";
  EXPECT_EQ((*cluster(s, "d"))["state"], "RolledBack");
  EXPECT_EQ((*cluster(s, "d"))["reason"], "AnalysisFailed");
  EXPECT_EQ((*cluster(s, "x"))["wave"], "") << "a record without a permit";
  EXPECT_EQ(s["permits"].size(), 2u);
  EXPECT_EQ(s["records"].size(), 3u);

  const FleetEvidence done =
      Referrers().permit("first", 0, {"b"}, kT0).permit("*", 2, {}, kT0 + kMinute).read();
  EXPECT_EQ(fleetStatus(fleet::kPackage, done, nullptr, kT0)["phase"], "Succeeded");
  EXPECT_EQ(fleetStatus(fleet::kPackage, Referrers().read(), nullptr, kT0)["phase"], "Pending");
}

TEST(FleetStatus, TheTableShowsWavesClustersAbortsAndRefusals) {
  const FleetRollout r = rollout();
  const FleetEvidence ev =
      Referrers()
          .permit("first", 0, {"b"}, kT0)
          .record("b", "Promoted", kT0 + 2 * kMinute)
          .permit("rest", 1, {"c"}, kT0 + 13 * kMinute)
          .add(fleet::permit("rest", 1, {"d"}, kT0), "other.key", "fleet/permit")
          .read();
  EXPECT_EQ(fleetStatusTable(fleetStatus(fleet::kPackage, ev, &r, kT0 + 20 * kMinute)),
            "PACKAGE  " + fleet::kPackage +
                "\n"
                "ROLLOUT  ml/llama-v7 at 2026-11-30T09:20:00Z\n"
                "PHASE    Progressing: wave rest (2 of 2): 1 in flight, 1 waiting for a permit, 0 "
                "soaking; failures 0 of at most 1\n"
                "\n"
                "WAVE   PHASE        CLUSTERS  MESSAGE\n"
                "first  Succeeded    b\n"
                "rest   Progressing  c,d\n"
                "\n"
                "CLUSTER  WAVE   STATE      PERMITTED             SINCE                 REASON\n"
                "b        first  Soaked     2026-11-30T09:00:00Z  2026-11-30T09:02:00Z\n"
                "c        rest   Permitted  2026-11-30T09:13:00Z  -\n"
                "d        rest   Pending    -                     -\n"
                "\n"
                "REFUSED (counted for nothing)                                            "
                "STATEMENT     REASON\n"
                "sha256:0000000000000000000000000000000000000000000000000000000000000003  "
                "fleet/permit  signed by fleet/clusters, which is not trusted for stage \"fleet\" "
                "of registry.example/models/llama\n"
                "\n"
                "2 permits, 1 prod records, 0 aborts verified; 1 refused; 0 other statements of "
                "the package not read\n");
}

}  // namespace
}  // namespace lockstep::cli
