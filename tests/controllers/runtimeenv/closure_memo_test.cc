// ClosureMemo (controllers/runtimeenv/closure_memo.h): a RuntimeEnv's lock is
// resolved once per version of what it reads (the RuntimeEnv's uid and
// generation, the ConfigMap's uid and resourceVersion), again when any of them
// moves, and the memo holds no RuntimeEnv that is gone.
#include "controllers/runtimeenv/closure_memo.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/resources.h"
#include "tests/support/builders.h"

namespace lockstep::controllers::closure_memo_test {

using nlohmann::json;

const std::string kPinnedImage =
    "registry.example/runtimes/"
    "torch@sha256:4f1c000000000000000000000000000000000000000000000000000000000001";
const std::string kReqLock = "numpy==1.26.4 --hash=sha256:" + std::string(64, 'a') + "\n";

kube::Object rteOf(const std::string& name, const std::string& uid, int64_t generation) {
  return testing::runtimeEnv(name)
      .image(kPinnedImage)
      .configMapLock("locks", "req.txt")
      .uid(uid)
      .generation(generation)
      .build();
}

kube::Object cmOf(const std::string& uid, const std::string& resourceVersion) {
  kube::Object cm = testing::configMap("locks", {{"req.txt", kReqLock}});
  cm["metadata"]["uid"] = uid;
  cm["metadata"]["resourceVersion"] = resourceVersion;
  return cm;
}

// A resolver that counts its calls and says which call answered.
struct CountingResolve {
  int calls = 0;
  ClosureMemo::Resolve fn() {
    return [this] {
      LockResolution r;
      r.message = "call " + std::to_string(++calls);
      return r;
    };
  }
};

TEST(ClosureMemoTest, SameInputsResolveOnce) {
  ClosureMemo memo;
  CountingResolve count;
  const kube::Object rte = rteOf("torch", "u1", 3);
  const kube::Object cm = cmOf("c1", "100");
  auto first = memo.resolution(rte, &cm, count.fn());
  auto second = memo.resolution(rte, &cm, count.fn());
  EXPECT_EQ(count.calls, 1);
  EXPECT_EQ(first, second);  // the very same kept resolution
  EXPECT_EQ(second->message, "call 1");
  EXPECT_EQ(memo.size(), 1u);
}

// What a status write, a label or the RuntimeEnv's own resourceVersion moves is not
// an input: the reconciles those cause take the kept closure.
TEST(ClosureMemoTest, StatusAndMetadataChangesKeepTheClosure) {
  ClosureMemo memo;
  CountingResolve count;
  kube::Object rte = rteOf("torch", "u1", 3);
  const kube::Object cm = cmOf("c1", "100");
  memo.resolution(rte, &cm, count.fn());
  rte["metadata"]["resourceVersion"] = "555";
  rte["metadata"]["labels"]["team"] = "ml";
  rte["status"]["closureHash"] = "sha256:edited";
  memo.resolution(rte, &cm, count.fn());
  EXPECT_EQ(count.calls, 1);
}

TEST(ClosureMemoTest, EachInputChangedResolvesAgain) {
  ClosureMemo memo;
  CountingResolve count;
  const kube::Object cm = cmOf("c1", "100");
  memo.resolution(rteOf("torch", "u1", 3), &cm, count.fn());
  ASSERT_EQ(count.calls, 1);

  // The spec changed: a new generation.
  EXPECT_EQ(memo.resolution(rteOf("torch", "u1", 4), &cm, count.fn())->message, "call 2");
  // The RuntimeEnv was deleted and created again under the same name, same generation.
  EXPECT_EQ(memo.resolution(rteOf("torch", "u2", 4), &cm, count.fn())->message, "call 3");
  // The ConfigMap's data changed: a new resourceVersion.
  const kube::Object edited = cmOf("c1", "101");
  EXPECT_EQ(memo.resolution(rteOf("torch", "u2", 4), &edited, count.fn())->message, "call 4");
  // The ConfigMap was deleted and created again (with the same resourceVersion, to
  // tell the uid alone).
  const kube::Object recreated = cmOf("c2", "101");
  EXPECT_EQ(memo.resolution(rteOf("torch", "u2", 4), &recreated, count.fn())->message, "call 5");
  // The ConfigMap is gone, then back.
  EXPECT_EQ(memo.resolution(rteOf("torch", "u2", 4), nullptr, count.fn())->message, "call 6");
  EXPECT_EQ(memo.resolution(rteOf("torch", "u2", 4), &recreated, count.fn())->message, "call 7");
  // And nothing moved since: kept.
  EXPECT_EQ(memo.resolution(rteOf("torch", "u2", 4), &recreated, count.fn())->message, "call 7");
  EXPECT_EQ(count.calls, 7);
  EXPECT_EQ(memo.size(), 1u);  // one entry a RuntimeEnv, the last inputs
}

TEST(ClosureMemoTest, EachRuntimeEnvHasItsOwnEntry) {
  ClosureMemo memo;
  CountingResolve count;
  const kube::Object cm = cmOf("c1", "100");
  memo.resolution(rteOf("torch", "u1", 1), &cm, count.fn());
  memo.resolution(rteOf("jax", "u1", 1), &cm, count.fn());  // same versions, another name
  memo.resolution(rteOf("torch", "u1", 1), &cm, count.fn());
  memo.resolution(rteOf("jax", "u1", 1), &cm, count.fn());
  EXPECT_EQ(count.calls, 2);
  EXPECT_EQ(memo.size(), 2u);
}

// Objects without the versions (not from the API server) cannot be told apart by them.
TEST(ClosureMemoTest, ObjectsWithoutVersionsAreResolvedEveryTime) {
  struct Case {
    std::string what;
    kube::Object runtimeEnv;
    kube::Object configMap;
  };
  const std::vector<Case> cases = {
      {"RuntimeEnv without uid", rteOf("torch", "", 1), cmOf("c1", "100")},
      {"RuntimeEnv without generation", rteOf("torch", "u1", 0), cmOf("c1", "100")},
      {"ConfigMap without resourceVersion", rteOf("torch", "u1", 1), cmOf("c1", "")},
      {"ConfigMap without uid", rteOf("torch", "u1", 1), cmOf("", "100")},
  };
  for (const Case& c : cases) {
    ClosureMemo memo;
    CountingResolve count;
    memo.resolution(c.runtimeEnv, &c.configMap, count.fn());
    memo.resolution(c.runtimeEnv, &c.configMap, count.fn());
    EXPECT_EQ(count.calls, 2) << c.what;
    EXPECT_EQ(memo.size(), 0u) << c.what;
  }
}

TEST(ClosureMemoTest, ForgetDropsTheRuntimeEnv) {
  ClosureMemo memo;
  CountingResolve count;
  const kube::Object cm = cmOf("c1", "100");
  memo.resolution(rteOf("torch", "u1", 1), &cm, count.fn());
  memo.resolution(rteOf("jax", "u9", 1), &cm, count.fn());
  memo.forget("ml", "torch");
  EXPECT_EQ(memo.size(), 1u);
  memo.resolution(rteOf("torch", "u1", 1), &cm, count.fn());
  EXPECT_EQ(count.calls, 3);
  memo.resolution(rteOf("jax", "u9", 1), &cm, count.fn());
  EXPECT_EQ(count.calls, 3);
}

// Past kMaxEntries the least recently used entry goes, never more than the cap stay.
TEST(ClosureMemoTest, BoundedByTheLeastRecentlyUsed) {
  ClosureMemo memo;
  CountingResolve count;
  const kube::Object cm = cmOf("c1", "100");
  const size_t cap = ClosureMemo::kMaxEntries;
  for (size_t i = 0; i < cap; ++i)
    memo.resolution(rteOf("r" + std::to_string(i), "u", 1), &cm, count.fn());
  ASSERT_EQ(memo.size(), cap);
  memo.resolution(rteOf("r0", "u", 1), &cm, count.fn());  // r0 used again: r1 is the oldest
  EXPECT_EQ(count.calls, static_cast<int>(cap));
  memo.resolution(rteOf("new", "u", 1), &cm, count.fn());
  EXPECT_EQ(memo.size(), cap);
  memo.resolution(rteOf("r0", "u", 1), &cm, count.fn());  // kept
  EXPECT_EQ(count.calls, static_cast<int>(cap) + 1);
  memo.resolution(rteOf("r1", "u", 1), &cm, count.fn());  // evicted: resolved again
  EXPECT_EQ(count.calls, static_cast<int>(cap) + 2);
  EXPECT_EQ(memo.size(), cap);
}

// With the real resolver: the kept resolution is the one resolveLock gives.
TEST(ClosureMemoTest, KeepsWhatResolveLockGives) {
  ClosureMemo memo;
  const kube::Object rte = rteOf("torch", "u1", 1);
  const kube::Object cm = cmOf("c1", "100");
  const auto decoded = api::v1alpha1::decodeRuntimeEnv(rte);
  auto kept = memo.resolution(rte, &cm, [&] { return resolveLock(decoded, &cm); });
  const LockResolution direct = resolveLock(decoded, &cm);
  ASSERT_TRUE(kept->ok) << kept->message;
  EXPECT_EQ(kept->reason, api::v1alpha1::kReasonResolved);
  EXPECT_EQ(kept->closure.closureHash, direct.closure.closureHash);
  EXPECT_EQ(kept->lockDigest, direct.lockDigest);
  EXPECT_EQ(kept->lockText, kReqLock);
}

}  // namespace lockstep::controllers::closure_memo_test
