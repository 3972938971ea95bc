// The ML-BOM lists exactly the closure that the hash covers: every package of
// every visible lock fixture once, with the lock's digests, and nothing else.
#include "evidence/ml_bom.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "evidence/purl.h"
#include "tests/closure/testing_util.h"

namespace lockstep::evidence {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kMlBomPackage[] =
    "registry.example/models/gpt2-small@sha256:"
    "ab12000000000000000000000000000000000000000000000000000000000000";
constexpr char kImage[] =
    "registry.example/runtimes/torch@sha256:"
    "4f1c000000000000000000000000000000000000000000000000000000000000";

api::ImageRef ref(const char* text) {
  auto r = api::parseImageRef(text);
  EXPECT_TRUE(r.isOk()) << text;
  return r.isOk() ? *r : api::ImageRef{};
}

std::vector<std::string> propertyValues(const Json& component, const std::string& name) {
  std::vector<std::string> out;
  for (const Json& p : component.value("properties", Json::array())) {
    if (p.at("name") == name) out.push_back(p.at("value").get<std::string>());
  }
  return out;
}

// The closure entry a library component stands for, read back from the BOM alone.
closure::Package entryOf(const Json& c) {
  closure::Package p;
  auto eco = propertyValues(c, "lockstep:closure:ecosystem");
  p.ecosystem = eco.size() == 1 ? eco[0] : "?";
  p.name = c.at("name");
  p.version = c.value("version", "");
  p.digests = propertyValues(c, "lockstep:closure:digest");
  return p;
}

std::set<std::string> sha256Hashes(const Json& c) {
  std::set<std::string> out;
  for (const Json& h : c.value("hashes", Json::array())) {
    EXPECT_EQ(h.at("alg"), "SHA-256");
    out.insert("sha256:" + h.at("content").get<std::string>());
  }
  return out;
}

void expectListsClosureOnce(const closure::Closure& c, const Json& bom, const std::string& what) {
  std::map<std::string, int> count;  // canonical line -> library components naming it
  std::set<std::string> bomRefs;
  size_t libraries = 0;
  for (const Json& comp : bom.at("components")) {
    EXPECT_TRUE(bomRefs.insert(comp.at("bom-ref").get<std::string>()).second)
        << what << ": bom-ref " << comp.at("bom-ref") << " twice";
    if (comp.at("type") != "library") continue;
    ++libraries;
    closure::Package p = entryOf(comp);
    ++count[closure::canonicalText({p})];
    // Every sha256 digest of the lock is a CycloneDX hash, and no other.
    std::set<std::string> want;
    for (const std::string& d : p.digests) {
      if (d.rfind("sha256:", 0) == 0) want.insert(d);
    }
    EXPECT_EQ(sha256Hashes(comp), want) << what << ": " << comp.at("name");
    EXPECT_EQ(comp.at("purl"), packageUrl(p)) << what;
  }
  EXPECT_EQ(libraries, c.packageCount()) << what;
  for (const closure::Package& p : c.packages) {
    EXPECT_EQ(count[closure::canonicalText({p})], 1)
        << what << ": " << p.ecosystem << " " << p.name << " " << p.version;
  }
  // The BOM alone gives back the closure hash: the same packages, the same digests.
  std::vector<closure::Package> back;
  for (const Json& comp : bom.at("components")) {
    if (comp.at("type") == "library") back.push_back(entryOf(comp));
  }
  EXPECT_EQ(closure::closureHashOfCanonicalText(closure::canonicalText(back)), c.closureHash)
      << what;
  EXPECT_EQ(propertyValues(bom.at("metadata"), "lockstep:closure:hash"),
            std::vector<std::string>{c.closureHash});
}

TEST(MlBom, EveryLockFixtureListsEachClosurePackageOnceWithItsHashes) {
  const std::string dir = closure::testing::fixturesDir();
  int locks = 0;
  for (const std::string& file : closure::testing::listFiles(dir)) {
    if (file == "MANIFEST.tsv" || file == "README.md") continue;
    closure::ClosureOptions options;
    options.allowUnhashed = true;  // one uv fixture is a local registry without hashes
    options.sourceName = file;
    closure::Closure c =
        closure::testing::mustCompute(closure::testing::readFileOrDie(dir + "/" + file), options);
    ASSERT_GT(c.packageCount(), 0u) << file;
    MlBomInput in;
    in.package = ref(kMlBomPackage);
    in.closure = &c;
    in.runtimeImage = ref(kImage);
    auto bom = makeMlBom(in);
    ASSERT_TRUE(bom.isOk()) << file << ": " << bom.status().message();
    expectListsClosureOnce(c, *bom, file);
    ++locks;
  }
  EXPECT_GE(locks, 17);  // the fixtures of tests/closure/testdata/lockfiles
}

TEST(MlBom, ModelImageAndDependencies) {
  closure::ClosureOptions options;
  closure::Closure c = closure::testing::mustCompute(
      "six==1.16.0 "
      "--hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n",
      options);
  MlBomInput in;
  in.package = ref(kMlBomPackage);
  in.closure = &c;
  in.runtimeImage = ref(kImage);
  in.timestamp = "2026-12-02T04:00:00Z";
  in.toolVersion = "0.1.0";
  auto bom = makeMlBom(in);
  ASSERT_TRUE(bom.isOk());
  const Json& model = bom->at("metadata").at("component");
  EXPECT_EQ(model.at("type"), "machine-learning-model");
  EXPECT_EQ(model.at("name"), "gpt2-small");
  EXPECT_EQ(model.at("hashes")[0].at("content"),
            "ab12000000000000000000000000000000000000000000000000000000000000");
  EXPECT_FALSE(model.contains("modelCard"));  // no gate given
  const Json& image = bom->at("components")[0];
  EXPECT_EQ(image.at("type"), "container");
  EXPECT_EQ(image.at("name"), "registry.example/runtimes/torch");
  EXPECT_EQ(image.at("hashes")[0].at("content"),
            "4f1c000000000000000000000000000000000000000000000000000000000000");
  EXPECT_EQ(bom->at("dependencies")[0].at("dependsOn"), Json::array({"runtime-image"}));
  EXPECT_EQ(bom->at("dependencies")[1].at("dependsOn"), Json::array({"pkg:pypi/six@1.16.0"}));
  EXPECT_FALSE(bom->contains("formulation"));
  EXPECT_EQ(bom->at("metadata").at("timestamp"), "2026-12-02T04:00:00Z");
}

// A ModelPack package (the release's status.package): its config in the model card,
// with CycloneDX 1.6's names where they exist and lockstep:modelpack:* properties else.
TEST(MlBom, ModelPackConfigInTheModelCard) {
  closure::ClosureOptions options;
  closure::Closure c = closure::testing::mustCompute(
      "six==1.16.0 "
      "--hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n",
      options);
  MlBomInput in;
  in.package = ref(kMlBomPackage);
  in.closure = &c;
  api::v1alpha1::PackageInfo info;
  info.digest = in.package.digest;
  info.kind = api::v1alpha1::kPackageKindModelPack;
  info.mediaType = "application/vnd.oci.image.manifest.v1+json";
  info.artifactType = api::v1alpha1::kModelPackArtifactType;
  info.configDigest = "sha256:" + std::string(64, 'c');
  api::v1alpha1::ModelPackConfig m;
  m.name = "gpt2-small";
  m.family = "gpt2";
  m.architecture = "transformer";
  m.format = "safetensors";
  m.paramSize = "124m";
  m.parameterCount = 124'000'000;
  m.precision = "float32";
  m.licenses = {"MIT"};
  m.inputTypes = {"text"};
  m.outputTypes = {"text"};
  info.model = m;
  in.packageInfo = info;
  auto bom = makeMlBom(in);
  ASSERT_TRUE(bom.isOk());
  const Json& model = bom->at("metadata").at("component");
  const Json& card = model.at("modelCard");
  EXPECT_EQ(card.at("modelParameters"),
            Json::parse(R"({"architectureFamily": "transformer", "modelArchitecture": "gpt2",
                            "inputs": [{"format": "text"}], "outputs": [{"format": "text"}]})"));
  std::map<std::string, std::string> props;
  for (const Json& p : card.at("properties")) props[p.at("name")] = p.at("value");
  EXPECT_EQ(props["lockstep:modelpack:format"], "safetensors");
  EXPECT_EQ(props["lockstep:modelpack:paramSize"], "124m");
  EXPECT_EQ(props["lockstep:modelpack:parameterCount"], "124000000");
  EXPECT_EQ(props["lockstep:modelpack:precision"], "float32");
  EXPECT_EQ(props["lockstep:modelpack:configDigest"], info.configDigest);
  EXPECT_EQ(model.at("licenses"), Json::parse(R"([{"expression": "MIT"}])"));
  std::map<std::string, std::string> component;
  for (const Json& p : model.at("properties")) component[p.at("name")] = p.at("value");
  EXPECT_EQ(component["lockstep:package:kind"], "ModelPack");
  EXPECT_EQ(component["lockstep:package:artifactType"], api::v1alpha1::kModelPackArtifactType);
  if (const char* dump = std::getenv("LOCKSTEP_BOM_DUMP")) std::ofstream(dump) << bom->dump(2);

  // A description of another digest (a stale status) is not this package's.
  in.packageInfo->digest = "sha256:" + std::string(64, 'f');
  auto other = makeMlBom(in);
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(other->at("metadata").at("component").contains("modelCard"));
}

TEST(MlBom, GateMetricsInTheModelCardAndFormulation) {
  closure::ClosureOptions options;
  closure::Closure c = closure::testing::mustCompute(
      "six==1.16.0 "
      "--hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n",
      options);
  GateResult eval;
  eval.stage = "eval";
  eval.jobUid = "6f1b9c8e-0000-4000-8000-000000000001";
  eval.image = kImage;
  eval.command = {"python", "eval.py", "--split", "test"};
  eval.metrics = {{"accuracy", 0.84, 0.82, std::nullopt}, {"loss", 0.4, std::nullopt, 0.3}};
  eval.startedAt = "2026-12-02T04:00:00Z";
  eval.finishedAt = "2026-12-02T04:05:00Z";
  MlBomInput in;
  in.package = ref(kMlBomPackage);
  in.closure = &c;
  in.gates = {eval};
  auto bom = makeMlBom(in);
  ASSERT_TRUE(bom.isOk());
  const Json& card = bom->at("metadata").at("component").at("modelCard");
  EXPECT_EQ(card.at("quantitativeAnalysis").at("performanceMetrics"),
            Json::parse(R"([{"type":"accuracy","value":"0.84","slice":"eval"},
                            {"type":"loss","value":"0.4","slice":"eval"}])"));
  EXPECT_EQ(propertyValues(card, "lockstep:gate:eval:accuracy:threshold"),
            std::vector<std::string>{">= 0.82"});
  EXPECT_EQ(propertyValues(card, "lockstep:gate:eval:loss:passed"),
            std::vector<std::string>{"false"});
  const Json& w = bom->at("formulation")[0].at("workflows")[0];
  EXPECT_EQ(w.at("uid"), eval.jobUid);
  EXPECT_EQ(w.at("taskTypes"), Json::array({"test"}));
  EXPECT_EQ(w.at("steps")[0].at("commands")[0].at("executed"), "python eval.py --split test");
  EXPECT_EQ(w.at("inputs")[0].at("resource").at("ref"), "model");
  EXPECT_EQ(w.at("description"),
            "gate stage eval: failed; accuracy 0.84 (>= 0.82); loss 0.4 (<= 0.3)");
}

TEST(MlBom, RefusesUnpinnedReferences) {
  closure::ClosureOptions options;
  closure::Closure c = closure::testing::mustCompute(
      "six==1.16.0 "
      "--hash=sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254\n",
      options);
  MlBomInput in;
  in.package = ref("registry.example/models/gpt2:v1");
  in.closure = &c;
  auto bom = makeMlBom(in);
  ASSERT_FALSE(bom.isOk());
  EXPECT_EQ(bom.status().message(),
            "ML-BOM: package registry.example/models/gpt2 is not pinned by digest (@sha256:…)");
  in.package = ref(kMlBomPackage);
  in.runtimeImage = ref("registry.example/runtimes/torch:latest");
  EXPECT_EQ(makeMlBom(in).status().message(),
            "ML-BOM: runtime image registry.example/runtimes/torch is not pinned by digest "
            "(@sha256:…)");
}

}  // namespace
}  // namespace lockstep::evidence
