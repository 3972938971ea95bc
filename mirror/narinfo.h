// A Nix binary cache as a source of NARs for `mirror push --nix-cache URL`
// (docs/supply-chain.md, "Nix store paths"), pure: where a store path's narinfo is, the
// narinfo read (Nix's "Key: value" lines, libstore/nar-info.cc), where its NAR file is,
// and whether it describes the NAR the lock names. No I/O: the verb downloads, decompresses
// (mirror/xz.h) and hashes. Thread-safety: pure functions and values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "mirror/mirror.h"

namespace lockstep::mirror {

struct NarInfo {
  std::string storePath;
  std::string url;          // the NAR file, relative to the cache ("nar/….nar.xz")
  std::string compression;  // "none", "xz", ...; "bzip2" when the narinfo says none
  std::string fileHash;     // "sha256:<hex>" of the file as stored, "" when not given
  int64_t fileSize = -1;
  std::string narHash;  // "sha256:<hex>"
  int64_t narSize = -1;
  std::vector<std::string> references;  // base names, as written
};

// The narinfo's text read. InvalidArgument naming `origin` and the key for a narinfo
// without StorePath, URL, NarHash or NarSize, or with a value that is not one.
StatusOr<NarInfo> parseNarInfo(std::string_view text, const std::string& origin);

// --nix-cache: "https://host[/path]" or "file:///dir", without a trailing '/'.
// InvalidArgument for another scheme.
StatusOr<std::string> parseNixCacheUrl(std::string_view url);
// The NAR file's URL: the narinfo's URL relative to the cache, or an absolute https URL.
// InvalidArgument for another scheme, "..", or an empty URL.
StatusOr<std::string> narFileUrl(std::string_view cache, const NarInfo& info,
                                 const std::string& origin);
// The narinfo is of `e`'s store path and NAR (its NarHash and NarSize are the lock's), in
// a compression this build reads ("none", "xz"). InvalidArgument naming both values.
Status checkNarInfo(const NarInfo& info, const Entry& e, const std::string& origin);

}  // namespace lockstep::mirror
