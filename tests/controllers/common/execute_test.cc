// The generic execution of a plan, over FakeTransport and FakeEventSink:
// owned objects, then other objects' status, prune, Events, own status last;
// the first failing write stops the plan and resultFor() decides the retry.
#include "controllers/common/execute.h"

#include <gtest/gtest.h>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "tests/support/builders.h"
#include "tests/support/fake_event_sink.h"
#include "tests/support/fake_transport.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;
using testing::FakeTransport;

class ExecuteTest : public ::testing::Test {
 protected:
  ExecuteTest() {
    kube::ClientOptions o;
    o.fieldManager = v1::kOperatorFieldManager;
    client_ = std::make_shared<kube::Client>(transport_, o);
    owner_ = testing::modelRelease("v7").uid("uid-7").share();

    PlannedApply job;
    job.resource = v1::kJobs;
    job.object = kube::newObject(v1::kJobs, "ml", "v7-eval");
    job.what = "creating Job v7-eval";
    plan_.apply.push_back(job);
    PlannedApply other;
    other.resource = v1::kRuntimeEnvs;
    other.object = statusApply(v1::kRuntimeEnvs, "ml", "torch", {{"conditions", json::array()}});
    other.fieldManager = "lockstep-other-controller";
    other.ignoreNotFound = true;
    other.what = "marking RuntimeEnv torch";
    plan_.applyStatus.push_back(other);
    plan_.prune.push_back({v1::kJobs, "ml", "v6-eval", "uid-old"});
    plan_.events.push_back({owner_, kube::kEventTypeNormal, "StageStarted", "eval"});
    PlannedApply own;
    own.resource = v1::kModelReleases;
    own.object = statusApply(v1::kModelReleases, "ml", "v7", {{"phase", "Evaluating"}});
    plan_.status = own;
  }
  ExecutionOutcome run() { return execute(plan_, *client_, events_, "test"); }
  std::vector<std::string> uris() {
    std::vector<std::string> out;
    for (const auto& r : transport_->requests()) out.push_back(r.method + " " + r.uri());
    return out;
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::shared_ptr<kube::Client> client_;
  testing::FakeEventSink events_;
  kube::ObjectPtr owner_;
  ExecutionPlan plan_;
};

TEST_F(ExecuteTest, WritesInOrderWithTheStatusLast) {
  transport_->setHandler([](const kube::Request& r) -> std::optional<testing::FakeReply> {
    return FakeTransport::ok(r.body.empty() ? json::object() : json::parse(r.body));
  });
  ExecutionOutcome out = run();
  EXPECT_TRUE(out.result.error.isOk()) << out.result.error.toString();
  EXPECT_TRUE(out.statusWritten);
  EXPECT_EQ(uris(), (std::vector<std::string>{
                        "PATCH /apis/batch/v1/namespaces/ml/jobs/v7-eval"
                        "?fieldManager=lockstep-operator&force=true",
                        "PATCH /apis/lockstep.dev/v1alpha1/namespaces/ml/runtimeenvs/torch/status"
                        "?fieldManager=lockstep-other-controller&force=true",
                        "DELETE /apis/batch/v1/namespaces/ml/jobs/v6-eval",
                        "PATCH /apis/lockstep.dev/v1alpha1/namespaces/ml/modelreleases/v7/status"
                        "?fieldManager=lockstep-operator&force=true"}));
  // The prune is guarded by the uid it planned for.
  EXPECT_EQ(json::parse(transport_->requests()[2].body)["preconditions"]["uid"], "uid-old");
  ASSERT_EQ(events_.events().size(), 1u);
  EXPECT_EQ(events_.events()[0].involvedName, "v7");
}

TEST_F(ExecuteTest, TheFirstFailureStopsThePlanBeforeTheStatus) {
  transport_->push(FakeTransport::ok(json::object()));
  transport_->push(FakeTransport::status(503, "ServiceUnavailable", "etcd leader changed"));
  ExecutionOutcome out = run();
  EXPECT_EQ(out.result.error.code(), Code::kUnavailable);
  EXPECT_FALSE(out.result.terminal);  // retried with backoff
  EXPECT_NE(out.result.error.message().find("marking RuntimeEnv torch"), std::string::npos);
  EXPECT_EQ(transport_->requestCount(), 2u);
  EXPECT_FALSE(out.statusWritten);
  EXPECT_TRUE(events_.events().empty());
}

TEST_F(ExecuteTest, GoneTargetsAreFineWhereThePlanSaysSo) {
  transport_->push(FakeTransport::ok(json::object()));
  transport_->push(FakeTransport::status(404, "NotFound", "runtimeenvs \"torch\" not found"));
  transport_->push(FakeTransport::status(404, "NotFound", "jobs \"v6-eval\" not found"));
  transport_->push(FakeTransport::ok(json::object()));
  ExecutionOutcome out = run();
  EXPECT_TRUE(out.result.error.isOk()) << out.result.error.toString();
  EXPECT_TRUE(out.statusWritten);
}

TEST_F(ExecuteTest, ConflictOnTheStatusRequeuesAndFailingEventsDoNot) {
  events_.failWith(unavailable("events API down"));
  transport_->push(FakeTransport::ok(json::object()));
  transport_->push(FakeTransport::ok(json::object()));
  transport_->push(FakeTransport::ok(json::object()));
  transport_->push(FakeTransport::status(409, "Conflict", "the object has been modified"));
  ExecutionOutcome out = run();
  EXPECT_EQ(out.result.error.code(), Code::kConflict);
  EXPECT_FALSE(out.result.terminal);
  EXPECT_FALSE(out.statusWritten);
  EXPECT_EQ(transport_->requestCount(), 4u);
}

TEST_F(ExecuteTest, TheObjectGoneMeanwhileIsDone) {
  plan_ = {};
  PlannedApply own;
  own.resource = v1::kModelReleases;
  own.object = statusApply(v1::kModelReleases, "ml", "v7", json::object());
  plan_.status = own;
  transport_->push(FakeTransport::status(404, "NotFound", "modelreleases \"v7\" not found"));
  ExecutionOutcome out = run();
  EXPECT_TRUE(out.result.error.isOk());
  EXPECT_FALSE(out.statusWritten);
}

// "No write over a newcomer": a create of a name that was free when read
// treats AlreadyExists as a Conflict (plan again), an ordinary create as done;
// a uid precondition reaches the body of an apply and of a merge patch.
TEST_F(ExecuteTest, ACreateThatMustFindTheNameFreeAndUidPreconditions) {
  plan_ = {};
  PlannedApply job =
      plannedCreate(v1::kJobs, kube::newObject(v1::kJobs, "ml", "v7-eval"), "creating Job v7-eval");
  plan_.apply.push_back(job);
  PlannedApply svc = plannedCreate(v1::kServices, kube::newObject(v1::kServices, "ml", "gpt2"),
                                   "creating Service gpt2");
  svc.alreadyExistsIsConflict = true;
  plan_.apply.push_back(svc);
  transport_->push(FakeTransport::status(409, "AlreadyExists", "jobs \"v7-eval\" already exists"));
  transport_->push(FakeTransport::status(409, "AlreadyExists", "services \"gpt2\" already exists"));
  ExecutionOutcome out = run();
  EXPECT_EQ(out.applied, 1u) << "the Job's AlreadyExists is done";
  EXPECT_EQ(out.result.error.code(), Code::kConflict) << out.result.error.toString();
  EXPECT_FALSE(out.result.terminal);
  EXPECT_NE(out.result.error.message().find(
                "Service gpt2 was created by someone else after it was read; planning again"),
            std::string::npos)
      << out.result.error.toString();

  plan_ = {};
  PlannedApply apply =
      plannedApply(v1::kServices, kube::newObject(v1::kServices, "ml", "gpt2"), "applying");
  apply.uid = "svc-uid";
  plan_.apply.push_back(apply);
  PlannedApply scale = plannedMergePatch(v1::kDeployments, "ml", "gpt2-stable",
                                         json{{"spec", {{"replicas", 3}}}}, "scaling");
  scale.uid = "dep-uid";
  plan_.apply.push_back(scale);
  transport_->push(FakeTransport::ok(json::object()));
  transport_->push(FakeTransport::ok(json::object()));
  out = run();
  EXPECT_TRUE(out.result.error.isOk()) << out.result.error.toString();
  std::vector<kube::Request> sent = transport_->requests();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(json::parse(sent[2].body)["metadata"]["uid"], "svc-uid");
  EXPECT_EQ(json::parse(sent[3].body)["metadata"]["uid"], "dep-uid");
  EXPECT_EQ(json::parse(sent[3].body)["spec"]["replicas"], 3);

  // Replaced meanwhile: kube-apiserver answers a changed uid with 422
  // "metadata.uid: ... field is immutable" (seen on 1.36): a Conflict, planned again.
  transport_->push(FakeTransport::status(
      422, "Invalid",
      "Service \"gpt2\" is invalid: metadata.uid: Invalid value: \"svc-uid\": field is immutable"));
  out = run();
  EXPECT_EQ(out.result.error.code(), Code::kConflict) << out.result.error.toString();
  EXPECT_NE(out.result.error.message().find("Service gpt2 was replaced since it was read"),
            std::string::npos)
      << out.result.error.toString();
}

}  // namespace
}  // namespace lockstep::controllers
