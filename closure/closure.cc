#include "closure/closure.h"

#include <openssl/evp.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "closure/cuda.h"
#include "closure/lock_parsers.h"

namespace lockstep::closure {
namespace {

using internal::Ctx;
using internal::ParsedLock;
using internal::RawFile;
using internal::RawPackage;

bool isHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string toLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// Fields of a canonical line may not contain what separates them (TAB, LF, ',' in
// digests) nor any other whitespace or control character: such input is rejected
// rather than hashed into an ambiguous line.
bool cleanField(std::string_view s) {
  for (unsigned char c : s) {
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::string lineOf(const Package& p) {
  std::string line = p.ecosystem;
  line += '\t';
  line += p.name;
  line += '\t';
  line += p.version;
  line += '\t';
  for (size_t i = 0; i < p.digests.size(); ++i) {
    if (i) line += ',';
    line += p.digests[i];
  }
  line += '\n';
  return line;
}

}  // namespace

std::string_view formatName(LockFormat f) {
  switch (f) {
    case LockFormat::kAuto:
      return "auto";
    case LockFormat::kUv:
      return "uv";
    case LockFormat::kPip:
      return "pip";
    case LockFormat::kCondaLock:
      return "conda-lock";
    case LockFormat::kPixi:
      return "pixi";
    case LockFormat::kPoetry:
      return "poetry";
    case LockFormat::kFlox:
      return "flox";
    case LockFormat::kNix:
      return "nix";
  }
  return "auto";
}

StatusOr<LockFormat> parseFormatName(std::string_view name) {
  const std::string n = toLower(name);
  if (n.empty() || n == "auto") return LockFormat::kAuto;
  if (n == "uv" || n == "uv.lock") return LockFormat::kUv;
  if (n == "pip" || n == "requirements" || n == "requirements.txt") return LockFormat::kPip;
  if (n == "conda-lock" || n == "conda" || n == "condalock") return LockFormat::kCondaLock;
  if (n == "pixi" || n == "pixi.lock") return LockFormat::kPixi;
  if (n == "poetry" || n == "poetry.lock") return LockFormat::kPoetry;
  if (n == "flox" || n == "manifest.lock") return LockFormat::kFlox;
  if (n == "nix" || n == "nix-path-info") return LockFormat::kNix;
  return invalidArgument("unknown lock format \"" + std::string(name) +
                         "\"; known: uv, pip, conda-lock, pixi, poetry, flox, nix");
}

std::string normalizePypiName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool inRun = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!inRun) out += '-';
      inRun = true;
    } else {
      out += lower(c);
      inRun = false;
    }
  }
  return out;
}

std::string sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xf];
  }
  return out;
}

std::string canonicalText(const std::vector<Package>& packages) {
  std::vector<std::string> lines;
  lines.reserve(packages.size());
  for (const auto& p : packages) {
    Package q = p;
    std::sort(q.digests.begin(), q.digests.end());
    q.digests.erase(std::unique(q.digests.begin(), q.digests.end()), q.digests.end());
    lines.push_back(lineOf(q));
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  std::string text;
  for (const auto& l : lines) text += l;
  return text;
}

std::string closureHashOfCanonicalText(std::string_view text) {
  // The domain and the text are fed to one digest, not copied into one string.
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx, kHashDomain.data(), kHashDomain.size());
  EVP_DigestUpdate(ctx, text.data(), text.size());
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char* kHex = "0123456789abcdef";
  std::string out = "sha256:";
  out.reserve(7 + static_cast<size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xf];
  }
  return out;
}

namespace {

StatusOr<Closure> computeUnbounded(std::string_view text, const ClosureOptions& options,
                                   RejectReason* reason) {
  Ctx ctx{options, options.sourceName.empty() ? std::string("lock") : options.sourceName};
  const Limits& limits = options.limits;
  // Size checks come first: a lock over a limit is refused before any parser runs.
  if (text.size() > limits.maxBytes) {
    return ctx.tooLarge(0, "size",
                        "the lock is " + std::to_string(text.size()) + " bytes; the limit is " +
                            std::to_string(limits.maxBytes));
  }
  if (size_t lines = internal::countLines(text); lines > limits.maxLines) {
    return ctx.tooLarge(0, "size",
                        "the lock has " + std::to_string(lines) + " lines; the limit is " +
                            std::to_string(limits.maxLines));
  }
  LockFormat format = options.format;
  if (format == LockFormat::kAuto) {
    auto detected = detectFormat(text);
    if (!detected.isOk()) return detected.status().withContext(ctx.source);
    format = *detected;
  }
  if (format != LockFormat::kPixi && !options.environment.empty()) {
    return ctx.error(0, "environment", "only pixi locks have environments");
  }

  StatusOr<ParsedLock> parsed = internal::ParsedLock{};
  switch (format) {
    case LockFormat::kUv:
      parsed = internal::parseUvLock(text, ctx);
      break;
    case LockFormat::kPoetry:
      parsed = internal::parsePoetryLock(text, ctx);
      break;
    case LockFormat::kPip:
      parsed = internal::parsePipRequirements(text, ctx);
      break;
    case LockFormat::kCondaLock:
      parsed = internal::parseCondaLock(text, ctx);
      break;
    case LockFormat::kPixi:
      parsed = internal::parsePixiLock(text, ctx);
      break;
    case LockFormat::kFlox:
      parsed = internal::parseFloxLock(text, ctx);
      break;
    case LockFormat::kNix:
      parsed = internal::parseNixPathInfo(text, ctx);
      break;
    case LockFormat::kAuto:
      return internalError("format not resolved");
  }
  if (!parsed.isOk()) return parsed.status();
  if (parsed->packages.size() > limits.maxEntries) {
    return ctx.tooLarge(0, "packages",
                        "the lock installs " + std::to_string(parsed->packages.size()) +
                            " packages; the limit is " + std::to_string(limits.maxEntries));
  }

  Closure out;
  out.format = format;
  out.platform = parsed->platform;
  out.environment = parsed->environment;
  for (RawPackage& raw : parsed->packages) {
    Package p;
    p.ecosystem = raw.ecosystem;
    if (raw.ecosystem == "pypi") {
      p.name = normalizePypiName(raw.name);
    } else if (raw.ecosystem == "conda") {
      p.name = toLower(raw.name);
    } else {
      p.name = raw.name;
    }
    p.version = raw.version;
    if (p.name.empty())
      return Status(Code::kInvalidArgument, raw.where + ": name: empty package name");
    if (!cleanField(p.name)) {
      return Status(Code::kInvalidArgument, raw.where + ": name: package name \"" + p.name +
                                                "\" contains whitespace or control characters");
    }
    if (!cleanField(p.version)) {
      return Status(Code::kInvalidArgument, raw.where + ": version: version of \"" + p.name +
                                                "\" contains whitespace or control characters");
    }
    std::vector<std::string>& digests = raw.digests;
    std::sort(digests.begin(), digests.end());
    digests.erase(std::unique(digests.begin(), digests.end()), digests.end());
    for (const auto& d : digests) {
      if (d.empty() || !cleanField(d) || d.find(',') != std::string::npos) {
        return Status(Code::kInvalidArgument,
                      raw.where + ": digest: malformed digest for \"" + p.name + "\"");
      }
    }
    p.digests = std::move(digests);
    for (const std::string& d : p.digests) {
      if (d.rfind("sha256:", 0) != 0) continue;
      LockedFile f;
      f.ecosystem = p.ecosystem;
      f.name = p.name;
      f.version = p.version;
      f.digest = d;
      for (const RawFile& rf : raw.files) {
        if (rf.digest != d) continue;
        f.url = rf.url;
        f.fileName = rf.fileName;
        f.size = rf.size;
        break;
      }
      out.files.push_back(std::move(f));
    }
    // A NAR is not among the digests (the store path is): its narHash is the file's.
    for (const RawFile& rf : raw.files) {
      if (rf.storePath.empty()) continue;
      out.files.push_back(LockedFile{p.ecosystem, p.name, p.version, rf.digest, rf.url, rf.fileName,
                                     rf.size, rf.storePath, rf.references});
    }
    if (p.digests.empty()) {
      const std::string who = "\"" + p.name + (p.version.empty() ? "" : " " + p.version) + "\"";
      if (!options.allowUnhashed) {
        *reason = RejectReason::kUnhashedPackage;
        return Status(Code::kInvalidArgument,
                      raw.where + ": digest: package " + who +
                          " has no artifact digest (no sha256, commit or store path); "
                          "allow unhashed packages to accept it as a weak closure");
      }
      out.weak = true;
      out.unhashed.push_back(p.name + (p.version.empty() ? "" : " " + p.version));
    }
    out.packages.push_back(std::move(p));
  }
  {
    // Sort by canonical line, each line built once (not once per comparison).
    // Digests are sorted and unique here, and no field holds a TAB or LF nor a
    // digest a ',', so equal lines are equal packages: the unique lines in
    // order are canonicalText(out.packages), built without a second pass.
    std::vector<std::pair<std::string, Package>> keyed;
    keyed.reserve(out.packages.size());
    size_t textBytes = 0;
    for (Package& p : out.packages) {
      keyed.emplace_back(lineOf(p), std::move(p));
      textBytes += keyed.back().first.size();
    }
    std::sort(keyed.begin(), keyed.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out.packages.clear();
    out.canonicalText.reserve(textBytes);
    for (size_t i = 0; i < keyed.size(); ++i) {
      if (i > 0 && keyed[i].first == keyed[i - 1].first) continue;
      out.canonicalText += keyed[i].first;
      out.packages.push_back(std::move(keyed[i].second));
    }
  }
  std::sort(out.files.begin(), out.files.end(), [](const LockedFile& a, const LockedFile& b) {
    return std::tie(a.ecosystem, a.name, a.version, a.digest, a.storePath, a.url) <
           std::tie(b.ecosystem, b.name, b.version, b.digest, b.storePath, b.url);
  });
  // One per digest: the same file listed twice (a package under two markers). Nix: one
  // per store path (two store paths of the same content share a NAR, each needs its own).
  {
    std::set<std::pair<std::string, std::string>> seen;
    std::vector<LockedFile> unique;
    for (LockedFile& f : out.files) {
      if (seen.emplace(f.digest, f.storePath).second) unique.push_back(std::move(f));
    }
    out.files = std::move(unique);
  }
  std::sort(out.unhashed.begin(), out.unhashed.end());
  out.unhashed.erase(std::unique(out.unhashed.begin(), out.unhashed.end()), out.unhashed.end());
  out.closureHash = closureHashOfCanonicalText(out.canonicalText);
  out.cuda = detectCuda(out.packages);
  if (!out.cuda.empty()) {
    if (auto d = minDriverForCuda(out.cuda)) out.minDriver = *d;
  }
  return out;
}

}  // namespace

StatusOr<Closure> computeClosure(std::string_view text, const ClosureOptions& options,
                                 RejectReason* reason) {
  RejectReason why = RejectReason::kNone;
  auto c = computeUnbounded(text, options, &why);
  if (!c.isOk()) {
    if (c.status().code() == Code::kResourceExhausted) {
      why = RejectReason::kTooLarge;
    } else if (why == RejectReason::kNone) {
      why = RejectReason::kUnparsable;
    }
  }
  if (reason != nullptr) *reason = why;
  if (!c.isOk()) return internal::boundedMessage(c.status());
  return c;
}

namespace internal {

Status errorAt(std::string_view file, int line, std::string_view field, std::string_view reason,
               Code code) {
  std::string m(file);
  if (line > 0) {
    m += ':';
    m += std::to_string(line);
  }
  m += ": ";
  if (!field.empty()) {
    m += field;
    m += ": ";
  }
  m += reason;
  return Status(code, std::move(m));
}

Status Ctx::error(int line, std::string_view field, std::string_view reason) const {
  return errorAt(source, line, field, reason);
}

Status Ctx::tooLarge(int line, std::string_view field, std::string_view reason) const {
  return errorAt(source, line, field, reason, Code::kResourceExhausted);
}

Status boundedMessage(const Status& s) {
  if (s.message().size() <= kMaxErrorMessageBytes) return s;
  std::string m = s.message().substr(0, kMaxErrorMessageBytes);
  // Do not end inside a UTF-8 sequence.
  while (!m.empty() && (static_cast<unsigned char>(m.back()) & 0xC0) == 0x80) m.pop_back();
  if (!m.empty() && (static_cast<unsigned char>(m.back()) & 0x80)) m.pop_back();
  m += "... (" + std::to_string(s.message().size()) + " bytes)";
  return Status(s.code(), std::move(m));
}

size_t countLines(std::string_view text) {
  size_t n = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

std::string joinCommaBounded(const std::vector<std::string>& items, size_t max) {
  if (items.size() <= max) return joinComma(items);
  std::vector<std::string> head(items.begin(), items.begin() + static_cast<long>(max));
  return joinComma(head) + ", ... and " + std::to_string(items.size() - max) + " more";
}

bool hasSha256Prefix(std::string_view raw) {
  if (raw.size() < 7) return false;
  constexpr std::string_view kSha256 = "sha256";
  for (size_t i = 0; i < kSha256.size(); ++i) {
    if (lower(raw[i]) != kSha256[i]) return false;
  }
  return raw[6] == ':' || raw[6] == '=';
}

std::optional<std::string> canonicalSha256(std::string_view raw) {
  if (hasSha256Prefix(raw)) raw.remove_prefix(7);
  if (raw.size() != 64) return std::nullopt;
  std::string out(7 + 64, '\0');  // one allocation: "sha256:" and the lowercase hex
  raw.copy(out.data() + 7, 64);
  std::string_view("sha256:").copy(out.data(), 7);
  for (size_t i = 7; i < out.size(); ++i) {
    if (!isHex(out[i])) return std::nullopt;
    out[i] = lower(out[i]);
  }
  return out;
}

bool isFullCommit(std::string_view s) {
  if (s.size() != 40 && s.size() != 64) return false;
  for (char c : s) {
    if (!isHex(c)) return false;
  }
  return true;
}

std::optional<std::string> gitCommitFromUrl(std::string_view url) {
  size_t hash = url.find('#');
  if (hash != std::string_view::npos) {
    std::string_view frag = url.substr(hash + 1);
    // pip style "#egg=name&subdirectory=x" fragments are not commits.
    if (isFullCommit(frag)) return toLower(frag);
    url = url.substr(0, hash);
  }
  size_t q = url.find('?');
  std::string_view path = q == std::string_view::npos ? url : url.substr(0, q);
  size_t at = path.rfind('@');
  if (at != std::string_view::npos && isFullCommit(path.substr(at + 1))) {
    return toLower(path.substr(at + 1));
  }
  if (q != std::string_view::npos) {
    std::string_view query = url.substr(q + 1);
    size_t pos = 0;
    while (pos <= query.size()) {
      size_t amp = query.find('&', pos);
      std::string_view kv =
          query.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
      if (kv.substr(0, 4) == "rev=" && isFullCommit(kv.substr(4))) return toLower(kv.substr(4));
      if (amp == std::string_view::npos) break;
      pos = amp + 1;
    }
  }
  return std::nullopt;
}

namespace {
const std::pair<const char*, const char*> kPlatformAliases[] = {
    {"linux-64", "x86_64-linux"},
    {"linux-aarch64", "aarch64-linux"},
    {"osx-64", "x86_64-darwin"},
    {"osx-arm64", "aarch64-darwin"},
    {"linux-ppc64le", "powerpc64le-linux"},
    {"win-64", "x86_64-windows"},
};
}  // namespace

std::string platformAlias(std::string_view platform) {
  for (const auto& [conda, nix] : kPlatformAliases) {
    if (platform == conda) return nix;
    if (platform == nix) return conda;
  }
  return "";
}

std::string joinComma(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += items[i];
  }
  return out;
}

StatusOr<std::string> selectPlatform(const Ctx& ctx, const std::string& requested,
                                     const std::vector<std::string>& available,
                                     const std::vector<std::string>& defaults) {
  auto has = [&](const std::string& p) {
    return std::find(available.begin(), available.end(), p) != available.end();
  };
  if (available.empty()) return ctx.error(0, "platform", "the lock lists no platforms");
  if (!requested.empty()) {
    if (has(requested)) return requested;
    std::string alias = platformAlias(requested);
    if (!alias.empty() && has(alias)) return alias;
    return ctx.error(0, "platform",
                     "platform \"" + requested +
                         "\" is not in the lock; available: " + joinCommaBounded(available));
  }
  if (available.size() == 1) return available.front();
  for (const auto& d : defaults) {
    if (has(d)) return d;
  }
  return ctx.error(0, "platform",
                   "the lock has several platforms and none is the default (" +
                       joinComma(defaults) + "); choose one of: " + joinCommaBounded(available));
}

int lineOfOffset(std::string_view text, size_t pos) {
  if (pos > text.size()) pos = text.size();
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

}  // namespace internal
}  // namespace lockstep::closure
