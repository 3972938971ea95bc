#include "api/v1alpha1/model_package.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "api/v1alpha1/meta.h"

namespace lockstep::api::v1alpha1 {
namespace {

using nlohmann::json;

constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
constexpr std::string_view kDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";

std::string inQuotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// JSON's own type name, for "a string, not a number".
std::string typeName(const json& j) {
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "null";
}

Status wrongType(const std::string& path, const char* want, const json& got) {
  return invalidArgument(path + ": must be " + want + ", not " + typeName(got));
}

// Reads the optional string `key` of `obj` (at `path`) into `out`.
Status optString(const json& obj, const std::string& path, const char* key, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::ok();
  if (!it->is_string()) return wrongType(path + "." + key, "a string", *it);
  out = it->get<std::string>();
  return Status::ok();
}

Status optStrings(const json& obj, const std::string& path, const char* key,
                  std::vector<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::ok();
  if (!it->is_array()) return wrongType(path + "." + key, "an array of strings", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    if (!e.is_string())
      return wrongType(path + "." + key + "[" + std::to_string(i) + "]", "a string", e);
    out.push_back(e.get<std::string>());
  }
  return Status::ok();
}

Status optBool(const json& obj, const std::string& path, const char* key,
               std::optional<bool>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean()) return wrongType(path + "." + key, "a boolean", *it);
  out = it->get<bool>();
  return Status::ok();
}

// The required object `key` of `obj`.
StatusOr<const json*> requiredObject(const json& obj, const std::string& path) {
  auto it = obj.find(path);
  if (it == obj.end()) return invalidArgument(path + ": required");
  if (!it->is_object()) return wrongType(path, "an object", *it);
  return &*it;
}

bool isImageLayerMediaType(std::string_view t) {
  return t.rfind("application/vnd.oci.image.layer.", 0) == 0 ||
         t.rfind("application/vnd.docker.image.rootfs.", 0) == 0;
}

// "sha256:<64 lowercase hex>".
bool isSha256(std::string_view d) {
  constexpr std::string_view kPrefix = "sha256:";
  if (d.size() != kPrefix.size() + 64 || d.substr(0, kPrefix.size()) != kPrefix) return false;
  for (char c : d.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A descriptor's mediaType, digest and size; errors name `path`.
struct Descriptor {
  std::string mediaType, digest;
  int64_t size = 0;
};
StatusOr<Descriptor> descriptorAt(const json& d, const std::string& path) {
  if (!d.is_object()) return wrongType(path, "a descriptor object", d);
  Descriptor out;
  auto mt = d.find("mediaType");
  if (mt == d.end()) return invalidArgument(path + ".mediaType: required");
  if (!mt->is_string()) return wrongType(path + ".mediaType", "a string", *mt);
  out.mediaType = mt->get<std::string>();
  auto dg = d.find("digest");
  if (dg == d.end()) return invalidArgument(path + ".digest: required");
  if (!dg->is_string()) return wrongType(path + ".digest", "a string", *dg);
  out.digest = dg->get<std::string>();
  auto sz = d.find("size");
  if (sz != d.end()) {
    if (!sz->is_number_integer()) return wrongType(path + ".size", "an integer", *sz);
    out.size = sz->get<int64_t>();
  }
  return out;
}

// "artifactType \"x\", config.mediaType \"y\", layer media types \"a\", \"b\"".
std::string mediaTypesOf(const std::string& artifactType, const std::string& configType,
                         const std::vector<Descriptor>& layers) {
  std::string out;
  if (!artifactType.empty()) out += "artifactType " + inQuotes(artifactType) + ", ";
  out += "config.mediaType " + inQuotes(configType);
  std::vector<std::string> seen;
  for (const Descriptor& l : layers) {
    bool dup = false;
    for (const std::string& s : seen) dup = dup || s == l.mediaType;
    if (!dup) seen.push_back(l.mediaType);
  }
  if (!seen.empty()) {
    out += seen.size() == 1 ? ", layer media type " : ", layer media types ";
    for (size_t i = 0; i < seen.size(); ++i) out += (i == 0 ? "" : ", ") + inQuotes(seen[i]);
  }
  return out;
}

}  // namespace

bool isModelPackLayerMediaType(std::string_view t) {
  constexpr std::string_view kPrefix = "application/vnd.cncf.model.";
  if (t.substr(0, kPrefix.size()) != kPrefix) return false;
  t.remove_prefix(kPrefix.size());
  static constexpr std::array<std::string_view, 5> kKinds = {"weight.config", "weight", "doc",
                                                             "code", "dataset"};
  static constexpr std::array<std::string_view, 4> kForms = {"raw", "tar", "tar+gzip", "tar+zstd"};
  for (std::string_view kind : kKinds) {
    for (std::string_view form : kForms) {
      std::string want = std::string(kind) + ".v1." + std::string(form);
      if (t == want) return true;
    }
  }
  return false;
}

StatusOr<PackageInfo> classifyPackageManifest(std::string_view mediaType,
                                              std::string_view manifestBytes) {
  json m = json::parse(manifestBytes, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return invalidArgument("manifest: not a JSON object");
  PackageInfo out;
  out.mediaType = std::string(mediaType);
  if (mediaType == kOciIndex || mediaType == kDockerManifestList) {
    out.kind = kPackageKindImageIndex;
    const json& manifests = decode::array(m, "manifests");
    out.layers = static_cast<int64_t>(manifests.size());
    if (auto a = decode::optionalString(m, "artifactType"); a && !a->empty()) {
      return invalidArgument("artifactType: " + inQuotes(*a) +
                             " is neither an image index nor a ModelPack model (" +
                             kModelPackArtifactType + ")");
    }
    return out;
  }
  if (mediaType != kOciManifest && mediaType != kDockerManifest) {
    return invalidArgument("mediaType: " + inQuotes(mediaType) +
                           " is not an OCI or Docker image manifest");
  }
  if (auto it = m.find("artifactType"); it != m.end() && !it->is_null()) {
    if (!it->is_string()) return wrongType("artifactType", "a string", *it);
    out.artifactType = it->get<std::string>();
  }
  auto config = m.find("config");
  if (config == m.end()) return invalidArgument("config: required");
  auto configDesc = descriptorAt(*config, "config");
  if (!configDesc.isOk()) return configDesc.status();
  out.configMediaType = configDesc->mediaType;
  out.configDigest = configDesc->digest;
  std::vector<Descriptor> layers;
  if (auto it = m.find("layers"); it != m.end()) {
    if (!it->is_array()) return wrongType("layers", "an array", *it);
    for (size_t i = 0; i < it->size(); ++i) {
      auto d = descriptorAt((*it)[i], "layers[" + std::to_string(i) + "]");
      if (!d.isOk()) return d.status();
      out.size += d->size;
      layers.push_back(std::move(*d));
    }
  }
  out.layers = static_cast<int64_t>(layers.size());

  const bool modelPack =
      out.artifactType == kModelPackArtifactType ||
      (out.artifactType.empty() && out.configMediaType == kModelPackConfigMediaType);
  const bool image =
      out.artifactType.empty() && (out.configMediaType == kOciImageConfigMediaType ||
                                   out.configMediaType == kDockerImageConfigMediaType);
  if (!modelPack && !image) {
    return invalidArgument(
        std::string(out.artifactType.empty() ? "config.mediaType" : "artifactType") +
        ": neither an image nor a ModelPack model (" + kModelPackArtifactType +
        "): the manifest has " + mediaTypesOf(out.artifactType, out.configMediaType, layers));
  }
  if (modelPack) {
    out.kind = kPackageKindModelPack;
    if (out.configMediaType != kModelPackConfigMediaType) {
      return invalidArgument("config.mediaType: " + inQuotes(out.configMediaType) +
                             "; a ModelPack manifest's config is " + kModelPackConfigMediaType);
    }
    if (!isSha256(out.configDigest))
      return invalidArgument("config.digest: " + inQuotes(out.configDigest) +
                             " is not sha256:<hex>");
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!isModelPackLayerMediaType(layers[i].mediaType)) {
        return invalidArgument("layers[" + std::to_string(i) +
                               "].mediaType: " + inQuotes(layers[i].mediaType) +
                               " is not a ModelPack layer media type (model-spec: "
                               "application/vnd.cncf.model.{weight,weight.config,doc,code,"
                               "dataset}.v1.{raw,tar,tar+gzip,tar+zstd})");
      }
    }
    return out;
  }
  out.kind = kPackageKindImage;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!isImageLayerMediaType(layers[i].mediaType)) {
      return invalidArgument("layers[" + std::to_string(i) +
                             "].mediaType: " + inQuotes(layers[i].mediaType) +
                             " is not an image layer (application/vnd.oci.image.layer.*, "
                             "application/vnd.docker.image.rootfs.*) in an image manifest");
    }
  }
  return out;
}

std::optional<int64_t> parseParamSize(std::string_view s) {
  if (s.size() < 2) return std::nullopt;
  const char scale = s.back();
  double multiplier = 0;
  switch (scale) {
    case 'K':
    case 'k':
      multiplier = 1e3;
      break;
    case 'M':
    case 'm':
      multiplier = 1e6;
      break;
    case 'B':
    case 'b':
      multiplier = 1e9;
      break;
    case 'T':
    case 't':
      multiplier = 1e12;
      break;
    case 'Q':
    case 'q':
      multiplier = 1e15;
      break;
    default:
      return std::nullopt;
  }
  std::string_view count = s.substr(0, s.size() - 1);
  // <digits>[.<digit>]
  int64_t whole = 0;
  size_t i = 0;
  for (; i < count.size() && count[i] >= '0' && count[i] <= '9'; ++i) {
    if (whole > std::numeric_limits<int64_t>::max() / 10 - 9) return std::nullopt;
    whole = whole * 10 + (count[i] - '0');
  }
  if (i == 0) return std::nullopt;
  int64_t tenth = 0;
  if (i < count.size()) {
    if (count[i] != '.' || i + 2 != count.size() || count[i + 1] < '0' || count[i + 1] > '9')
      return std::nullopt;
    tenth = count[i + 1] - '0';
  }
  const double value = (static_cast<double>(whole) + static_cast<double>(tenth) / 10) * multiplier;
  if (value >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(std::llround(value));
}

StatusOr<ModelPackConfig> parseModelPackConfig(std::string_view bytes) {
  json c = json::parse(bytes, nullptr, false);
  if (c.is_discarded()) return invalidArgument("not JSON");
  if (!c.is_object()) return invalidArgument("not a JSON object");
  ModelPackConfig out;
  auto descriptor = requiredObject(c, "descriptor");
  if (!descriptor.isOk()) return descriptor.status();
  const json& d = **descriptor;
  for (auto [key, field] : {std::pair{"name", &out.name},
                            {"family", &out.family},
                            {"version", &out.version},
                            {"title", &out.title},
                            {"vendor", &out.vendor},
                            {"createdAt", &out.createdAt},
                            {"revision", &out.revision},
                            {"description", &out.description}}) {
    if (Status s = optString(d, "descriptor", key, *field); !s.isOk()) return s;
  }
  if (Status s = optStrings(d, "descriptor", "licenses", out.licenses); !s.isOk()) return s;
  if (Status s = optStrings(d, "descriptor", "authors", out.authors); !s.isOk()) return s;

  auto config = requiredObject(c, "config");
  if (!config.isOk()) return config.status();
  const json& cf = **config;
  for (auto [key, field] : {std::pair{"format", &out.format},
                            {"architecture", &out.architecture},
                            {"paramSize", &out.paramSize},
                            {"precision", &out.precision},
                            {"quantization", &out.quantization}}) {
    if (Status s = optString(cf, "config", key, *field); !s.isOk()) return s;
  }
  out.parameterCount = parseParamSize(out.paramSize);
  if (auto it = cf.find("capabilities"); it != cf.end() && !it->is_null()) {
    const std::string path = "config.capabilities";
    if (!it->is_object()) return wrongType(path, "an object", *it);
    if (Status s = optStrings(*it, path, "inputTypes", out.inputTypes); !s.isOk()) return s;
    if (Status s = optStrings(*it, path, "outputTypes", out.outputTypes); !s.isOk()) return s;
    if (Status s = optStrings(*it, path, "languages", out.languages); !s.isOk()) return s;
    if (Status s = optBool(*it, path, "reasoning", out.reasoning); !s.isOk()) return s;
    if (Status s = optBool(*it, path, "toolUsage", out.toolUsage); !s.isOk()) return s;
    if (Status s = optBool(*it, path, "reward", out.reward); !s.isOk()) return s;
  }

  auto modelfs = requiredObject(c, "modelfs");
  if (!modelfs.isOk()) return modelfs.status();
  const json& fs = **modelfs;
  auto type = fs.find("type");
  if (type == fs.end()) return invalidArgument("modelfs.type: required");
  if (!type->is_string() || type->get<std::string>() != "layers")
    return invalidArgument("modelfs.type: must be \"layers\", not " + type->dump());
  if (fs.find("diffIds") == fs.end()) return invalidArgument("modelfs.diffIds: required");
  if (Status s = optStrings(fs, "modelfs", "diffIds", out.diffIds); !s.isOk()) return s;
  if (out.diffIds.empty()) return invalidArgument("modelfs.diffIds: must list at least one DiffID");
  for (size_t i = 0; i < out.diffIds.size(); ++i) {
    if (!isSha256(out.diffIds[i])) {
      return invalidArgument("modelfs.diffIds[" + std::to_string(i) + "]: " +
                             inQuotes(out.diffIds[i]) + " is not sha256:<64 lowercase hex>");
    }
  }
  return out;
}

Status checkModelPackLayers(const PackageInfo& manifest, const ModelPackConfig& config) {
  if (static_cast<int64_t>(config.diffIds.size()) != manifest.layers) {
    return invalidArgument("modelfs.diffIds: " + std::to_string(config.diffIds.size()) +
                           " DiffIDs for the manifest's " + std::to_string(manifest.layers) +
                           " layers");
  }
  return Status::ok();
}

nlohmann::json encodePackageInfo(const PackageInfo& p) {
  json j = {{"digest", p.digest}, {"kind", p.kind}, {"mediaType", p.mediaType}};
  if (!p.artifactType.empty()) j["artifactType"] = p.artifactType;
  if (!p.configMediaType.empty()) j["configMediaType"] = p.configMediaType;
  j["layers"] = p.layers;
  j["size"] = p.size;
  if (p.model) {
    const ModelPackConfig& m = *p.model;
    json model = json::object();
    auto put = [&](const char* key, const std::string& v) {
      if (!v.empty()) model[key] = v;
    };
    put("name", m.name);
    put("family", m.family);
    put("version", m.version);
    put("format", m.format);
    put("architecture", m.architecture);
    put("paramSize", m.paramSize);
    if (m.parameterCount) model["parameterCount"] = *m.parameterCount;
    put("precision", m.precision);
    put("quantization", m.quantization);
    // At most the CRD's maxItems (20 licenses, 10 types): a longer list is cut.
    auto list = [&](const char* key, const std::vector<std::string>& v, size_t max) {
      if (v.empty()) return;
      json items = json::array();
      for (size_t i = 0; i < v.size() && i < max; ++i) items.push_back(v[i]);
      model[key] = std::move(items);
    };
    list("licenses", m.licenses, 20);
    list("inputTypes", m.inputTypes, 10);
    list("outputTypes", m.outputTypes, 10);
    put("configDigest", p.configDigest);
    j["model"] = std::move(model);
  }
  return j;
}

std::optional<PackageInfo> decodePackageInfo(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  PackageInfo p;
  p.digest = decode::string(j, "digest");
  p.kind = decode::string(j, "kind");
  if (p.digest.empty() || p.kind.empty()) return std::nullopt;
  p.mediaType = decode::string(j, "mediaType");
  p.artifactType = decode::string(j, "artifactType");
  p.configMediaType = decode::string(j, "configMediaType");
  p.layers = decode::integer(j, "layers", 0);
  p.size = decode::integer(j, "size", 0);
  if (const json* m = decode::member(j, "model"); m != nullptr && m->is_object()) {
    ModelPackConfig c;
    c.name = decode::string(*m, "name");
    c.family = decode::string(*m, "family");
    c.version = decode::string(*m, "version");
    c.format = decode::string(*m, "format");
    c.architecture = decode::string(*m, "architecture");
    c.paramSize = decode::string(*m, "paramSize");
    if (const json* n = decode::member(*m, "parameterCount"); n && n->is_number_integer())
      c.parameterCount = n->get<int64_t>();
    c.precision = decode::string(*m, "precision");
    c.quantization = decode::string(*m, "quantization");
    auto strings = [&](const char* key, std::vector<std::string>& out) {
      for (const json& e : decode::array(*m, key)) {
        if (e.is_string()) out.push_back(e.get<std::string>());
      }
    };
    strings("licenses", c.licenses);
    strings("inputTypes", c.inputTypes);
    strings("outputTypes", c.outputTypes);
    p.configDigest = decode::string(*m, "configDigest");
    p.model = std::move(c);
  }
  return p;
}

}  // namespace lockstep::api::v1alpha1
