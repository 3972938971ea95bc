// The ModelRelease controller's shell without a cluster: caches are real
// Indexers filled by the test, writes go through a Client over FakeTransport,
// Events to FakeEventSink, time from FakeClock, analysis from a fake querier.
// Observe -> plan -> execute: the release's status is written last, guarded by
// the resourceVersion it was planned from; a Conflict is retried, an invalid
// spec or rollback request is a condition and no retry.
#include "controllers/modelrelease/modelrelease_controller.h"
#include "controllers/modelrelease/model_controller.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "controllers/modelrelease/release_metrics.h"
#include "operator/kube/conditions.h"
#include "tests/support/builders.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_event_sink.h"
#include "tests/support/fake_transport.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using testing::FakeTransport;

const std::string kImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '1');
const std::string kHash = "sha256:" + std::string(64, 'a');
const std::string kPackage = "registry.example/models/gpt2@sha256:" + std::string(64, 'c');

constexpr const char* kStatusUri =
    "/apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/v7/status"
    "?fieldManager=lockstep-operator&force=true";

std::vector<std::string> byOwnerOrModel(const kube::Object& o) {
  auto m = kube::label(o, v1::kModelLabel);
  if (!m) return {};
  return {kube::namespaceOf(o) + "/" + *m};
}

class FakeQuerier final : public AnalysisQuerier {
 public:
  std::optional<Measurement> measure(const MeasurementAsk& ask) override {
    ++calls;
    return Measurement{ask.atUnix, 0.001, "", false};
  }
  int calls = 0;
};

// What the reconciler reported, one line per call.
class RecordingMetrics : public ReleaseMetrics {
 public:
  void stageResult(const std::string& stage, const std::string& result, double) override {
    calls.push_back("stageResult " + stage + " " + result);
  }
  void promotion(const std::string& model) override { calls.push_back("promotion " + model); }
  void rollback(const std::string& model, const std::string& reason) override {
    calls.push_back("rollback " + model + " " + reason);
  }
  void canaryStep(const std::string& ns, const std::string& release, const std::string&, int step,
                  int weight) override {
    calls.push_back("canaryStep " + ns + "/" + release + " " + std::to_string(step) + " " +
                    std::to_string(weight));
  }
  void forgetRelease(const std::string& ns, const std::string& release) override {
    calls.push_back("forgetRelease " + ns + "/" + release);
  }
  void modelState(const std::string& ns, const std::string& model, bool ready,
                  bool degraded) override {
    calls.push_back("modelState " + ns + "/" + model + " ready=" + std::to_string(ready) +
                    " degraded=" + std::to_string(degraded));
  }
  void forgetModel(const std::string& ns, const std::string& model) override {
    calls.push_back("forgetModel " + ns + "/" + model);
  }
  std::vector<std::string> calls;
};

class ModelReleaseControllerTest : public ::testing::Test {
 protected:
  ModelReleaseControllerTest() {
    jobs_.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
    pods_.addIndex(kube::kOwnerUidIndex, kube::ownerUidIndexFunc());
    pods_.addIndex(v1::kReleaseByModelIndex, byOwnerOrModel);
    replicaSets_.addIndex(v1::kReleaseByModelIndex, byOwnerOrModel);
    put(runtimeEnvs_,
        testing::runtimeEnv("torch")
            .image(kImage)
            .status(
                {{"observedGeneration", 1},
                 {"closureHash", kHash},
                 {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Resolved"}}}}})
            .build());
  }
  // The Model as Lockstep created it (with a uid), `canary` in its slot.
  void putLockstepModel(const std::string& canary) {
    kube::Object model = kube::newObject(v1::kModels, "ml", "gpt2");
    model["metadata"]["uid"] = "model-uid";
    model["metadata"]["resourceVersion"] = "5";
    model["status"] = {{"revision", 0}, {"canary", {{"release", canary}}}};
    put(models_, model);
  }
  // The model's Service as Lockstep made it (labels, owned by the Model).
  void putLockstepService(const std::string& uid) {
    kube::Object svc = kube::newObject(v1::kServices, "ml", "gpt2");
    svc["metadata"]["uid"] = uid;
    svc["metadata"]["labels"] = {{v1::kModelLabel, "gpt2"},
                                 {"app.kubernetes.io/managed-by", "lockstep"}};
    svc["metadata"]["ownerReferences"] =
        json::array({v1::modelOwnerReference("gpt2", "model-uid")});
    svc["spec"] = {{"ports", json::array({{{"port", 8080}}})}};
    put(services_, svc);
  }
  static std::shared_ptr<kube::Client> operatorClient(std::shared_ptr<FakeTransport> t) {
    kube::ClientOptions o;
    o.fieldManager = v1::kOperatorFieldManager;
    return std::make_shared<kube::Client>(std::move(t), o);
  }
  void put(kube::Indexer& cache, const kube::Object& o) { cache.upsert(testing::share(o)); }
  runtime::Result reconcile(const std::string& name = "v7") {
    return reconciler_.reconcile({"ml", name});
  }
  // The quorum read of a release by name before its first gate Job (a list
  // with metadata.name=...): the release at `resourceVersion` ("" for the
  // cached one's), or nullopt for any other request.
  std::optional<testing::FakeReply> releaseList(const kube::Request& r,
                                                const std::string& resourceVersion = "") {
    if (r.method != "GET" || r.uri().find("/modelreleases?") == std::string::npos ||
        r.uri().find("fieldSelector=metadata.name") == std::string::npos)
      return std::nullopt;
    json items = json::array();
    if (kube::ObjectPtr cached = releases_.get("ml", "v7")) {
      json live = *cached;
      if (!resourceVersion.empty()) live["metadata"]["resourceVersion"] = resourceVersion;
      items.push_back(std::move(live));
    }
    return FakeTransport::ok({{"metadata", {{"resourceVersion", "20"}}}, {"items", items}});
  }
  // Answers every write with its body, as the API server answers an apply,
  // the release read by name with the cached release, and every other GET (a
  // prod name the labelled caches miss) with NotFound.
  void serveWrites() {
    transport_->setHandler([this](const kube::Request& r) -> std::optional<testing::FakeReply> {
      if (auto listed = releaseList(r)) return listed;
      if (r.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
      return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
    });
  }
  // The writes sent (GETs left out), in order.
  std::vector<std::string> requests() const {
    std::vector<std::string> out;
    for (const auto& r : transport_->requests())
      if (r.method != "GET") out.push_back(r.method + " " + r.uri());
    return out;
  }
  std::vector<kube::Request> writes() const {
    std::vector<kube::Request> out;
    for (const auto& r : transport_->requests())
      if (r.method != "GET") out.push_back(r);
    return out;
  }
  // Release v7 gated and finalized, entering its prod stage (one step of 50 %,
  // 2 replicas), its Model Lockstep's, one node with 4 GPUs: nothing of prod
  // exists yet, so each prod name is missing from the caches.
  void putReleaseEnteringProd() {
    kube::Object release = finalized(gated());
    release["spec"]["stages"] = json::array({prodStage(2, 1, oneStep(50))});
    put(releases_, release);
    putLockstepModel("v7");
    kube::Object node = testing::gpuNode("gpu-0", "570", "124", "06");
    node["status"]["allocatable"] = {{"nvidia.com/gpu", "4"}};
    put(nodes_, node);
  }
  static kube::Object gated(const std::string& name = "v7") {
    kube::Object r = testing::modelRelease(name)
                         .runtimeEnv("torch")
                         .closureHash(kHash)
                         .uid("uid-" + name)
                         .withStage("eval")
                         .build();
    r["metadata"]["resourceVersion"] = "11";
    r["spec"]["package"] = kPackage;
    r["spec"]["model"] = "gpt2";
    return r;
  }
  // A release in its prod stage already carries the cleanup finalizer (the
  // first reconcile that reaches prod adds it, and only that).
  static kube::Object finalized(kube::Object r) {
    r["metadata"]["finalizers"] = json::array({v1::kReleaseCleanupFinalizer});
    return r;
  }
  // A prod stage: serving `replicas` of a container `srv` (asking `gpus`), and `canary`.
  static json prodStage(int replicas, int gpus, json canary) {
    json container = {{"name", "srv"}};
    if (gpus > 0) container["resources"]["limits"]["nvidia.com/gpu"] = gpus;
    json serving = {{"replicas", replicas}};
    serving["template"]["spec"]["containers"] = json::array({container});
    return {{"name", "prod"}, {"serving", serving}, {"canary", std::move(canary)}};
  }
  static json oneStep(int weight) {
    json step = {{"weight", weight}};
    return {{"steps", json::array({step})}};
  }
  static json condition(const json& status, const std::string& type, const std::string& field) {
    auto c = kube::findCondition(status.value("conditions", json::array()), type);
    return c ? c->value(field, "") : "";
  }

  kube::Indexer releases_, runtimeEnvs_, jobs_, pods_, deployments_, models_, anchors_, services_,
      nodes_, gpuPods_, replicaSets_, unlabelledDeployments_, unlabelledServices_;
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<kube::Client> client_ = operatorClient(transport_);
  testing::FakeEventSink events_;
  testing::FakeClock clock_;
  std::shared_ptr<FakeQuerier> querier_ = std::make_shared<FakeQuerier>();
  std::shared_ptr<RecordingMetrics> metrics_ = std::make_shared<RecordingMetrics>();
  // A reconciler over the same caches and fakes, with other options.
  std::unique_ptr<ModelReleaseReconciler> reconcilerWith(ModelReleaseOptions options) {
    return std::make_unique<ModelReleaseReconciler>(
        client_,
        ModelReleaseReconciler::Caches{releases_, runtimeEnvs_, jobs_, pods_, deployments_, models_,
                                       anchors_, services_, nodes_, gpuPods_, replicaSets_},
        events_, clock_, metrics_, std::move(options), querier_);
  }
  // The operator's set-up: with the caches of unlabelled Deployments and Services.
  std::unique_ptr<ModelReleaseReconciler> reconcilerWithUnlabelledCaches() {
    return std::make_unique<ModelReleaseReconciler>(
        client_,
        ModelReleaseReconciler::Caches{releases_, runtimeEnvs_, jobs_, pods_, deployments_, models_,
                                       anchors_, services_, nodes_, gpuPods_, replicaSets_,
                                       &unlabelledDeployments_, &unlabelledServices_},
        events_, clock_, metrics_, ModelReleaseOptions{}, querier_);
  }
  std::unique_ptr<ModelReleaseReconciler> defaultReconciler_ = reconcilerWith({});
  ModelReleaseReconciler& reconciler_ = *defaultReconciler_;
};

TEST_F(ModelReleaseControllerTest, ObservePlanExecuteCreatesTheGateJobThenWritesStatusLast) {
  put(releases_, gated());
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_FALSE(r.terminal);

  // The Job first, the release's status last (server-side apply on /status,
  // guarded by the resourceVersion the plan was made from).
  ASSERT_EQ(requests(), (std::vector<std::string>{
                            "POST /apis/batch/v1/namespaces/ml/jobs?fieldManager=lockstep-operator",
                            std::string("PATCH ") + kStatusUri}));
  auto sent = writes();
  json job = json::parse(sent[0].body);
  EXPECT_EQ(job["metadata"]["name"], "v7-eval-1");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["uid"], "uid-v7");
  json status = json::parse(sent[1].body);
  EXPECT_EQ(status["metadata"]["resourceVersion"], "11");
  EXPECT_FALSE(status.contains("spec"));  // status only: GitOps sees no drift
  EXPECT_EQ(status["status"]["phase"], v1::kPhaseEvaluating);
  EXPECT_EQ(condition(status["status"], "Ready", "reason"), v1::kReasonGateRunning);

  auto recorded = events_.events();
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].involvedName, "v7");
  EXPECT_EQ(recorded[0].reason, "StageStarted");
}

// A gate Job is created before the status write that records it: a plan made
// from a release its cache holds a moment behind the API server starts none
// (a release re-created under prod's name is recognised, never gated again:
// prod_ownership_cluster_test's re-apply case). It is planned again shortly.
TEST_F(ModelReleaseControllerTest, AReleaseItsCacheHoldsBehindStartsNoGateJob) {
  put(releases_, gated());
  transport_->setHandler([this](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (auto listed = releaseList(r, "12")) return listed;
    if (r.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(r.requeueAfter, kube::Clock::Duration(std::chrono::seconds(1)));
  EXPECT_EQ(requests(), std::vector<std::string>{}) << "no Job, no status";
  EXPECT_TRUE(events_.events().empty());
}

TEST_F(ModelReleaseControllerTest, AStatusConflictIsRetriedNotTerminal) {
  put(releases_, gated());
  transport_->setHandler([this](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (auto listed = releaseList(r)) return listed;
    if (r.uri().find("/status") != std::string::npos)
      return FakeTransport::status(409, "Conflict", "the object has been modified");
    return FakeTransport::ok(json::parse(r.body));
  });

  runtime::Result r = reconcile();
  EXPECT_EQ(r.error.code(), Code::kConflict) << r.error.toString();
  EXPECT_FALSE(r.terminal) << "a plan made on a stale copy is planned again (backoff requeue)";
  // Status is the last write: nothing after it.
  EXPECT_EQ(requests().back(), std::string("PATCH ") + kStatusUri);
}

TEST_F(ModelReleaseControllerTest, AFailedJobCreateStopsBeforeTheStatus) {
  put(releases_, gated());
  transport_->setHandler([this](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (auto listed = releaseList(r)) return listed;
    return FakeTransport::status(403, "Forbidden", "exceeded quota: gpu");
  });

  runtime::Result r = reconcile();
  EXPECT_FALSE(r.error.isOk());
  EXPECT_FALSE(r.terminal);
  EXPECT_EQ(requests(),
            std::vector<std::string>{
                "POST /apis/batch/v1/namespaces/ml/jobs?fieldManager=lockstep-operator"});
  auto recorded = events_.events();
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].reason, kReasonJobRefused);
  EXPECT_NE(recorded[0].message.find("creating Job v7-eval-1: "), std::string::npos)
      << recorded[0].message;
}

TEST_F(ModelReleaseControllerTest, InvalidSpecIsAConditionAndNoRetry) {
  kube::Object release = gated();
  release["spec"]["stages"][0]["gate"]["timeout"] = "soon";
  put(releases_, release);
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_FALSE(r.requeue);
  EXPECT_EQ(r.requeueAfter, kube::Clock::Duration::zero());
  ASSERT_EQ(requests(), std::vector<std::string>{std::string("PATCH ") + kStatusUri});
  json status = json::parse(transport_->requests()[0].body)["status"];
  EXPECT_EQ(status["phase"], v1::kPhaseFailed);
  EXPECT_EQ(condition(status, "Stalled", "reason"), v1::kReasonInvalidSpec);
  EXPECT_NE(condition(status, "Stalled", "message").get<std::string>().find("gate.timeout"),
            std::string::npos);
}

TEST_F(ModelReleaseControllerTest, ReachingProdAddsTheCleanupFinalizerFirst) {
  kube::Object release = gated();
  release["spec"]["stages"] = json::array({prodStage(1, 0, oneStep(50))});
  put(releases_, release);
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(r.requeueAfter, kube::Clock::Duration(std::chrono::seconds(1)));
  // Only the finalizer, guarded by the resourceVersion it was planned from.
  ASSERT_EQ(requests().size(), 1u);
  EXPECT_EQ(
      requests()[0].rfind("PATCH /apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/v7", 0),
      0u)
      << requests()[0];
  json patch = json::parse(writes()[0].body);
  EXPECT_EQ(patch["metadata"]["finalizers"], json::array({v1::kReleaseCleanupFinalizer}));
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "11");
}

TEST_F(ModelReleaseControllerTest, FirstReleaseInProdCreatesTheModelAndLooksAgain) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(1, 0, oneStep(50))});
  put(releases_, release);
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(r.requeueAfter, kube::Clock::Duration(std::chrono::seconds(1)));
  // Only the Model (defaults): the rest is planned again from the cache once it is there.
  ASSERT_EQ(requests(),
            std::vector<std::string>{"POST /apis/lockstep.dev/v1alpha1/namespaces/ml/models?"
                                     "fieldManager=lockstep-operator"});
  json m = json::parse(writes()[0].body);
  EXPECT_EQ(m["kind"], "Model");
  EXPECT_EQ(m["metadata"]["name"], "gpt2");
  EXPECT_EQ(m["spec"], json::object());
}

TEST_F(ModelReleaseControllerTest, ProdStageAppliesServingObjectsFromTheCachesThenStatus) {
  putReleaseEnteringProd();
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  std::vector<std::string> uris = requests();
  ASSERT_EQ(uris.size(), 3u);
  // Names nobody stands at are created (never applied over a newcomer).
  EXPECT_EQ(uris[0], "POST /api/v1/namespaces/ml/services?fieldManager=lockstep-operator");
  EXPECT_EQ(uris[1], "POST /apis/apps/v1/namespaces/ml/deployments?fieldManager=lockstep-operator");
  EXPECT_EQ(json::parse(writes()[1].body)["metadata"]["name"], "gpt2-canary");
  EXPECT_EQ(uris[2], std::string("PATCH ") + kStatusUri);
  // The GPU capacity came from the caches: no pod LIST.
  for (const auto& u : uris) EXPECT_EQ(u.find("/pods"), std::string::npos) << u;
  json status = json::parse(writes()[2].body)["status"];
  EXPECT_EQ(status["phase"], v1::kPhaseCanary);
  EXPECT_EQ(status["canary"]["step"], 0);
  EXPECT_EQ(querier_->calls, 0);
}

// The prod names the caches miss (here all three: a first release) are read at
// once, not one GET after another: each answer waits here until all three are
// asked (at most 2 s), and the plan is the one the names read one by one give.
TEST_F(ModelReleaseControllerTest, TheNamesTheCachesMissAreReadAtOnce) {
  putReleaseEnteringProd();
  std::mutex mu;
  std::condition_variable cv;
  int inFlight = 0, mostInFlight = 0;
  transport_->setHandler([&](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (auto listed = releaseList(r)) return listed;
    if (r.method == "GET") {
      std::unique_lock<std::mutex> l(mu);
      mostInFlight = std::max(mostInFlight, ++inFlight);
      cv.notify_all();
      cv.wait_for(l, std::chrono::seconds(2), [&] { return mostInFlight >= 3; });
      --inFlight;
      return FakeTransport::status(404, "NotFound", "not found");
    }
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(mostInFlight, 3) << "the three names were not read at once";
  int gets = 0;
  for (const auto& q : transport_->requests()) gets += q.method == "GET" ? 1 : 0;
  EXPECT_EQ(gets, 3);
  std::vector<std::string> uris = requests();
  ASSERT_EQ(uris.size(), 3u);
  EXPECT_EQ(uris[0], "POST /api/v1/namespaces/ml/services?fieldManager=lockstep-operator");
  EXPECT_EQ(uris[1], "POST /apis/apps/v1/namespaces/ml/deployments?fieldManager=lockstep-operator");
  EXPECT_EQ(uris[2], std::string("PATCH ") + kStatusUri);
}

// An error reading one of the names read at once is named, and nothing is
// written in prod; the other names' NotFound changes nothing of that.
TEST_F(ModelReleaseControllerTest, AnErrorReadingOneOfTheNamesReadAtOnceStopsTheProdWrites) {
  putReleaseEnteringProd();
  transport_->setHandler([this](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (auto listed = releaseList(r)) return listed;
    if (r.method == "GET" && r.uri().find("/deployments/gpt2-canary") != std::string::npos)
      return FakeTransport::status(403, "Forbidden", "deployments is forbidden");
    if (r.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });

  runtime::Result r = reconcile();
  for (const auto& w : requests()) {
    EXPECT_EQ(w.find("/services"), std::string::npos) << w;
    EXPECT_EQ(w.find("/deployments"), std::string::npos) << w;
  }
  std::string said = r.error.toString();
  for (const auto& w : writes()) said += " " + w.body;
  EXPECT_NE(said.find("Deployment ml/gpt2-canary"), std::string::npos) << said;
}

// The canary's pods run the revision the release pins as the canary starts
// (status.runtime, written in the same plan), not the RuntimeEnv's spec.image:
// here the spec names another image than the current revision (an edit not
// resolved yet, as the fake allows).
TEST_F(ModelReleaseControllerTest, TheCanaryDeploymentRunsThePinnedPairNotTheRuntimeEnvSpec) {
  const std::string pinnedImage = "registry.example/runtimes/torch@sha256:" + std::string(64, '2');
  put(runtimeEnvs_,
      testing::runtimeEnv("torch")
          .image(kImage)
          .status(
              {{"observedGeneration", 1},
               {"closureHash", kHash},
               {"currentRevision", 3},
               {"revisions",
                json::array({{{"number", 3}, {"image", pinnedImage}, {"closureHash", kHash}}})},
               {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Resolved"}}}}})
          .build());
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  std::vector<kube::Request> w = writes();
  ASSERT_EQ(w.size(), 3u);
  ASSERT_NE(w[1].uri().find("/deployments"), std::string::npos) << w[1].uri();
  ASSERT_EQ(json::parse(w[1].body)["metadata"]["name"], "gpt2-canary");
  json tmpl = json::parse(w[1].body)["spec"]["template"];
  EXPECT_EQ(tmpl["spec"]["containers"][0]["image"], pinnedImage);
  EXPECT_EQ(tmpl["metadata"]["annotations"]["lockstep.dev/closure-hash"], kHash);
  EXPECT_EQ(tmpl["metadata"]["annotations"]["lockstep.dev/runtime-revision"], "3");
  json status = json::parse(w[2].body)["status"];
  EXPECT_EQ(status["runtime"],
            json({{"revision", 3}, {"image", pinnedImage}, {"closureHash", kHash}}));
}

// An apply error of the serving objects reaches the release's status (not only
// the log): Stalled, ServingApplyFailed, naming the object and the server's message.
TEST_F(ModelReleaseControllerTest,
       ARefusedServingWriteIsInStatusWithTheObjectAndTheServersMessage) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  transport_->setHandler([](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (r.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
    if (r.uri().find("/deployments") != std::string::npos)
      return FakeTransport::status(422, "Invalid",
                                   "Deployment.apps \"gpt2-canary\" is invalid: spec.selector: "
                                   "Invalid value: field is immutable");
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });

  runtime::Result r = reconcile();
  EXPECT_FALSE(r.error.isOk());
  std::vector<kube::Request> sent = writes();
  ASSERT_FALSE(sent.empty());
  const kube::Request& last = sent.back();
  ASSERT_NE(last.uri().find("/status"), std::string::npos) << last.uri();
  json status = json::parse(last.body)["status"];
  EXPECT_EQ(condition(status, "Stalled", "status"), "True");
  EXPECT_EQ(condition(status, "Stalled", "reason"), v1::kReasonServingApplyFailed);
  const std::string m = condition(status, "Stalled", "message");
  EXPECT_NE(m.find("creating Deployment gpt2-canary"), std::string::npos) << m;
  EXPECT_NE(m.find("field is immutable"), std::string::npos) << m;
  bool evented = false;
  for (const auto& e : events_.events())
    evented = evented || (e.reason == v1::kReasonServingApplyFailed &&
                          e.message.find("field is immutable") != std::string::npos);
  EXPECT_TRUE(evented);
}

// "No write over a newcomer": a Service created by someone else between the
// GET (404) and Lockstep's create is never written over. The create's
// AlreadyExists is a Conflict (retried, no ServingApplyFailed); the next look
// finds it and it is a NameConflict. An object that was read is applied with
// the uid it was read with (the server refuses the apply if it was replaced).
TEST_F(ModelReleaseControllerTest, ANameTakenBetweenReadAndCreateIsNeverWrittenOver) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  bool created = false;  // the team's Service appears right after Lockstep's GET
  const json team = {{"apiVersion", "v1"},
                     {"kind", "Service"},
                     {"metadata", {{"name", "gpt2"}, {"namespace", "ml"}, {"uid", "team-uid"}}},
                     {"spec", {{"selector", {{"app", "gpt2"}}}}}};
  transport_->setHandler([&](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (r.method == "GET" && r.uri().find("/services/gpt2") != std::string::npos) {
      if (!created) {
        created = true;
        return FakeTransport::status(404, "NotFound", "not found");
      }
      return FakeTransport::ok(team);
    }
    if (r.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
    if (r.method == "POST" && r.uri().find("/services") != std::string::npos)
      return FakeTransport::status(409, "AlreadyExists", "services \"gpt2\" already exists");
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });

  runtime::Result r = reconcile();
  EXPECT_FALSE(r.error.isOk());
  EXPECT_EQ(r.error.code(), Code::kConflict) << r.error.toString();
  EXPECT_NE(r.error.message().find("was created by someone else after it was read"),
            std::string::npos)
      << r.error.toString();
  ASSERT_EQ(requests(),
            std::vector<std::string>{
                "POST /api/v1/namespaces/ml/services?fieldManager=lockstep-operator"})
      << "nothing after the refused create, no ServingApplyFailed status";

  r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  ASSERT_EQ(requests().size(), 2u) << "the second look writes the status only";
  EXPECT_EQ(requests()[1], std::string("PATCH ") + kStatusUri);
  json status = json::parse(writes()[1].body)["status"];
  EXPECT_EQ(condition(status, "Stalled", "reason"), v1::kReasonNameConflict);
}

TEST_F(ModelReleaseControllerTest, AnObjectThatWasReadIsAppliedUnderTheUidItWasReadWith) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  putLockstepService("svc-uid");
  serveWrites();
  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  std::vector<kube::Request> w = writes();
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[0].uri().rfind("/api/v1/namespaces/ml/services/gpt2", 0), 0u) << w[0].uri();
  EXPECT_EQ(w[0].method, "PATCH");
  EXPECT_EQ(json::parse(w[0].body)["metadata"]["uid"], "svc-uid");
}

// A Service of the model's name that only a GET finds (no Lockstep label, so
// in no cache): NameConflict, and not one write to prod.
TEST_F(ModelReleaseControllerTest, AForeignServiceOnlyAGetFindsIsANameConflictWithNoProdWrite) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  transport_->setHandler([](const kube::Request& r) -> std::optional<testing::FakeReply> {
    if (r.method == "GET" && r.uri().find("/services/gpt2") != std::string::npos) {
      return FakeTransport::ok(json{{"apiVersion", "v1"},
                                    {"kind", "Service"},
                                    {"metadata", {{"name", "gpt2"}, {"namespace", "ml"}}},
                                    {"spec", {{"selector", {{"app", "gpt2"}}}}}});
    }
    if (r.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(r.requeueAfter, std::chrono::seconds(10));
  ASSERT_EQ(requests(), std::vector<std::string>{std::string("PATCH ") + kStatusUri});
  json status = json::parse(writes()[0].body)["status"];
  EXPECT_EQ(condition(status, "Stalled", "reason"), v1::kReasonNameConflict);
}

// With the caches of unlabelled objects (the operator's set-up), a name in
// neither half of a resource is free: the first plan of a release creates its
// Service and canary Deployment with no GET (the bench's audit log: 2,000 GETs
// answered 404, 15 % of the operator's requests); one the unlabelled half holds
// is a NameConflict from that cache, again with no GET and no write in prod.
TEST_F(ModelReleaseControllerTest, TheUnlabelledCachesSayWhatStandsAtANameWithoutAGet) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  serveWrites();
  auto reconciler = reconcilerWithUnlabelledCaches();
  runtime::Result r = reconciler->reconcile({"ml", "v7"});
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  for (const auto& q : transport_->requests()) EXPECT_NE(q.method, "GET") << q.uri();
  std::vector<kube::Request> first = writes();
  ASSERT_EQ(first.size(), 3u) << json(requests()).dump(2);
  EXPECT_NE(first[0].uri().find("/services"), std::string::npos) << first[0].uri();
  EXPECT_NE(first[1].uri().find("/deployments"), std::string::npos) << first[1].uri();

  // A team's Service at the model's name, as the metadata-only cache holds it.
  put(unlabelledServices_, json{{"apiVersion", "v1"},
                                {"kind", "PartialObjectMetadata"},
                                {"metadata",
                                 {{"name", "gpt2"},
                                  {"namespace", "ml"},
                                  {"uid", "team-svc"},
                                  {"labels", {{"app", "gpt2"}}}}}});
  const size_t before = transport_->requests().size();
  r = reconciler->reconcile({"ml", "v7"});
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(r.requeueAfter, std::chrono::seconds(10));
  const std::vector<kube::Request> all = transport_->requests();
  ASSERT_EQ(all.size(), before + 1) << json(requests()).dump(2);
  EXPECT_EQ(all.back().method + " " + all.back().uri(), std::string("PATCH ") + kStatusUri);
  json status = json::parse(all.back().body)["status"];
  EXPECT_EQ(condition(status, "Stalled", "reason"), v1::kReasonNameConflict);
  EXPECT_NE(condition(status, "Stalled", "message").get<std::string>().find("Service ml/gpt2"),
            std::string::npos)
      << status.dump(2);
}

// A plan that writes nothing in prod (the canary waits for its pods) reads no
// name the caches miss: the stable Deployment's name is not looked up in every
// reconcile until the promotion creates it (bench/promotion.py's audit log:
// these GETs were a sixth of the operator's requests). A plan that writes there
// reads them first (AForeignServiceOnlyAGetFindsIsANameConflictWithNoProdWrite).
TEST_F(ModelReleaseControllerTest, APlanThatWritesNothingInProdReadsNoName) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  serveWrites();
  ASSERT_TRUE(reconcile().error.isOk());
  std::vector<kube::Request> first = writes();
  ASSERT_EQ(first.size(), 3u);
  int gets = 0;
  for (const auto& r : transport_->requests()) gets += r.method == "GET" ? 1 : 0;
  EXPECT_EQ(gets, 3);  // the first plan writes in prod: the three names were read

  // What the first reconcile wrote, as the caches now hold it.
  kube::Object svc = json::parse(first[0].body);
  svc["metadata"]["uid"] = "svc-uid";
  put(services_, svc);
  kube::Object canary = json::parse(first[1].body);
  canary["metadata"]["uid"] = "canary-uid";
  put(deployments_, canary);
  release["status"] = json::parse(first[2].body)["status"];
  release["metadata"]["resourceVersion"] = "12";
  put(releases_, release);
  const size_t before = transport_->requests().size();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  const std::vector<kube::Request> all = transport_->requests();
  for (size_t i = before; i < all.size(); ++i) {
    const kube::Request& q = all[i];
    EXPECT_NE(q.method, "GET") << q.uri();
    EXPECT_EQ(q.uri().find("/deployments"), std::string::npos) << q.method << " " << q.uri();
  }
}

// A release stalled on a NameConflict reads the names in every reconcile, even
// one whose plan would write nothing in prod: it stays Stalled while the
// object is there, never flipping back to progressing unseen.
TEST_F(ModelReleaseControllerTest, AReleaseStalledOnANameConflictReadsTheNamesUntilItIsGone) {
  kube::Object release = finalized(gated());
  release["spec"]["stages"] = json::array({prodStage(2, 0, oneStep(50))});
  put(releases_, release);
  putLockstepModel("v7");
  serveWrites();
  ASSERT_TRUE(reconcile().error.isOk());
  std::vector<kube::Request> first = writes();
  ASSERT_EQ(first.size(), 3u);
  kube::Object svc = json::parse(first[0].body);
  svc["metadata"]["uid"] = "svc-uid";
  put(services_, svc);
  kube::Object canary = json::parse(first[1].body);
  canary["metadata"]["uid"] = "canary-uid";
  put(deployments_, canary);
  json status = json::parse(first[2].body)["status"];
  kube::setCondition(status["conditions"],
                     {v1::kConditionStalled, v1::kStatusTrue, v1::kReasonNameConflict,
                      "Deployment ml/gpt2-stable has no label lockstep.dev/model=gpt2"},
                     1, "2026-01-01T00:00:00Z");
  release["status"] = status;
  release["metadata"]["resourceVersion"] = "12";
  put(releases_, release);
  const size_t before = transport_->requests().size();
  // A team's Deployment at the stable name: no Lockstep label, so in no cache.
  transport_->setHandler([](const kube::Request& q) -> std::optional<testing::FakeReply> {
    if (q.method == "GET" && q.uri().find("/deployments/gpt2-stable") != std::string::npos) {
      return FakeTransport::ok(json{{"apiVersion", "apps/v1"},
                                    {"kind", "Deployment"},
                                    {"metadata", {{"name", "gpt2-stable"}, {"namespace", "ml"}}}});
    }
    if (q.method == "GET") return FakeTransport::status(404, "NotFound", "not found");
    return FakeTransport::ok(q.body.empty() ? json::object() : json::parse(q.body));
  });

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  bool read = false;
  const std::vector<kube::Request> all = transport_->requests();
  for (size_t i = before; i < all.size(); ++i) {
    const kube::Request& q = all[i];
    read = read ||
           (q.method == "GET" && q.uri().find("/deployments/gpt2-stable") != std::string::npos);
    if (q.method == "GET") continue;
    const kube::Request& w = q;
    ASSERT_NE(w.uri().find("/status"), std::string::npos) << w.method << " " << w.uri();
    EXPECT_EQ(condition(json::parse(w.body)["status"], "Stalled", "reason"),
              v1::kReasonNameConflict);
  }
  EXPECT_TRUE(read);
}

// A promoted release asked to take prod back (`lockstep model rollback`) whose
// prod stage cannot run: the request is refused in its status, and the
// reconcile is terminal — a retry cannot fix the spec.
TEST_F(ModelReleaseControllerTest, AnInvalidManualRollbackIsTerminalWithACondition) {
  kube::Object release = gated();
  release["spec"]["stages"] = json::array({prodStage(0, 0, json::object())});
  release["metadata"]["annotations"] = {{"rollback.lockstep.dev/3", "alice"}};
  release["status"] = {{"phase", v1::kPhaseSuperseded},
                       {"observedGeneration", 1},
                       {"canary", {{"phase", "Promoted"}}},
                       {"stages", {{{"name", "prod"}, {"phase", "Succeeded"}}}}};
  put(releases_, release);
  kube::Object model = kube::newObject(v1::kModels, "ml", "gpt2");
  model["metadata"]["uid"] = "model-uid";
  // The Model's record: v7 was prod before v8 (a rollback targets only what it records).
  model["status"] = {
      {"revision", 3},
      {"prod", {{"release", "v8"}}},
      {"history", json::array({{{"action", "Promoted"}, {"release", "v7"}, {"uid", "uid-v7"}},
                               {{"action", "Promoted"}, {"release", "v8"}}})}};
  put(models_, model);
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.terminal) << "no requeue: " << r.error.toString();
  EXPECT_EQ(r.error.code(), Code::kInvalidArgument);
  EXPECT_FALSE(r.requeue);
  EXPECT_EQ(r.requeueAfter, kube::Clock::Duration::zero());
  // No Deployment and no Model write: only the status, with the refusal.
  ASSERT_EQ(requests(), std::vector<std::string>{std::string("PATCH ") + kStatusUri});
  json status = json::parse(writes()[0].body)["status"];
  EXPECT_EQ(status["phase"], v1::kPhaseSuperseded);
  EXPECT_EQ(condition(status, "Stalled", "reason"), v1::kReasonInvalidSpec);
  const std::string refused = status["rollback"].value("refused", "");
  EXPECT_NE(refused.find("serving.replicas must be at least 1"), std::string::npos) << refused;
  bool warned = false;
  for (const auto& e : events_.events()) {
    EXPECT_NE(e.reason, v1::kReasonManualRollback) << "nothing was rolled back";
    warned = warned || (e.reason == v1::kReasonInvalidSpec && e.type == "Warning");
  }
  EXPECT_TRUE(warned);
}

// A rollback asked on the Model (`lockstep model rollback`, the Argo CD action):
// the release it targets (named, or by default the one prod ran before) sees
// the requesting user, only with --model-rollback-requests (where the chart's
// policy checks the writer); a request for an earlier revision is spent, and
// read back only for the release a Rollback entry put in prod.
TEST_F(ModelReleaseControllerTest, ARollbackAskedOnTheModelReachesItsTargetOnly) {
  // Releases prod ran (Superseded, their canary Promoted): they take requests.
  auto ran = [](const std::string& name) {
    kube::Object r = gated(name);
    r["status"] = {{"phase", v1::kPhaseSuperseded}, {"canary", {{"phase", "Promoted"}}}};
    return r;
  };
  for (const char* name : {"v6", "v7"}) put(releases_, ran(name));
  kube::Object model = kube::newObject(v1::kModels, "ml", "gpt2");
  model["metadata"]["uid"] = "model-uid";
  model["status"] = {{"revision", 3},
                     {"prod", {{"release", "v8"}}},
                     {"history", json::array({{{"action", "Promoted"}, {"release", "v6"}},
                                              {{"action", "Promoted"}, {"release", "v7"}},
                                              {{"action", "Promoted"}, {"release", "v8"}}})}};
  model["metadata"]["annotations"] = {{"rollback.lockstep.dev/3", "alice"}};
  put(models_, model);
  ModelReleaseOptions on;
  on.modelRollbackRequests = true;
  std::unique_ptr<ModelReleaseReconciler> withOptions = reconcilerWith(on);
  const ModelReleaseReconciler& asked = *withOptions;
  auto by = [&](const ModelReleaseReconciler& rec, const std::string& name) {
    auto o = rec.observe({"ml", name});
    return o ? o->gates.modelRollbackBy : std::string("(not observed)");
  };
  // No target named: the newest release prod ran before v8 (v7).
  EXPECT_EQ(by(asked, "v7"), "alice");
  EXPECT_EQ(by(asked, "v6"), "");
  EXPECT_EQ(by(reconciler_, "v7"), "") << "off without --model-rollback-requests";
  // v7 gone from the model (its object names another model): v6 is the default.
  kube::Object elsewhere = ran("v7");
  elsewhere["spec"]["model"] = "bert";
  put(releases_, elsewhere);
  EXPECT_EQ(by(asked, "v6"), "alice");
  EXPECT_EQ(by(asked, "v7"), "");
  // v7 re-created with other content, never promoted: the default skips it too.
  put(releases_, gated("v7"));
  EXPECT_EQ(by(asked, "v6"), "alice");
  // A named target is that release alone.
  model["metadata"]["annotations"]["rollback-to.lockstep.dev/3"] = "v6";
  put(models_, model);
  put(releases_, ran("v7"));
  EXPECT_EQ(by(asked, "v6"), "alice");
  EXPECT_EQ(by(asked, "v7"), "");
  // Prod moved on (revision 4): the request at 3 is spent; it is read back only
  // by the release a Rollback entry to it made prod.
  model["status"]["revision"] = 4;
  model["status"]["prod"]["release"] = "v6";
  model["status"]["history"].push_back(
      {{"action", "Rollback"}, {"release", "v6"}, {"from", "v8"}, {"revision", 4}});
  put(models_, model);
  auto o = asked.observe({"ml", "v6"});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->gates.modelRollbackBy, "");
  EXPECT_EQ(o->gates.spentModelRollbackBy, "alice");
  EXPECT_EQ(asked.observe({"ml", "v7"})->gates.spentModelRollbackBy, "");
}

// A deleting release that never reached prod: the plan removes the finalizer
// and writes no status; the metrics still forget it, and nothing throws (the
// status left null was once read with value()).
TEST_F(ModelReleaseControllerTest, ADeletingReleaseLosesItsFinalizerAndItsSeries) {
  kube::Object release = finalized(gated());
  release["metadata"]["deletionTimestamp"] = "2026-12-02T07:00:00Z";
  put(releases_, release);
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  ASSERT_EQ(requests().size(), 1u);
  EXPECT_EQ(
      requests()[0].rfind("PATCH /apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/v7", 0),
      0u)
      << requests()[0];
  EXPECT_EQ(metrics_->calls, std::vector<std::string>{"forgetRelease ml/v7"});
}

TEST_F(ModelReleaseControllerTest, ADeletedReleaseIsDone) {
  runtime::Result r = reconcile("gone");
  EXPECT_TRUE(r.error.isOk());
  EXPECT_FALSE(r.requeue);
  EXPECT_TRUE(transport_->requests().empty());
}

// The Model controller's shell (model_controller.h) over the same caches: a
// Model no release names gets NoProd; a recorded prod without Ready pods is
// Degraded, with one ProdDegraded Event and the gauges; a Model whose status
// already says so is not written again; a gone Model's series are dropped;
// the write is guarded by the Model's resourceVersion (a Conflict retries).
// A rollback asked on the Model whose target no release is: one
// RollbackRefused Warning on the Model per request (not per reconcile), and
// none when the operator does not act on Model requests at all.
TEST_F(ModelReleaseControllerTest, TheModelControllerSaysOnceThatARollbackHasNoTarget) {
  serveWrites();
  kube::Object model = kube::newObject(v1::kModels, "ml", "gpt2");
  model["metadata"]["uid"] = "model-uid";
  model["metadata"]["resourceVersion"] = "5";
  model["metadata"]["annotations"] = {{"rollback.lockstep.dev/3", "alice"},
                                      {"rollback-to.lockstep.dev/3", "v5"}};
  model["status"] = {{"revision", 3}, {"prod", {{"release", "v8"}}}};
  put(models_, model);
  auto refusals = [&] {
    std::vector<std::string> out;
    for (const auto& e : events_.events())
      if (e.reason == v1::kReasonRollbackRefused) out.push_back(e.message);
    return out;
  };
  ModelReconciler off{client_,
                      {models_, releases_, deployments_, services_, pods_, replicaSets_},
                      events_,
                      clock_,
                      metrics_};
  off.reconcile({"ml", "gpt2"});
  EXPECT_TRUE(refusals().empty()) << "without --model-rollback-requests nothing acts on it";
  ModelReconciler on{client_,  {models_, releases_, deployments_, services_, pods_, replicaSets_},
                     events_,  clock_,
                     metrics_, true};
  on.reconcile({"ml", "gpt2"});
  on.reconcile({"ml", "gpt2"});
  ASSERT_EQ(refusals().size(), 1u);
  EXPECT_NE(refusals()[0].find("release \"v5\" (rollback-to.lockstep.dev/3) is not a "
                               "ModelRelease of this model"),
            std::string::npos)
      << refusals()[0];
  // Another request is said again; a resolvable one is not.
  model["metadata"]["annotations"]["rollback-to.lockstep.dev/3"] = "v4";
  put(models_, model);
  on.reconcile({"ml", "gpt2"});
  EXPECT_EQ(refusals().size(), 2u);
  // v4 exists but never ran in prod: it would not answer, so that is said.
  put(releases_, gated("v4"));
  on.reconcile({"ml", "gpt2"});
  ASSERT_EQ(refusals().size(), 3u);
  EXPECT_NE(refusals()[2].find("release \"v4\" never ran in prod"), std::string::npos)
      << refusals()[2];
  kube::Object ran = gated("v4");
  ran["status"] = {{"phase", v1::kPhaseSuperseded}, {"canary", {{"phase", "Promoted"}}}};
  put(releases_, ran);
  on.reconcile({"ml", "gpt2"});
  EXPECT_EQ(refusals().size(), 3u) << "v4 answers in its own status";
}

TEST_F(ModelReleaseControllerTest, TheModelControllerWritesTheModelsConditionsAndGauges) {
  serveWrites();
  ModelReconciler models{client_,
                         {models_, releases_, deployments_, services_, pods_, replicaSets_},
                         events_,
                         clock_,
                         metrics_};
  kube::Object model = kube::newObject(v1::kModels, "ml", "gpt2");
  model["metadata"]["uid"] = "model-uid";
  model["metadata"]["resourceVersion"] = "5";
  model["metadata"]["generation"] = 1;
  put(models_, model);
  auto statusWrites = [&] {
    std::vector<kube::Request> out;
    for (const kube::Request& r : writes())
      if (r.uri().find("/models/gpt2/status") != std::string::npos) out.push_back(r);
    return out;
  };

  runtime::Result r = models.reconcile({"ml", "gpt2"});
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  auto sent = statusWrites();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].method, "PUT");
  json body = json::parse(sent[0].body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "5") << "guarded by the version it read";
  EXPECT_EQ(condition(body["status"], "Ready", "reason"), "NoProd");
  EXPECT_EQ(body["status"]["observedGeneration"], 1);
  EXPECT_EQ(metrics_->calls.back(), "modelState ml/gpt2 ready=0 degraded=0");
  EXPECT_TRUE(events_.events().empty());

  // Prod recorded (v1 on its pair), the stable Deployment and Service the
  // Model's, rolled out, but no Ready pod: Degraded, said once.
  model["status"] = {
      {"revision", 1},
      {"prod",
       {{"release", "v1"},
        {"uid", "uid-v1"},
        {"package", kPackage},
        {"runtime", {{"runtimeEnv", "torch"}, {"image", kImage}, {"closureHash", kHash}}}}}};
  model["spec"] = {{"replicas", 2}};
  put(models_, model);
  kube::Object stable = kube::newObject(v1::kDeployments, "ml", "gpt2-stable");
  stable["metadata"]["labels"] = {{v1::kModelLabel, "gpt2"}};
  stable["metadata"]["generation"] = 2;
  stable["metadata"]["ownerReferences"] =
      json::array({v1::modelOwnerReference("gpt2", "model-uid")});
  stable["spec"] = {
      {"replicas", 2},
      {"template",
       {{"metadata",
         {{"labels", {{v1::kReleaseLabel, "v1"}}},
          {"annotations",
           {{"lockstep.dev/closure-hash", kHash}, {"lockstep.dev/package", kPackage}}}}}}}};
  stable["status"] = {{"observedGeneration", 2}, {"replicas", 2}, {"updatedReplicas", 2}};
  put(deployments_, stable);
  putLockstepService("svc-uid");
  r = models.reconcile({"ml", "gpt2"});
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  sent = statusWrites();
  ASSERT_EQ(sent.size(), 2u);
  body = json::parse(sent[1].body);
  EXPECT_EQ(condition(body["status"], "Degraded", "status"), "True");
  EXPECT_EQ(condition(body["status"], "Degraded", "reason"), "StableNotReady");
  EXPECT_EQ(body["status"]["prod"]["release"], "v1") << "the record kept as read";
  auto recorded = events_.events();
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].involvedKind, "Model");
  EXPECT_EQ(recorded[0].reason, kReasonModelDegraded);
  EXPECT_NE(recorded[0].message.find("0/2 pods of v1 Ready on its pair"), std::string::npos)
      << recorded[0].message;
  EXPECT_EQ(metrics_->calls.back(), "modelState ml/gpt2 ready=0 degraded=1");

  // The write landed: the same plan writes nothing and says nothing again.
  model["status"] = body["status"];
  model["metadata"]["resourceVersion"] = "6";
  put(models_, model);
  r = models.reconcile({"ml", "gpt2"});
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_EQ(statusWrites().size(), 2u);
  EXPECT_EQ(events_.events().size(), 1u);

  // A stale cache: the guarded write conflicts and the reconcile is retried.
  model["spec"]["replicas"] = 3;
  model["metadata"]["generation"] = 2;
  put(models_, model);
  transport_->setHandler([](const kube::Request& q) -> std::optional<testing::FakeReply> {
    if (q.method == "PUT")
      return FakeTransport::status(409, "Conflict", "the object has been modified");
    return FakeTransport::status(404, "NotFound", "not found");
  });
  r = models.reconcile({"ml", "gpt2"});
  EXPECT_EQ(r.error.code(), Code::kConflict) << r.error.toString();
  EXPECT_FALSE(r.terminal) << "planned again from the newer Model";

  models_.erase("ml/gpt2");
  r = models.reconcile({"ml", "gpt2"});
  EXPECT_TRUE(r.error.isOk());
  EXPECT_EQ(metrics_->calls.back(), "forgetModel ml/gpt2");
}

}  // namespace
}  // namespace lockstep::controllers
