// Package URLs (purl, https://github.com/package-url/purl-spec) of the things
// an ML-BOM lists: closure packages (pkg:pypi, pkg:conda, pkg:nix, else
// pkg:generic) and OCI artifacts (pkg:oci, by digest).
// Pure. Thread-safety: free functions over values.
#pragma once

#include <string>
#include <string_view>

#include "api/image_ref.h"
#include "closure/closure.h"

namespace lockstep::evidence {

// "pkg:pypi/torch@2.5.1%2Bcu121", "pkg:conda/numpy@1.26.4", "pkg:nix/hello" (a Nix
// path-info entry has no version), "pkg:generic/<name>@<version>" for other ecosystems.
std::string packageUrl(const closure::Package& p);

// "pkg:oci/gpt2@sha256%3Aab12…?repository_url=registry.example/models/gpt2" (the name is
// the repository's last path component; the version its digest; `ref` must be pinned).
std::string ociPackageUrl(const api::ImageRef& ref);

// Percent-encodes every byte but the purl-safe ones (A-Z a-z 0-9 . - _ ~, and '/' when
// `keepSlash`): a purl's name, version and qualifier values.
std::string percentEncode(std::string_view s, bool keepSlash = false);

}  // namespace lockstep::evidence
