// OCI distribution vocabulary, pure: a package reference split into the
// registry host and repository the distribution API addresses, the manifest
// media types Lockstep accepts, digest verification, and the registry's
// error JSON. No I/O. Thread-safety: pure functions and values.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::registry {

// A package pinned by digest: "registry.example:5000/models/gpt2@sha256:<hex>".
struct PackageRef {
  std::string registry;    // "registry.example:5000" (as written, Docker Hub normalized)
  std::string repository;  // "models/gpt2"
  std::string digest;      // "sha256:<64 lowercase hex>"

  // The host the distribution API is served on ("registry-1.docker.io" for docker.io).
  std::string apiHost() const;
  // "registry.example:5000/models/gpt2" — for messages and tag references.
  std::string name() const { return registry + "/" + repository; }
};

// Parses a package reference that must be pinned by digest; a tag beside the
// digest is ignored (the digest wins, as in every OCI client). InvalidArgument
// naming the reference otherwise.
StatusOr<PackageRef> parsePackageRef(std::string_view reference);

// A tag as the distribution spec allows it: [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}.
bool isValidTag(std::string_view tag);

// Manifest media types (OCI image spec, Docker image manifest v2).
inline constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr const char* kDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr const char* kDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";

// The Accept header of a manifest GET: all four. A registry answers 404 for a
// manifest whose type the request does not accept (Debian's docker-registry
// 2.8 does for OCI manifests).
std::string manifestAccept();

// The media type of manifest bytes: the response's Content-Type when it is one
// of the four (parameters such as "; charset=utf-8" dropped), else the JSON's
// own `mediaType` field, else inferred from its shape (`manifests` → index,
// `config` + `layers` → OCI manifest). InvalidArgument when none fits.
StatusOr<std::string> detectMediaType(std::string_view contentType, std::string_view body);

// "sha256:<hex>" of the bytes.
std::string sha256Digest(std::string_view bytes);

// The registry's error JSON ({"errors":[{"code","message","detail"}]}) as
// "CODE: message; CODE2: message2", or "" when the body is not that JSON.
std::string describeRegistryErrors(std::string_view body);

// Status code for an HTTP answer of a registry (401 Unauthorized, 403
// Forbidden, 404 NotFound, 429/5xx Unavailable, other 4xx InvalidArgument).
Code codeForHttpStatus(int httpStatus);

}  // namespace lockstep::registry
