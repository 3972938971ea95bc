// OCI 1.1 referrers, pure: the artifact manifest that refers to a subject
// (image-spec v1.1 manifest.md, "subject" and "artifactType"), the referrers
// list (distribution-spec v1.1, GET /v2/<name>/referrers/<digest>: an image
// index of descriptors), and the tag-schema fallback for registries without
// that API: the index kept under the tag "sha256-<hex of the subject>", which
// the pusher reads, extends and writes back, as cosign and oras do. No I/O.
// Thread-safety: pure functions and values.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::registry {

// The empty JSON config of an artifact manifest (image-spec v1.1 "Guidance for
// an Empty Descriptor"): the two bytes "{}".
inline constexpr const char* kEmptyMediaType = "application/vnd.oci.empty.v1+json";
inline constexpr const char* kEmptyBlob = "{}";

// A content descriptor (image-spec descriptor.md), with the two fields the
// referrers list copies from the manifest it describes.
struct Descriptor {
  std::string mediaType;
  std::string digest;
  int64_t size = 0;
  std::string artifactType;                        // "" when absent
  std::map<std::string, std::string> annotations;  // empty when absent
};

// What is pushed as a referrer: one blob (a layer) in a manifest of its own.
struct Artifact {
  std::string artifactType;                        // also the layer's media type
  std::string bytes;                               // the layer's bytes
  std::map<std::string, std::string> annotations;  // the manifest's annotations
};

// The manifest bytes of `artifact` referring to `subject`: config the empty
// descriptor, one layer, `subject`, `artifactType`, the annotations. The
// same input gives the same bytes (keys in a fixed order).
std::string referrerManifest(const Descriptor& subject, const Artifact& artifact);

// The descriptor of `manifestBytes` (an OCI image manifest) as a referrers list
// shows it: its media type, digest, size, artifactType (the manifest's, else its
// config's media type, as distribution-spec says) and annotations.
StatusOr<Descriptor> referrerDescriptor(std::string_view manifestBytes);

// The descriptors of a referrers list or fallback index (an OCI image index).
// InvalidArgument naming `origin` and the field for bytes that are not one.
StatusOr<std::vector<Descriptor>> parseReferrersIndex(std::string_view bytes,
                                                      const std::string& origin);

// The fallback tag of a subject digest: "sha256:<hex>" → "sha256-<hex>".
std::string referrersTag(std::string_view subjectDigest);

// The fallback index with `added` in it: `current` (the bytes under the tag,
// "" when there is none) with every descriptor kept and `added` appended
// unless a descriptor of that digest is there already. InvalidArgument when
// `current` is not an image index.
StatusOr<std::string> indexWith(std::string_view current, const Descriptor& added);

}  // namespace lockstep::registry
