// The mirror of a closure's artifacts in an OCI repository (docs/supply-chain.md, "The
// mirror"), pure: which files a lock's closure has and what each is (file name, purl,
// media type, conda subdir), where `mirror push` takes each from, the artifact manifest
// that lists them (its bytes, and reading it back), the tag it goes under, and what
// `mirror fetch` writes (paths, a requirements file). No I/O: the `lockstep mirror`
// verb does the reading, hashing and registry calls. Thread-safety: pure functions and
// values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "closure/closure.h"
#include "common/status.h"

namespace lockstep::mirror {

// The manifest's artifactType, and the media types of its layers (one per file).
inline constexpr char kArtifactType[] = "application/vnd.lockstep.mirror.v1+json";
inline constexpr char kWheelMediaType[] = "application/vnd.lockstep.mirror.pypi.wheel.v1";
inline constexpr char kSdistMediaType[] = "application/vnd.lockstep.mirror.pypi.sdist.v1";
inline constexpr char kCondaMediaType[] = "application/vnd.lockstep.mirror.conda.package.v1";
inline constexpr char kFileMediaType[] = "application/vnd.lockstep.mirror.file.v1";
inline constexpr char kNarMediaType[] = "application/vnd.lockstep.mirror.nix.nar.v1";

// Layer annotations. The title is the file name, as `oras pull` names what it writes.
inline constexpr char kTitleAnnotation[] = "org.opencontainers.image.title";
inline constexpr char kPurlAnnotation[] = "dev.lockstep.mirror.purl";
inline constexpr char kUrlAnnotation[] = "dev.lockstep.mirror.url";
inline constexpr char kSubdirAnnotation[] = "dev.lockstep.mirror.subdir";
// Nix: the store path a NAR is of, and the store paths it refers to (base names, space
// separated, as a narinfo's References).
inline constexpr char kStorePathAnnotation[] = "dev.lockstep.mirror.nix.store-path";
inline constexpr char kReferencesAnnotation[] = "dev.lockstep.mirror.nix.references";
// Manifest annotations.
inline constexpr char kClosureHashAnnotation[] = "dev.lockstep.mirror.closure-hash";
inline constexpr char kFormatAnnotation[] = "dev.lockstep.mirror.format";
inline constexpr char kPlatformAnnotation[] = "dev.lockstep.mirror.platform";
inline constexpr char kEnvironmentAnnotation[] = "dev.lockstep.mirror.environment";

// One file of the closure.
struct Entry {
  std::string ecosystem;  // "pypi", "conda", "nix"
  std::string name;       // as in the closure (PEP 503 for pypi)
  std::string version;
  std::string purl;       // "pkg:pypi/alpha@1.0.0"
  std::string digest;     // "sha256:<64 hex>"
  int64_t size = -1;      // bytes; -1 until known (the lock does not always say)
  std::string fileName;   // "" until known (a pip lock names no file: the wheelhouse does)
  std::string url;        // where the lock says it is downloaded from, else ""
  std::string subdir;     // conda: the channel subdir ("linux-64", "noarch"); else ""
  std::string mediaType;  // from the file name; "" until the name is known
  // Nix: the file is this store path's NAR (the digest its narHash, the size its narSize)
  // and the store paths it refers to, as the lock lists them. Else empty.
  std::string storePath;
  std::vector<std::string> references;
  bool operator==(const Entry& o) const = default;
};

struct Plan {
  std::string closureHash;
  std::string format;       // "uv", "conda-lock", ...
  std::string platform;     // per-platform locks, else ""
  std::string environment;  // pixi, else ""
  std::vector<Entry> entries;
  // Closure entries with no file to mirror: "pypi foo 1.0: git:<commit> (a VCS source)",
  // and Nix references the lock does not list (their NARs are not in the mirror).
  std::vector<std::string> notMirrored;
};

// The files of `c` (closure::Closure::files) as entries. The file name comes from the
// lock (poetry) or the last segment of its URL, percent-decoded; a NAR's is
// "<hash>-<name>.nar" of its store path. InvalidArgument naming the package when the lock's
// file name is not a plain file name, or a NAR's store path is not one.
StatusOr<Plan> planMirror(const closure::Closure& c);

// A plain file name: not empty, at most 255 bytes, no '/', '\', NUL or control
// character, not starting with '.' (no "..", no hidden file).
bool isPlainFileName(std::string_view name);
// A conda subdir: [a-z0-9_-]{1,32} ("linux-64", "noarch", "osx-arm64").
bool isCondaSubdir(std::string_view subdir);
// The media type of a file of `ecosystem` by its name's suffix.
std::string mediaTypeFor(std::string_view ecosystem, std::string_view fileName);
// Fills fileName and mediaType of `e` from a file found by digest (a pip lock's wheel).
void nameEntry(Entry& e, std::string_view fileName);

// --to / --from: "host[:port]/path". The host must look like one (a '.' or ':', or
// "localhost"); the path is lowercase [a-z0-9._/-] components. InvalidArgument naming it.
struct RepositoryRef {
  std::string registry;    // "registry.example:5000"
  std::string repository;  // "mirror/runtimes"
};
StatusOr<RepositoryRef> parseRepository(std::string_view text);

// The tag of a closure's manifest: "closure-<64 hex>" (not "sha256-<hex>", the
// referrers fallback tag's form).
std::string mirrorTag(std::string_view closureHash);

// Where `mirror push` takes an entry's bytes from.
struct DirIndex {
  bool given = false;                           // --from-dir was given
  std::string dir;                              // for messages
  std::map<std::string, std::string> byName;    // file name -> path (first found)
  std::map<std::string, std::string> byDigest;  // "sha256:…" -> path (files hashed)
};
struct Source {
  enum Kind { kDirFile, kUrl, kNixCache, kMissing } kind = kMissing;
  std::string location;  // the path or URL (kNixCache: the narinfo's); for kMissing, why
};
// The --from-dir file of that name, else the file with that digest, else the lock's
// https URL, else kMissing with the reason. A NAR (its name is ours, not the lock's): the
// file with that digest, else a file of its name (to be refused naming both digests), else
// the narinfo of its store path in `nixCache` (--nix-cache, parseNixCacheUrl) when given.
Source pickSource(const Entry& e, const DirIndex& dir, std::string_view nixCache = {});
// True when an entry needs the directory hashed to be found (no file of its name there).
bool needsDigestLookup(const Entry& e, const DirIndex& dir);

// The artifact manifest of a plan whose entries are all named and sized: an OCI image
// manifest (artifactType kArtifactType, the empty config, one layer per entry in plan
// order). The same plan gives the same bytes. InvalidArgument for an entry without a
// name or size, or two entries that would land on the same path.
StatusOr<std::string> mirrorManifest(const Plan& plan);

// A mirror manifest read back: its annotations and entries (ecosystem and name, version
// from the purl). InvalidArgument naming `origin` and the field (layers[3].digest) for
// bytes that are not one, or a title or subdir that is not a plain name.
struct MirrorManifest {
  std::map<std::string, std::string> annotations;
  std::vector<Entry> entries;
};
StatusOr<MirrorManifest> parseMirrorManifest(std::string_view bytes, const std::string& origin);

// What `mirror fetch` takes from a manifest for a lock: the manifest's entries for the
// lock's digests (in plan order); `missing` names the lock's files the manifest lacks
// ("alpha 1.0.0 alpha-1.0.0-py3-none-any.whl sha256:…").
struct FetchSet {
  std::vector<Entry> entries;
  std::vector<std::string> missing;
};
FetchSet fetchSet(const Plan& plan, const MirrorManifest& manifest);

// The path of an entry under --dest: "<file>" (a wheelhouse), "<subdir>/<file>" (conda),
// "nar/<nix base-32 of the digest>.nar" (a Nix binary cache, as `nix copy --to file://`
// names an uncompressed NAR).
std::string destPath(const Entry& e);

// A Nix binary cache (file:// layout) over the NARs of `entries` (the others are
// skipped): "nix-cache-info" and one "<hash>.narinfo" per store path, each pointing at its
// NAR's destPath, uncompressed, with the lock's NarHash, NarSize and References, unsigned.
// Empty without NARs. InvalidArgument for store paths of two store directories or a NAR
// without a size.
struct CacheFile {
  std::string path;  // relative to --dest
  std::string text;
  bool operator==(const CacheFile& o) const = default;
};
StatusOr<std::vector<CacheFile>> nixBinaryCache(const std::vector<Entry>& entries);

// A requirements file for `pip install --no-index --find-links DIR --require-hashes -r`:
// per PyPI (name, version), "name==version" with a --hash for each of its files.
std::string requirementsText(const std::vector<Entry>& entries);

// "[ 12/40] 3 pushed, 9 present, 12.5 MiB": the progress line.
std::string progressLine(size_t done, size_t total, size_t transferred, size_t present,
                         uint64_t bytes, std::string_view verb);
std::string humanBytes(uint64_t bytes);

}  // namespace lockstep::mirror
