// The RuntimeEnv controller's shell without a cluster: caches are real
// Indexers filled by the test, writes go through a Client over FakeTransport,
// Events to FakeEventSink, time from FakeClock. Observe -> plan -> execute,
// with the RuntimeEnv's status written last (controllers/common/execute_test.cc
// covers the order of a plan with dependants).
#include "controllers/runtimeenv/runtimeenv_controller.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "tests/support/builders.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_event_sink.h"
#include "tests/support/fake_transport.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using testing::FakeTransport;

const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kLock =
    "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n" +
    "nvidia-cuda-runtime-cu12==12.8.90 --hash=sha256:" + std::string(64, 'b') + "\n";

class RuntimeEnvControllerTest : public ::testing::Test {
 protected:
  RuntimeEnvControllerTest() {
    runtimeEnvs_.addIndex(v1::kRuntimeEnvByConfigMapIndex, v1::indexByConfigMap);
    nodes_.addIndex(kNodeDriverIndex, nodeDriverIndexFunc());  // as setupRuntimeEnvController
    nodes_.upsert(testing::share(testing::gpuNode("gpu-0", "570", "124", "06")));
  }
  static std::shared_ptr<kube::Client> operatorClient(std::shared_ptr<FakeTransport> t) {
    kube::ClientOptions o;
    o.fieldManager = v1::kOperatorFieldManager;
    return std::make_shared<kube::Client>(std::move(t), o);
  }

  void put(kube::Indexer& cache, const kube::Object& o) { cache.upsert(testing::share(o)); }
  runtime::Result reconcile(const std::string& name = "torch") {
    return reconciler_.reconcile({"ml", name});
  }
  // Answers every write with its body, as the API server answers an apply.
  void serveWrites() {
    transport_->setHandler([](const kube::Request& r) -> std::optional<testing::FakeReply> {
      return FakeTransport::ok(json::parse(r.body));
    });
  }

  kube::Indexer runtimeEnvs_, configMaps_, nodes_, releases_;
  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<kube::Client> client_ = operatorClient(transport_);
  testing::FakeEventSink events_;
  testing::FakeClock clock_;
  RuntimeEnvReconciler reconciler_{
      client_, {runtimeEnvs_, configMaps_, nodes_, releases_}, events_, clock_};
};

TEST_F(RuntimeEnvControllerTest, ObservePlanExecuteWritesOnlyItsOwnStatus) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  serveWrites();

  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk()) << r.error.toString();
  EXPECT_FALSE(r.requeue);

  // One write: the RuntimeEnv's status, by server-side apply on /status under the
  // operator's field manager. ModelReleases compute their own Stale condition.
  auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "PATCH");
  EXPECT_EQ(requests[0].uri(),
            "/apis/lockstep.dev/v1alpha1/namespaces/ml/runtimeenvs/torch/status"
            "?fieldManager=lockstep-operator&force=true");
  json body = json::parse(requests[0].body);
  EXPECT_EQ(body["kind"], "RuntimeEnv");
  EXPECT_FALSE(body.contains("spec"));  // status only: GitOps sees no drift
  json status = body["status"];
  EXPECT_EQ(status["compatibleNodes"], 1);
  EXPECT_EQ(status["conditions"][0]["lastTransitionTime"], "2024-05-01T10:00:00Z");  // FakeClock

  auto recorded = events_.events();
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0].involvedKind, "RuntimeEnv");
  EXPECT_EQ(recorded[0].involvedName, "torch");
  EXPECT_EQ(recorded[0].reason, v1::kReasonResolved);
  EXPECT_EQ(recorded[1].reason, v1::kReasonRevisionCreated);
}

TEST_F(RuntimeEnvControllerTest, ReadsTheLockFromTheCachedConfigMap) {
  put(runtimeEnvs_,
      testing::runtimeEnv("torch").image(kImage).configMapLock("locks", "req.txt").build());
  serveWrites();
  EXPECT_TRUE(reconcile().error.isOk());
  json status = json::parse(transport_->requests().back().body)["status"];
  EXPECT_EQ(status["conditions"][0]["reason"], v1::kReasonLockNotFound);

  put(configMaps_, testing::configMap("locks", {{"req.txt", kLock}}));
  EXPECT_TRUE(reconcile().error.isOk());
  status = json::parse(transport_->requests().back().body)["status"];
  EXPECT_EQ(status["conditions"][0]["reason"], v1::kReasonResolved);
  EXPECT_EQ(status["packageCount"], 2);
}

TEST_F(RuntimeEnvControllerTest, SteadyStateWritesNothing) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  serveWrites();
  ASSERT_TRUE(reconcile().error.isOk());
  // The informer delivers what was applied; the next reconcile has nothing to do.
  json written = json::parse(transport_->requests().back().body);
  put(runtimeEnvs_, testing::runtimeEnv("torch")
                        .image(kImage)
                        .inlineLock(kLock)
                        .status(written["status"])
                        .build());
  size_t before = transport_->requestCount();
  clock_.advance(std::chrono::hours(1));
  EXPECT_TRUE(reconcile().error.isOk());
  EXPECT_EQ(transport_->requestCount(), before);
  EXPECT_EQ(events_.events().size(), 2u);
}

// Issue 12 item 3: admission trusts status.closureHash, so a status edited by hand must
// wake the controller (not only spec changes) and be restored from the spec and lock.
TEST_F(RuntimeEnvControllerTest, AHandEditedStatusWakesTheControllerAndIsRestored) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  serveWrites();
  ASSERT_TRUE(reconcile().error.isOk());
  json written = json::parse(transport_->requests().back().body)["status"];
  kube::Object steady =
      testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).status(written).build();
  json forged = written;
  forged["closureHash"] = "sha256:" + std::string(64, 'f');
  kube::Object edited =
      testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).status(forged).build();
  EXPECT_TRUE(runtimeEnvChanged()(steady, edited)) << "a status-only edit must enqueue";
  EXPECT_FALSE(runtimeEnvChanged()(steady, steady));

  put(runtimeEnvs_, edited);
  size_t before = transport_->requestCount();
  ASSERT_TRUE(reconcile().error.isOk());
  ASSERT_EQ(transport_->requestCount(), before + 1);
  EXPECT_EQ(json::parse(transport_->requests().back().body)["status"]["closureHash"],
            written["closureHash"]);
}

TEST_F(RuntimeEnvControllerTest, ASuccessfulReconcileComesBackAfterTheResyncPeriod) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  serveWrites();
  runtime::Result r = reconcile();
  EXPECT_TRUE(r.error.isOk());
  EXPECT_EQ(r.requeueAfter, kRuntimeEnvResync);
}

TEST_F(RuntimeEnvControllerTest, ConflictOnStatusRequeuesWithBackoff) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  transport_->push(FakeTransport::status(409, "Conflict", "the object has been modified"));
  runtime::Result r = reconcile();
  EXPECT_EQ(r.error.code(), Code::kConflict);
  EXPECT_FALSE(r.terminal);  // rate-limited requeue
}

TEST_F(RuntimeEnvControllerTest, FailingEventsNeverFailTheReconcile) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  events_.failWith(unavailable("events API down"));
  serveWrites();
  EXPECT_TRUE(reconcile().error.isOk());
  EXPECT_EQ(transport_->requestCount(), 1u);
}

// In-use protection: a release pinning a revision adds the finalizer (a server-side apply
// of metadata.finalizers on the RuntimeEnv itself, before its status); once deletion began
// and the last pin is gone it is removed, and nothing else is written.
TEST_F(RuntimeEnvControllerTest, APinnedRuntimeEnvGetsTheFinalizerAndLosesItWhenUnpinned) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  serveWrites();
  ASSERT_TRUE(reconcile().error.isOk());
  json status = json::parse(transport_->requests().back().body)["status"];
  kube::Object rte =
      testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).uid("u1").status(status).build();
  put(runtimeEnvs_, rte);
  kube::Object v1 =
      testing::modelRelease("v1").runtimeEnv("torch").closureHash(status["closureHash"]).build();
  v1["spec"]["model"] = "gpt2";
  v1["status"]["phase"] = "Evaluating";
  put(releases_, v1);
  size_t before = transport_->requestCount();
  ASSERT_TRUE(reconcile().error.isOk());
  auto requests = transport_->requests();
  ASSERT_EQ(requests.size(), before + 2);
  EXPECT_EQ(requests[before].method, "PATCH");
  EXPECT_EQ(requests[before].uri(),
            "/apis/lockstep.dev/v1alpha1/namespaces/ml/runtimeenvs/torch"
            "?fieldManager=lockstep-operator&force=true");
  json applied = json::parse(requests[before].body);
  EXPECT_EQ(applied["metadata"]["finalizers"], json::array({v1::kRuntimeEnvInUseFinalizer}));
  EXPECT_EQ(applied["metadata"]["uid"], "u1");
  EXPECT_FALSE(applied.contains("spec"));
  json pinned = json::parse(requests[before + 1].body)["status"];
  EXPECT_EQ(pinned["revisions"][0]["pinnedBy"], json::array({"v1"}));

  // Deleted while pinned: held, with condition Terminating naming v1.
  rte["status"] = pinned;
  rte["metadata"]["finalizers"] = json::array({v1::kRuntimeEnvInUseFinalizer});
  rte["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z";
  put(runtimeEnvs_, rte);
  before = transport_->requestCount();
  ASSERT_TRUE(reconcile().error.isOk());
  ASSERT_EQ(transport_->requestCount(), before + 1);
  json held = json::parse(transport_->requests().back().body)["status"];
  auto terminating = kube::findCondition(held["conditions"], v1::kConditionTerminating);
  ASSERT_TRUE(terminating.has_value());
  EXPECT_NE((*terminating)["message"].get<std::string>().find("v1 (revision 1"), std::string::npos);

  // The release is gone: one write, removing the finalizer.
  rte["status"] = held;
  put(runtimeEnvs_, rte);
  releases_.erase("ml/v1");
  before = transport_->requestCount();
  ASSERT_TRUE(reconcile().error.isOk());
  ASSERT_EQ(transport_->requestCount(), before + 1);
  EXPECT_EQ(transport_->requests().back().uri(),
            "/apis/lockstep.dev/v1alpha1/namespaces/ml/runtimeenvs/torch"
            "?fieldManager=lockstep-operator&force=true");
  EXPECT_FALSE(json::parse(transport_->requests().back().body)["metadata"].contains("finalizers"));
}

TEST_F(RuntimeEnvControllerTest, ReleaseChangesThatMovePinsEnqueue) {
  kube::Object a = testing::modelRelease("v1").runtimeEnv("torch").closureHash("h").build();
  a["status"]["phase"] = "Evaluating";
  kube::Object b = a;
  b["status"]["conditions"] = json::array({{{"type", "Ready"}}});
  EXPECT_FALSE(releasePinChanged()(a, b)) << "a condition alone moves no pin";
  b["status"]["phase"] = "Failed";
  EXPECT_TRUE(releasePinChanged()(a, b));
  b = a;
  b["status"]["runtime"] = {{"revision", 1}, {"image", "i"}, {"closureHash", "h"}};
  EXPECT_TRUE(releasePinChanged()(a, b));
  b = a;
  b["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z";
  EXPECT_TRUE(releasePinChanged()(a, b));
}

TEST_F(RuntimeEnvControllerTest, AbsentOrDeletingObjectIsDone) {
  EXPECT_TRUE(reconcile("missing").error.isOk());
  kube::Object deleting = testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build();
  deleting["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z";
  put(runtimeEnvs_, deleting);
  EXPECT_TRUE(reconcile().error.isOk());
  EXPECT_EQ(transport_->requestCount(), 0u);
}

TEST_F(RuntimeEnvControllerTest, ObserveSharesTheCachedObjects) {
  put(runtimeEnvs_,
      testing::runtimeEnv("torch").image(kImage).configMapLock("locks", "req.txt").build());
  put(configMaps_, testing::configMap("locks", {{"req.txt", kLock}}));
  auto observed = reconciler_.observe({"ml", "torch"});
  ASSERT_TRUE(observed.has_value());
  EXPECT_EQ(observed->runtimeEnv, runtimeEnvs_.get("ml", "torch"));  // the same pointer
  EXPECT_EQ(observed->configMap, configMaps_.get("ml", "locks"));
  ASSERT_EQ(observed->nodes.size(), 1u);
  EXPECT_EQ(observed->nodes[0], nodes_.get("gpu-0"));
}

// The nodes' driver counts (from the node cache's index) and the releases' pin
// facts (from the memo) are what the plan would derive (derived_memo.h): a
// reconcile woken by anything else derives no pin facts again, a changed release
// alone is derived again, and a new node is counted.
TEST_F(RuntimeEnvControllerTest, ObserveDerivesPinFactsOncePerVersionAndCountsNodesByIndex) {
  put(runtimeEnvs_, testing::runtimeEnv("torch").image(kImage).inlineLock(kLock).build());
  auto release = [](const std::string& name, const std::string& rv) {
    kube::Object r =
        testing::modelRelease(name).model("gpt2").runtimeEnv("torch").uid(name).build();
    r["metadata"]["resourceVersion"] = rv;
    r["status"]["phase"] = "Promoting";
    return r;
  };
  put(releases_, release("v1", "10"));
  put(releases_, release("v2", "11"));
  auto observed = reconciler_.observe({"ml", "torch"});
  ASSERT_TRUE(observed.has_value());
  ASSERT_TRUE(observed->releaseFacts.has_value());
  ASSERT_EQ(observed->releaseFacts->size(), 2u);
  for (size_t i = 0; i < observed->releases.size(); ++i) {
    EXPECT_EQ((*observed->releaseFacts)[i].name, v1::releasePinFacts(*observed->releases[i]).name);
    EXPECT_EQ((*observed->releaseFacts)[i].phase, "Promoting");
  }
  ASSERT_TRUE(observed->nodeDrivers);
  EXPECT_EQ(*observed->nodeDrivers, countNodeDrivers(nodes_.list()));
  EXPECT_EQ(reconciler_.pinFactsMemo().derivations(), 2u);

  reconciler_.observe({"ml", "torch"});
  EXPECT_EQ(reconciler_.pinFactsMemo().derivations(), 2u);

  kube::Object v2 = release("v2", "12");
  v2["status"]["phase"] = "Promoted";
  put(releases_, v2);
  put(nodes_, testing::gpuNode("gpu-1", "535", "183", "01"));
  observed = reconciler_.observe({"ml", "torch"});
  EXPECT_EQ(reconciler_.pinFactsMemo().derivations(), 3u);
  EXPECT_EQ(compatibleNodes(*observed->nodeDrivers, ""), 2);
  bool promoted = false;
  for (const auto& f : *observed->releaseFacts) promoted |= f.name == "v2" && f.phase == "Promoted";
  EXPECT_TRUE(promoted);
}

// The lock is resolved once per version of the RuntimeEnv's spec and of its ConfigMap
// (closure_memo.h), not in every reconcile; a RuntimeEnv that is gone is forgotten.
TEST_F(RuntimeEnvControllerTest, ObserveResolvesTheLockOncePerInputVersion) {
  auto rte = [](int64_t generation) {
    return testing::runtimeEnv("torch")
        .image(kImage)
        .configMapLock("locks", "req.txt")
        .uid("u1")
        .generation(generation)
        .build();
  };
  kube::Object cm = testing::configMap("locks", {{"req.txt", kLock}});
  cm["metadata"]["uid"] = "c1";
  cm["metadata"]["resourceVersion"] = "10";
  put(runtimeEnvs_, rte(1));
  put(configMaps_, cm);
  auto first = reconciler_.observe({"ml", "torch"});
  ASSERT_TRUE(first.has_value() && first->lock != nullptr);
  EXPECT_TRUE(first->lock->ok) << first->lock->message;
  EXPECT_EQ(first->lock->closure.packageCount(), 2u);
  // A status write or a node or release change: the same inputs, the same resolution.
  kube::Object written = rte(1);
  written["status"]["closureHash"] = first->lock->closure.closureHash;
  put(runtimeEnvs_, written);
  EXPECT_EQ(reconciler_.observe({"ml", "torch"})->lock, first->lock);
  // The spec moved: resolved again.
  put(runtimeEnvs_, rte(2));
  auto second = reconciler_.observe({"ml", "torch"});
  EXPECT_NE(second->lock, first->lock);
  EXPECT_EQ(reconciler_.observe({"ml", "torch"})->lock, second->lock);
  // The ConfigMap moved: resolved again, from its new data.
  cm["metadata"]["resourceVersion"] = "11";
  cm["data"]["req.txt"] = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";
  put(configMaps_, cm);
  auto third = reconciler_.observe({"ml", "torch"});
  EXPECT_NE(third->lock, second->lock);
  EXPECT_EQ(third->lock->closure.packageCount(), 1u);
  EXPECT_EQ(reconciler_.closureMemo().size(), 1u);
  // Gone: the reconcile that finds it absent drops its entry.
  runtimeEnvs_.erase("ml/torch");
  EXPECT_TRUE(reconcile().error.isOk());
  EXPECT_EQ(reconciler_.closureMemo().size(), 0u);
}

}  // namespace
}  // namespace lockstep::controllers
