#include "operator/registry/reference.h"

#include <openssl/sha.h>

#include <nlohmann/json.hpp>

#include "api/image_ref.h"

namespace lockstep::registry {
namespace {

std::string inQuotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool known(std::string_view t) {
  return t == kOciManifest || t == kOciIndex || t == kDockerManifest || t == kDockerManifestList;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string PackageRef::apiHost() const {
  return registry == "docker.io" ? std::string("registry-1.docker.io") : registry;
}

StatusOr<PackageRef> parsePackageRef(std::string_view reference) {
  auto ref = api::parseImageRef(reference);
  if (!ref.isOk()) return ref.status().withContext("package " + inQuotes(reference));
  if (ref->digest.empty()) {
    return invalidArgument("package " + inQuotes(reference) +
                           " is not pinned by digest (expected <repo>@sha256:<64 hex>)");
  }
  return PackageRef{ref->domain, ref->path, ref->digest};
}

bool isValidTag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (!word(tag.front())) return false;
  for (char c : tag) {
    if (!word(c) && c != '.' && c != '-') return false;
  }
  return true;
}

std::string manifestAccept() {
  return std::string(kOciManifest) + ", " + kOciIndex + ", " + kDockerManifest + ", " +
         kDockerManifestList;
}

StatusOr<std::string> detectMediaType(std::string_view contentType, std::string_view body) {
  std::string_view ct = trim(contentType.substr(0, contentType.find(';')));
  if (known(ct)) return std::string(ct);
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return invalidArgument("the manifest is not a JSON object (Content-Type " +
                           inQuotes(contentType) + ")");
  }
  if (doc.contains("mediaType") && doc["mediaType"].is_string()) {
    std::string t = doc["mediaType"].get<std::string>();
    if (known(t)) return t;
    return invalidArgument("unsupported manifest mediaType " + inQuotes(t));
  }
  if (doc.contains("manifests")) return std::string(kOciIndex);
  if (doc.contains("config") && doc.contains("layers")) return std::string(kOciManifest);
  return invalidArgument("cannot tell the manifest's media type: Content-Type " +
                         inQuotes(contentType) + ", no mediaType field, neither config+layers " +
                         "nor manifests");
}

std::string sha256Digest(std::string_view bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned char b : md) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::string describeRegistryErrors(std::string_view body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("errors") || !doc["errors"].is_array()) return "";
  std::string out;
  for (const auto& e : doc["errors"]) {
    if (!e.is_object()) continue;
    std::string code = e.contains("code") && e["code"].is_string() ? e["code"].get<std::string>()
                                                                   : std::string("UNKNOWN");
    std::string message =
        e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : "";
    if (!out.empty()) out += "; ";
    out += code;
    if (!message.empty()) out += ": " + message;
  }
  return out;
}

Code codeForHttpStatus(int httpStatus) {
  if (httpStatus == 401) return Code::kUnauthorized;
  if (httpStatus == 403) return Code::kForbidden;
  if (httpStatus == 404) return Code::kNotFound;
  if (httpStatus == 429 || httpStatus >= 500) return Code::kUnavailable;
  return Code::kInvalidArgument;
}

}  // namespace lockstep::registry
