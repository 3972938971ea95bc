#include "mirror/narinfo.h"

#include <map>

#include "closure/nix_hash.h"

namespace lockstep::mirror {
namespace {

std::optional<int64_t> parseSize(std::string_view v) {
  if (v.empty() || v.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

StatusOr<NarInfo> parseNarInfo(std::string_view text, const std::string& origin) {
  std::map<std::string, std::string> fields;  // the first value of a key counts
  size_t lineNo = 0;
  while (!text.empty()) {
    ++lineNo;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos) {
      return invalidArgument(origin + ":" + std::to_string(lineNo) + ": not \"Key: value\"");
    }
    fields.emplace(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
  }
  auto need = [&](const char* key) -> StatusOr<std::string> {
    auto it = fields.find(key);
    if (it == fields.end() || it->second.empty())
      return invalidArgument(origin + ": " + key + ": missing");
    return it->second;
  };
  NarInfo info;
  auto storePath = need("StorePath");
  if (!storePath.isOk()) return storePath.status();
  if (!closure::splitStorePath(*storePath))
    return invalidArgument(origin + ": StorePath: \"" + *storePath + "\" is not a store path");
  info.storePath = *storePath;
  auto url = need("URL");
  if (!url.isOk()) return url.status();
  info.url = *url;
  auto compression = fields.find("Compression");
  info.compression = compression == fields.end() || compression->second.empty()
                         ? "bzip2"  // Nix's default
                         : compression->second;
  auto narHash = need("NarHash");
  if (!narHash.isOk()) return narHash.status();
  auto digest = closure::narHashToDigest(*narHash);
  if (!digest) return invalidArgument(origin + ": NarHash: \"" + *narHash + "\" is not a sha256");
  info.narHash = *digest;
  auto narSize = need("NarSize");
  if (!narSize.isOk()) return narSize.status();
  auto size = parseSize(*narSize);
  if (!size) return invalidArgument(origin + ": NarSize: \"" + *narSize + "\" is not a size");
  info.narSize = *size;
  if (auto it = fields.find("FileHash"); it != fields.end()) {
    auto d = closure::narHashToDigest(it->second);
    if (!d) return invalidArgument(origin + ": FileHash: \"" + it->second + "\" is not a sha256");
    info.fileHash = *d;
  }
  if (auto it = fields.find("FileSize"); it != fields.end()) {
    auto s = parseSize(it->second);
    if (!s) return invalidArgument(origin + ": FileSize: \"" + it->second + "\" is not a size");
    info.fileSize = *s;
  }
  if (auto it = fields.find("References"); it != fields.end()) {
    std::string_view refs = it->second;
    while (!refs.empty()) {
      const size_t sp = refs.find(' ');
      if (sp != 0) info.references.emplace_back(refs.substr(0, sp));
      refs = sp == std::string_view::npos ? std::string_view() : refs.substr(sp + 1);
    }
  }
  return info;
}

StatusOr<std::string> parseNixCacheUrl(std::string_view url) {
  std::string out(url);
  while (!out.empty() && out.back() == '/') out.pop_back();
  const bool https = out.rfind("https://", 0) == 0 && out.size() > 8;
  const bool file = out.rfind("file:///", 0) == 0 && out.size() > 8;
  if (!https && !file) {
    return invalidArgument("--nix-cache \"" + std::string(url) +
                           "\": want https://host[/path] or file:///dir");
  }
  return out;
}

StatusOr<std::string> narFileUrl(std::string_view cache, const NarInfo& info,
                                 const std::string& origin) {
  const std::string& u = info.url;
  if (u.find("://") != std::string::npos) {
    if (u.rfind("https://", 0) != 0)
      return invalidArgument(origin + ": URL: \"" + u + "\": an absolute URL must be https");
    return u;
  }
  if (u.front() == '/' || u == ".." || u.rfind("../", 0) == 0 ||
      u.find("/../") != std::string::npos || (u.size() >= 3 && u.substr(u.size() - 3) == "/..")) {
    return invalidArgument(origin + ": URL: \"" + u + "\" is not a path inside the cache");
  }
  return std::string(cache) + "/" + u;
}

Status checkNarInfo(const NarInfo& info, const Entry& e, const std::string& origin) {
  if (info.storePath != e.storePath) {
    return invalidArgument(origin + ": StorePath is " + info.storePath + ", not " + e.storePath);
  }
  if (info.narHash != e.digest) {
    return invalidArgument(origin + ": the cache's NarHash of " + e.storePath + " is " +
                           info.narHash + ", the lock's " + e.digest + "; not taken");
  }
  if (e.size >= 0 && info.narSize != e.size) {
    return invalidArgument(origin + ": the cache's NarSize of " + e.storePath + " is " +
                           std::to_string(info.narSize) + ", the lock's " + std::to_string(e.size) +
                           "; not taken");
  }
  if (info.compression != "none" && info.compression != "xz") {
    return invalidArgument(origin + ": Compression: " + info.compression +
                           " is not read (none, xz)");
  }
  return Status::ok();
}

}  // namespace lockstep::mirror
