// "Prod objects are Lockstep's alone, and deleting a release cleans up"
// (issue 20) against the real control plane: the operator binary, KWOK serving
// pods that warm up before they are Ready, and the invariant monitor
// (tests/support/invariant_monitor.h) on the model's prod world.
//   - A team's own Service `gpt2` or Deployment `gpt2-stable` in the namespace:
//     the first release of model gpt2 stops Stalled/NameConflict before any
//     canary, the object stays byte for byte, and once the team deletes it the
//     release goes on to Promoted.
//   - A release deleted mid-canary rolls back first (finalizer
//     lockstep.dev/release-cleanup): stable stays at N Ready throughout, the
//     canary is removed, the slot freed, then the object goes. Deleting the
//     Promoted release never takes prod down, nor stops the next release's
//     handover (a GitOps prune deleting it as its successor is applied).
//   - The Service port belongs to the model: a release on another port than
//     prod's is refused at apply; one admitted before prod existed stops
//     ServicePortConflict before its canary, the Service untouched.
//   - The Model's record is the operator's alone: an editor can neither write
//     its status nor delete it; who may roll the model back may delete it.
//   - Only Lockstep's pods are prod (issue 29, must-show 4): a tenant's pod
//     with prod's labels and the serving label is refused naming the label;
//     one with only the old labels is admitted but gets no traffic (not in the
//     Service's endpoints) and does not count toward the release's Ready pods.
//   - Nothing waits forever (issue 28): a rollback-on-delete that cannot finish
//     lets the release go at its deadline; with the operator down, a release and
//     its namespace are deleted with the documented finalizer patch.
// docs/rollouts.md ("Objects and ownership") and docs/modelrelease.md
// ("Deleting a release") are the contract.
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/release_world.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

class ProdOwnershipClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(ReleaseWorld::startOperator(), ""); }
  static void TearDownTestSuite() { ReleaseWorld::stopOperator(); }
  void SetUp() override {
    ASSERT_EQ(w_.setUp({.nsPrefix = "own", .monitor = true}), "");
    ns_ = w_.ns();
  }
  void TearDown() override { w_.tearDown(HasFailure()); }

  json prodStage(json steps, int replicas = 2) {
    return ProdStageBuilder(std::move(steps)).replicas(replicas).build();
  }
  json get(const std::string& kind, const std::string& name) { return w_.get(kind, name); }
  bool exists(const std::string& kind, const std::string& name) {
    return kubectl({"get", kind, name, "-n", ns_, "-o", "name"}).exitCode == 0;
  }
  // `kubectl get -o json` of an object, with nothing left out: compared whole.
  std::string exact(const std::string& kind, const std::string& name) {
    auto r = kubectl({"get", kind, name, "-n", ns_, "-o", "json", "--show-managed-fields"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.out;
  }
  // The reasons and messages of the Events on `name`, one per line.
  std::string eventsOf(const std::string& name) {
    json events = kubectlJson(
        {"get", "events", "-n", ns_, "--field-selector", "involvedObject.name=" + name});
    std::string out;
    if (events.is_discarded()) return out;
    for (const json& e : events["items"])
      out += e.value("reason", "") + ": " + e.value("message", "") + "\n";
    return out;
  }
  // Waits for the NameConflict on `release`; its Stalled message.
  std::string waitNameConflict(const std::string& release) {
    json mr;
    EXPECT_TRUE(eventually(
        [&] {
          mr = get("mr", release);
          return conditionField(mr, "Stalled", "reason") == "NameConflict";
        },
        std::chrono::seconds(60)))
        << mr["status"].dump(2);
    EXPECT_EQ(conditionField(mr, "Stalled", "status"), "True");
    EXPECT_EQ(conditionField(mr, "Ready", "status"), "False");
    return conditionField(mr, "Stalled", "message");
  }

  static bool hasCleanupFinalizer(const json& mr) {
    for (const json& f : mr.value("/metadata/finalizers"_json_pointer, json::array()))
      if (f == "lockstep.dev/release-cleanup") return true;
    return false;
  }

  ReleaseWorld w_;
  std::string ns_;
};

// The issue's first reproduction: a Service `gpt2` (selector app: gpt2) is the
// team's current serving.
TEST_F(ProdOwnershipClusterTest, TheTeamsServiceIsNeverTakenOverAndTheReleaseGoesOnOnceItIsGone) {
  const std::string svc = R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"gpt2",
      "namespace":")" + ns_ +
                          R"("},"spec":{"selector":{"app":"gpt2"},
      "ports":[{"name":"web","port":80,"targetPort":9000}]}})";
  ASSERT_EQ(kubectl({"create", "-f", "-"}, svc).exitCode, 0);
  const std::string before = exact("service", "gpt2");

  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  const std::string message = waitNameConflict("v1");
  EXPECT_NE(message.find("Service " + ns_ + "/gpt2 has no label lockstep.dev/model=gpt2"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Rename or delete that Service"), std::string::npos) << message;
  EXPECT_NE(eventsOf("v1").find("NameConflict: Service " + ns_ + "/gpt2"), std::string::npos)
      << eventsOf("v1");
  // Nothing in prod moved: no Model, no Deployment, the Service byte for byte
  // (a few more reconciles, each 10 s apart, first).
  std::this_thread::sleep_for(std::chrono::seconds(12));
  EXPECT_EQ(exact("service", "gpt2"), before);
  EXPECT_FALSE(exists("models.lockstep.dev", "gpt2"));
  EXPECT_FALSE(exists("deployment", "gpt2-canary"));
  EXPECT_FALSE(exists("deployment", "gpt2-stable"));
  EXPECT_EQ(get("mr", "v1").value("/status/phase"_json_pointer, std::string()), "Canary");

  // The team deletes it: the release goes on by itself.
  ASSERT_EQ(kubectl({"delete", "service", "gpt2", "-n", ns_}).exitCode, 0);
  json v1 = w_.waitPhase("v1", "Promoted", std::chrono::seconds(120));
  EXPECT_EQ(conditionField(v1, "Stalled", "status"), "False") << v1["status"].dump(2);
  json ours = get("service", "gpt2");
  EXPECT_EQ(ours.value("/metadata/labels/lockstep.dev~1model"_json_pointer, std::string()), "gpt2");
  EXPECT_EQ(ours.value("/metadata/ownerReferences/0/kind"_json_pointer, std::string()), "Model");
  EXPECT_EQ(ours.value("/metadata/ownerReferences/0/name"_json_pointer, std::string()), "gpt2");
}

// The issue's second reproduction: an existing `gpt2-stable` the first release
// would only write at its promotion; found before any canary pod.
TEST_F(ProdOwnershipClusterTest, AForeignStableDeploymentIsFoundBeforeTheCanaryAndLeftAlone) {
  const std::string dep = R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{
      "name":"gpt2-stable","namespace":")" +
                          ns_ + R"(","labels":{"app":"gpt2"}},
      "spec":{"replicas":0,"selector":{"matchLabels":{"app":"gpt2"}},
      "template":{"metadata":{"labels":{"app":"gpt2"}},
      "spec":{"containers":[{"name":"server","image":"registry.example/team/server:1"}]}}}})";
  ASSERT_EQ(kubectl({"create", "-f", "-"}, dep).exitCode, 0);
  // The snapshot once the Deployment controller has written its status (it writes it
  // again for nothing else here): what Lockstep must then leave exactly as it is.
  ASSERT_TRUE(eventually([&] {
    json d = get("deployment", "gpt2-stable");
    return d["status"].value("observedGeneration", 0) >= 1 && d["status"].contains("conditions") &&
           d["status"]["conditions"].size() >= 2;
  }));
  const std::string before = exact("deployment", "gpt2-stable");

  json steps = json::array({json{{"weight", 50}}, json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(steps)})).exitCode, 0);
  const std::string message = waitNameConflict("v1");
  EXPECT_NE(message.find("Deployment " + ns_ + "/gpt2-stable"), std::string::npos) << message;
  std::this_thread::sleep_for(std::chrono::seconds(12));
  EXPECT_FALSE(exists("deployment", "gpt2-canary")) << "no canary pod before the conflict ends";
  EXPECT_TRUE(w_.readyPods().empty()) << json(w_.readyPods()).dump();
  EXPECT_EQ(exact("deployment", "gpt2-stable"), before);

  ASSERT_EQ(kubectl({"delete", "deployment", "gpt2-stable", "-n", ns_}).exitCode, 0);
  w_.waitPhase("v1", "Promoted", std::chrono::seconds(150));
  EXPECT_EQ(w_.stableRelease(), "v1");
  EXPECT_EQ(
      get("deployment", "gpt2-stable")
          .value("/metadata/labels/app.kubernetes.io~1managed-by"_json_pointer, std::string()),
      "lockstep");
}

// An Argo CD prune mid-canary: the finalizer rolls the canary back first.
TEST_F(ProdOwnershipClusterTest, DeletingAReleaseMidCanaryRestoresStableThenTheObjectGoes) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  json v1 = w_.waitPhase("v1", "Promoted");
  // The finalizer goes in the reconcile after the one that wrote Promoted.
  EXPECT_TRUE(eventually([&] {
    v1 = get("mr", "v1");
    return !hasCleanupFinalizer(v1);
  })) << "a Promoted release lets go of the finalizer: "
      << v1["metadata"].dump(2);

  json paused = json::array({json{{"weight", 50}, {"pause", "Indefinite"}}});
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'), json::array({prodStage(paused)})).exitCode, 0);
  json v2;
  ASSERT_TRUE(eventually(
      [&] {
        v2 = get("mr", "v2");
        return conditionField(v2, "Ready", "reason") == "CanaryPaused";
      },
      std::chrono::seconds(120)))
      << v2["status"].dump(2);
  EXPECT_TRUE(hasCleanupFinalizer(v2)) << v2["metadata"].dump(2);
  EXPECT_EQ(w_.readyPods()["canary/v2"], 1) << json(w_.readyPods()).dump();

  ASSERT_EQ(kubectl({"delete", "mr", "v2", "-n", ns_, "--wait=false"}).exitCode, 0);
  // The object goes only after the rollback: until then it is there, rolling back.
  EXPECT_TRUE(eventually([&] { return !exists("mr", "v2"); }, std::chrono::seconds(120)))
      << get("mr", "v2").dump(2);
  const std::string events = eventsOf("v2");
  EXPECT_NE(events.find("RollingBack: ReleaseDeleted"), std::string::npos) << events;
  EXPECT_NE(events.find("RolledBack: canary removed after ReleaseDeleted"), std::string::npos)
      << events;
  EXPECT_EQ(get("deployment", "gpt2-canary")["spec"]["replicas"], 0);
  EXPECT_EQ(w_.stableRelease(), "v1");
  EXPECT_TRUE(eventually([&] {
    auto r = w_.readyPods();
    return r["stable/v1"] == 2 && r.size() == 1;
  })) << json(w_.readyPods()).dump();
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_FALSE(model.contains("/status/canary"_json_pointer)) << "the canary slot is free";
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v1");

  // The slot is free: the model's next release starts its canary.
  ASSERT_EQ(w_.createRelease("v3", testPackage('3'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v3", "Promoted");

  // Deleting the Promoted release never takes prod down. (The monitor stops
  // first: it reads the releases, and prod now runs one that no longer exists.)
  w_.stopMonitor();
  ASSERT_EQ(kubectl({"delete", "mr", "v3", "-n", ns_, "--timeout=30s"}).exitCode, 0);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(w_.stableRelease(), "v3");
  auto ready = w_.readyPods();
  EXPECT_EQ(ready["stable/v3"], 2) << json(ready).dump();
  EXPECT_EQ(
      get("models.lockstep.dev", "gpt2").value("/status/prod/release"_json_pointer, std::string()),
      "v3");
}

// A GitOps prune: v2 replaces v1 in git, so v1 is deleted as soon as v2 is
// applied. Prod keeps v1's pods until v2's canary takes the stable Deployment
// over; during that handover the Model still records v1 (gone) while stable
// already runs v2, and v2 must go on to Promoted (it stalled there with
// AnchorMismatch before, found by the soak benchmark pruning old releases).
TEST_F(ProdOwnershipClusterTest, AReleaseWhosePredecessorIsPrunedAtOnceIsPromoted) {
  w_.stopMonitor();
  MonitorOptions fixed;  // prod runs releases that no longer exist: the monitor's list is fixed
  fixed.replicas = 2;
  fixed.validated = {Triple{testPackage('1'), kTestImage, w_.hash()},
                     Triple{testPackage('2'), kTestImage, w_.hash()}};
  ASSERT_EQ(w_.startMonitor(fixed), "");
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }));

  json twoSteps = json::array({json{{"weight", 50}, {"pause", "2s"}}, json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'), json::array({prodStage(twoSteps)})).exitCode,
            0);
  ASSERT_EQ(kubectl({"delete", "mr", "v1", "-n", ns_, "--timeout=30s"}).exitCode, 0);
  json v2 = w_.waitPhase("v2", "Promoted", std::chrono::seconds(240));
  EXPECT_EQ(conditionField(v2, "Stalled", "status"), "False") << v2["status"].dump(2);
  EXPECT_EQ(w_.stableRelease(), "v2");
  EXPECT_TRUE(eventually([&] {
    auto r = w_.readyPods();
    return r["stable/v2"] == 2 && r.size() == 1;
  })) << json(w_.readyPods()).dump();
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v2")
      << model["status"].dump(2);
  EXPECT_EQ(model.value("/status/prod/uid"_json_pointer, std::string()),
            v2["metadata"]["uid"].get<std::string>());
  EXPECT_FALSE(model.contains("/status/canary"_json_pointer)) << model["status"].dump(2);
}

// The Service port belongs to the model (the issue's reproduction: v2 with
// serving.port 8000 while v1 runs prod on 8080).
TEST_F(ProdOwnershipClusterTest,
       AReleaseOnAnotherPortIsRefusedAndAnEarlierOneStallsWithTheServiceUntouched) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  // v2 is created before v1 has prod (the webhook has nothing to compare with)
  // and waits for its sign-off before its canary.
  json onPort8000 = prodStage(oneStep);
  onPort8000["serving"]["port"] = 8000;
  onPort8000["approval"] = "Manual";
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'), json::array({onPort8000})).exitCode, 0);
  w_.waitPhase("v1", "Promoted");
  const std::string service = exact("service", "gpt2");
  EXPECT_EQ(get("service", "gpt2")["spec"]["ports"][0]["port"], 8080);

  // Now prod runs v1 on 8080: a new release on 8000 is refused at apply.
  json onPort8000Too = onPort8000;
  onPort8000Too.erase("approval");
  auto refused = w_.createRelease("v3", testPackage('3'), json::array({onPort8000Too}));
  EXPECT_NE(refused.exitCode, 0);
  EXPECT_NE(refused.err.find("spec.stages[0].serving.port: 8000 differs from port 8080 on which "
                             "model \"gpt2\" serves in prod (Service \"" +
                             ns_ + "/gpt2\", release \"v1\" runs prod)"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("keep port 8080, or retire the model first"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(exists("mr", "v3"));

  // v2, admitted earlier, is signed off: it stops before its canary.
  kubectl({"create", "rolebinding", "release-approver", "-n", ns_,
           "--clusterrole=lockstep-release-approver", "--user=release-approver"});
  auto approved = kubectl({"--as=release-approver", "annotate", "mr", "v2", "-n", ns_,
                           "approve.lockstep.dev/prod=release-approver"});
  ASSERT_EQ(approved.exitCode, 0) << approved.err;
  json v2;
  ASSERT_TRUE(eventually(
      [&] {
        v2 = get("mr", "v2");
        return conditionField(v2, "Stalled", "reason") == "ServicePortConflict";
      },
      std::chrono::seconds(60)))
      << v2["status"].dump(2);
  const std::string message = conditionField(v2, "Stalled", "message");
  EXPECT_NE(message.find("serving port 8000 (spec.stages[0].serving.port) differs from port 8080 "
                         "of Service " +
                         ns_ + "/gpt2, on which release v1 runs model gpt2's prod"),
            std::string::npos)
      << message;
  EXPECT_NE(eventsOf("v2").find("ServicePortConflict: serving port 8000"), std::string::npos)
      << eventsOf("v2");
  // A few more reconciles: the Service of v1's stable pods is byte for byte
  // what it was, v2 never took the slot nor ran a pod.
  std::this_thread::sleep_for(std::chrono::seconds(12));
  EXPECT_EQ(exact("service", "gpt2"), service);
  EXPECT_FALSE(get("models.lockstep.dev", "gpt2").contains("/status/canary"_json_pointer));
  auto ready = w_.readyPods();
  EXPECT_EQ(ready["stable/v1"], 2) << json(ready).dump();
  EXPECT_EQ(ready.count("canary/v2"), 0u) << json(ready).dump();
}

// Issue 28, must-show 1: a Promoted release deleted and re-applied (a GitOps
// re-apply after a prune, a restore) is prod by its content: Promoted at once
// with no gate Job and no pod created, and the invariant monitor (N fixed at
// 2) sees prod's Ready pods never below N. The same name with another package
// never takes prod (ContentMismatch) and prod stays as it is.
TEST_F(ProdOwnershipClusterTest, AReleaseReAppliedWithProdsContentIsProdWithNoJobOrPod) {
  w_.stopMonitor();
  MonitorOptions fixed;
  fixed.replicas = 2;
  fixed.validated = {Triple{testPackage('1'), kTestImage, w_.hash()}};
  ASSERT_EQ(w_.startMonitor(fixed), "");
  json oneStep = json::array({json{{"weight", 100}}});
  const json stages = json::array({gateStage("eval"), prodStage(oneStep)});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), stages).exitCode, 0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }));
  const std::string uid = get("mr", "v1")["metadata"]["uid"];
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/uid"_json_pointer, std::string()), uid);
  const std::string content = model.value("/status/prod/contentDigest"_json_pointer, std::string());
  EXPECT_EQ(content.rfind("sha256:", 0), 0u) << model["status"].dump(2);
  // The serving pods (the eval Job's pod goes with the deleted release, the
  // canary's once it has terminated).
  auto podNames = [&] {
    std::set<std::string> names;
    json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/track"});
    for (const json& p : pods["items"]) names.insert(p["metadata"]["name"].get<std::string>());
    return names;
  };
  std::set<std::string> before;
  ASSERT_TRUE(eventually([&] {
    before = podNames();
    return before.size() == 2;
  })) << "only prod's two stable pods";

  // The Jobs of the first object: the garbage collector removes them some time
  // after their owner is gone, so they may still be listed after the re-apply.
  auto jobUids = [&] {
    std::set<std::string> uids;
    json jobs = kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=v1"});
    for (const json& j : jobs["items"]) uids.insert(j["metadata"]["uid"].get<std::string>());
    return uids;
  };
  const std::set<std::string> firstJobs = jobUids();
  ASSERT_FALSE(firstJobs.empty()) << "the first object's eval Job";

  // The prune and the re-apply of the same manifest.
  ASSERT_EQ(kubectl({"delete", "mr", "v1", "-n", ns_, "--timeout=30s"}).exitCode, 0);
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), stages).exitCode, 0);
  json again = w_.waitPhase("v1", "Promoted", std::chrono::seconds(30));
  EXPECT_NE(again["metadata"]["uid"], uid);
  EXPECT_EQ(conditionField(again, "Ready", "reason"), "RecognizedAsProd")
      << again["status"].dump(2);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // a few reconciles later
  for (const std::string& uid : jobUids())
    EXPECT_TRUE(firstJobs.count(uid))
        << "no gate Job ran again: Job " << uid << " is new; the Jobs now:\n"
        << kubectlJson({"get", "jobs", "-n", ns_, "-l", "lockstep.dev/release=v1"}).dump(2);
  EXPECT_EQ(podNames(), before) << "no pod created or deleted";
  model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/uid"_json_pointer, std::string()),
            again["metadata"]["uid"].get<std::string>());
  EXPECT_EQ(model.value("/status/prod/contentDigest"_json_pointer, std::string()), content);
  const json history = model.value("/status/history"_json_pointer, json::array());
  ASSERT_FALSE(history.empty()) << model["status"].dump(2);
  EXPECT_EQ(history.back().value("action", ""), "Recognized") << model["status"].dump(2);

  // The same name with another package: a new release, which never takes prod.
  ASSERT_EQ(kubectl({"delete", "mr", "v1", "-n", ns_, "--timeout=30s"}).exitCode, 0);
  ASSERT_EQ(w_.createRelease("v1", testPackage('2'), json::array({prodStage(oneStep)})).exitCode,
            0);
  json other;
  ASSERT_TRUE(eventually(
      [&] {
        other = get("mr", "v1");
        return conditionField(other, "Stalled", "reason") == "ContentMismatch";
      },
      std::chrono::seconds(60)))
      << other["status"].dump(2);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(podNames(), before) << "prod untouched";
  EXPECT_EQ(w_.readyPods()["stable/v1"], 2);
  EXPECT_EQ(get("models.lockstep.dev", "gpt2")
                .value("/status/prod/contentDigest"_json_pointer, std::string()),
            content);
}

// The Model's record is a trust root: a user with the built-in `edit` role
// reads Models but can neither write their status nor delete them; the
// operator writes it; who may roll the model back may take it out of prod.
TEST_F(ProdOwnershipClusterTest, AnEditorCannotWriteOrDeleteTheModelTheOperatorCan) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");  // the operator created the Model and recorded v1
  const std::string model = "models.lockstep.dev/gpt2";
  const std::string before = exact("models.lockstep.dev", "gpt2");
  ASSERT_EQ(
      kubectl({"create", "rolebinding", "editor", "-n", ns_, "--clusterrole=edit", "--user=editor"})
          .exitCode,
      0);
  // The editor's rights are real: the Model is theirs to read, a ConfigMap to write.
  ASSERT_TRUE(eventually([&] {
    return kubectl({"--as=editor", "get", model, "-n", ns_}).exitCode == 0 &&
           kubectl({"--as=editor", "create", "configmap", "team-config", "-n", ns_}).exitCode == 0;
  }));
  auto status =
      kubectl({"--as=editor", "patch", model, "-n", ns_, "--subresource=status", "--type=merge",
               "-p", R"({"status":{"prod":{"release":"someone-elses-release"}}})"});
  EXPECT_NE(status.exitCode, 0);
  EXPECT_NE(status.err.find("forbidden"), std::string::npos) << status.err;
  auto spec = kubectl({"--as=editor", "patch", model, "-n", ns_, "--type=merge", "-p",
                       R"({"spec":{"replicas":1}})"});
  EXPECT_NE(spec.exitCode, 0) << "prod's spec is not an editor's";
  auto del = kubectl({"--as=editor", "delete", model, "-n", ns_});
  EXPECT_NE(del.exitCode, 0);
  EXPECT_NE(del.err.find("forbidden"), std::string::npos) << del.err;
  EXPECT_EQ(exact("models.lockstep.dev", "gpt2"), before) << "the Model is untouched";

  // The operator still writes it: v2's promotion is recorded.
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v2", "Promoted");
  EXPECT_EQ(
      get("models.lockstep.dev", "gpt2").value("/status/prod/release"_json_pointer, std::string()),
      "v2");

  // Who may roll the model back may take it out of prod (lockstep model
  // delete): garbage collection removes its Service and Deployments.
  w_.stopMonitor();  // prod goes away on purpose
  ASSERT_EQ(kubectl({"create", "rolebinding", "editor-approver", "-n", ns_,
                     "--clusterrole=lockstep-release-approver", "--user=editor"})
                .exitCode,
            0);
  EXPECT_TRUE(eventually([&] {
    return kubectl({"--as=editor", "delete", model, "-n", ns_}).exitCode == 0;
  })) << "an approver (verb rollback) may delete the Model";
  EXPECT_TRUE(
      eventually([&] { return !exists("deployment", "gpt2-stable"); }, std::chrono::seconds(60)))
      << "the Model owns the stable Deployment";
}

// Issue 28: nothing waits forever. v2 is deleted mid-canary (drain: stable at
// N-1) while the known-good's pods cannot be scheduled any more (the nodes lost
// the label its template selects), so the rollback can never restore stable.
// At the deletion deadline (20 s here; --release-deletion-deadline) the
// finalizer goes with a Warning Event naming what is left, and the slot is free.
TEST_F(ProdOwnershipClusterTest, ARollbackThatCannotFinishLetsTheReleaseGoAtItsDeadline) {
  const std::string label = "test.lockstep.dev/" + ns_;
  struct Restore {
    std::string label;
    ~Restore() {
      kubectl({"label", "nodes", "--all", label + "-"});
      // The suite's operator again, with the default deadline.
      ReleaseWorld::stopOperator();
      EXPECT_EQ(ReleaseWorld::startOperator(), "");
    }
  } restore{label};
  ReleaseWorld::stopOperator();
  ASSERT_EQ(ReleaseWorld::startOperator({"--release-deletion-deadline=20s"}), "");
  ASSERT_EQ(kubectl({"label", "nodes", "--all", label + "=yes"}).exitCode, 0);

  auto onLabelled = [&](json steps, const std::string& capacity) {
    return ProdStageBuilder(std::move(steps))
        .replicas(2)
        .capacity(capacity)
        .nodeSelector({{label, "yes"}})
        .build();
  };
  ASSERT_EQ(
      w_.createRelease("v1", testPackage('1'),
                       json::array({onLabelled(json::array({json{{"weight", 100}}}), "surge")}))
          .exitCode,
      0);
  w_.waitPhase("v1", "Promoted");
  json paused = json::array({json{{"weight", 50}, {"pause", "Indefinite"}}});
  ASSERT_EQ(
      w_.createRelease("v2", testPackage('2'), json::array({onLabelled(paused, "drain")})).exitCode,
      0);
  json v2;
  ASSERT_TRUE(eventually(
      [&] {
        v2 = get("mr", "v2");
        return conditionField(v2, "Ready", "reason") == "CanaryPaused";
      },
      std::chrono::seconds(120)))
      << v2["status"].dump(2);
  ASSERT_TRUE(hasCleanupFinalizer(v2));

  // From here no new pod of either release can be scheduled.
  ASSERT_EQ(kubectl({"label", "nodes", "--all", label + "-"}).exitCode, 0);
  // The release goes while its canary's pods may still run: prod then runs
  // pods of a deleted release by design, which the monitor would count.
  w_.stopMonitor();
  const auto deleted = std::chrono::steady_clock::now();
  ASSERT_EQ(kubectl({"delete", "mr", "v2", "-n", ns_, "--wait=false"}).exitCode, 0);
  EXPECT_TRUE(eventually([&] {
    json o = get("mr", "v2");
    return o.value("/status/canary/reason"_json_pointer, std::string()) == "ReleaseDeleted";
  })) << get("mr", "v2").dump(2);
  EXPECT_TRUE(exists("mr", "v2")) << "the rollback is under way: the finalizer holds";
  EXPECT_TRUE(eventually([&] { return !exists("mr", "v2"); }, std::chrono::seconds(120)))
      << get("mr", "v2").dump(2);
  const auto took = std::chrono::steady_clock::now() - deleted;
  EXPECT_GE(took, std::chrono::seconds(19)) << "gone before its deadline";
  const std::string events = eventsOf("v2");
  EXPECT_NE(events.find("RollingBack: ReleaseDeleted"), std::string::npos) << events;
  EXPECT_NE(events.find("ReleaseDeletionDeadline: the rollback of release v2's canary to the "
                        "known-good did not finish within 20s of its deletion"),
            std::string::npos)
      << events;
  EXPECT_EQ(events.find("RolledBack: canary removed"), std::string::npos) << events;
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_FALSE(model.contains("/status/canary"_json_pointer)) << "the canary slot is free";
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v1");
}

// Issue 28 (must-show 5): with the operator down (its webhooks still
// registered, Fail), deleting a release, the Model and the namespace complete:
// a Promoted release carries no finalizer, nor does the Model (its serving
// objects go by garbage collection); one deleted mid-canary keeps lockstep.dev/release-cleanup
// until the documented patch removes it, which the ModelRelease webhook no longer sees (its
// matchConditions skip finalizer-only updates); the namespace waits only for the RuntimeEnv's
// in-use finalizer, removed the same way (docs/modelrelease.md "Deleting a release").
TEST_F(ProdOwnershipClusterTest, WithTheOperatorDownAReleaseAndItsNamespaceCanBeDeleted) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  json paused = json::array({json{{"weight", 50}, {"pause", "Indefinite"}}});
  ASSERT_EQ(w_.createRelease("v2", testPackage('2'), json::array({prodStage(paused)})).exitCode, 0);
  json v2;
  ASSERT_TRUE(eventually(
      [&] {
        v2 = get("mr", "v2");
        return conditionField(v2, "Ready", "reason") == "CanaryPaused" && hasCleanupFinalizer(v2);
      },
      std::chrono::seconds(120)))
      << v2.dump(2);

  w_.stopMonitor();                          // prod goes with the namespace
  ASSERT_EQ(ReleaseWorld::op().stop(), "");  // scaled to 0; the next test's setUp restarts it
  ASSERT_FALSE(kubectlJson({"get", "validatingwebhookconfiguration", "lockstep"}).is_discarded())
      << "the webhooks stay registered, as with a Deployment at 0 replicas";

  ASSERT_EQ(kubectl({"delete", "mr", "v1", "-n", ns_, "--timeout=30s"}).exitCode, 0)
      << "a Promoted release has no finalizer";
  ASSERT_EQ(kubectl({"delete", "mr", "v2", "-n", ns_, "--wait=false"}).exitCode, 0);
  EXPECT_TRUE(exists("mr", "v2")) << "no operator to roll the canary back";
  const std::string unfinalize = R"({"metadata":{"finalizers":null}})";
  auto removed = kubectl({"patch", "mr", "v2", "-n", ns_, "--type=merge", "-p", unfinalize});
  EXPECT_EQ(removed.exitCode, 0) << removed.err;
  EXPECT_TRUE(eventually([&] { return !exists("mr", "v2"); }, std::chrono::seconds(30)));
  // The Model carries no finalizer: it goes at once, and the garbage collector
  // takes the serving objects it owns.
  ASSERT_EQ(kubectl({"delete", "models.lockstep.dev", "gpt2", "-n", ns_, "--timeout=30s"}).exitCode,
            0);
  EXPECT_TRUE(eventually(
      [&] {
        return !exists("deployment", "gpt2-stable") && !exists("deployment", "gpt2-canary") &&
               !exists("service", "gpt2");
      },
      std::chrono::seconds(60)))
      << "the Model's serving objects are garbage collected";

  json rte = get("rte", "torch");
  EXPECT_NE(rte.value("/metadata/finalizers"_json_pointer, json::array())
                .dump()
                .find("lockstep.dev/runtimeenv-in-use"),
            std::string::npos)
      << rte["metadata"].dump(2);
  ASSERT_EQ(kubectl({"delete", "namespace", ns_, "--wait=false"}).exitCode, 0);
  EXPECT_TRUE(eventually([&] {
    json o = get("rte", "torch");
    return !o.is_discarded() && o.contains("/metadata/deletionTimestamp"_json_pointer);
  }));
  auto released = kubectl({"patch", "rte", "torch", "-n", ns_, "--type=merge", "-p", unfinalize});
  EXPECT_EQ(released.exitCode, 0) << released.err;
  EXPECT_TRUE(eventually(
      [&] {
        return kubectl({"get", "namespace", ns_}).err.find("NotFound") != std::string::npos;
      },
      std::chrono::seconds(90)))
      << kubectl({"get", "namespace", ns_, "-o", "yaml"}).out;
}

// Issue 28, must-show 3: prod heals. With v1 prod (N=2), the stable
// Deployment scaled to 0, its container's image swapped, an env var Lockstep
// sets edited, the package the pods mount edited, the Deployment deleted, and
// the Service deleted are each restored by the operator (a Warning Event
// ProdRestored naming the drift), back to N Ready pods on v1; the canary
// Deployment scaled up while no canary holds the slot goes back to 0.
TEST_F(ProdOwnershipClusterTest, ProdHealsAScaledEditedOrDeletedServingObject) {
  w_.stopMonitor();  // prod is taken below N on purpose
  // Two steps: a first release of one step of 100 % goes straight to stable
  // and never makes the canary Deployment this test scales at its end.
  json twoSteps = json::array({json{{"weight", 50}}, json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(twoSteps)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }));
  auto stable = [&] { return get("deployment", "gpt2-stable"); };
  const json container = stable()["spec"]["template"]["spec"]["containers"][0];
  const std::string name = container["name"];
  const std::string image = container["image"];
  auto restored = [&](const std::string& what) {
    EXPECT_TRUE(eventually(
        [&] {
          json d = stable();
          return !d.is_discarded() && d.value("/spec/replicas"_json_pointer, 0) == 2 &&
                 d["spec"]["template"]["spec"]["containers"][0].value("image", "") == image;
        },
        std::chrono::seconds(30)))
        << what << ": " << stable().dump(2);
    EXPECT_TRUE(
        eventually([&] { return w_.readyPods()["stable/v1"] == 2; }, std::chrono::seconds(90)))
        << what;
  };

  ASSERT_EQ(kubectl({"scale", "deployment", "gpt2-stable", "-n", ns_, "--replicas=0"}).exitCode, 0);
  restored("scaled to 0");
  ASSERT_EQ(kubectl({"set", "image", "deployment/gpt2-stable", "-n", ns_,
                     name + "=registry.example/someone/else:latest"})
                .exitCode,
            0);
  restored("image swapped");

  // What the container and the pod spec carry besides the image (issue 28's
  // audit): an env var Lockstep sets, and the package the pods mount.
  auto liveEnv = [&](const std::string& var) {
    for (const json& e :
         stable().value("/spec/template/spec/containers/0/env"_json_pointer, json::array()))
      if (e.value("name", "") == var) return e.value("value", "");
    return std::string();
  };
  ASSERT_EQ(liveEnv("LOCKSTEP_RELEASE"), "v1");
  ASSERT_EQ(kubectl({"set", "env", "deployment/gpt2-stable", "-n", ns_, "-c", name,
                     "LOCKSTEP_RELEASE=v0"})
                .exitCode,
            0);
  EXPECT_TRUE(
      eventually([&] { return liveEnv("LOCKSTEP_RELEASE") == "v1"; }, std::chrono::seconds(30)))
      << stable()["spec"]["template"].dump(2);
  restored("env edited");

  // The package: the image volume's reference (ImageVolume mode) or the
  // fetch init container's LOCKSTEP_PACKAGE (InitContainer mode).
  const json spec = stable()["spec"]["template"]["spec"];
  std::string path;
  for (size_t i = 0; i < spec.value("volumes", json::array()).size(); ++i) {
    const json& v = spec["volumes"][i];
    if (v.value("name", "") == "lockstep-package" && v.contains("image"))
      path = "/spec/template/spec/volumes/" + std::to_string(i) + "/image/reference";
  }
  for (size_t i = 0; path.empty() && i < spec.value("initContainers", json::array()).size(); ++i) {
    const json& c = spec["initContainers"][i];
    if (c.value("name", "") != "lockstep-fetch-package") continue;
    for (size_t j = 0; j < c.value("env", json::array()).size(); ++j) {
      if (c["env"][j].value("name", "") == "LOCKSTEP_PACKAGE")
        path = "/spec/template/spec/initContainers/" + std::to_string(i) + "/env/" +
               std::to_string(j) + "/value";
    }
  }
  ASSERT_FALSE(path.empty()) << spec.dump(2);
  const json::json_pointer at(path);
  ASSERT_EQ(stable().value(at, std::string()), testPackage('1'));
  const json edit = json::array({{{"op", "replace"}, {"path", path}, {"value", testPackage('9')}}});
  ASSERT_EQ(
      kubectl({"patch", "deployment", "gpt2-stable", "-n", ns_, "--type=json", "-p", edit.dump()})
          .exitCode,
      0);
  EXPECT_TRUE(eventually([&] { return stable().value(at, std::string()) == testPackage('1'); },
                         std::chrono::seconds(30)))
      << "the package the pods mount is v1's again: " << stable()["spec"]["template"].dump(2);
  restored("package edited");

  // No canary holds the slot: the canary track scaled up goes back to 0.
  ASSERT_TRUE(exists("deployment", "gpt2-canary"));
  ASSERT_EQ(kubectl({"scale", "deployment", "gpt2-canary", "-n", ns_, "--replicas=2"}).exitCode, 0);
  EXPECT_TRUE(eventually(
      [&] {
        return get("deployment", "gpt2-canary").value("/spec/replicas"_json_pointer, -1) == 0;
      },
      std::chrono::seconds(30)))
      << get("deployment", "gpt2-canary").dump(2);

  const std::string uid = stable()["metadata"]["uid"];
  ASSERT_EQ(kubectl({"delete", "deployment", "gpt2-stable", "-n", ns_}).exitCode, 0);
  restored("deleted");
  EXPECT_NE(stable()["metadata"]["uid"], uid) << "a new Deployment";
  EXPECT_EQ(stable().value("/metadata/ownerReferences/0/kind"_json_pointer, std::string()),
            "Model");
  ASSERT_EQ(kubectl({"delete", "service", "gpt2", "-n", ns_}).exitCode, 0);
  EXPECT_TRUE(eventually([&] { return exists("service", "gpt2"); }, std::chrono::seconds(30)));

  const std::string events = eventsOf("v1");
  for (const char* said :
       {"ProdRestored: Deployment gpt2-stable spec.replicas is 0, not 2",
        "ProdRestored: Deployment gpt2-stable is missing", "ProdRestored: Service gpt2 is missing"})
    EXPECT_NE(events.find(said), std::string::npos) << said << "\n" << events;
  EXPECT_NE(events.find("runs image \"registry.example/someone/else:latest\""), std::string::npos)
      << events;
  for (const std::string& said :
       {"ProdRestored: Deployment gpt2-stable spec.template.spec.containers[\"" + name +
            "\"].env[\"LOCKSTEP_RELEASE\"].value is \"v0\", not \"v1\"",
        std::string(" is \"") + testPackage('9') + "\", not \"" + testPackage('1') + "\"",
        std::string("ProdRestored: Deployment gpt2-canary spec.replicas is 2, not 0 (no canary "
                    "holds the slot)")})
    EXPECT_NE(events.find(said), std::string::npos) << said << "\n" << events;
  json v1 = get("mr", "v1");
  EXPECT_EQ(v1["status"]["phase"], "Promoted");
  EXPECT_EQ(conditionField(v1, "Ready", "status"), "True") << v1["status"].dump(2);
}

// Issue 28: the Model controller. A Model no release names is reconciled
// (Ready=False NoProd, observedGeneration follows spec edits); once v1 is
// Promoted the Model says Ready=True Serving with 2/2 pods on v1's pair; a
// stable pod that stops being Ready (its kubelet says so) makes it Degraded,
// StableNotReady, with a ProdDegraded Warning Event on the Model, and Ready
// again (ProdServing) once the pod is; every condition carries the
// generation it was computed for.
TEST_F(ProdOwnershipClusterTest, TheModelSaysWhetherProdServesWhatItRecords) {
  w_.stopMonitor();  // a stable pod is taken out of Ready on purpose
  auto condition = [&](const std::string& model, const std::string& type, const char* field) {
    return conditionField(get("models.lockstep.dev", model), type, field);
  };
  auto modelEvents = [&](const std::string& model) {
    json events = kubectlJson({"get", "events", "-n", ns_, "--field-selector",
                               "involvedObject.kind=Model,involvedObject.name=" + model});
    std::string out;
    if (events.is_discarded()) return out;
    for (const json& e : events["items"])
      out += e.value("reason", "") + ": " + e.value("message", "") + "\n";
    return out;
  };

  // A Model of its own: nothing names it.
  const json lonely = {{"apiVersion", "lockstep.dev/v1alpha1"},
                       {"kind", "Model"},
                       {"metadata", {{"name", "lonely"}, {"namespace", ns_}}},
                       {"spec", json::object()}};
  ASSERT_EQ(kubectl({"apply", "-f", "-"}, lonely.dump()).exitCode, 0);
  EXPECT_TRUE(eventually([&] { return condition("lonely", "Ready", "reason") == "NoProd"; },
                         std::chrono::seconds(30)))
      << get("models.lockstep.dev", "lonely").dump(2);
  EXPECT_EQ(condition("lonely", "Ready", "status"), "False");
  EXPECT_NE(condition("lonely", "Ready", "message").find("no ModelRelease names it"),
            std::string::npos);
  EXPECT_EQ(condition("lonely", "Degraded", "status"), "False");
  EXPECT_EQ(
      get("models.lockstep.dev", "lonely").value("/status/observedGeneration"_json_pointer, 0), 1);
  ASSERT_EQ(kubectl({"patch", "models.lockstep.dev", "lonely", "-n", ns_, "--type=merge", "-p",
                     R"({"spec":{"replicas":3}})"})
                .exitCode,
            0);
  EXPECT_TRUE(eventually(
      [&] {
        return get("models.lockstep.dev", "lonely")
                   .value("/status/observedGeneration"_json_pointer, 0) == 2;
      },
      std::chrono::seconds(30)));

  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }));
  // Once nothing is in flight (the hand-over's roll-out done) the message counts the pods.
  EXPECT_TRUE(eventually(
      [&] {
        return condition("gpt2", "Ready", "status") == "True" &&
               condition("gpt2", "Ready", "message").find("2/2 pods of v1 Ready on its pair") !=
                   std::string::npos;
      },
      std::chrono::seconds(30)))
      << get("models.lockstep.dev", "gpt2")["status"].dump(2);
  EXPECT_EQ(condition("gpt2", "Ready", "reason"), "Serving");
  EXPECT_NE(condition("gpt2", "Ready", "message").find(w_.hash()), std::string::npos);
  // What docs/rollouts.md offers scripts.
  const CommandResult wait = kubectl(
      {"wait", "--for=condition=Ready", "models.lockstep.dev/gpt2", "-n", ns_, "--timeout=30s"});
  EXPECT_EQ(wait.exitCode, 0) << wait.err;
  EXPECT_EQ(condition("gpt2", "Degraded", "status"), "False");
  EXPECT_EQ(condition("gpt2", "Progressing", "status"), "False");

  // One stable pod's kubelet reports it not Ready.
  json pods = kubectlJson({"get", "pods", "-n", ns_, "-l", "lockstep.dev/track=stable"});
  ASSERT_FALSE(pods.is_discarded());
  ASSERT_FALSE(pods["items"].empty());
  const std::string pod = pods["items"][0]["metadata"]["name"];
  auto setReady = [&](const char* ready) {
    json conditions = pods["items"][0]["status"]["conditions"];
    for (json& c : conditions)
      if (c.value("type", "") == "Ready" || c.value("type", "") == "ContainersReady")
        c["status"] = ready;
    const json patch = {{"status", {{"conditions", conditions}}}};
    return kubectl({"patch", "pod", pod, "-n", ns_, "--subresource=status", "--type=strategic",
                    "-p", patch.dump()})
        .exitCode;
  };
  // The world's warm-up stage would make the pod Ready again after the warm-up
  // (3 s), before a loaded machine's operator may have looked: the test-outcome
  // annotation keeps KWOK from touching its readiness until it is removed.
  ASSERT_EQ(
      kubectl({"annotate", "pod", pod, "-n", ns_, "lockstep.dev/test-outcome=unready"}).exitCode,
      0);
  ASSERT_EQ(setReady("False"), 0);
  EXPECT_TRUE(eventually([&] { return condition("gpt2", "Degraded", "status") == "True"; },
                         std::chrono::seconds(30)))
      << get("models.lockstep.dev", "gpt2")["status"].dump(2);
  EXPECT_EQ(condition("gpt2", "Degraded", "reason"), "StableNotReady");
  EXPECT_EQ(condition("gpt2", "Ready", "status"), "False");
  EXPECT_NE(condition("gpt2", "Ready", "message").find("1/2 pods of v1"), std::string::npos)
      << condition("gpt2", "Ready", "message");
  EXPECT_TRUE(
      eventually([&] { return modelEvents("gpt2").find("ProdDegraded: ") != std::string::npos; },
                 std::chrono::seconds(30)))
      << modelEvents("gpt2");

  ASSERT_EQ(kubectl({"annotate", "pod", pod, "-n", ns_, "lockstep.dev/test-outcome-"}).exitCode, 0);
  ASSERT_EQ(setReady("True"), 0);
  EXPECT_TRUE(eventually([&] { return condition("gpt2", "Ready", "status") == "True"; },
                         std::chrono::seconds(30)))
      << get("models.lockstep.dev", "gpt2")["status"].dump(2);
  EXPECT_EQ(condition("gpt2", "Degraded", "status"), "False");
  EXPECT_TRUE(eventually(
      [&] { return modelEvents("gpt2").find("ProdServing: 2/2 pods of v1") != std::string::npos; },
      std::chrono::seconds(30)))
      << modelEvents("gpt2");
  const json model = get("models.lockstep.dev", "gpt2");
  for (const json& c : model["status"]["conditions"])
    EXPECT_EQ(c.value("observedGeneration", -1), model["metadata"].value("generation", 0))
        << c.dump();
}

// Issue 28, "prod is an object": v1's release object pruned (a GitOps prune),
// then its stable Deployment deleted. The Model's record (status.prod.stages,
// the content its digest covers) stands for the object: the Deployment is
// re-created on v1's content (a Warning Event ProdRestored on the Model) and
// 2 Ready pods return. The monitor's validated list is fixed (the release is
// gone) and N is not (stable is deleted on purpose).
TEST_F(ProdOwnershipClusterTest, ProdsStableIsRebuiltFromTheModelsRecordOnceItsReleaseIsGone) {
  w_.stopMonitor();
  MonitorOptions fixed;
  fixed.validated = {Triple{testPackage('1'), kTestImage, w_.hash()}};
  ASSERT_EQ(w_.startMonitor(fixed), "");
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }));
  const json stages = get("mr", "v1")["spec"]["stages"];
  json model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/stages"_json_pointer, json()), stages)
      << model["status"].dump(2);
  const json before = get("deployment", "gpt2-stable");
  const std::string uid = before["metadata"]["uid"];

  ASSERT_EQ(kubectl({"delete", "mr", "v1", "-n", ns_, "--timeout=30s"}).exitCode, 0);
  ASSERT_FALSE(exists("mr", "v1"));
  ASSERT_EQ(kubectl({"delete", "deployment", "gpt2-stable", "-n", ns_}).exitCode, 0);
  json stable;
  ASSERT_TRUE(eventually(
      [&] {
        stable = get("deployment", "gpt2-stable");
        return !stable.is_discarded() && stable.is_object() &&
               stable.value("/metadata/uid"_json_pointer, uid) != uid;
      },
      std::chrono::seconds(30)))
      << "the stable Deployment is re-created from the Model's record";
  EXPECT_EQ(stable["spec"]["template"], before["spec"]["template"]) << "v1's very pod template";
  EXPECT_EQ(stable.value("/spec/replicas"_json_pointer, 0), 2);
  EXPECT_EQ(stable.value("/metadata/ownerReferences/0/kind"_json_pointer, std::string()), "Model");
  EXPECT_TRUE(
      eventually([&] { return w_.readyPods()["stable/v1"] == 2; }, std::chrono::seconds(90)))
      << json(w_.readyPods()).dump();
  const std::string events = eventsOf("gpt2");
  EXPECT_NE(events.find("ProdRestored: Deployment gpt2-stable is missing: restored to release v1's "
                        "serving objects from the record of Model " +
                        ns_ + "/gpt2"),
            std::string::npos)
      << events;
  model = get("models.lockstep.dev", "gpt2");
  EXPECT_EQ(model.value("/status/prod/release"_json_pointer, std::string()), "v1");
  EXPECT_FALSE(exists("mr", "v1")) << "prod healed with no release object";
}

// Issue 29, must-show 4: anyone who may create pods in the namespace (here a
// tenant with the `edit` role) copies a stable pod of prod. With the serving
// label the copy is refused naming it; with prod's other labels only it runs
// and turns Ready, but the Service never sends it traffic and v1 still counts
// its own 2 stable pods (docs/rollouts.md "Which pods are prod").
TEST_F(ProdOwnershipClusterTest, AHandMadePodWithProdsLabelsGetsNoTrafficAndDoesNotCount) {
  json oneStep = json::array({json{{"weight", 100}}});
  ASSERT_EQ(w_.createRelease("v1", testPackage('1'), json::array({prodStage(oneStep)})).exitCode,
            0);
  w_.waitPhase("v1", "Promoted");
  ASSERT_TRUE(eventually([&] { return w_.readyPods()["stable/v1"] == 2; }));
  // A Promoted release's Degraded condition carries its count of Ready stable pods.
  auto counted = [&] { return conditionField(get("mr", "v1"), "Degraded", "message"); };
  ASSERT_TRUE(eventually([&] { return counted() == "2/2 stable pods Ready"; })) << counted();
  EXPECT_EQ(get("service", "gpt2")
                .value("/spec/selector/lockstep.dev~1serving"_json_pointer, std::string()),
            "true");

  json real = kubectlJson(
      {"get", "pods", "-n", ns_, "-l", "lockstep.dev/model=gpt2,lockstep.dev/track=stable"});
  ASSERT_FALSE(real.is_discarded());
  ASSERT_FALSE(real["items"].empty());
  json copy = real["items"][0];
  json meta = {{"name", "impostor"},
               {"namespace", ns_},
               {"labels", copy["metadata"]["labels"]},
               {"annotations", copy["metadata"].value("annotations", json::object())}};
  copy["metadata"] = meta;
  copy.erase("status");  // on the same (KWOK) node as the pod it copies
  ASSERT_EQ(copy["metadata"]["labels"].value("lockstep.dev/serving", ""), "true");
  kubectl(
      {"create", "rolebinding", "tenant-edit", "-n", ns_, "--clusterrole=edit", "--user=tenant"});

  auto refused = kubectl({"--as=tenant", "create", "-f", "-"}, copy.dump());
  EXPECT_NE(refused.exitCode, 0);
  EXPECT_NE(refused.err.find("label lockstep.dev/serving is reserved for the serving pods "
                             "Lockstep builds"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("not by the ReplicaSet controller"), std::string::npos) << refused.err;

  // Without an owner the stable ReplicaSet would adopt the copy (its selector
  // matches) and delete it as surplus: the tenant gives it a controller owner
  // of its own, so it stays and turns Ready.
  auto owner = kubectl({"--as=tenant", "create", "configmap", "impostor-owner", "-n", ns_});
  ASSERT_EQ(owner.exitCode, 0) << owner.err;
  json cm = get("configmap", "impostor-owner");
  copy["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "v1"},
                                                      {"kind", "ConfigMap"},
                                                      {"name", "impostor-owner"},
                                                      {"uid", cm["metadata"]["uid"]},
                                                      {"controller", true}}});
  copy["metadata"]["labels"].erase("lockstep.dev/serving");
  auto made = kubectl({"--as=tenant", "create", "-f", "-"}, copy.dump());
  ASSERT_EQ(made.exitCode, 0) << made.err;
  ASSERT_TRUE(
      eventually([&] { return w_.readyPods()["stable/v1"] == 3; }, std::chrono::seconds(60)))
      << "the impostor runs and turns Ready: " << json(w_.readyPods()).dump()
      << get("pod", "impostor").dump(2);
  // The endpoint controller and the operator had time to look (a few seconds
  // after the pod turned Ready): the impostor is in neither's count.
  std::set<std::string> endpoints;
  auto endpointNames = [&] {
    endpoints.clear();
    json slices =
        kubectlJson({"get", "endpointslices", "-n", ns_, "-l", "kubernetes.io/service-name=gpt2"});
    for (const json& s : slices.value("items", json::array()))
      for (const json& e : s.value("endpoints", json::array()))
        endpoints.insert(e.value("/targetRef/name"_json_pointer, std::string()));
    return endpoints.size() == 2;
  };
  EXPECT_TRUE(eventually(endpointNames, std::chrono::seconds(20))) << json(endpoints).dump();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_TRUE(endpointNames()) << json(endpoints).dump();
  EXPECT_EQ(endpoints.count("impostor"), 0u) << json(endpoints).dump();
  EXPECT_EQ(counted(), "2/2 stable pods Ready") << "the impostor is not counted";
  json v1 = get("mr", "v1");
  EXPECT_EQ(v1["status"]["phase"], "Promoted");
  EXPECT_EQ(conditionField(v1, "Ready", "status"), "True") << v1["status"].dump(2);
  EXPECT_EQ(
      get("models.lockstep.dev", "gpt2").value("/status/prod/release"_json_pointer, std::string()),
      "v1");
}

}  // namespace
}  // namespace lockstep::testing
