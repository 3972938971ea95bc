#include "api/v1alpha1/model_release.h"

#include <gtest/gtest.h>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

// The sketch of docs/contracts.md, as a user writes it.
const char* kRelease = R"json({
  "apiVersion": "lockstep.dev/v1alpha1", "kind": "ModelRelease",
  "metadata": {"name": "gpt2-small-v7", "namespace": "ml", "generation": 1, "uid": "u1"},
  "spec": {
    "model": "gpt2-small",
    "package": "registry.example/models/gpt2-small@sha256:ab12",
    "runtimeEnvRef": {"name": "torch-2-5-cu124"},
    "closureHash": "sha256:9c0e",
    "stages": [
      {"name": "eval",
       "gate": {"template": {"spec": {"containers": [{"name": "eval"}]}},
                "metrics": [{"name": "accuracy", "min": 0.82}, {"name": "loss", "max": 1.5}],
                "timeout": "30m"}},
      {"name": "ci", "approval": "Manual", "gate": {"template": {}, "timeout": "20m"}},
      {"name": "prod",
       "serving": {"template": {"spec": {}}, "replicas": 10, "port": 8080},
       "canary": {"steps": [{"weight": 10, "pause": "5m"}, {"weight": 50, "pause": "10m"},
                            {"weight": 100}],
                  "analysis": {"prometheus": {"provider": "prometheus-main",
                                              "query": "sum(x)", "max": 0.01,
                                              "interval": "30s", "failureLimit": 2}}}}
    ]
  },
  "status": {
    "observedGeneration": 1, "phase": "Canary", "currentStage": "prod", "canaryStep": 1,
    "previousRelease": "gpt2-small-v6", "validatedClosureHash": "sha256:9c0e",
    "stages": [{"name": "eval", "phase": "Succeeded", "metrics": {"accuracy": 0.84},
                "startedAt": "2026-11-29T10:00:00Z", "finishedAt": "2026-11-29T10:20:00Z"},
               {"name": "ci", "phase": "Succeeded", "approvedBy": "alice"}],
    "conditions": [{"type": "Ready", "status": "False", "reason": "CanaryInProgress"}]
  }
})json";

TEST(ModelReleaseView, DecodesTheWholeSpec) {
  ModelRelease r = decodeModelRelease(json::parse(kRelease));
  EXPECT_EQ(r.spec.model, "gpt2-small");
  EXPECT_EQ(r.spec.runtimeEnvName, "torch-2-5-cu124");
  EXPECT_EQ(r.runtimeEnvKey(), "ml/torch-2-5-cu124");
  ASSERT_EQ(r.spec.stages.size(), 3u);

  const Stage& eval = r.spec.stages[0];
  ASSERT_TRUE(eval.gate.has_value());
  EXPECT_EQ(eval.approval, Approval::kAutomatic);
  ASSERT_EQ(eval.gate->metrics.size(), 2u);
  EXPECT_EQ(eval.gate->metrics[0].name, "accuracy");
  EXPECT_EQ(eval.gate->metrics[0].min, 0.82);
  EXPECT_FALSE(eval.gate->metrics[0].max.has_value());
  EXPECT_EQ(eval.gate->metrics[1].max, 1.5);
  EXPECT_EQ(eval.gate->timeout.text, "30m");
  EXPECT_EQ(eval.gate->timeout.value, std::chrono::minutes(30));
  EXPECT_EQ(eval.gate->podTemplate["spec"]["containers"][0]["name"], "eval");

  EXPECT_EQ(r.spec.stages[1].approval, Approval::kManual);

  const Stage& prod = r.spec.stages[2];
  EXPECT_FALSE(prod.gate.has_value());
  ASSERT_TRUE(prod.serving.has_value());
  EXPECT_EQ(prod.serving->replicas, 10);
  ASSERT_TRUE(prod.canary.has_value());
  ASSERT_EQ(prod.canary->steps.size(), 3u);
  EXPECT_EQ(prod.canary->steps[1].weight, 50);
  EXPECT_EQ(prod.canary->steps[1].pause, "10m");
  EXPECT_EQ(prod.canary->steps[2].pause, "");
  ASSERT_TRUE(prod.canary->analysis.has_value());
  EXPECT_TRUE(prod.canary->analysis->prometheusGiven);
  EXPECT_EQ(prod.canary->analysis->max, 0.01);
  EXPECT_EQ(prod.canary->analysis->failureLimit, 2);
  EXPECT_EQ(prod.canary->analysis->interval.value, std::chrono::seconds(30));
  EXPECT_EQ(r.prodStage(), &prod);

  // The same stage checked for a rollout, as the canary planner runs it.
  auto spec = canarySpecOf(prod);
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  EXPECT_EQ(spec->replicas, 10);
  EXPECT_EQ(spec->capacity, CapacityMode::kSurge);
  ASSERT_EQ(spec->steps.size(), 3u);
  EXPECT_EQ(spec->steps[1].pause, CanaryStep::Pause::kDuration);
  EXPECT_EQ(spec->steps[1].pauseSeconds, 600);
  EXPECT_EQ(spec->steps[2].pause, CanaryStep::Pause::kNone);
  ASSERT_TRUE(spec->steps[0].analysis.has_value());  // the canary default, on every step
  EXPECT_EQ(spec->steps[0].analysis->failureLimit, 2);
  EXPECT_EQ(spec->steps[0].analysis->intervalSeconds, 30);
  EXPECT_TRUE(checkStages(r.spec).isOk());
}

TEST(ModelReleaseView, ChecksNameTheField) {
  ModelRelease r = decodeModelRelease(json::parse(kRelease));
  r.spec.stages[0].gate->timeout = {"soon", std::nullopt};
  Status s = checkStages(r.spec);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("spec.stages[0].gate.timeout \"soon\""), std::string::npos)
      << s.message();
  r.spec.stages.clear();
  EXPECT_EQ(checkStages(r.spec).message(), "spec.stages is empty");

  Stage prod = decodeModelRelease(json::parse(kRelease)).spec.stages[2];
  prod.canary->steps[0].weight = 101;
  auto bad = canarySpecOf(prod);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(), "stage \"prod\".canary.steps[0].weight must be 0..100");
  prod.canary->steps[0].weight = 10;
  prod.canary->analysis->query = "";
  EXPECT_EQ(canarySpecOf(prod).status().message(),
            "stage \"prod\".canary.analysis.prometheus needs query or template (an "
            "AnalysisTemplate's name)");
  prod.canary->analysis->query = "sum(x)";
  ASSERT_TRUE(canarySpecOf(prod).isOk());
  EXPECT_EQ(canarySpecOf(prod)->steps[0].analysis->provider, "prometheus-main");
  prod.canary->analysis->address = "http://prometheus:9090";
  EXPECT_EQ(canarySpecOf(prod).status().message(),
            "stage \"prod\".canary.analysis.prometheus needs provider (an AnalysisProvider's "
            "name), not also address");
}

TEST(ModelReleaseView, DecodesStatus) {
  ModelRelease r = decodeModelRelease(json::parse(kRelease));
  EXPECT_EQ(r.status.phase, Phase::kCanary);
  EXPECT_EQ(r.status.stages[0].phase, StagePhase::kSucceeded);
  EXPECT_EQ(r.status.canaryStep, 1);
  ASSERT_EQ(r.status.stages.size(), 2u);
  EXPECT_EQ(r.status.stages[0].metrics.at("accuracy"), 0.84);
  EXPECT_EQ(r.status.stages[1].approvedBy, "alice");
  EXPECT_EQ(r.validatedClosureHash(), "sha256:9c0e");
  EXPECT_FALSE(r.ready());
}

TEST(ModelReleaseView, DefaultsAndFallbacks) {
  json o = {{"metadata", {{"name", "m"}, {"namespace", "ml"}}},
            {"spec",
             {{"closureHash", "sha256:aa"},
              {"stages",
               {{{"name", "prod"},
                 {"serving", json::object()},
                 {"canary", {{"analysis", {{"prometheus", {{"interval", "soon"}}}}}}}}}}}}};
  ModelRelease r = decodeModelRelease(o);
  EXPECT_EQ(r.validatedClosureHash(), "sha256:aa");  // nothing validated yet: the spec's
  EXPECT_EQ(r.runtimeEnvKey(), "");
  EXPECT_EQ(indexByRuntimeEnv(o), std::vector<std::string>{});
  EXPECT_EQ(r.spec.stages[0].serving->replicas, 1);
  EXPECT_EQ(r.spec.stages[0].serving->port, 8080);
  // failureLimit defaults to 0, as in the CRD, docs/rollouts.md and the canary planner.
  EXPECT_EQ(r.spec.stages[0].canary->analysis->failureLimit, 0);
  EXPECT_EQ(r.spec.stages[0].canary->analysis->consecutiveErrorLimit, 4);
  EXPECT_EQ(r.spec.stages[0].canary->analysis->interval.text, "soon");
  EXPECT_FALSE(r.spec.stages[0].canary->analysis->interval.value.has_value());
  EXPECT_EQ(canarySpecOf(r.spec.stages[0]).status().message(),
            "stage \"prod\".canary.analysis.prometheus needs provider (an AnalysisProvider's "
            "name)");
  EXPECT_EQ(r.status.observedGeneration, -1);
}

TEST(ModelReleaseView, PhaseNamesRoundTrip) {
  for (Phase p : {Phase::kPending, Phase::kValidated, Phase::kRolledBack, Phase::kSuperseded}) {
    EXPECT_EQ(parsePhase(phaseName(p)), p);
  }
  EXPECT_EQ(phaseName(Phase::kRolledBack), "RolledBack");
  EXPECT_EQ(phaseName(Phase::kValidated), kPhaseValidated);
  EXPECT_EQ(parsePhase("Validated"), Phase::kValidated);
  EXPECT_EQ(stagePhaseName(StagePhase::kWaitingForApproval), "WaitingForApproval");
  EXPECT_EQ(parseStagePhase("Failed"), StagePhase::kFailed);
  EXPECT_FALSE(parsePhase("rolledback").has_value());
  EXPECT_FALSE(parsePhase("").has_value());
}

TEST(ModelReleaseView, IndexByRuntimeEnv) {
  EXPECT_EQ(indexByRuntimeEnv(json::parse(kRelease)),
            std::vector<std::string>{"ml/torch-2-5-cu124"});
}

TEST(ModelReleaseView, RegistryTags) {
  json o = {{"metadata", {{"name", "m"}, {"namespace", "ml"}}},
            {"spec", {{"registryTags", {{"secretRef", {{"name", "pull"}}}}}}},
            {"status",
             {{"registryTags",
               {{{"tag", "eval"},
                 {"reference", "r.example/m:eval"},
                 {"digest", "sha256:aa"},
                 {"phase", "Failed"},
                 {"attempts", 3},
                 {"message", "HTTP 401"}}}}}}};
  ModelRelease r = decodeModelRelease(o);
  ASSERT_TRUE(r.spec.registryTags.has_value());
  EXPECT_TRUE(r.spec.registryTags->enabled);  // the block given turns it on
  EXPECT_EQ(r.spec.registryTags->secretName, "pull");
  ASSERT_EQ(r.status.registryTags.size(), 1u);
  EXPECT_EQ(r.status.registryTags[0].reference, "r.example/m:eval");
  EXPECT_EQ(r.status.registryTags[0].phase, "Failed");
  EXPECT_EQ(r.status.registryTags[0].attempts, 3);
  o["spec"]["registryTags"]["enabled"] = false;
  EXPECT_FALSE(decodeModelRelease(o).spec.registryTags->enabled);
  o["spec"].erase("registryTags");
  EXPECT_FALSE(decodeModelRelease(o).spec.registryTags.has_value());
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
