// The hub's ModelRollout controller against the real control plane and a real
// registry (Debian's docker-registry over TLS with htpasswd; no referrers API:
// the tag-schema fallback). The operator binary runs with
// --controllers=modelrollout, the chart's RBAC, a SigningConfig whose key and
// credentials Secrets sit in its namespace, and a TrustPolicy trusting the
// serving clusters' key for stage prod. The test plays the serving clusters:
// it reads the permits the hub pushed (verified under the hub's key) and signs
// and pushes their prod records with the clusters' key. Each test checks the
// status at every step, not only at the end:
//   - waves in order: wave 1's permit names b; b's Promoted record and its
//     soak give wave 2's permit naming c and d; their records give the open
//     permit and Succeeded; each permit once; an unchanged pass writes no status;
//   - b's RolledBack record with maxFailures 0: the fleet abort, Aborted, wave
//     1 Failed, no permit for c ever;
//   - the registry stopped mid-rollout: WaitingForRegistry with the
//     registry's error, the clusters as last seen, nothing written; back, the
//     rollout goes on from what the registry holds;
//   - with ClusterProfiles on the hub, a wave's selector reads them (not spec.inventory);
//   - a missing TrustPolicy stalls the rollout, nothing written, until it exists.
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "controllers/fleet/fleet_referrers.h"
#include "evidence/bundle.h"
#include "evidence/ecdsa_p256.h"
#include "evidence/fleet_statement.h"
#include "evidence/statement.h"
#include "operator/registry/bundle_referrers.h"
#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

const std::string kRepo = "models/fleet";
constexpr int kPollSeconds = 2;

std::string nowRfc3339(int64_t offsetSeconds = 0) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return evidence::statementTime(now + offsetSeconds);
}

class ModelRolloutClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    registry_ = ReleaseWorld::registry(error);
    ASSERT_NE(registry_, nullptr) << error;
    auto dir = run({"mktemp", "-d"});
    ASSERT_EQ(dir.exitCode, 0);
    dir_ = dir.out.substr(0, dir.out.find('\n'));
    // The hub's key (its SigningConfig) and the serving clusters' key.
    for (const std::string& k : {"hub", "cluster"}) {
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
    auto clusterKey = evidence::parseP256PrivateKey(readFile(dir_ + "/cluster.pem"), "cluster");
    ASSERT_TRUE(clusterKey.isOk()) << clusterKey.status().toString();
    clusterSigner_ = std::shared_ptr<const evidence::Signer>(std::move(*clusterKey));
    auto hubPub = evidence::parseP256PublicKey(readFile(dir_ + "/hub.pub"), "hub");
    ASSERT_TRUE(hubPub.isOk());
    hubKey_ = *hubPub;
    ASSERT_EQ(
        ReleaseWorld::startOperator(
            {"--registry-ca-file=" + registry_->caFile(), "--controllers=modelrollout",
             "--fleet-poll-interval=" + std::to_string(kPollSeconds) + "s"},
            [] {
              kubectl({"delete", "secret", "-n", kOperatorNamespace, "fleet-hub-key",
                       "fleet-hub-registry", "--ignore-not-found"});
              auto key = kubectl({"create", "secret", "generic", "fleet-hub-key", "-n",
                                  kOperatorNamespace, "--from-file=key.pem=" + dir_ + "/hub.pem"});
              EXPECT_EQ(key.exitCode, 0) << key.err;
              std::ofstream(dir_ + "/push.json")
                  << json{{"auths",
                           {{registry_->host(),
                             {{"username", registry_->username()},
                              {"password", registry_->password()}}}}}}
                         .dump();
              auto creds = kubectl({"create", "secret", "generic", "fleet-hub-registry", "-n",
                                    kOperatorNamespace, "--type=kubernetes.io/dockerconfigjson",
                                    "--from-file=.dockerconfigjson=" + dir_ + "/push.json"});
              EXPECT_EQ(creds.exitCode, 0) << creds.err;
              auto config = kubectl(
                  {"apply", "-f", "-"},
                  json{{"apiVersion", "lockstep.dev/v1alpha1"},
                       {"kind", "SigningConfig"},
                       {"metadata", {{"name", "fleet-hub"}}},
                       {"spec",
                        {{"repositories", json::array({registry_->host() + "/" + kRepo})},
                         {"keySecretRef", {{"name", "fleet-hub-key"}}},
                         {"registryCredentialsSecretRef", {{"name", "fleet-hub-registry"}}}}}}
                      .dump());
              EXPECT_EQ(config.exitCode, 0) << config.err;
              auto policy = kubectl(
                  {"apply", "-f", "-"},
                  json{{"apiVersion", "lockstep.dev/v1alpha1"},
                       {"kind", "TrustPolicy"},
                       {"metadata", {{"name", "fleet-clusters"}}},
                       {"spec",
                        {{"keys", json::array({{{"name", "clusters"},
                                                {"publicKey", readFile(dir_ + "/cluster.pub")}}})},
                         {"rules", json::array({{{"repositories",
                                                  json::array({registry_->host() + "/models/"})},
                                                 {"stages", json::array({"prod"})},
                                                 {"keys", json::array({"clusters"})}}})}}}}
                      .dump());
              EXPECT_EQ(policy.exitCode, 0) << policy.err;
            }),
        "");
  }
  static void TearDownTestSuite() {
    ReleaseWorld::stopOperator();
    kubectl({"delete", "signingconfig", "fleet-hub", "--ignore-not-found"});
    kubectl({"delete", "trustpolicy", "fleet-clusters", "--ignore-not-found"});
    if (!dir_.empty()) run({"rm", "-rf", dir_});
  }

  void SetUp() override {
    ASSERT_EQ(ReleaseWorld::ensureOperator(), "");
    ns_ = uniqueName("fleet");
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exitCode, 0);
    auto c = registry_->client();
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(*c);
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << "operator log tail:\n" << ReleaseWorld::op().log() << std::endl;
    kubectl({"delete", "namespace", ns_, "--ignore-not-found", "--wait=false"});
  }

  std::string push(const std::string& salt) {
    auto d = pushTestImage(*client_, kRepo, ns_ + "-" + salt);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? *d : "";
  }
  std::string pkg(const std::string& digest) const {
    return registry_->host() + "/" + kRepo + "@" + digest;
  }

  CommandResult createRollout(const std::string& name, const std::string& digest, const json& waves,
                              const json& strategy) {
    return kubectl({"apply", "-f", "-"}, json{{"apiVersion", "lockstep.dev/v1alpha1"},
                                              {"kind", "ModelRollout"},
                                              {"metadata", {{"name", name}, {"namespace", ns_}}},
                                              {"spec",
                                               {{"package", pkg(digest)},
                                                {"model", "llama"},
                                                {"waves", waves},
                                                {"strategy", strategy},
                                                {"trustPolicy", "fleet-clusters"}}}}
                                             .dump());
  }
  json rollout(const std::string& name) const {
    return kubectlJson({"get", "modelrollout", name, "-n", ns_});
  }
  // Waits until `probe` holds for the rollout's status; the last status seen.
  json waitStatus(const std::string& name, const std::function<bool(const json&)>& probe,
                  const std::string& what,
                  std::chrono::seconds timeout = std::chrono::seconds(60)) {
    json last;
    bool ok = eventually(
        [&] {
          json r = rollout(name);
          if (r.is_discarded()) return false;
          last = r.value("status", json::object());
          return probe(last);
        },
        timeout);
    EXPECT_TRUE(ok) << name << ": never " << what << "; status: " << last.dump(2);
    return last;
  }
  json waitPhase(const std::string& name, const std::string& phase) {
    return waitStatus(
        name, [&](const json& s) { return s.value("phase", "") == phase; }, "phase " + phase);
  }
  static std::string clusterState(const json& status, const std::string& cluster) {
    for (const json& c : status.value("clusters", json::array()))
      if (c.value("name", "") == cluster) return c.value("state", "");
    return "<absent>";
  }
  static std::string wavePhase(const json& status, size_t i) {
    const json waves = status.value("waves", json::array());
    return i < waves.size() ? waves[i].value("phase", "") : "<absent>";
  }

  // What the registry holds for the package, verified: permits and aborts under
  // the hub's key, records under the clusters'.
  controllers::FleetReferrers registryHolds(const std::string& digest) {
    auto list = registry::readBundleReferrers(*client_, kRepo, digest);
    EXPECT_TRUE(list.isOk()) << list.status().toString();
    std::vector<evidence::ReferrerBundle> bundles;
    if (list.isOk()) {
      for (const registry::BundleReferrer& r : list->referrers)
        bundles.push_back({r.descriptor.digest, "", r.bundle, r.error});
    }
    controllers::FleetKeys keys;
    keys.fleet = {{"hub", hubKey_}};
    keys.prod = {{"clusters", clusterPub()}};
    return controllers::readFleetReferrers(bundles, keys, digest);
  }
  std::shared_ptr<const evidence::PublicKey> clusterPub() {
    return std::shared_ptr<const evidence::PublicKey>(clusterSigner_, &clusterSigner_->publicKey());
  }
  size_t referrerCount(const std::string& digest) {
    auto r = client_->referrers(kRepo, digest);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    return r.isOk() ? r->descriptors.size() : 0;
  }

  // A serving cluster's prod record, signed with the clusters' key and pushed.
  void pushRecord(const std::string& digest, const std::string& cluster, const std::string& outcome,
                  const std::string& since) {
    evidence::ProdRecordInput in;
    auto ref = api::parseImageRef(pkg(digest));
    ASSERT_TRUE(ref.isOk());
    in.package = *ref;
    in.outcome = outcome;
    in.cluster = cluster;
    in.ns = "ml";
    in.model = "llama";
    in.release = "llama-" + cluster;
    in.releaseUid = "uid-" + cluster;
    in.since = since;
    if (outcome == "RolledBack") in.reason = "AnalysisFailed: error-rate 0.09 > 0.05";
    auto statement = evidence::prodRecordStatement(in);
    ASSERT_TRUE(statement.isOk()) << statement.status().toString();
    auto bundle = evidence::signStatement(statement->dump(), *clusterSigner_);
    ASSERT_TRUE(bundle.isOk());
    auto subject = client_->describe(kRepo, digest);
    ASSERT_TRUE(subject.isOk()) << subject.status().toString();
    registry::Artifact a{evidence::kBundleMediaType,
                         bundle->dump(),
                         {{"dev.sigstore.bundle.content", "dsse-envelope"},
                          {"dev.sigstore.bundle.predicateType", evidence::kProdRecordPredicate},
                          {"dev.lockstep.statement", "prod/" + cluster}}};
    auto pushed = client_->pushReferrer(kRepo, *subject, a);
    ASSERT_TRUE(pushed.isOk()) << pushed.status().toString();
  }

  static RegistryWorld* registry_;
  static std::string dir_;
  static std::shared_ptr<const evidence::Signer> clusterSigner_;
  static std::shared_ptr<const evidence::PublicKey> hubKey_;
  std::string ns_;
  std::unique_ptr<registry::RegistryClient> client_;
};

RegistryWorld* ModelRolloutClusterTest::registry_ = nullptr;
std::string ModelRolloutClusterTest::dir_;
std::shared_ptr<const evidence::Signer> ModelRolloutClusterTest::clusterSigner_;
std::shared_ptr<const evidence::PublicKey> ModelRolloutClusterTest::hubKey_;

TEST_F(ModelRolloutClusterTest, WavesPromoteInOrderThroughTheRegistryAlone) {
  const std::string d = push("waves");
  ASSERT_FALSE(d.empty());
  ASSERT_EQ(createRollout("llama-v7", d,
                          json::array({{{"name", "first"}, {"clusters", {"b"}}},
                                       {{"name", "rest"}, {"clusters", {"c", "d"}}}}),
                          {{"minSuccessTime", "8s"}})
                .exitCode,
            0);

  // Wave 1: a permit naming b, signed by the hub.
  json s = waitStatus(
      "llama-v7", [](const json& st) { return clusterState(st, "b") == "Permitted"; },
      "b Permitted");
  EXPECT_EQ(s.value("phase", ""), "Progressing");
  EXPECT_EQ(s.value("currentWave", ""), "first");
  EXPECT_EQ(wavePhase(s, 0), "Progressing");
  EXPECT_EQ(wavePhase(s, 1), "Pending");
  EXPECT_EQ(clusterState(s, "c"), "Pending");
  EXPECT_EQ(clusterState(s, "d"), "Pending");
  EXPECT_EQ(s.value("observedGeneration", 0), 1);
  EXPECT_EQ(conditionField({{"status", s}}, "Ready", "reason"), "Progressing");
  auto held = registryHolds(d);
  ASSERT_EQ(held.permits.size(), 1u) << "ignored: " << held.ignored.size();
  EXPECT_EQ(held.permits[0].wave, "first");
  EXPECT_EQ(held.permits[0].clusters, std::vector<std::string>({"b"}));
  EXPECT_EQ(held.permits[0].rollout, ns_ + "/llama-v7");
  EXPECT_EQ(held.permits[0].model, "llama");
  EXPECT_FALSE(s.contains("ignored")) << "the hub counts its own permits: " << s.dump(2);
  auto events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                             "involvedObject.name=llama-v7,reason=WavePermitted"});
  EXPECT_EQ(events["items"].size(), 1u) << events.dump(2);

  // A few polls later nothing more is written, to the registry or the status: wave 2 waits
  // for b.
  const std::string version = rollout("llama-v7")["metadata"].value("resourceVersion", "");
  std::this_thread::sleep_for(std::chrono::seconds(3 * kPollSeconds));
  EXPECT_EQ(registryHolds(d).permits.size(), 1u);
  EXPECT_EQ(rollout("llama-v7")["metadata"].value("resourceVersion", ""), version)
      << "an unchanged pass writes no status";

  // b promoted: it soaks, then wave 2's permit names c and d.
  pushRecord(d, "b", "Promoted", nowRfc3339());
  s = waitStatus(
      "llama-v7", [](const json& st) { return clusterState(st, "b") == "Promoted"; }, "b Promoted");
  EXPECT_EQ(s.value("phase", ""), "Soaking");
  EXPECT_EQ(clusterState(s, "c"), "Pending") << "wave 2 waits for b's soak";
  EXPECT_EQ(registryHolds(d).permits.size(), 1u);
  s = waitStatus(
      "llama-v7", [](const json& st) { return clusterState(st, "c") == "Permitted"; },
      "c Permitted");
  EXPECT_EQ(clusterState(s, "b"), "Soaked");
  EXPECT_EQ(clusterState(s, "d"), "Permitted");
  EXPECT_EQ(s.value("currentWave", ""), "rest");
  EXPECT_EQ(wavePhase(s, 0), "Succeeded");
  EXPECT_EQ(wavePhase(s, 1), "Progressing");
  held = registryHolds(d);
  ASSERT_EQ(held.permits.size(), 2u);
  EXPECT_EQ(held.permits[1].wave, "rest");
  EXPECT_EQ(held.permits[1].clusters, std::vector<std::string>({"c", "d"}));

  // c and d promoted: after their soak, the open permit, once; Succeeded.
  pushRecord(d, "c", "Promoted", nowRfc3339());
  s = waitStatus(
      "llama-v7", [](const json& st) { return clusterState(st, "c") == "Promoted"; }, "c Promoted");
  EXPECT_EQ(s.value("phase", ""), "Progressing") << "d is still in flight";
  pushRecord(d, "d", "Promoted", nowRfc3339());
  s = waitPhase("llama-v7", "Succeeded");
  EXPECT_EQ(clusterState(s, "c"), "Soaked");
  EXPECT_EQ(clusterState(s, "d"), "Soaked");
  EXPECT_EQ(wavePhase(s, 1), "Succeeded");
  EXPECT_EQ(conditionField({{"status", s}}, "Ready"), "True");
  held = registryHolds(d);
  ASSERT_EQ(held.permits.size(), 3u);
  EXPECT_TRUE(held.permits[2].allClusters);
  EXPECT_EQ(held.permits[2].wave, "*");
  EXPECT_TRUE(held.aborts.empty());
  EXPECT_TRUE(held.ignored.empty());
  EXPECT_FALSE(s.contains("ignored")) << s.dump(2);
  // Final: nothing more is written.
  std::this_thread::sleep_for(std::chrono::seconds(3 * kPollSeconds));
  EXPECT_EQ(referrerCount(d), 6u) << "three permits and three records";
  events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                        "involvedObject.name=llama-v7,reason=WavePermitted"});
  EXPECT_EQ(events["items"].size(), 3u) << events.dump(2);
}

TEST_F(ModelRolloutClusterTest, ARolledBackClusterPastMaxFailuresAbortsTheFleet) {
  const std::string d = push("abort");
  ASSERT_FALSE(d.empty());
  ASSERT_EQ(createRollout("llama-v8", d,
                          json::array({{{"name", "first"}, {"clusters", {"b"}}},
                                       {{"name", "rest"}, {"clusters", {"c"}}}}),
                          {{"maxFailures", 0}})
                .exitCode,
            0);
  json s = waitStatus(
      "llama-v8", [](const json& st) { return clusterState(st, "b") == "Permitted"; },
      "b Permitted");
  EXPECT_EQ(s.value("maxFailures", -1), 0);
  EXPECT_EQ(registryHolds(d).permits.size(), 1u);

  pushRecord(d, "b", "RolledBack", nowRfc3339());
  s = waitPhase("llama-v8", "Aborted");
  EXPECT_EQ(clusterState(s, "b"), "RolledBack");
  EXPECT_EQ(clusterState(s, "c"), "Pending");
  EXPECT_EQ(wavePhase(s, 0), "Failed");
  EXPECT_EQ(wavePhase(s, 1), "Pending");
  EXPECT_EQ(s.value("failures", 0), 1);
  EXPECT_EQ(conditionField({{"status", s}}, "Stalled"), "True");
  EXPECT_EQ(conditionField({{"status", s}}, "Stalled", "reason"), "Aborted");
  auto held = registryHolds(d);
  ASSERT_EQ(held.aborts.size(), 1u);
  EXPECT_EQ(held.aborts[0].wave, "first");
  ASSERT_EQ(held.aborts[0].failures.size(), 1u);
  EXPECT_EQ(held.aborts[0].failures[0].cluster, "b");
  EXPECT_EQ(held.aborts[0].failures[0].outcome, "RolledBack");
  auto events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                             "involvedObject.name=llama-v8,reason=FleetAborted"});
  EXPECT_EQ(events["items"].size(), 1u) << events.dump(2);

  // Aborted is final: no permit for c, no second abort.
  std::this_thread::sleep_for(std::chrono::seconds(3 * kPollSeconds));
  held = registryHolds(d);
  EXPECT_EQ(held.permits.size(), 1u);
  EXPECT_EQ(held.aborts.size(), 1u);
  EXPECT_EQ(statusField(rollout("llama-v8")), "Aborted");
}

TEST_F(ModelRolloutClusterTest, ARegistryThatIsDownHoldsTheRolloutUntilItIsBack) {
  const std::string d = push("down");
  ASSERT_FALSE(d.empty());
  ASSERT_EQ(createRollout("llama-v9", d,
                          json::array({{{"name", "first"}, {"clusters", {"b"}}},
                                       {{"name", "rest"}, {"clusters", {"c"}}}}),
                          json::object())
                .exitCode,
            0);
  json s = waitStatus(
      "llama-v9", [](const json& st) { return clusterState(st, "b") == "Permitted"; },
      "b Permitted");
  const size_t before = referrerCount(d);
  EXPECT_EQ(before, 1u);

  ASSERT_TRUE(registry_->stop().isOk());
  struct Restart {  // for the next test, should this one stop early
    RegistryWorld* r;
    bool done = false;
    ~Restart() {
      if (!done) (void)r->startAgain();
    }
  } restart{registry_};
  s = waitPhase("llama-v9", "WaitingForRegistry");
  EXPECT_NE(s.value("message", "").find(registry_->host()), std::string::npos) << s.dump(2);
  EXPECT_EQ(clusterState(s, "b"), "Permitted") << "the clusters as last seen";
  EXPECT_EQ(conditionField({{"status", s}}, "Ready", "reason"), "WaitingForRegistry");
  EXPECT_EQ(conditionField({{"status", s}}, "Stalled"), "False");

  restart.done = true;
  ASSERT_TRUE(registry_->startAgain().isOk());
  EXPECT_EQ(referrerCount(d), before) << "nothing was written while the registry was down";
  s = waitPhase("llama-v9", "Progressing");
  EXPECT_EQ(clusterState(s, "b"), "Permitted");
  EXPECT_EQ(registryHolds(d).permits.size(), 1u) << "the permit is not written twice";

  // b's record, written while the hub looked away, moves the rollout on.
  pushRecord(d, "b", "Promoted", nowRfc3339(-60));
  s = waitStatus(
      "llama-v9", [](const json& st) { return clusterState(st, "c") == "Permitted"; },
      "c Permitted");
  EXPECT_EQ(clusterState(s, "b"), "Soaked");
  EXPECT_EQ(registryHolds(d).permits.size(), 2u);
}

// The hub's inventory: when the API multicluster.x-k8s.io serves ClusterProfiles and
// the hub has some, a wave's selector reads their labels (spec.inventory is not used).
TEST_F(ModelRolloutClusterTest, SelectorsReadTheHubsClusterProfiles) {
  // A ClusterProfile CRD as SIG Multicluster's (KEP-4322), reduced to what the hub reads.
  const json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "clusterprofiles.multicluster.x-k8s.io"}}},
      {"spec",
       {{"group", "multicluster.x-k8s.io"},
        {"scope", "Namespaced"},
        {"names",
         {{"plural", "clusterprofiles"},
          {"singular", "clusterprofile"},
          {"kind", "ClusterProfile"}}},
        {"versions", json::array({{{"name", "v1alpha1"},
                                   {"served", true},
                                   {"storage", true},
                                   {"schema",
                                    {{"openAPIV3Schema",
                                      {{"type", "object"},
                                       {"x-kubernetes-preserve-unknown-fields", true}}}}}}})}}}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, crd.dump()).exitCode, 0);
  struct Cleanup {
    ~Cleanup() {
      kubectl({"delete", "crd", "clusterprofiles.multicluster.x-k8s.io", "--ignore-not-found"});
    }
  } cleanup;
  ASSERT_EQ(kubectl({"wait", "--for", "condition=Established",
                     "crd/clusterprofiles.multicluster.x-k8s.io", "--timeout=60s"})
                .exitCode,
            0);
  for (const auto& [name, region] : std::vector<std::pair<std::string, std::string>>{
           {"eu-2", "eu"}, {"eu-1", "eu"}, {"us-1", "us"}}) {
    auto made = kubectl(
        {"apply", "-f", "-"},
        json{{"apiVersion", "multicluster.x-k8s.io/v1alpha1"},
             {"kind", "ClusterProfile"},
             {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", {{"region", region}}}}},
             {"spec", {{"displayName", name}}}}
            .dump());
    ASSERT_EQ(made.exitCode, 0) << made.err;
  }
  const std::string d = push("profiles");
  ASSERT_FALSE(d.empty());
  ASSERT_EQ(
      kubectl({"apply", "-f", "-"},
              json{{"apiVersion", "lockstep.dev/v1alpha1"},
                   {"kind", "ModelRollout"},
                   {"metadata", {{"name", "llama-eu"}, {"namespace", ns_}}},
                   {"spec",
                    {{"package", pkg(d)},
                     {"model", "llama"},
                     {"waves",
                      json::array({{{"name", "eu"},
                                    {"clusterSelector", {{"matchLabels", {{"region", "eu"}}}}}}})},
                     // Not read while the hub has ClusterProfiles.
                     {"inventory",
                      json::array({{{"name", "eu-static"}, {"labels", {{"region", "eu"}}}}})},
                     {"trustPolicy", "fleet-clusters"}}}}
                  .dump())
          .exitCode,
      0);
  json s = waitStatus(
      "llama-eu", [](const json& st) { return clusterState(st, "eu-1") == "Permitted"; },
      "eu-1 Permitted");
  EXPECT_EQ(clusterState(s, "eu-2"), "Permitted");
  EXPECT_EQ(clusterState(s, "us-1"), "<absent>");
  EXPECT_EQ(clusterState(s, "eu-static"), "<absent>") << "spec.inventory is not read";
  auto held = registryHolds(d);
  ASSERT_EQ(held.permits.size(), 1u);
  EXPECT_EQ(held.permits[0].clusters, std::vector<std::string>({"eu-1", "eu-2"}));
}

// A rollout whose TrustPolicy does not exist stalls, says so and writes nothing; the
// policy made, the hub goes on at once (it watches TrustPolicies).
TEST_F(ModelRolloutClusterTest, AMissingTrustPolicyStallsUntilItExists) {
  const std::string d = push("stalled");
  ASSERT_FALSE(d.empty());
  ASSERT_EQ(kubectl({"apply", "-f", "-"},
                    json{{"apiVersion", "lockstep.dev/v1alpha1"},
                         {"kind", "ModelRollout"},
                         {"metadata", {{"name", "llama-later"}, {"namespace", ns_}}},
                         {"spec",
                          {{"package", pkg(d)},
                           {"model", "llama"},
                           {"waves", json::array({{{"name", "first"}, {"clusters", {"b"}}}})},
                           {"trustPolicy", "fleet-later"}}}}
                        .dump())
                .exitCode,
            0);
  json s = waitStatus(
      "llama-later",
      [](const json& st) {
        return conditionField({{"status", st}}, "Stalled", "reason") == "TrustPolicyNotFound";
      },
      "Stalled TrustPolicyNotFound");
  EXPECT_EQ(conditionField({{"status", s}}, "Stalled"), "True");
  EXPECT_NE(s.value("message", "").find("\"fleet-later\" does not exist"), std::string::npos)
      << s.dump(2);
  EXPECT_EQ(referrerCount(d), 0u);

  json policy = kubectlJson({"get", "trustpolicy", "fleet-clusters"});
  ASSERT_FALSE(policy.is_discarded());
  json later = {{"apiVersion", "lockstep.dev/v1alpha1"},
                {"kind", "TrustPolicy"},
                {"metadata", {{"name", "fleet-later"}}},
                {"spec", policy["spec"]}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, later.dump()).exitCode, 0);
  struct Cleanup {
    ~Cleanup() { kubectl({"delete", "trustpolicy", "fleet-later", "--ignore-not-found"}); }
  } cleanup;
  s = waitStatus(
      "llama-later", [](const json& st) { return clusterState(st, "b") == "Permitted"; },
      "b Permitted", std::chrono::seconds(20));
  EXPECT_EQ(conditionField({{"status", s}}, "Stalled"), "False");
  EXPECT_EQ(registryHolds(d).permits.size(), 1u);
}

}  // namespace
}  // namespace lockstep::testing
