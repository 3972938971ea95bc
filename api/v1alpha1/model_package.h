// What a release's package is, read from its manifest (pure): an OCI or Docker
// image (or an index of images), or a ModelPack model — the CNCF model-spec
// (github.com/modelpack/model-spec, docs/spec.md and docs/config.md): an OCI
// image manifest with artifactType application/vnd.cncf.model.manifest.v1+json,
// a config blob of application/vnd.cncf.model.config.v1+json (descriptor,
// config, modelfs) and layers of the spec's media types. Anything else is
// refused, naming the media types it has (docs/supply-chain.md "ModelPack
// packages"). The description is the release's status.package and the ML-BOM's
// model card. No I/O: the shell (controllers/modelrelease/package_reader.h)
// fetches the bytes. Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::api::v1alpha1 {

// The model-spec's media types (specs-go/v1/mediatype.go).
inline constexpr char kModelPackArtifactType[] = "application/vnd.cncf.model.manifest.v1+json";
inline constexpr char kModelPackConfigMediaType[] = "application/vnd.cncf.model.config.v1+json";
// The image config media types (OCI image spec, Docker image manifest v2).
inline constexpr char kOciImageConfigMediaType[] = "application/vnd.oci.image.config.v1+json";
inline constexpr char kDockerImageConfigMediaType[] =
    "application/vnd.docker.container.image.v1+json";

// status.package.kind.
inline constexpr char kPackageKindImage[] = "Image";
inline constexpr char kPackageKindImageIndex[] = "ImageIndex";
inline constexpr char kPackageKindModelPack[] = "ModelPack";

// True for the model-spec's layer media types: application/vnd.cncf.model.
// {weight,weight.config,doc,code,dataset}.v1.{raw,tar,tar+gzip,tar+zstd}.
bool isModelPackLayerMediaType(std::string_view mediaType);

// The ModelPack config's fields Lockstep reports (docs/config.md).
struct ModelPackConfig {
  // descriptor
  std::string name, family, version, title, vendor, createdAt, revision, description;
  std::vector<std::string> licenses;  // SPDX license expressions
  std::vector<std::string> authors;
  // config
  std::string format;                     // "safetensors", "gguf", "onnx", "pt"
  std::string architecture;               // "transformer", "cnn"
  std::string paramSize;                  // as written: "8b", "6.7B", "100m"
  std::optional<int64_t> parameterCount;  // paramSize read by the spec's grammar
  std::string precision;                  // "bfloat16", "float16,float8_e4m3"
  std::string quantization;               // "awq", "gptq"
  std::vector<std::string> inputTypes, outputTypes, languages;
  std::optional<bool> reasoning, toolUsage, reward;
  // modelfs
  std::vector<std::string> diffIds;
};

// A package as its manifest (and, for ModelPack, its config) describes it.
struct PackageInfo {
  std::string digest;                    // the manifest's, sha256:<hex>
  std::string kind;                      // kPackageKind*
  std::string mediaType;                 // the manifest's
  std::string artifactType;              // the manifest's; "" when it has none
  std::string configMediaType;           // "" for an index
  std::string configDigest;              // the config descriptor's digest
  int64_t layers = 0;                    // layers (manifests of an index)
  int64_t size = 0;                      // bytes of the layers, as the descriptors give them
  std::optional<ModelPackConfig> model;  // ModelPack only, once its config was read
};

// Classifies manifest bytes of `mediaType` (registry::detectMediaType's answer).
// InvalidArgument naming the field (`layers[2].mediaType: …`) for a manifest
// that is neither an image nor a ModelPack model, naming every media type it has.
StatusOr<PackageInfo> classifyPackageManifest(std::string_view mediaType,
                                              std::string_view manifestBytes);

// Parses a ModelPack config blob (application/vnd.cncf.model.config.v1+json).
// InvalidArgument naming the field path (`config.paramSize: …`) for a blob that
// is not JSON, lacks descriptor / config / modelfs, or has a field of another type.
StatusOr<ModelPackConfig> parseModelPackConfig(std::string_view bytes);

// A ModelPack config checked against its manifest: modelfs.diffIds lists one
// DiffID per layer. InvalidArgument naming the field otherwise.
Status checkModelPackLayers(const PackageInfo& manifest, const ModelPackConfig& config);

// paramSize by the spec's grammar, `<count><scale-prefix>`: a decimal count
// with at most one digit after the point and one of Q T B M K (any case):
// "6.7B" → 6,700,000,000. nullopt for anything else.
std::optional<int64_t> parseParamSize(std::string_view paramSize);

// status.package (crds/lockstep.dev_modelreleases.yaml).
nlohmann::json encodePackageInfo(const PackageInfo& p);
// nullopt when `j` is not an object with a digest and a kind.
std::optional<PackageInfo> decodePackageInfo(const nlohmann::json& j);

}  // namespace lockstep::api::v1alpha1
