#include "controllers/runtimeenv/runtimeenv_plan.h"

#include <string>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "closure/closure.h"
#include "tests/support/builders.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;
using namespace api::v1alpha1;  // NOLINT(google-build-using-namespace): reasons and types
using kube::conditionTrue;
using kube::findCondition;

const std::string kImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kNow = "2026-11-29T10:00:00Z";
const std::string kLater = "2026-11-29T11:00:00Z";

std::string hex64(char c) { return std::string(64, c); }

// A pip --require-hashes lock pinning a CUDA runtime release.
std::string pipLock(const std::string& cudaRuntime, const std::string& numpy = "1.26.4") {
  return "numpy==" + numpy + " --hash=sha256:" + hex64('a') + "\n" +
         "nvidia-cuda-runtime-cu12==" + cudaRuntime + " --hash=sha256:" + hex64('b') + "\n";
}

// A RuntimeEnv under test: pinned image, an inline lock with CUDA 12.8.
testing::RuntimeEnvBuilder RteBuilder(const std::string& name) {
  return testing::runtimeEnv(name).image(kImage).inlineLock(pipLock("12.8.90"));
}

std::vector<json> testNodes() {
  return {testing::cpuNode("cpu-0"), testing::gpuNode("gpu-0", "570", "124", "06"),
          testing::gpuNode("gpu-1", "570", "124", "06"),
          testing::gpuNode("gpu-old-0", "535", "183", "01")};
}

// The observed state as values, for tables; the planner reads the caches'
// shared objects, as the shell hands them over.
struct Observed {
  json runtimeEnv;
  std::optional<json> configMap;
  std::vector<json> nodes;
  std::vector<json> releases = {};

  RuntimeEnvObserved shared() const {
    RuntimeEnvObserved o;
    o.runtimeEnv = testing::share(runtimeEnv);
    if (configMap) o.configMap = testing::share(*configMap);
    for (const auto& n : nodes) o.nodes.push_back(testing::share(n));
    for (const auto& r : releases) o.releases.push_back(testing::share(r));
    return o;
  }
};

RuntimeEnvPlan plan(const Observed& o, const std::string& now) {
  return planRuntimeEnv(o.shared(), now);
}

json readyCondition(const RuntimeEnvPlan& p) {
  return findCondition(p.status["conditions"], "Ready").value_or(json());
}

TEST(RuntimeEnvPlan, ResolvesInlineLockAndMatchesTheCliHash) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvPlan p = plan(o, kNow);

  // Pinned, not recomputed with computeClosure (the function the planner calls): the hash
  // of docs/closure-hash.md's canonical text of pipLock("12.8.90"), worked out by hand —
  //   printf 'lockstep-closure-v1\npypi\tnumpy\t1.26.4\tsha256:a…a\n'
  //          'pypi\tnvidia-cuda-runtime-cu12\t12.8.90\tsha256:b…b\n' | sha256sum
  // — and what `lockstep closure-hash` prints for that file.
  const std::string expected =
      "sha256:5c38c8e75a81321670b61b96c9f7064cbe89791d438584026dd784ed77ca650a";
  EXPECT_EQ(p.status["closureHash"], expected);
  EXPECT_EQ(p.status["shortHash"], "5c38c8e75a81");
  EXPECT_EQ(p.status["packageCount"], 2);
  EXPECT_EQ(p.status["format"], "pip");
  EXPECT_EQ(p.status["observedGeneration"], 1);
  EXPECT_EQ(p.status["image"], kImage);
  EXPECT_EQ(readyCondition(p)["status"], "True");
  EXPECT_EQ(readyCondition(p)["reason"], kReasonResolved);
  EXPECT_TRUE(p.statusChanged);
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[0].reason, kReasonResolved);
  EXPECT_EQ(p.events[1].reason, kReasonRevisionCreated);
}

// The shell hands in the lock resolved already (its ClosureMemo): the plan takes it
// and does not resolve the lock again.
TEST(RuntimeEnvPlan, TakesTheLockTheShellResolved) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvObserved shared = o.shared();
  LockResolution kept = resolveLock(decodeRuntimeEnv(o.runtimeEnv), nullptr);
  ASSERT_TRUE(kept.ok);
  kept.closure.closureHash = "sha256:" + hex64('c');  // not what this spec's lock gives
  shared.lock = std::make_shared<const LockResolution>(kept);
  RuntimeEnvPlan p = planRuntimeEnv(shared, kNow);
  EXPECT_EQ(p.status["closureHash"], "sha256:" + hex64('c'));

  LockResolution failed;
  failed.reason = kReasonLockParseError;
  failed.message = "kept failure";
  shared.lock = std::make_shared<const LockResolution>(failed);
  p = planRuntimeEnv(shared, kNow);
  EXPECT_EQ(readyCondition(p)["reason"], kReasonLockParseError);
  EXPECT_EQ(readyCondition(p)["message"], "kept failure");
}

TEST(RuntimeEnvPlan, CountsCompatibleNodesByCudaRelease) {
  struct Case {
    std::string runtime;
    std::string cuda;
    std::string minDriver;
    int nodes;
  };
  for (const Case& c :
       {Case{"12.8.90", "12.8", "570.26", 2}, Case{"12.1.105", "12.1", "530.30.02", 3},
        Case{"12.9.79", "12.9", "575.51.03", 0}}) {
    SCOPED_TRACE(c.runtime);
    Observed o{RteBuilder("torch").inlineLock(pipLock(c.runtime)).build(), std::nullopt,
               testNodes()};
    RuntimeEnvPlan p = plan(o, kNow);
    EXPECT_EQ(p.status["cuda"], c.cuda);
    EXPECT_EQ(p.status["minDriver"], c.minDriver);
    EXPECT_EQ(p.status["compatibleNodes"], c.nodes);
    auto degraded = findCondition(p.status["conditions"], "Degraded");
    ASSERT_TRUE(degraded);
    EXPECT_EQ((*degraded)["status"], c.nodes == 0 ? "True" : "False");
    if (c.nodes == 0) EXPECT_EQ((*degraded)["reason"], kReasonNoCompatibleNodes);
    // No compatible nodes is degraded, not unready: admission keeps working.
    EXPECT_EQ(readyCondition(p)["status"], "True");
  }
}

TEST(RuntimeEnvPlan, UnschedulableNodesAreNotCounted) {
  auto nodes = testNodes();
  nodes[1]["spec"]["unschedulable"] = true;
  Observed o{RteBuilder("torch").build(), std::nullopt, nodes};
  EXPECT_EQ(plan(o, kNow).status["compatibleNodes"], 1);
}

TEST(RuntimeEnvPlan, AcceleratorSpecOverridesDetection) {
  json rte = RteBuilder("torch").build();
  rte["spec"]["accelerator"] = {{"cuda", "12.1"}};
  Observed o{rte, std::nullopt, testNodes()};
  RuntimeEnvPlan p = plan(o, kNow);
  EXPECT_EQ(p.status["cuda"], "12.1");
  EXPECT_EQ(p.status["minDriver"], "530.30.02");
  EXPECT_EQ(p.status["compatibleNodes"], 3);
  rte["spec"]["accelerator"] = {{"cuda", "12.1"}, {"minDriver", "571"}};
  o.runtimeEnv = rte;
  p = plan(o, kNow);
  EXPECT_EQ(p.status["minDriver"], "571");
  EXPECT_EQ(p.status["compatibleNodes"], 0);
}

TEST(RuntimeEnvPlan, CpuOnlyLockHasNoCudaFields) {
  std::string lock = "requests==2.32.3 --hash=sha256:" + hex64('c') + "\n";
  Observed o{RteBuilder("cpu").inlineLock(lock).build(), std::nullopt, testNodes()};
  RuntimeEnvPlan p = plan(o, kNow);
  EXPECT_FALSE(p.status.contains("cuda"));
  EXPECT_FALSE(p.status.contains("compatibleNodes"));
  EXPECT_EQ(readyCondition(p)["status"], "True");
}

TEST(RuntimeEnvPlan, ClassifiesFailures) {
  struct Case {
    std::string what;
    json rte;
    std::optional<json> configMap;
    std::string reason;
    std::string inMessage;
  };
  std::vector<Case> cases = {
      {"tag image", RteBuilder("t").image("registry.example/runtimes/torch:2.5").build(),
       std::nullopt, kReasonImageNotPinned, "registry.example/runtimes/torch:2.5"},
      {"uppercase digest", RteBuilder("t").image("r/x@sha256:" + std::string(64, 'A')).build(),
       std::nullopt, kReasonImageNotPinned, "not pinned by digest"},
      {"missing configmap", RteBuilder("t").configMapLock("locks", "uv.lock").build(), std::nullopt,
       kReasonLockNotFound, "\"locks\""},
      {"missing key", RteBuilder("t").configMapLock("locks", "uv.lock").build(),
       json{{"data", {{"other", "x"}}}}, kReasonLockNotFound, "no key \"uv.lock\""},
      {"binaryData key", RteBuilder("t").configMapLock("locks", "uv.lock").build(),
       json{{"binaryData", {{"uv.lock", "eA=="}}}}, kReasonLockNotFound, "binaryData"},
      {"unhashed", RteBuilder("t").inlineLock("numpy==1.26.4\n").build(), std::nullopt,
       kReasonUnhashedPackage, "numpy"},
      {"garbage", RteBuilder("t").inlineLock("version = 1\n[[package]\nname=").build(),
       std::nullopt, kReasonLockParseError, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Observed o{c.rte, c.configMap, testNodes()};
    RuntimeEnvPlan p = plan(o, kNow);
    json ready = readyCondition(p);
    EXPECT_EQ(ready["status"], "False");
    EXPECT_EQ(ready["reason"], c.reason);
    EXPECT_NE(ready["message"].get<std::string>().find(c.inMessage), std::string::npos)
        << ready["message"];
    EXPECT_TRUE(conditionTrue(p.status["conditions"], "Stalled"));
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].type, "Warning");
    EXPECT_EQ(p.events[0].reason, c.reason);
  }
}

TEST(RuntimeEnvPlan, ParseErrorNamesTheLineAndSource) {
  Observed o{RteBuilder("t").configMapLock("locks", "requirements.txt").build(),
             json{{"data", {{"requirements.txt", "numpy==1.26.4 --hash=sha256:zz\n"}}}},
             {}};
  json ready = readyCondition(plan(o, kNow));
  std::string m = ready["message"];
  EXPECT_NE(m.find("configmap/locks[requirements.txt]:1"), std::string::npos) << m;
}

TEST(RuntimeEnvPlan, PipIncludesResolveToOtherConfigMapKeys) {
  std::string base = "numpy==1.26.4 --hash=sha256:" + hex64('a') + "\n";
  std::string cuda = "nvidia-cuda-runtime-cu12==12.8.90 --hash=sha256:" + hex64('b') + "\n";
  json cm = {{"data", {{"requirements.txt", "-r base.txt\n" + cuda}, {"base.txt", base}}}};
  Observed o{RteBuilder("t").configMapLock("locks", "requirements.txt").build(), cm, testNodes()};
  RuntimeEnvPlan withInclude = plan(o, kNow);
  ASSERT_EQ(readyCondition(withInclude)["status"], "True") << withInclude.status.dump(2);
  Observed flat{RteBuilder("t").inlineLock(pipLock("12.8.90")).build(), std::nullopt, testNodes()};
  EXPECT_EQ(withInclude.status["closureHash"], plan(flat, kNow).status["closureHash"]);

  // A missing include is a parse error naming it, not a crash.
  cm["data"].erase("base.txt");
  o.configMap = cm;
  json ready = readyCondition(plan(o, kNow));
  EXPECT_EQ(ready["reason"], kReasonLockParseError);
  EXPECT_NE(ready["message"].get<std::string>().find("base.txt"), std::string::npos) << ready;
}

// issue 13: a 27 KB ConfigMap whose pip includes repeat each other resolves
// (each include is parsed once); one over a limit of docs/limits.md is Stalled
// with reason LockTooLarge, chosen from the error code.
TEST(RuntimeEnvPlan, AmplifyingIncludesResolveAndOverLimitLocksAreLockTooLarge) {
  std::string r, a;
  for (int i = 0; i < 3000; ++i) {
    r += "-r a.txt\n";
    a += "-r b.txt\n";
  }
  json cm = {
      {"data",
       {{"r.txt", r}, {"a.txt", a}, {"b.txt", "six==1.16.0 --hash=sha256:" + hex64('a') + "\n"}}}};
  Observed o{RteBuilder("t").configMapLock("locks", "r.txt").build(), cm, testNodes()};
  RuntimeEnvPlan p = plan(o, kNow);
  ASSERT_EQ(readyCondition(p)["status"], "True") << p.status.dump(2);
  EXPECT_EQ(p.status["packageCount"], 1);

  // 257 distinct includes: one more than the limit.
  std::string many;
  json data = json::object();
  for (size_t i = 0; i <= closure::kMaxIncludeFiles; ++i) {
    many += "-r f" + std::to_string(i) + ".txt\n";
    data["f" + std::to_string(i) + ".txt"] = "# empty\n";
  }
  data["r.txt"] = many;
  o.configMap = json{{"data", data}};
  p = plan(o, kNow);
  json ready = readyCondition(p);
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], kReasonLockTooLarge);
  EXPECT_NE(ready["message"].get<std::string>().find("256 included files"), std::string::npos)
      << ready;
  json stalled = findCondition(p.status["conditions"], "Stalled").value_or(json());
  EXPECT_EQ(stalled["status"], "True");
  EXPECT_EQ(stalled["reason"], kReasonLockTooLarge);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, kReasonLockTooLarge);
}

TEST(RuntimeEnvPlan, AllowUnhashedMarksWeak) {
  Observed o{RteBuilder("t").inlineLock("numpy==1.26.4\n").allowUnhashed().build(), std::nullopt,
             testNodes()};
  RuntimeEnvPlan p = plan(o, kNow);
  EXPECT_EQ(readyCondition(p)["status"], "True");
  EXPECT_EQ(p.status["weak"], true);
}

TEST(RuntimeEnvPlan, SteadyStateWritesNothing) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvPlan first = plan(o, kNow);
  o.runtimeEnv["status"] = first.status;
  RuntimeEnvPlan second = plan(o, kLater);
  EXPECT_FALSE(second.statusChanged);
  EXPECT_TRUE(second.events.empty());
  // lastTransitionTime kept from the first transition.
  EXPECT_EQ(readyCondition(second)["lastTransitionTime"], kNow);
}

TEST(RuntimeEnvPlan, FailureKeepsLastResolvedHashButIsNotReady) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvPlan good = plan(o, kNow);
  o.runtimeEnv =
      RteBuilder("torch").inlineLock("numpy==1\n").generation(2).status(good.status).build();
  RuntimeEnvPlan bad = plan(o, kLater);
  EXPECT_EQ(bad.status["closureHash"], good.status["closureHash"]);
  EXPECT_EQ(bad.status["observedGeneration"], 2);
  EXPECT_EQ(readyCondition(bad)["status"], "False");
  EXPECT_EQ(readyCondition(bad)["lastTransitionTime"], kLater);
}

TEST(IsDigestPinned, AcceptsOnlyRepoAtSha256) {
  EXPECT_TRUE(isDigestPinned(kImage));
  EXPECT_TRUE(isDigestPinned("localhost:5000/x@sha256:" + hex64('f')));
  EXPECT_FALSE(isDigestPinned("x:1"));
  EXPECT_FALSE(isDigestPinned("@sha256:" + hex64('f')));
  EXPECT_FALSE(isDigestPinned("x@sha256:" + hex64('f') + "0"));
  EXPECT_FALSE(isDigestPinned("x@sha512:" + hex64('f')));
  EXPECT_FALSE(isDigestPinned("x y@sha256:" + hex64('f')));
}

TEST(RuntimeEnvExecutionPlan, EventsOnTheRuntimeEnvThenStatusLast) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  std::string h1 = plan(o, kNow).status["closureHash"];
  RuntimeEnvObserved shared = o.shared();
  RuntimeEnvPlan p = planRuntimeEnv(shared, kNow);
  ExecutionPlan e = executionPlan(p, shared);

  // Only the RuntimeEnv's own status: releases mark themselves Stale.
  EXPECT_TRUE(e.applyStatus.empty());
  ASSERT_EQ(e.events.size(), 2u);
  EXPECT_EQ(e.events[0].involved, shared.runtimeEnv);
  EXPECT_EQ(e.events[0].reason, kReasonResolved);
  EXPECT_EQ(e.events[1].reason, kReasonRevisionCreated);

  ASSERT_TRUE(e.status.has_value());
  EXPECT_EQ(e.status->resource, kRuntimeEnvs);
  EXPECT_EQ(e.status->fieldManager, "");  // the client's: lockstep-operator
  EXPECT_EQ(e.status->object["status"]["closureHash"], h1);
  EXPECT_TRUE(e.apply.empty());
  EXPECT_TRUE(e.prune.empty());
}

TEST(RuntimeEnvExecutionPlan, SteadyStateExecutesNothing) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  o.runtimeEnv["status"] = plan(o, kNow).status;
  RuntimeEnvObserved shared = o.shared();
  ExecutionPlan e = executionPlan(planRuntimeEnv(shared, kLater), shared);
  EXPECT_TRUE(e.applyStatus.empty());
  EXPECT_TRUE(e.events.empty());
  EXPECT_FALSE(e.status.has_value());
}

// A ModelRelease of model gpt2 on RuntimeEnv torch in `phase`, built for `hash`.
json release(const std::string& name, const std::string& hash, const std::string& phase) {
  json mr = testing::modelRelease(name).runtimeEnv("torch").closureHash(hash).build();
  mr["spec"]["model"] = "gpt2";
  mr["status"]["phase"] = phase;
  if (phase == "Promoted") mr["status"]["canary"] = {{"phase", "Promoted"}};
  return mr;
}

const std::string kOtherImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000002";

std::vector<int64_t> revisionNumbers(const json& status) {
  std::vector<int64_t> out;
  for (const auto& r : status.value("revisions", json::array())) out.push_back(r["number"]);
  return out;
}

bool hasEvent(const RuntimeEnvPlan& p, const std::string& reason) {
  for (const auto& e : p.events) {
    if (e.reason == reason) return true;
  }
  return false;
}

TEST(RuntimeEnvRevisions, FirstResolutionRecordsRevisionOne) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvPlan p = plan(o, kNow);
  EXPECT_EQ(p.status["currentRevision"], 1);
  EXPECT_EQ(p.status["pinnedRevisions"], 0);
  ASSERT_EQ(revisionNumbers(p.status), (std::vector<int64_t>{1}));
  const json& r = p.status["revisions"][0];
  EXPECT_EQ(r["image"], kImage);
  EXPECT_EQ(r["closureHash"], p.status["closureHash"]);
  EXPECT_EQ(r["lockDigest"], "sha256:" + closure::sha256Hex(pipLock("12.8.90")));
  EXPECT_EQ(r["cuda"], "12.8");
  EXPECT_EQ(r["minDriver"], p.status["minDriver"]);
  EXPECT_EQ(r["firstResolved"], kNow);
  EXPECT_FALSE(r.contains("pinnedBy"));
  EXPECT_FALSE(p.inUseFinalizer.has_value());  // nothing pins it: no finalizer
}

TEST(RuntimeEnvRevisions, LockEditIsANewRevisionAndThePromotedReleaseKeepsItsOwn) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvPlan first = plan(o, kNow);
  const std::string h1 = first.status["closureHash"];
  o.releases = {release("v1", h1, "Promoted")};
  o.runtimeEnv["status"] = first.status;
  RuntimeEnvPlan pinned = plan(o, kNow);
  EXPECT_EQ(pinned.status["revisions"][0]["pinnedBy"], json::array({"v1"}));
  EXPECT_EQ(pinned.inUseFinalizer, std::optional<bool>(true));

  // The platform engineer adds a package to the lock.
  o.runtimeEnv = RteBuilder("torch")
                     .inlineLock(pipLock("12.8.90") + "six==1.16.0 --hash=sha256:" + hex64('c'))
                     .generation(2)
                     .status(pinned.status)
                     .build();
  o.runtimeEnv["metadata"]["finalizers"] = json::array({kRuntimeEnvInUseFinalizer});
  RuntimeEnvPlan edited = plan(o, kLater);
  EXPECT_NE(edited.status["closureHash"], h1);
  EXPECT_EQ(edited.status["currentRevision"], 2);
  EXPECT_EQ(revisionNumbers(edited.status), (std::vector<int64_t>{1, 2}));
  const json& r1 = edited.status["revisions"][0];
  const json& r2 = edited.status["revisions"][1];
  EXPECT_EQ(r1["closureHash"], h1);
  EXPECT_EQ(r1["pinnedBy"], json::array({"v1"}));
  EXPECT_EQ(r1["lastResolved"], kLater);  // replaced now
  EXPECT_EQ(r2["closureHash"], edited.status["closureHash"]);
  EXPECT_EQ(r2["image"], kImage);
  EXPECT_FALSE(r2.contains("pinnedBy"));
  EXPECT_EQ(edited.status["pinnedRevisions"], 1);
  EXPECT_TRUE(hasEvent(edited, kReasonRevisionCreated));
  EXPECT_FALSE(edited.inUseFinalizer.has_value());  // held already
}

TEST(RuntimeEnvRevisions, ImageSwapWithTheSameLockIsANewRevision) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  RuntimeEnvPlan first = plan(o, kNow);
  o.runtimeEnv = RteBuilder("torch").image(kOtherImage).generation(2).status(first.status).build();
  RuntimeEnvPlan swapped = plan(o, kLater);
  EXPECT_EQ(swapped.status["closureHash"], first.status["closureHash"]);
  EXPECT_EQ(swapped.status["currentRevision"], 2);
  ASSERT_EQ(revisionNumbers(swapped.status), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(swapped.status["revisions"][0]["image"], kImage);
  EXPECT_EQ(swapped.status["revisions"][1]["image"], kOtherImage);
  // Swapping back makes revision 1 current again: no third revision.
  o.runtimeEnv = RteBuilder("torch").generation(3).status(swapped.status).build();
  RuntimeEnvPlan back = plan(o, kLater);
  EXPECT_EQ(back.status["currentRevision"], 1);
  EXPECT_EQ(revisionNumbers(back.status), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(hasEvent(back, kReasonRevisionRestored));
}

TEST(RuntimeEnvRevisions, UnpinnedRevisionsBeyondTheLimitArePruned) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  json status = plan(o, kNow).status;
  const std::string h1 = status["closureHash"];
  for (int i = 1; i <= 3; ++i) {
    o.runtimeEnv = RteBuilder("torch")
                       .inlineLock(pipLock("12.8.90", "1.26." + std::to_string(4 + i)))
                       .generation(1 + i)
                       .status(status)
                       .build();
    o.runtimeEnv["spec"]["revisionHistoryLimit"] = 1;
    o.releases = {release("v1", h1, "Testing")};
    status = plan(o, kLater).status;
  }
  // 4 is current, 1 is pinned by v1 (in a gate), 3 is the one unpinned kept: 2 was pruned.
  EXPECT_EQ(revisionNumbers(status), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(status["currentRevision"], 4);
  // The release leaves its gate (Failed): revision 1 is pruned too.
  o.runtimeEnv = RteBuilder("torch")
                     .inlineLock(pipLock("12.8.90", "1.26.7"))
                     .generation(4)
                     .status(status)
                     .build();
  o.runtimeEnv["spec"]["revisionHistoryLimit"] = 1;
  o.releases = {release("v1", h1, "Failed")};
  RuntimeEnvPlan p = plan(o, kLater);
  EXPECT_EQ(revisionNumbers(p.status), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(hasEvent(p, kReasonRevisionPruned));
}

TEST(RuntimeEnvRevisions, DeletionWaitsForThePinningReleasesThenCompletes) {
  Observed o{RteBuilder("torch").build(), std::nullopt, testNodes()};
  json status = plan(o, kNow).status;
  const std::string h1 = status["closureHash"];
  o.runtimeEnv = RteBuilder("torch").status(status).build();
  o.runtimeEnv["metadata"]["finalizers"] = json::array({kRuntimeEnvInUseFinalizer});
  o.runtimeEnv["metadata"]["deletionTimestamp"] = kLater;
  o.releases = {release("v1", h1, "Promoted"), release("v2", h1, "Evaluating")};
  RuntimeEnvPlan waiting = plan(o, kLater);
  EXPECT_FALSE(waiting.inUseFinalizer.has_value());
  auto t = findCondition(waiting.status["conditions"], kConditionTerminating);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ((*t)["status"], "True");
  EXPECT_EQ((*t)["reason"], kReasonInUse);
  EXPECT_NE((*t)["message"].get<std::string>().find("v1 (revision 1, promoted), v2 (revision 1"),
            std::string::npos)
      << (*t)["message"];
  EXPECT_TRUE(waiting.statusChanged);
  EXPECT_TRUE(hasEvent(waiting, kReasonInUse));

  // The last pinning release is gone: the finalizer goes, and no status is written.
  o.runtimeEnv["status"] = waiting.status;
  o.releases = {};
  RuntimeEnvPlan done = plan(o, kLater);
  EXPECT_EQ(done.inUseFinalizer, std::optional<bool>(false));
  EXPECT_FALSE(done.statusChanged);
  RuntimeEnvObserved shared = o.shared();
  ExecutionPlan e = executionPlan(planRuntimeEnv(shared, kLater), shared);
  ASSERT_EQ(e.apply.size(), 1u);
  EXPECT_EQ(e.apply[0].resource, kRuntimeEnvs);
  EXPECT_EQ(e.apply[0].fieldManager, kOperatorFieldManager);
  EXPECT_FALSE(e.apply[0].object["metadata"].contains("finalizers"));
  EXPECT_FALSE(e.status.has_value());
}

TEST(RuntimeEnvRevisions, FinalizerIsAppliedWithTheUidAndRemovedWhenUnpinned) {
  Observed o{RteBuilder("torch").uid("uid-1").build(), std::nullopt, testNodes()};
  json status = plan(o, kNow).status;
  o.runtimeEnv["status"] = status;
  o.releases = {release("v1", status["closureHash"], "Canary")};
  RuntimeEnvObserved shared = o.shared();
  ExecutionPlan e = executionPlan(planRuntimeEnv(shared, kNow), shared);
  ASSERT_EQ(e.apply.size(), 1u);
  EXPECT_EQ(e.apply[0].object["metadata"]["uid"], "uid-1");
  EXPECT_EQ(e.apply[0].object["metadata"]["finalizers"], json::array({kRuntimeEnvInUseFinalizer}));
  EXPECT_FALSE(e.apply[0].object.contains("spec"));

  o.runtimeEnv["metadata"]["finalizers"] = json::array({kRuntimeEnvInUseFinalizer});
  o.releases = {};
  EXPECT_EQ(plan(o, kNow).inUseFinalizer, std::optional<bool>(false));
}

}  // namespace
}  // namespace lockstep::controllers
