// The package classifier and the ModelPack config parser (api/v1alpha1/model_package.h)
// on the model-spec's own example documents (docs/spec.md, docs/config.md), images,
// and what is neither.
#include "api/v1alpha1/model_package.h"

#include <gtest/gtest.h>

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";

// docs/spec.md "Example Image Manifest For Model Artifacts", as published.
const char* kSpecManifest = R"({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "artifactType": "application/vnd.cncf.model.manifest.v1+json",
    "config": {
        "mediaType": "application/vnd.cncf.model.config.v1+json",
        "digest": "sha256:d5815835051dd97d800a03f641ed8162877920e734d3d705b698912602b8c763",
        "size": 301
    },
    "layers": [
        {"mediaType": "application/vnd.cncf.model.weight.v1.tar",
         "digest": "sha256:3f907c1a03bf20f20355fe449e18ff3f9de2e49570ffb536f1a32f20c7179808",
         "size": 30327160},
        {"mediaType": "application/vnd.cncf.model.weight.v1.tar",
         "digest": "sha256:6d923539c5c208de77146335584252c0b1b81e35c122dd696fe6e04ed03d7411",
         "size": 5018536960},
        {"mediaType": "application/vnd.cncf.model.weight.config.v1.tar",
         "digest": "sha256:a5378e569c625f7643952fcab30c74f2a84ece52335c292e630f740ac4694146",
         "size": 106},
        {"mediaType": "application/vnd.cncf.model.doc.v1.tar",
         "digest": "sha256:5e236ec37438b02c01c83d134203a646cb354766ac294e533a308dd8caa3a11e",
         "size": 23040}
    ]
})";

// docs/config.md "Example", as published.
const char* kSpecConfig = R"({
  "descriptor": {
    "createdAt": "2025-01-01T00:00:00Z",
    "authors": ["xyz@xyz.com"],
    "vendor": "XYZ Corp.",
    "family": "xyz3",
    "name": "xyz-3-8B-Instruct",
    "version": "3.1",
    "title": "XYZ 3 8B Instruct",
    "description": "xyz is a large language model.",
    "docURL": "https://www.xyz.com/get-started/",
    "sourceURL": "https://github.com/xyz/xyz3",
    "datasetsURL": ["https://www.xyz.com/datasets/"],
    "revision": "1234567890",
    "licenses": ["Apache-2.0"]
  },
  "config": {
    "architecture": "transformer",
    "format": "pt",
    "paramSize": "8b",
    "precision": "float16",
    "quantization": "gptq",
    "capabilities": {
      "inputTypes": ["text"],
      "outputTypes": ["text", "image"],
      "knowledgeCutoff": "2024-05-21T00:00:00Z",
      "reasoning": true,
      "toolUsage": false,
      "reward": false,
      "languages": ["en", "zh"]
    }
  },
  "modelfs": {
    "type": "layers",
    "diffIds": [
      "sha256:1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef",
      "sha256:abcdef1234567890abcdef1234567890abcdef1234567890abcdef1234567890"
    ]
  }
})";

std::string imageManifest(const std::string& layerType) {
  return json{{"schemaVersion", 2},
              {"mediaType", kOciManifest},
              {"config",
               {{"mediaType", kOciImageConfigMediaType},
                {"digest", "sha256:" + std::string(64, 'a')},
                {"size", 10}}},
              {"layers", json::array({{{"mediaType", layerType},
                                       {"digest", "sha256:" + std::string(64, 'b')},
                                       {"size", 20}}})}}
      .dump();
}

TEST(ModelPackage, TheSpecsExampleManifestIsAModelPackModel) {
  auto p = classifyPackageManifest(kOciManifest, kSpecManifest);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(p->kind, kPackageKindModelPack);
  EXPECT_EQ(p->artifactType, kModelPackArtifactType);
  EXPECT_EQ(p->configMediaType, kModelPackConfigMediaType);
  EXPECT_EQ(p->configDigest,
            "sha256:d5815835051dd97d800a03f641ed8162877920e734d3d705b698912602b8c763");
  EXPECT_EQ(p->layers, 4);
  EXPECT_EQ(p->size, 30327160 + 5018536960 + 106 + 23040);
}

TEST(ModelPackage, TheSpecsExampleConfigReadsEveryReportedField) {
  auto c = parseModelPackConfig(kSpecConfig);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(c->name, "xyz-3-8B-Instruct");
  EXPECT_EQ(c->family, "xyz3");
  EXPECT_EQ(c->version, "3.1");
  EXPECT_EQ(c->format, "pt");
  EXPECT_EQ(c->architecture, "transformer");
  EXPECT_EQ(c->paramSize, "8b");
  EXPECT_EQ(c->parameterCount, 8'000'000'000);
  EXPECT_EQ(c->precision, "float16");
  EXPECT_EQ(c->quantization, "gptq");
  EXPECT_EQ(c->licenses, std::vector<std::string>{"Apache-2.0"});
  EXPECT_EQ(c->inputTypes, std::vector<std::string>{"text"});
  EXPECT_EQ(c->outputTypes, (std::vector<std::string>{"text", "image"}));
  EXPECT_EQ(c->reasoning, true);
  EXPECT_EQ(c->toolUsage, false);
  EXPECT_EQ(c->diffIds.size(), 2u);
}

TEST(ModelPackage, DiffIdsMustMatchTheLayers) {
  auto p = classifyPackageManifest(kOciManifest, kSpecManifest);
  auto c = parseModelPackConfig(kSpecConfig);
  ASSERT_TRUE(p.isOk() && c.isOk());
  EXPECT_EQ(checkModelPackLayers(*p, *c).message(),
            "modelfs.diffIds: 2 DiffIDs for the manifest's 4 layers");
  c->diffIds.resize(4, c->diffIds[0]);
  EXPECT_TRUE(checkModelPackLayers(*p, *c).isOk());
}

TEST(ModelPackage, ImagesAndIndexesAreImages) {
  auto oci = classifyPackageManifest(kOciManifest,
                                     imageManifest("application/vnd.oci.image.layer.v1.tar+gzip"));
  ASSERT_TRUE(oci.isOk()) << oci.status().toString();
  EXPECT_EQ(oci->kind, kPackageKindImage);
  EXPECT_FALSE(oci->model);
  auto docker = classifyPackageManifest(
      "application/vnd.docker.distribution.manifest.v2+json",
      json{{"schemaVersion", 2},
           {"config",
            {{"mediaType", kDockerImageConfigMediaType},
             {"digest", "sha256:" + std::string(64, 'a')}}},
           {"layers",
            json::array({{{"mediaType", "application/vnd.docker.image.rootfs.diff.tar.gzip"},
                          {"digest", "sha256:" + std::string(64, 'c')}}})}}
          .dump());
  ASSERT_TRUE(docker.isOk()) << docker.status().toString();
  EXPECT_EQ(docker->kind, kPackageKindImage);
  auto index = classifyPackageManifest("application/vnd.oci.image.index.v1+json",
                                       R"({"schemaVersion":2,"manifests":[{}, {}]})");
  ASSERT_TRUE(index.isOk());
  EXPECT_EQ(index->kind, kPackageKindImageIndex);
  EXPECT_EQ(index->layers, 2);
}

TEST(ModelPackage, AnUnknownArtifactIsRefusedNamingItsMediaTypes) {
  // What `oras push REF blob:application/vnd.example.unknown.v1` writes.
  const std::string oras =
      json{{"schemaVersion", 2},
           {"mediaType", kOciManifest},
           {"artifactType", "application/vnd.unknown.artifact.v1"},
           {"config",
            {{"mediaType", "application/vnd.oci.empty.v1+json"},
             {"digest", "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
             {"size", 2}}},
           {"layers", json::array({{{"mediaType", "application/vnd.example.unknown.v1"},
                                    {"digest", "sha256:" + std::string(64, 'd')},
                                    {"size", 5}}})}}
          .dump();
  auto p = classifyPackageManifest(kOciManifest, oras);
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().message(),
            "artifactType: neither an image nor a ModelPack model "
            "(application/vnd.cncf.model.manifest.v1+json): the manifest has artifactType "
            "\"application/vnd.unknown.artifact.v1\", config.mediaType "
            "\"application/vnd.oci.empty.v1+json\", layer media type "
            "\"application/vnd.example.unknown.v1\"");
  // A Helm chart: no artifactType, a config of its own.
  json helm = json::parse(imageManifest("application/vnd.cncf.helm.chart.content.v1.tar+gzip"));
  helm["config"]["mediaType"] = "application/vnd.cncf.helm.config.v1+json";
  auto h = classifyPackageManifest(kOciManifest, helm.dump());
  ASSERT_FALSE(h.isOk());
  EXPECT_NE(h.status().message().find("config.mediaType: neither an image nor a ModelPack"),
            std::string::npos)
      << h.status().message();
  EXPECT_NE(h.status().message().find("\"application/vnd.cncf.helm.config.v1+json\""),
            std::string::npos);
}

TEST(ModelPackage, ALayerOfAnUnknownMediaTypeIsRefusedNamingIt) {
  json m = json::parse(kSpecManifest);
  m["layers"][2]["mediaType"] = "application/x-pickle";
  auto p = classifyPackageManifest(kOciManifest, m.dump());
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().message().substr(0, 54),
            "layers[2].mediaType: \"application/x-pickle\" is not a M");
  auto image = classifyPackageManifest(kOciManifest, imageManifest("application/x-pickle"));
  ASSERT_FALSE(image.isOk());
  EXPECT_EQ(image.status().message().substr(0, 65),
            "layers[0].mediaType: \"application/x-pickle\" is not an image layer");
  // A ModelPack artifactType with another config.
  m = json::parse(kSpecManifest);
  m["config"]["mediaType"] = kOciImageConfigMediaType;
  auto c = classifyPackageManifest(kOciManifest, m.dump());
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().message(),
            "config.mediaType: \"application/vnd.oci.image.config.v1+json\"; a ModelPack "
            "manifest's config is application/vnd.cncf.model.config.v1+json");
}

TEST(ModelPackage, EveryLayerMediaTypeOfTheSpecIsAccepted) {
  for (const char* kind : {"weight", "weight.config", "doc", "code", "dataset"}) {
    for (const char* form : {"raw", "tar", "tar+gzip", "tar+zstd"}) {
      const std::string t = std::string("application/vnd.cncf.model.") + kind + ".v1." + form;
      EXPECT_TRUE(isModelPackLayerMediaType(t)) << t;
    }
  }
  EXPECT_FALSE(isModelPackLayerMediaType("application/vnd.cncf.model.weight.v2.tar"));
  EXPECT_FALSE(isModelPackLayerMediaType("application/vnd.cncf.model.config.v1+json"));
  EXPECT_FALSE(isModelPackLayerMediaType("application/vnd.oci.image.layer.v1.tar"));
}

TEST(ModelPackage, MalformedConfigsNameTheField) {
  struct Case {
    std::string name, config, error;
  };
  const std::string fs =
      R"("modelfs": {"type": "layers", "diffIds": ["sha256:)" + std::string(64, 'a') + R"("]})";
  const std::vector<Case> cases = {
      {"not JSON", "{", "not JSON"},
      {"array", "[]", "not a JSON object"},
      {"no descriptor", R"({"config": {}, )" + fs + "}", "descriptor: required"},
      {"descriptor string", R"({"descriptor": "x", "config": {}, )" + fs + "}",
       "descriptor: must be an object, not a string"},
      {"no config", R"({"descriptor": {}, )" + fs + "}", "config: required"},
      {"paramSize number", R"({"descriptor": {}, "config": {"paramSize": 8}, )" + fs + "}",
       "config.paramSize: must be a string, not a number"},
      {"licenses string", R"({"descriptor": {"licenses": "MIT"}, "config": {}, )" + fs + "}",
       "descriptor.licenses: must be an array of strings, not a string"},
      {"inputTypes entry",
       R"({"descriptor": {}, "config": {"capabilities": {"inputTypes": ["text", 1]}}, )" + fs + "}",
       "config.capabilities.inputTypes[1]: must be a string, not a number"},
      {"reasoning string",
       R"({"descriptor": {}, "config": {"capabilities": {"reasoning": "yes"}}, )" + fs + "}",
       "config.capabilities.reasoning: must be a boolean, not a string"},
      {"no modelfs", R"({"descriptor": {}, "config": {}})", "modelfs: required"},
      {"modelfs type",
       R"({"descriptor": {}, "config": {}, "modelfs": {"type": "rootfs", "diffIds": []}})",
       "modelfs.type: must be \"layers\", not \"rootfs\""},
      {"no diffIds", R"({"descriptor": {}, "config": {}, "modelfs": {"type": "layers"}})",
       "modelfs.diffIds: required"},
      {"empty diffIds",
       R"({"descriptor": {}, "config": {}, "modelfs": {"type": "layers", "diffIds": []}})",
       "modelfs.diffIds: must list at least one DiffID"},
      {"bad diffId",
       R"({"descriptor": {}, "config": {}, "modelfs": {"type": "layers", "diffIds": ["md5:x"]}})",
       "modelfs.diffIds[0]: \"md5:x\" is not sha256:<64 lowercase hex>"},
  };
  for (const Case& c : cases) {
    auto got = parseModelPackConfig(c.config);
    ASSERT_FALSE(got.isOk()) << c.name;
    EXPECT_EQ(got.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_EQ(got.status().message(), c.error) << c.name;
  }
}

TEST(ModelPackage, ParamSizeFollowsTheSpecsGrammar) {
  EXPECT_EQ(parseParamSize("6.7B"), 6'700'000'000);
  EXPECT_EQ(parseParamSize("1.0t"), 1'000'000'000'000);
  EXPECT_EQ(parseParamSize("100m"), 100'000'000);
  EXPECT_EQ(parseParamSize("8b"), 8'000'000'000);
  EXPECT_EQ(parseParamSize("124M"), 124'000'000);
  EXPECT_EQ(parseParamSize("2k"), 2'000);
  EXPECT_EQ(parseParamSize("1q"), 1'000'000'000'000'000);
  for (const char* bad : {"", "b", "8", "8g", "6.75b", ".5b", "8 b", "-1b", "1e3b", "99999q"})
    EXPECT_EQ(parseParamSize(bad), std::nullopt) << bad;
}

TEST(ModelPackage, StatusRoundTrips) {
  auto p = classifyPackageManifest(kOciManifest, kSpecManifest);
  auto c = parseModelPackConfig(kSpecConfig);
  ASSERT_TRUE(p.isOk() && c.isOk());
  p->digest = "sha256:" + std::string(64, 'e');
  p->model = *c;
  const json j = encodePackageInfo(*p);
  EXPECT_EQ(j["kind"], "ModelPack");
  EXPECT_EQ(j["model"]["format"], "pt");
  EXPECT_EQ(j["model"]["parameterCount"], 8'000'000'000);
  auto back = decodePackageInfo(j);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(encodePackageInfo(*back), j);
  EXPECT_FALSE(decodePackageInfo(json{{"kind", "Image"}}));
  EXPECT_FALSE(decodePackageInfo(json::array()));
}

}  // namespace
}  // namespace lockstep::api::v1alpha1
