// Closure hash v1: parse a lock file's text into its runtime closure and hash it.
//
// This is the pure core shared by the `lockstep` CLI (packaging time) and the
// RuntimeEnv controller (cluster time). It reads no files, opens no sockets and
// reads no clock: callers hand in text (and, for pip `-r` includes, an
// IncludeReader). The contract is docs/closure-hash.md; v1 never changes.
// Thread-safety: free functions over values; safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "closure/include_reader.h"
#include "common/status.h"

namespace lockstep::closure {

// "lockstep-closure-v1\n": prefixed to the canonical text before hashing.
inline constexpr std::string_view kHashDomain = "lockstep-closure-v1\n";

enum class LockFormat { kAuto, kUv, kPip, kCondaLock, kPixi, kPoetry, kFlox, kNix };

// "uv", "pip", "conda-lock", "pixi", "poetry", "flox", "nix" ("auto" for kAuto).
std::string_view formatName(LockFormat f);
// Accepts the names above plus common aliases ("requirements", "conda", "nix-path-info").
StatusOr<LockFormat> parseFormatName(std::string_view name);

// Bounds on the work one lock may cause, whatever its content (docs/limits.md).
// A lock over a limit is refused with Code::kResourceExhausted, never parsed
// partially. Real locks stay far below: the largest shared fixture is 90 KB,
// 2,000 lines and 400 entries.
inline constexpr size_t kMaxLockBytes = size_t{16} << 20;  // the text plus every distinct include
inline constexpr size_t kMaxLockLines = 1'000'000;         // lines, the text plus every include
inline constexpr size_t kMaxLockEntries = 100'000;         // package entries, all platforms
inline constexpr size_t kMaxIncludeFiles = 256;            // distinct pip `-r` files
inline constexpr int kMaxIncludeDepth = 8;                 // pip `-r` nesting
inline constexpr size_t kMaxYamlNodes = 2'000'000;         // YAML nodes (scalars, lists, maps)

struct Limits {
  size_t maxBytes = kMaxLockBytes;
  size_t maxLines = kMaxLockLines;
  size_t maxEntries = kMaxLockEntries;
  size_t maxIncludeFiles = kMaxIncludeFiles;
  int maxIncludeDepth = kMaxIncludeDepth;
  size_t maxYamlNodes = kMaxYamlNodes;
};

// One canonical entry: (ecosystem, name, version, digests).
struct Package {
  std::string ecosystem;             // "pypi", "conda", "nix"
  std::string name;                  // normalized (PEP 503 for pypi, lowercase for conda)
  std::string version;               // as the lock spells it (may be empty for nix)
  std::vector<std::string> digests;  // sorted, de-duplicated; empty only when weak
  bool operator==(const Package& o) const = default;
};

// One artifact file of the closure: a `sha256:` digest of a package and what the
// lock says about where it comes from. Not part of the hash (the hash is the
// packages' lines); the mirror (docs/supply-chain.md) pushes these.
struct LockedFile {
  std::string ecosystem;  // the package's, as in Package
  std::string name;
  std::string version;
  std::string digest;    // "sha256:<64 hex>"
  std::string url;       // where the lock says it is downloaded from; "" (pip, poetry)
  std::string fileName;  // poetry's explicit `file`; "" otherwise (see the url)
  int64_t size = -1;     // bytes when the lock says so (uv, nix's narSize), else -1
  // Nix: the file is the NAR of this store path ("/nix/store/<hash>-<name>"; the digest is
  // its narHash) and the store paths it refers to, as the lock lists them. Else empty.
  std::string storePath;
  std::vector<std::string> references;
  bool operator==(const LockedFile& o) const = default;
};

struct ClosureOptions {
  LockFormat format = LockFormat::kAuto;
  // Per-platform locks only (conda-lock, pixi, flox, nix). Conda ("linux-64") and
  // Nix ("x86_64-linux") spellings are accepted for each other. Empty: the only
  // platform of the lock, else linux-64 / x86_64-linux when present.
  std::string platform;
  // pixi only; empty means "default".
  std::string environment;
  // Keep packages without a digest (empty digest field) and mark the result weak.
  bool allowUnhashed = false;
  // Resolves pip `-r FILE` includes; nullptr means includes are an error.
  const IncludeReader* includes = nullptr;
  // Used in error messages only ("uv.lock:12: ..."). Defaults to "lock".
  std::string sourceName;
  // Tests lower these; callers keep the documented defaults.
  Limits limits;
};

struct Closure {
  LockFormat format = LockFormat::kAuto;  // the format actually parsed
  std::string platform;               // selected platform as the lock spells it ("" if universal)
  std::string environment;            // pixi environment ("" otherwise)
  std::vector<Package> packages;      // sorted by canonical line, de-duplicated
  std::string canonicalText;          // one line per package, LF-terminated
  std::string closureHash;            // "sha256:<64 hex>"
  bool weak = false;                  // some package kept without digest
  std::vector<std::string> unhashed;  // "name version" of those packages
  std::string cuda;                   // "12.4" when the lock pins a CUDA runtime, else ""
  std::string minDriver;              // minimum Linux x86_64 driver for `cuda`, else ""
  // Every sha256 artifact digest of `packages`, one per digest, sorted by
  // (ecosystem, name, version, digest), and the NAR of each Nix store path whose
  // narHash the lock gives (one per store path: two paths may have the same NAR).
  // Git commits are not files and are not listed.
  std::vector<LockedFile> files;
  size_t packageCount() const { return packages.size(); }
};

// Why a lock was rejected, as a type for callers that act on it (the
// RuntimeEnv controller's condition reason), so none parses a message.
enum class RejectReason { kNone, kUnparsable, kUnhashedPackage, kTooLarge };

// Parses `text` and computes the closure. Errors are kInvalidArgument with
// "<source>:<line>: <field>: <reason>" messages, or kResourceExhausted (same
// message form) when the lock is over one of `options.limits`; `reason`, when
// given, says why.
StatusOr<Closure> computeClosure(std::string_view text, const ClosureOptions& options,
                                 RejectReason* reason = nullptr);

// Guesses the format from the content (not the file name).
StatusOr<LockFormat> detectFormat(std::string_view text);

// The canonical text of a set of packages (sorted, de-duplicated lines).
std::string canonicalText(const std::vector<Package>& packages);
// "sha256:" + hex(sha256(kHashDomain + canonicalText)).
std::string closureHashOfCanonicalText(std::string_view canonicalText);

// Helpers exposed for tests and other callers.
std::string normalizePypiName(std::string_view name);  // PEP 503
std::string sha256Hex(std::string_view bytes);         // lowercase hex

}  // namespace lockstep::closure
