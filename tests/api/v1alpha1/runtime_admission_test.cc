#include "api/v1alpha1/runtime_admission.h"

#include <gtest/gtest.h>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kHash1 = "sha256:" + std::string(64, '1');
const std::string kHash2 = "sha256:" + std::string(64, '2');

RuntimeRevision revision(int64_t n, const std::string& image, const std::string& hash,
                         std::vector<std::string> pinnedBy = {}) {
  RuntimeRevision r;
  r.number = n;
  r.image = image;
  r.closureHash = hash;
  r.pinnedBy = std::move(pinnedBy);
  return r;
}

// A Ready RuntimeEnv on `image` whose current revision is the last of `revisions`.
RuntimeEnv env(const std::string& name, const std::string& image,
               std::vector<RuntimeRevision> revisions, bool ready = true) {
  RuntimeEnv e;
  e.meta.name = name;
  e.meta.ns = "ml";
  e.meta.generation = 1;
  e.spec.image = image;
  e.status.observedGeneration = 1;
  e.status.closureHash = revisions.empty() ? "" : revisions.back().closureHash;
  e.status.currentRevision = revisions.empty() ? 0 : revisions.back().number;
  e.status.revisions = std::move(revisions);
  e.status.conditions = json::array(
      {{{"type", "Ready"}, {"status", ready ? "True" : "False"}, {"observedGeneration", 1}}});
  return e;
}

TEST(RuntimeAdmissionSpec, CurrentAndPinnedRevisionsWithNormalisedImages) {
  // Docker Hub short names normalise as admission compares them (api/image_ref.h).
  std::vector<RuntimeEnv> envs = {
      env("torch", "torch@" + kB,
          {revision(1, "Registry.Example/rt/torch@" + kA, kHash1, {"v1"}),
           revision(2, "old@" + kA, kHash1),  // neither current nor pinned: admits nothing
           revision(3, "torch@" + kB, kHash2)})};
  auto spec = runtimeAdmissionSpec("ml", envs, "registry.example/lockstep/cli@" + kA);
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  const json& row = (*spec)["runtimeEnvs"]["torch"];
  EXPECT_EQ(row["ready"], true);
  EXPECT_EQ(row["closureHash"], kHash2);
  EXPECT_EQ(row["image"], "torch@" + kB);
  EXPECT_EQ(row["repository"], "docker.io/library/torch");
  EXPECT_EQ(row["digest"], kB);
  EXPECT_EQ(row["currentRevision"], 3);
  ASSERT_EQ(row["revisions"].size(), 2u) << row.dump(2);
  EXPECT_EQ(row["revisions"][0]["number"], 1);
  EXPECT_EQ(row["revisions"][0]["repository"], "registry.example/rt/torch");
  EXPECT_EQ(row["revisions"][0]["pinnedBy"], json::array({"v1"}));
  EXPECT_EQ(row["revisions"][1]["number"], 3);
  EXPECT_EQ(row["revisions"][1]["pinnedBy"], json::array());
  EXPECT_EQ((*spec)["trustedInitImage"], "registry.example/lockstep/cli@" + kA);
  EXPECT_EQ((*spec)["summary"], "torch=3(pinned 1)");
}

TEST(RuntimeAdmissionSpec, AnImageNotPinnedByDigestMatchesNoPod) {
  std::vector<RuntimeEnv> envs = {env("tagged", "torch:2.5", {revision(1, "torch:2.5", kHash1)})};
  auto spec = runtimeAdmissionSpec("ml", envs, "");
  ASSERT_TRUE(spec.isOk());
  const json& row = (*spec)["runtimeEnvs"]["tagged"];
  EXPECT_EQ(row["repository"], "");
  EXPECT_EQ(row["digest"], "");
  EXPECT_EQ(row["image"], "torch:2.5");
  EXPECT_FALSE(spec->contains("trustedInitImage"));
}

TEST(RuntimeAdmissionSpec, NotReadyIsRecordedAsSuch) {
  std::vector<RuntimeEnv> envs = {env("torch", "t@" + kA, {revision(1, "t@" + kA, kHash1)}, false)};
  auto spec = runtimeAdmissionSpec("ml", envs, "");
  ASSERT_TRUE(spec.isOk());
  EXPECT_EQ((*spec)["runtimeEnvs"]["torch"]["ready"], false);
}

TEST(RuntimeAdmissionSpec, SameTableWhateverTheOrderOfTheRuntimeEnvs) {
  RuntimeEnv a = env("a", "a@" + kA, {revision(1, "a@" + kA, kHash1)});
  RuntimeEnv b = env("b", "b@" + kB, {revision(1, "b@" + kB, kHash2)});
  auto ab = runtimeAdmissionSpec("ml", {a, b}, "");
  auto ba = runtimeAdmissionSpec("ml", {b, a}, "");
  ASSERT_TRUE(ab.isOk() && ba.isOk());
  EXPECT_EQ(*ab, *ba);
  EXPECT_EQ((*ab)["summary"], "a=1 b=1");
}

TEST(RuntimeAdmissionSpec, BoundsAreRefusedWithTheNumbers) {
  std::vector<RuntimeEnv> many;
  for (size_t i = 0; i <= kRuntimeAdmissionMaxEnvs; ++i) {
    many.push_back(env("e" + std::to_string(i), "e@" + kA, {revision(1, "e@" + kA, kHash1)}));
  }
  auto spec = runtimeAdmissionSpec("ml", many, "");
  ASSERT_FALSE(spec.isOk());
  EXPECT_EQ(spec.status().code(), Code::kResourceExhausted);
  EXPECT_NE(spec.status().message().find("namespace ml has 129 RuntimeEnvs"), std::string::npos)
      << spec.status().message();

  std::vector<RuntimeRevision> pinned;
  for (int64_t n = 1; n <= static_cast<int64_t>(kRuntimeAdmissionMaxRevisions) + 1; ++n) {
    pinned.push_back(revision(n, "e@" + kA, kHash1, {"r" + std::to_string(n)}));
  }
  spec = runtimeAdmissionSpec("ml", {env("e", "e@" + kA, pinned)}, "");
  ASSERT_FALSE(spec.isOk());
  EXPECT_NE(spec.status().message().find("RuntimeEnv ml/e has 33 admitting revisions"),
            std::string::npos)
      << spec.status().message();

  // Releases pinning one revision: the bound is met, then passed by one (the bench's
  // 200 models on one runtime once passed the CRD's earlier 64, refused by the API
  // server at every write instead of here).
  std::vector<std::string> names;
  for (size_t i = 0; i < kRuntimeAdmissionMaxPinsPerRevision; ++i)
    names.push_back("m" + std::to_string(i) + "-v1");
  spec = runtimeAdmissionSpec(
      "ml",
      {env("e", "e@" + kB,
           {revision(1, "e@" + kA, kHash1, names), revision(2, "e@" + kB, kHash2)})},
      "");
  ASSERT_TRUE(spec.isOk()) << spec.status().toString();
  EXPECT_EQ((*spec)["runtimeEnvs"]["e"]["revisions"][0]["pinnedBy"].size(),
            kRuntimeAdmissionMaxPinsPerRevision);
  names.push_back("one-more");
  spec = runtimeAdmissionSpec(
      "ml",
      {env("e", "e@" + kB,
           {revision(1, "e@" + kA, kHash1, names), revision(2, "e@" + kB, kHash2)})},
      "");
  ASSERT_FALSE(spec.isOk());
  EXPECT_EQ(spec.status().code(), Code::kResourceExhausted);
  EXPECT_NE(spec.status().message().find(
                "RuntimeEnv ml/e revision 1 is pinned by 1025 releases; the admission table holds "
                "at most 1024 per revision"),
            std::string::npos)
      << spec.status().message();

  // Bytes: few RuntimeEnvs, but releases with long names pinning many revisions.
  std::vector<RuntimeEnv> big;
  for (int i = 0; i < 40; ++i) {
    std::vector<RuntimeRevision> revs;
    for (int64_t n = 1; n <= 30; ++n) {
      std::vector<std::string> names;
      for (int k = 0; k < 3; ++k) names.push_back(std::string(150, 'x') + std::to_string(k));
      revs.push_back(revision(n, "e@" + kA, kHash1, names));
    }
    big.push_back(env("e" + std::to_string(i), "e@" + kA, revs));
  }
  spec = runtimeAdmissionSpec("ml", big, "");
  ASSERT_FALSE(spec.isOk());
  EXPECT_NE(spec.status().message().find("the admission table of namespace ml would be"),
            std::string::npos)
      << spec.status().message();
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
