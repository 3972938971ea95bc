// Internal: the per-format parsers behind computeClosure() and their shared helpers.
//
// A parser turns text into RawPackages (names not yet normalized, digests already
// in canonical "sha256:<hex>" / "git:<commit>" / store-path form) plus the selected
// platform; computeClosure() normalizes, checks for unhashed packages, sorts and
// hashes. Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "closure/closure.h"

namespace lockstep::closure::internal {

// What the lock says about one artifact digest of a package: where it is
// downloaded from and its file name or size, when the format gives them.
struct RawFile {
  std::string digest;    // "sha256:<hex>", as in RawPackage::digests
  std::string url;       // "" when the lock gives none
  std::string fileName;  // an explicit file name (poetry's `file`), else ""
  int64_t size = -1;     // uv's `size`, else -1
  // Nix: the NAR of this store path (one of RawPackage::digests); `digest` is its narHash.
  std::string storePath;
  std::vector<std::string> references;
};

struct RawPackage {
  std::string ecosystem;
  std::string name;
  std::string version;
  std::vector<std::string> digests;
  std::string where;             // "uv.lock:12", for errors about this package
  std::vector<RawFile> files{};  // sources of some of `digests` (none for pip); NARs (nix)
};

struct ParsedLock {
  std::vector<RawPackage> packages;
  std::string platform;
  std::string environment;
};

// Error context: source name for messages.
struct Ctx {
  const ClosureOptions& options;
  std::string source;  // never empty
  std::string at(int line) const { return line > 0 ? source + ":" + std::to_string(line) : source; }
  // "<source>:<line>: <field>: <reason>"
  Status error(int line, std::string_view field, std::string_view reason) const;
  // The same message with Code::kResourceExhausted: the lock is over a limit.
  Status tooLarge(int line, std::string_view field, std::string_view reason) const;
  const Limits& limits() const { return options.limits; }
};

// "<file>:<line>: <field>: <reason>" with a code (kInvalidArgument unless given).
Status errorAt(std::string_view file, int line, std::string_view field, std::string_view reason,
               Code code = Code::kInvalidArgument);

// Error messages quote input; a message is cut to this many bytes so a hostile
// lock cannot put megabytes into a status condition or a log line.
inline constexpr size_t kMaxErrorMessageBytes = 1024;
Status boundedMessage(const Status& s);

// Lines of `text` (LF count, plus one for a last line without LF).
size_t countLines(std::string_view text);

// "a, b, c" of the first `max` names, then "... and N more".
std::string joinCommaBounded(const std::vector<std::string>& items, size_t max = 20);

StatusOr<ParsedLock> parseUvLock(std::string_view text, const Ctx& ctx);
StatusOr<ParsedLock> parsePoetryLock(std::string_view text, const Ctx& ctx);
StatusOr<ParsedLock> parsePipRequirements(std::string_view text, const Ctx& ctx);
StatusOr<ParsedLock> parseCondaLock(std::string_view text, const Ctx& ctx);
StatusOr<ParsedLock> parsePixiLock(std::string_view text, const Ctx& ctx);
StatusOr<ParsedLock> parseFloxLock(std::string_view text, const Ctx& ctx);
StatusOr<ParsedLock> parseNixPathInfo(std::string_view text, const Ctx& ctx);

// "sha256:<hex>", "sha256=<hex>" or bare 64-hex -> "sha256:<lowercase hex>";
// nullopt when it is not a well-formed sha256.
std::optional<std::string> canonicalSha256(std::string_view raw);
// True for a "sha256:"/"sha256=" prefixed string (well-formed or not).
bool hasSha256Prefix(std::string_view raw);
// A full (40 or 64 hex) commit id pinned in a VCS URL: the fragment after '#',
// else "@<commit>" at the end of the path, else "rev=<commit>"; lowercase.
std::optional<std::string> gitCommitFromUrl(std::string_view url);
bool isFullCommit(std::string_view s);

// Platform selection. `available` in lock order. Requested may use the conda or
// Nix spelling. Empty request: the only platform, else the first of `defaults`
// present, else an error listing what is available.
StatusOr<std::string> selectPlatform(const Ctx& ctx, const std::string& requested,
                                     const std::vector<std::string>& available,
                                     const std::vector<std::string>& defaults);

// The other spelling of a platform ("linux-64" <-> "x86_64-linux"), or "".
std::string platformAlias(std::string_view platform);

// Line (1-based) of byte offset `pos` in `text`.
int lineOfOffset(std::string_view text, size_t pos);

std::string joinComma(const std::vector<std::string>& items);

}  // namespace lockstep::closure::internal
