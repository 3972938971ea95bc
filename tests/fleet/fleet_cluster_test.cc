// The fleet suite (docs/fleet.md; `tools/test.sh fleet`, one case in CI):
// four real control planes on one machine and one registry. Cluster A runs
// the gates once and is the hub (the operator with the ModelRollout
// controller); B, C and D are serving clusters, each with its own operator
// (--cluster-name b, c, d), its own signing key for its prod records, and
// TrustPolicies that trust A's key for the gate decisions (stage eval) and
// the hub's permits (stage fleet). Nothing but the registry connects them:
// the hub never reads a serving cluster's API, nor a serving cluster the
// hub's. Each serving cluster's model is watched by the invariant monitor.
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "controllers/modelrelease/timestamps.h"
#include "tests/support/cluster_env.h"
#include "tests/support/invariant_monitor.h"
#include "tests/support/operator_process.h"
#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kRepo = "models/fleet";

CommandResult sh(const std::string& script) { return run({"sh", "-c", script}); }

// kubectl get … -o json, or {} when kubectl failed (a transient error while a
// control plane is busy): the polls below read it with value().
json getJson(const std::vector<std::string>& args) {
  json j = kubectlJson(args);
  return j.is_discarded() ? json::object() : j;
}

// One serving cluster: its control plane, operator and signing key.
struct Serving {
  std::string name;
  std::unique_ptr<ExtraCluster> cluster;
  std::unique_ptr<OperatorProcess> op;
};

class FleetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    registry_ = ReleaseWorld::registry(error);
    ASSERT_NE(registry_, nullptr) << error;
    auto dir = run({"mktemp", "-d"});
    ASSERT_EQ(dir.exitCode, 0);
    dir_ = dir.out.substr(0, dir.out.find('\n'));
    for (const std::string k : {"a", "b", "c", "d", "stranger"}) {
      ASSERT_EQ(sh("openssl ecparam -genkey -name prime256v1 -noout -out '" + dir_ + "/" + k +
                   ".sec1' && openssl pkcs8 -topk8 -nocrypt -in '" + dir_ + "/" + k +
                   ".sec1' -out '" + dir_ + "/" + k + ".pem' && openssl ec -in '" + dir_ + "/" + k +
                   ".pem' -pubout -out '" + dir_ + "/" + k + ".pub' 2>/dev/null")
                    .exitCode,
                0);
    }
    std::ofstream(dir_ + "/push.json")
        << json{{"auths",
                 {{registry_->host(),
                   {{"username", registry_->username()}, {"password", registry_->password()}}}}}}
               .dump();
    // A: the gates and the hub.
    ASSERT_EQ(
        ReleaseWorld::startOperator(
            {"--registry-ca-file=" + registry_->caFile(), "--cluster-name=a",
             "--controllers=runtimeenv,modelrelease,modelrollout", "--fleet-poll-interval=2s"},
            [] { prepareCluster("a"); }),
        "");
    // B, C, D: serving clusters, each on a control plane of its own.
    for (const std::string name : {"b", "c", "d"}) {
      auto s = std::make_unique<Serving>();
      s->name = name;
      s->cluster = std::make_unique<ExtraCluster>(dir_ + "/cluster-" + name);
      ASSERT_EQ(s->cluster->error(), "");
      UseCluster use(*s->cluster);
      s->op = std::make_unique<OperatorProcess>();
      const int port = freePort();
      s->op->useWebhookPort(port);
      OperatorProcess::installClusterPieces(port);
      prepareCluster(name);
      ASSERT_EQ(
          s->op->start({"--registry-ca-file=" + registry_->caFile(), "--cluster-name=" + name}),
          "");
      serving_[name] = std::move(s);
    }
  }

  static void TearDownTestSuite() {
    for (auto& [name, s] : serving_) {
      if (!s->cluster) continue;
      UseCluster use(*s->cluster);
      if (s->op) s->op->stop();
    }
    serving_.clear();  // their control planes go down
    // A's operator, and the admission pieces it served: a pod webhook left behind on the
    // shared cluster, pointing at a port nobody serves, refuses every later pod
    // (failurePolicy Fail; image_push_install's Deployment got no pods after this suite).
    ReleaseWorld::stopOperator();
    for (const char* p : {"gates", "hub", "fleet-clusters"})
      kubectl({"delete", "trustpolicy", p, "--ignore-not-found"});
    kubectl({"delete", "signingconfig", "fleet", "--ignore-not-found"});
    if (!dir_.empty()) run({"rm", "-rf", dir_});
  }

  // The cluster `name`'s signing key and registry credentials, its SigningConfig,
  // and the TrustPolicies: A's key for the gate decisions and the hub's permits
  // (gates, hub); B, C and D's keys for the prod records (fleet-clusters, read by the hub).
  static void prepareCluster(const std::string& name) {
    kubectl({"create", "namespace", kOperatorNamespace});
    kubectl({"delete", "secret", "-n", kOperatorNamespace, "fleet-key", "fleet-registry",
             "--ignore-not-found"});
    auto key = kubectl({"create", "secret", "generic", "fleet-key", "-n", kOperatorNamespace,
                        "--from-file=key.pem=" + dir_ + "/" + name + ".pem"});
    ASSERT_EQ(key.exitCode, 0) << key.err;
    auto creds = kubectl({"create", "secret", "generic", "fleet-registry", "-n", kOperatorNamespace,
                          "--type=kubernetes.io/dockerconfigjson",
                          "--from-file=.dockerconfigjson=" + dir_ + "/push.json"});
    ASSERT_EQ(creds.exitCode, 0) << creds.err;
    const json repos = json::array({registry_->host() + "/models/"});
    auto apply = [](const json& o) {
      auto r = kubectl({"apply", "-f", "-"}, o.dump());
      ASSERT_EQ(r.exitCode, 0) << r.err;
    };
    apply({{"apiVersion", "lockstep.dev/v1alpha1"},
           {"kind", "SigningConfig"},
           {"metadata", {{"name", "fleet"}}},
           {"spec",
            {{"repositories", repos},
             {"keySecretRef", {{"name", "fleet-key"}}},
             {"registryCredentialsSecretRef", {{"name", "fleet-registry"}}}}}});
    auto policy = [&](const std::string& policyName, const std::vector<std::string>& keys,
                      const std::vector<std::string>& stages) {
      json k = json::array();
      for (const std::string& n : keys)
        k.push_back({{"name", n}, {"publicKey", readFile(dir_ + "/" + n + ".pub")}});
      apply({{"apiVersion", "lockstep.dev/v1alpha1"},
             {"kind", "TrustPolicy"},
             {"metadata", {{"name", policyName}}},
             {"spec",
              {{"keys", k},
               {"rules",
                json::array({{{"repositories", repos}, {"stages", stages}, {"keys", keys}}})}}}});
    };
    policy("gates", {"a"}, {"eval"});
    policy("hub", {"a"}, {"fleet"});
    policy("fleet-clusters", {"b", "c", "d"}, {"prod"});
  }

  // Runs `f` against serving cluster `name` ("a": the hub).
  template <typename F>
  static auto on(const std::string& name, F f) {
    if (name == "a") return f();
    UseCluster use(*serving_.at(name)->cluster);
    return f();
  }

  void SetUp() override {
    ASSERT_EQ(a_.setUp({.nsPrefix = "fleet-a"}), "");
    ns_ = a_.ns();  // every cluster serves the model in a namespace of this name
    for (const auto& [name, s] : serving_) {
      std::string hash = on(name, [&] {
        kubectl({"create", "namespace", ns_});
        kubectl({"label", "namespace", ns_, "lockstep.dev/enforce=enforce"});
        return applyReadyRuntimeEnv(ns_, "torch", kTestImage, kTestLock);
      });
      ASSERT_EQ(hash, a_.hash()) << "cluster " << name << ": the same lock, the same closure";
      MonitorOptions mo;
      mo.ns = ns_;
      mo.runtimeImage = kTestImage;
      std::string error;
      monitors_[name] = InvariantMonitor::start(s->cluster->kubeconfig(), mo, error);
      ASSERT_NE(monitors_[name], nullptr) << error;
    }
    auto c = registry_->client();
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::move(*c);
  }

  void TearDown() override {
    for (auto& [name, m] : monitors_) {
      EXPECT_EQ(m->report(), "") << "the invariant monitor of cluster " << name
                                 << " saw violations";
      m.reset();
    }
    for (const auto& [name, s] : serving_) {
      on(name, [&] {
        if (HasFailure()) std::cerr << "operator " << name << " log tail:\n" << s->op->log();
        kubectl({"delete", "namespace", ns_, "--ignore-not-found", "--wait=false"});
        return 0;
      });
    }
    kubectl({"delete", "modelrollouts", "--all", "-n", ns_, "--ignore-not-found"});
    a_.tearDown(HasFailure());
  }

  std::string push(const std::string& salt) {
    auto d = pushTestImage(*client_, kRepo, ns_ + "-" + salt);
    EXPECT_TRUE(d.isOk()) << d.status().toString();
    return d.isOk() ? registry_->host() + "/" + kRepo + "@" + *d : "";
  }

  // A gated release on A, promoted there, its evidence in the registry.
  void gateOnA(const std::string& release, const std::string& package) {
    ASSERT_EQ(a_.create(a_.release(release, package)
                            .withGate(gateStage("eval", R"({"score": 0.9})", "1s",
                                                json::array({{{"name", "score"}, {"min", 0.5}}})))
                            .withProdStage(prodStage(json::array({json{{"weight", 100}}}))))
                  .exitCode,
              0);
    json last;
    ASSERT_TRUE(eventually(
        [&] {
          last = a_.get("mr", release);
          return last.value("/status/phase"_json_pointer, std::string()) == "Promoted" &&
                 conditionField(last, "EvidencePublished", "status") == "True";
        },
        std::chrono::seconds(180)))
        << last.value("status", json()).dump(2);
  }

  // The serving release: evidence of eval from A, then prod on the hub's permit.
  void serve(const std::string& cluster, const std::string& release, const std::string& package,
             const std::string& pause = "4s") {
    json prod = prodStage(json::array({canaryStep(50, pause)})).build();
    prod["fleet"] = {{"trustPolicy", "hub"}};
    json r = modelRelease(release, ns_)
                 .model("gpt2")
                 .package(package)
                 .runtimeEnv("torch")
                 .closureHash(a_.hash())
                 .spec("runtimeImage", kTestImage)
                 .withGate(json{
                     {"name", "verified"},
                     {"evidence", {{"stages", json::array({"eval"})}, {"trustPolicy", "gates"}}}})
                 .withProdStage(prod)
                 .build();
    auto made = on(cluster, [&] { return kubectl({"apply", "-f", "-"}, r.dump()); });
    ASSERT_EQ(made.exitCode, 0) << cluster << ": " << made.err;
  }

  // A plain prod release (no fleet, no gate): the serving cluster's known-good.
  void knownGood(const std::string& cluster, const std::string& release,
                 const std::string& package) {
    json r = modelRelease(release, ns_)
                 .model("gpt2")
                 .package(package)
                 .runtimeEnv("torch")
                 .closureHash(a_.hash())
                 .withProdStage(prodStage(json::array({canaryStep(100)})))
                 .build();
    auto made = on(cluster, [&] { return kubectl({"apply", "-f", "-"}, r.dump()); });
    ASSERT_EQ(made.exitCode, 0) << made.err;
  }

  void rollout(const std::string& name, const std::string& package, const json& waves,
               const json& strategy) {
    json o = {{"apiVersion", "lockstep.dev/v1alpha1"},
              {"kind", "ModelRollout"},
              {"metadata", {{"name", name}, {"namespace", ns_}}},
              {"spec",
               {{"package", package},
                {"model", "gpt2"},
                {"waves", waves},
                {"strategy", strategy},
                {"trustPolicy", "fleet-clusters"}}}};
    auto made = kubectl({"apply", "-f", "-"}, o.dump());
    ASSERT_EQ(made.exitCode, 0) << made.err;
  }

  std::string phaseOn(const std::string& cluster, const std::string& release) {
    return on(cluster, [&] {
      json r = getJson({"get", "mr", release, "-n", ns_});
      return r.empty() ? std::string("<none>")
                       : r.value("/status/phase"_json_pointer, std::string());
    });
  }
  json releaseOn(const std::string& cluster, const std::string& release) {
    return on(cluster, [&] { return getJson({"get", "mr", release, "-n", ns_}); });
  }
  json jobsOn(const std::string& cluster) {
    return on(cluster, [&] { return getJson({"get", "jobs", "-n", ns_}); });
  }

  static RegistryWorld* registry_;
  static std::string dir_;
  static std::map<std::string, std::unique_ptr<Serving>> serving_;
  ReleaseWorld a_;
  std::string ns_;
  std::map<std::string, std::unique_ptr<InvariantMonitor>> monitors_;
  std::unique_ptr<registry::RegistryClient> client_;
};

RegistryWorld* FleetTest::registry_ = nullptr;
std::string FleetTest::dir_;
std::map<std::string, std::unique_ptr<Serving>> FleetTest::serving_;

// Must-show 1: gates run once, on A; prod goes to B, then to C and D in a
// second wave, by evidence alone. Checked on every poll: no canary of the
// second wave starts before B's Promoted record and its soak; no Job ever
// exists in B, C or D; the rollout ends Succeeded with the open permit.
TEST_F(FleetTest, GatesRunOnceAndProdGoesToTheClustersInWaves) {
  const std::string package = push("v1");
  ASSERT_NO_FATAL_FAILURE(gateOnA("v1", package));
  for (const char* c : {"b", "c", "d"}) ASSERT_NO_FATAL_FAILURE(serve(c, "v1", package));
  rollout("llama", package,
          json::array({{{"name", "first"}, {"clusters", {"b"}}},
                       {{"name", "rest"}, {"clusters", {"c", "d"}}}}),
          {{"maxFailures", 0}, {"minSuccessTime", "10s"}});
  std::map<std::string, Clock::time_point> canaryAt, promotedAt;
  json status;
  const bool done = eventually(
      [&] {
        for (const char* c : {"b", "c", "d"}) {
          const std::string phase = phaseOn(c, "v1");
          if ((phase == "Canary" || phase == "Promoted") && !canaryAt.count(c))
            canaryAt[c] = Clock::now();
          if (phase == "Promoted" && !promotedAt.count(c)) promotedAt[c] = Clock::now();
          // The second wave waits for B's record (B is read first each pass).
          if (std::string(c) != "b" && canaryAt.count(c)) {
            EXPECT_TRUE(promotedAt.count("b")) << c << " started before b promoted";
          }
        }
        status = getJson({"get", "modelrollout", "llama", "-n", ns_});
        return promotedAt.size() == 3 &&
               status.value("/status/phase"_json_pointer, std::string()) == "Succeeded";
      },
      std::chrono::seconds(420));
  ASSERT_TRUE(done) << "promoted: " << promotedAt.size() << "; rollout "
                    << status.value("status", json()).dump(2);
  // ... and its soak, by the clusters' own times (one machine, one clock): B's
  // prod stage finished (its Promoted record's `since`) at least minSuccessTime
  // before C's and D's canaries started (whole seconds).
  auto prodTime = [&](const std::string& c, const char* field) {
    json r = releaseOn(c, "v1");
    for (const json& st : r.value("/status/stages"_json_pointer, json::array()))
      if (st.value("name", "") == "prod") return controllers::parseRfc3339(st.value(field, ""));
    return std::optional<int64_t>();
  };
  const std::optional<int64_t> bPromoted = prodTime("b", "finishedAt");
  ASSERT_TRUE(bPromoted.has_value());
  for (const char* c : {"c", "d"}) {
    const std::optional<int64_t> started = prodTime(c, "startedAt");
    ASSERT_TRUE(started.has_value()) << c;
    EXPECT_GE(*started - *bPromoted, 10) << c << " started within b's soak (minSuccessTime 10s)";
  }
  for (const char* c : {"b", "c", "d"}) {
    json jobs = jobsOn(c);
    ASSERT_TRUE(jobs.contains("items")) << "cannot list the Jobs of cluster " << c;
    EXPECT_TRUE(jobs["items"].empty()) << "a gate Job in cluster " << c << ": " << jobs.dump(2);
    json r = releaseOn(c, "v1");
    json prod;
    for (const json& st : r["status"]["stages"])
      if (st["name"] == "prod") prod = st;
    EXPECT_EQ(prod["permit"]["wave"], std::string(c) == "b" ? "first" : "rest") << prod.dump(2);
  }
  EXPECT_EQ(getJson({"get", "jobs", "-n", ns_})["items"].size(), 1u) << "one gate, on A";
}

// Must-show 2: B's canary fails (aborted there): with maxFailures 0 the hub
// writes the fleet abort; C and D never start (their releases fail
// FleetAborted without a pod) and B ends on its last known-good.
TEST_F(FleetTest, AFailedCanaryInTheFirstWaveAbortsTheFleet) {
  const std::string good = push("v0");
  const std::string bad = push("v1");
  for (const char* c : {"b", "c", "d"}) ASSERT_NO_FATAL_FAILURE(knownGood(c, "v0", good));
  for (const char* c : {"b", "c", "d"}) {
    ASSERT_TRUE(
        eventually([&] { return phaseOn(c, "v0") == "Promoted"; }, std::chrono::seconds(120)))
        << c;
  }
  ASSERT_NO_FATAL_FAILURE(gateOnA("v1", bad));
  for (const char* c : {"b", "c", "d"}) ASSERT_NO_FATAL_FAILURE(serve(c, "v1", bad, "Indefinite"));
  rollout("llama", bad,
          json::array({{{"name", "first"}, {"clusters", {"b"}}},
                       {{"name", "rest"}, {"clusters", {"c", "d"}}}}),
          {{"maxFailures", 0}, {"minSuccessTime", "5s"}});
  ASSERT_TRUE(eventually([&] { return phaseOn("b", "v1") == "Canary"; }, std::chrono::seconds(240)))
      << releaseOn("b", "v1").value("status", json()).dump(2);
  // B's canary fails: its release is aborted there (a RolledBack prod record).
  auto aborted = on("b", [&] {
    return kubectl({"annotate", "mr", "v1", "-n", ns_, "lockstep.dev/abort=lockstep-admin"});
  });
  ASSERT_EQ(aborted.exitCode, 0) << aborted.err;
  json status;
  ASSERT_TRUE(eventually(
      [&] {
        status = getJson({"get", "modelrollout", "llama", "-n", ns_});
        return status.value("/status/phase"_json_pointer, std::string()) == "Aborted";
      },
      std::chrono::seconds(240)))
      << status.value("status", json()).dump(2);
  for (const char* c : {"c", "d"}) {
    json r;
    EXPECT_TRUE(eventually(
        [&] {
          r = releaseOn(c, "v1");
          return conditionField(r, "Ready", "reason") == "FleetAborted";
        },
        std::chrono::seconds(120)))
        << c << ": " << r.value("status", json()).dump(2);
    EXPECT_EQ(r.value("/status/phase"_json_pointer, std::string()), "Failed");
    json pods = on(c, [&] {
      return getJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/release=v1"});
    });
    ASSERT_TRUE(pods.contains("items")) << "cannot list the pods of cluster " << c;
    EXPECT_TRUE(pods["items"].empty()) << c << " never ran the aborted package: " << pods.dump(2);
  }
  EXPECT_EQ(phaseOn("b", "v1"), "RolledBack");
  json model = on("b", [&] { return getJson({"get", "models.lockstep.dev", "gpt2", "-n", ns_}); });
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v0")
      << model.value("status", json()).dump(2);
}

// Must-show 4: the registry down pauses everything (no cluster starts, none
// rolls back, the hub writes nothing and says why); the hub down mid-rollout
// pauses the waves while the clusters keep serving, and the rollout resumes
// once it is back. Must-show 3: a cluster added after the rollout finished
// promotes by the open permit.
TEST_F(FleetTest, TheRegistryOrTheHubDownPausesTheWavesAndChangesNothing) {
  const std::string good = push("v0");
  const std::string next = push("v1");
  for (const char* c : {"b", "c"}) ASSERT_NO_FATAL_FAILURE(knownGood(c, "v0", good));
  for (const char* c : {"b", "c"}) {
    ASSERT_TRUE(
        eventually([&] { return phaseOn(c, "v0") == "Promoted"; }, std::chrono::seconds(120)))
        << c;
  }
  ASSERT_NO_FATAL_FAILURE(gateOnA("v1", next));
  for (const char* c : {"b", "c"}) ASSERT_NO_FATAL_FAILURE(serve(c, "v1", next));
  // Each cluster has read its evidence and waits for a permit.
  for (const char* c : {"b", "c"}) {
    json r;
    ASSERT_TRUE(eventually(
        [&] {
          r = releaseOn(c, "v1");
          return conditionField(r, "Ready", "reason") == "WaitingForPermit";
        },
        std::chrono::seconds(180)))
        << c << ": " << r.value("status", json()).dump(2);
  }

  // The registry stops before the hub wrote anything.
  ASSERT_TRUE(registry_->stop().isOk());
  rollout("llama", next,
          json::array(
              {{{"name", "first"}, {"clusters", {"b"}}}, {{"name", "rest"}, {"clusters", {"c"}}}}),
          {{"maxFailures", 0}, {"minSuccessTime", "10s"}});
  json status;
  EXPECT_TRUE(eventually(
      [&] {
        status = getJson({"get", "modelrollout", "llama", "-n", ns_});
        return status.value("/status/phase"_json_pointer, std::string()) == "WaitingForRegistry";
      },
      std::chrono::seconds(60)))
      << status.value("status", json()).dump(2);
  for (const char* c : {"b", "c"}) {
    json r;
    EXPECT_TRUE(eventually(
        [&] {
          r = releaseOn(c, "v1");
          return conditionField(r, "Ready", "reason") == "RegistryUnavailable";
        },
        std::chrono::seconds(120)))
        << c << ": " << r.value("status", json()).dump(2);
    EXPECT_NE(phaseOn(c, "v1"), "Canary");
    EXPECT_EQ(phaseOn(c, "v0"), "Promoted") << c << " keeps serving its prod";
  }
  ASSERT_TRUE(registry_->startAgain().isOk());

  // B goes first; the hub stops once B promoted.
  ASSERT_TRUE(
      eventually([&] { return phaseOn("b", "v1") == "Promoted"; }, std::chrono::seconds(300)))
      << releaseOn("b", "v1").value("status", json()).dump(2);
  ASSERT_EQ(ReleaseWorld::op().stop(), "");
  std::this_thread::sleep_for(std::chrono::seconds(40));  // B's soak passes, hub down
  // The registry is back (c reads it again within a minute of its back-off): c
  // waits for the hub's permit, and starts nothing without it.
  EXPECT_TRUE(eventually(
      [&] { return conditionField(releaseOn("c", "v1"), "Ready", "reason") == "WaitingForPermit"; },
      std::chrono::seconds(90)))
      << releaseOn("c", "v1").value("status", json()).dump(2);
  EXPECT_NE(phaseOn("c", "v1"), "Canary");
  EXPECT_EQ(phaseOn("c", "v0"), "Promoted");
  EXPECT_EQ(phaseOn("b", "v1"), "Promoted") << "b keeps serving";
  // The hub is back: the second wave goes, the rollout succeeds.
  ASSERT_EQ(ReleaseWorld::ensureOperator(), "");
  EXPECT_TRUE(
      eventually([&] { return phaseOn("c", "v1") == "Promoted"; }, std::chrono::seconds(300)))
      << releaseOn("c", "v1").value("status", json()).dump(2);
  EXPECT_TRUE(eventually(
      [&] {
        status = getJson({"get", "modelrollout", "llama", "-n", ns_});
        return status.value("/status/phase"_json_pointer, std::string()) == "Succeeded";
      },
      std::chrono::seconds(120)))
      << status.value("status", json()).dump(2);
  // Must-show 3: a cluster added after the rollout finished (d, in no wave)
  // promotes from the evidence alone, by the open permit.
  ASSERT_NO_FATAL_FAILURE(serve("d", "v1", next));
  json late;
  EXPECT_TRUE(eventually(
      [&] {
        late = releaseOn("d", "v1");
        return late.value("/status/phase"_json_pointer, std::string()) == "Promoted";
      },
      std::chrono::seconds(240)))
      << late.value("status", json()).dump(2);
  for (const json& st : late["status"]["stages"])
    if (st["name"] == "prod") {
      EXPECT_EQ(st["permit"]["wave"], "*") << st.dump(2);
    }
  json jobsD = jobsOn("d");
  ASSERT_TRUE(jobsD.contains("items"));
  EXPECT_TRUE(jobsD["items"].empty()) << jobsD.dump(2);
}

// Must-show 2, the budget: with maxFailures 1 over a first wave of two, one
// failed canary (C, which ends on its known-good) lets the wave finish and the
// next wave (D) start; the rollout succeeds with the failure listed.
TEST_F(FleetTest, OneFailureWithinMaxFailuresLetsTheWaveFinish) {
  const std::string good = push("v0");
  const std::string next = push("v1");
  ASSERT_NO_FATAL_FAILURE(knownGood("c", "v0", good));
  ASSERT_TRUE(
      eventually([&] { return phaseOn("c", "v0") == "Promoted"; }, std::chrono::seconds(120)));
  ASSERT_NO_FATAL_FAILURE(gateOnA("v1", next));
  ASSERT_NO_FATAL_FAILURE(serve("b", "v1", next));
  ASSERT_NO_FATAL_FAILURE(serve("c", "v1", next, "Indefinite"));
  ASSERT_NO_FATAL_FAILURE(serve("d", "v1", next));
  rollout("llama", next,
          json::array({{{"name", "first"}, {"clusters", {"b", "c"}}},
                       {{"name", "rest"}, {"clusters", {"d"}}}}),
          {{"maxFailures", 1}, {"minSuccessTime", "5s"}});
  ASSERT_TRUE(eventually([&] { return phaseOn("c", "v1") == "Canary"; }, std::chrono::seconds(240)))
      << releaseOn("c", "v1").value("status", json()).dump(2);
  EXPECT_NE(phaseOn("d", "v1"), "Canary") << "the second wave waits for the first";
  auto aborted = on("c", [&] {
    return kubectl({"annotate", "mr", "v1", "-n", ns_, "lockstep.dev/abort=lockstep-admin"});
  });
  ASSERT_EQ(aborted.exitCode, 0) << aborted.err;
  json status;
  ASSERT_TRUE(eventually(
      [&] {
        status = getJson({"get", "modelrollout", "llama", "-n", ns_});
        return status.value("/status/phase"_json_pointer, std::string()) == "Succeeded";
      },
      std::chrono::seconds(360)))
      << status.value("status", json()).dump(2);
  EXPECT_EQ(phaseOn("b", "v1"), "Promoted");
  EXPECT_EQ(phaseOn("d", "v1"), "Promoted");
  EXPECT_EQ(phaseOn("c", "v1"), "RolledBack");
  json model = on("c", [&] { return getJson({"get", "models.lockstep.dev", "gpt2", "-n", ns_}); });
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v0");
  EXPECT_NE(status["status"].dump().find("RolledBack"), std::string::npos)
      << "the failure is listed: " << status["status"].dump(2);
}

}  // namespace
}  // namespace lockstep::testing
