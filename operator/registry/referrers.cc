#include "operator/registry/referrers.h"

#include <nlohmann/json.hpp>

#include "operator/registry/reference.h"

namespace lockstep::registry {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json descriptorJson(const Descriptor& d) {
  ordered_json out = {{"mediaType", d.mediaType}, {"digest", d.digest}, {"size", d.size}};
  if (!d.artifactType.empty()) out["artifactType"] = d.artifactType;
  if (!d.annotations.empty()) out["annotations"] = d.annotations;
  return out;
}

StatusOr<Descriptor> descriptorFrom(const json& j, const std::string& where) {
  if (!j.is_object()) return invalidArgument(where + ": not an object");
  Descriptor d;
  auto str = [&](const char* key, std::string& into, bool required) -> Status {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) return invalidArgument(where + "." + key + ": missing");
      return Status::ok();
    }
    if (!it->is_string()) return invalidArgument(where + "." + key + ": not a string");
    into = it->get<std::string>();
    return Status::ok();
  };
  LOCKSTEP_RETURN_IF_ERROR(str("mediaType", d.mediaType, true));
  LOCKSTEP_RETURN_IF_ERROR(str("digest", d.digest, true));
  LOCKSTEP_RETURN_IF_ERROR(str("artifactType", d.artifactType, false));
  auto size = j.find("size");
  if (size == j.end() || !size->is_number_integer() || size->get<int64_t>() < 0)
    return invalidArgument(where + ".size: missing or not a non-negative integer");
  d.size = size->get<int64_t>();
  if (auto a = j.find("annotations"); a != j.end()) {
    if (!a->is_object()) return invalidArgument(where + ".annotations: not an object");
    for (const auto& [k, v] : a->items()) {
      if (!v.is_string()) return invalidArgument(where + ".annotations." + k + ": not a string");
      d.annotations[k] = v.get<std::string>();
    }
  }
  return d;
}

}  // namespace

std::string referrerManifest(const Descriptor& subject, const Artifact& artifact) {
  ordered_json m;
  m["schemaVersion"] = 2;
  m["mediaType"] = kOciManifest;
  m["artifactType"] = artifact.artifactType;
  m["config"] = descriptorJson({kEmptyMediaType, sha256Digest(kEmptyBlob), 2, "", {}});
  m["layers"] = ordered_json::array({descriptorJson({artifact.artifactType,
                                                     sha256Digest(artifact.bytes),
                                                     static_cast<int64_t>(artifact.bytes.size()),
                                                     "",
                                                     {}})});
  Descriptor s = subject;
  s.artifactType.clear();
  s.annotations.clear();
  m["subject"] = descriptorJson(s);
  if (!artifact.annotations.empty()) m["annotations"] = artifact.annotations;
  return m.dump();
}

StatusOr<Descriptor> referrerDescriptor(std::string_view manifestBytes) {
  json m = json::parse(manifestBytes, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object()) return invalidArgument("referrer manifest: not a JSON object");
  Descriptor d;
  d.mediaType = m.value("mediaType", std::string(kOciManifest));
  d.digest = sha256Digest(manifestBytes);
  d.size = static_cast<int64_t>(manifestBytes.size());
  if (auto at = m.find("artifactType"); at != m.end() && at->is_string()) {
    d.artifactType = at->get<std::string>();
  } else if (auto c = m.find("config"); c != m.end() && c->is_object()) {
    d.artifactType = c->value("mediaType", "");
  }
  if (auto a = m.find("annotations"); a != m.end() && a->is_object()) {
    for (const auto& [k, v] : a->items())
      if (v.is_string()) d.annotations[k] = v.get<std::string>();
  }
  return d;
}

StatusOr<std::vector<Descriptor>> parseReferrersIndex(std::string_view bytes,
                                                      const std::string& origin) {
  json index = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object()) return invalidArgument(origin + ": not a JSON object");
  if (auto mt = index.find("mediaType");
      mt != index.end() && (!mt->is_string() || mt->get<std::string>() != kOciIndex)) {
    return invalidArgument(origin + ".mediaType: " + mt->dump() + ", not " + kOciIndex);
  }
  auto manifests = index.find("manifests");
  if (manifests == index.end() || manifests->is_null()) return std::vector<Descriptor>{};
  if (!manifests->is_array()) return invalidArgument(origin + ".manifests: not an array");
  std::vector<Descriptor> out;
  for (size_t i = 0; i < manifests->size(); ++i) {
    auto d = descriptorFrom((*manifests)[i], origin + ".manifests[" + std::to_string(i) + "]");
    if (!d.isOk()) return d.status();
    out.push_back(std::move(*d));
  }
  return out;
}

std::string referrersTag(std::string_view subjectDigest) {
  std::string tag(subjectDigest);
  if (auto colon = tag.find(':'); colon != std::string::npos) tag[colon] = '-';
  return tag;
}

StatusOr<std::string> indexWith(std::string_view current, const Descriptor& added) {
  std::vector<Descriptor> kept;
  if (!current.empty()) {
    auto parsed = parseReferrersIndex(current, "referrers index");
    if (!parsed.isOk()) return parsed.status();
    kept = std::move(*parsed);
  }
  bool present = false;
  for (const Descriptor& d : kept) present = present || d.digest == added.digest;
  if (!present) kept.push_back(added);
  ordered_json index;
  index["schemaVersion"] = 2;
  index["mediaType"] = kOciIndex;
  index["manifests"] = ordered_json::array();
  for (const Descriptor& d : kept) index["manifests"].push_back(descriptorJson(d));
  return index.dump();
}

}  // namespace lockstep::registry
