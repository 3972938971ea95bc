// Container image references: parsing, normalization and "pinned to" checks.
// Follows the Docker reference grammar as far as admission needs it:
// [domain/]path[:tag][@sha256:<64 hex>], where a first component without '.'
// or ':' (and not "localhost") is a Docker Hub path, normalized to
// docker.io/library/<name> for single-component names ("busybox").
// Thread-safety: pure functions and values.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::api {

struct ImageRef {
  std::string domain;  // "docker.io", "registry.example:5000"
  std::string path;    // "library/busybox", "runtimes/torch"
  std::string tag;     // empty when absent
  std::string digest;  // "sha256:<64 lowercase hex>", empty when absent

  // domain + "/" + path, the normalized repository used for comparisons.
  std::string repository() const { return domain + "/" + path; }
  bool pinned() const { return !digest.empty(); }
};

// Parses and normalizes an image reference. Fails on empty input, bad
// characters, an uppercase repository, or a digest that is not sha256:<64 hex>.
StatusOr<ImageRef> parseImageRef(std::string_view ref);

// True when `s` is "sha256:" followed by exactly 64 lowercase hex digits.
bool isSha256Digest(std::string_view s);

// True when `a` and `b` are the same pinned image: both parse, both carry a
// digest, and their normalized repositories and digests are equal ("foo@sha256:x"
// is "docker.io/library/foo@sha256:x"; a tag beside the digest is ignored, as the
// container runtime ignores it). Admission and the controllers compare images
// with this, never as text.
bool sameImage(std::string_view a, std::string_view b);

}  // namespace lockstep::api
