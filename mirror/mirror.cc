#include "mirror/mirror.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>
#include <utility>

#include "closure/nix_hash.h"
#include "evidence/purl.h"
#include "operator/registry/reference.h"
#include "operator/registry/referrers.h"

namespace lockstep::mirror {
namespace {

using nlohmann::ordered_json;

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hexValue(s[i + 1]);
      int lo = hexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// The path of a URL without query and fragment, split into its segments' last two.
std::pair<std::string, std::string> lastSegments(std::string_view url) {
  size_t end = url.find_first_of("?#");
  std::string_view path = url.substr(0, end);
  size_t slash = path.rfind('/');
  std::string last(slash == std::string_view::npos ? path : path.substr(slash + 1));
  std::string parent;
  if (slash != std::string_view::npos && slash > 0) {
    std::string_view before = path.substr(0, slash);
    size_t s2 = before.rfind('/');
    parent = std::string(s2 == std::string_view::npos ? before : before.substr(s2 + 1));
  }
  return {percentDecode(last), percentDecode(parent)};
}

std::string who(const Entry& e) {
  if (!e.storePath.empty()) return e.ecosystem + " " + e.storePath;
  return e.ecosystem + " " + e.name + (e.version.empty() ? "" : " " + e.version);
}

bool isNar(const Entry& e) { return !e.storePath.empty(); }

// "/nix/store/<hash>-<name>" -> "<hash>-<name>".
std::string storeBaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string joinReferences(const std::vector<std::string>& references) {
  std::vector<std::string> names;
  names.reserve(references.size());
  for (const std::string& r : references) names.push_back(storeBaseName(r));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// Two manifest layers are the same file at the same place: one per store path for NARs.
std::string layerKey(const Entry& e) { return isNar(e) ? "nix:" + e.storePath : destPath(e); }

bool isDigest(std::string_view d) {
  if (d.size() != 71 || d.substr(0, 7) != "sha256:") return false;
  for (char c : d.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "pkg:pypi/alpha@1.0.0" -> ("pypi", "alpha", "1.0.0"), percent-decoded.
void fromPurl(Entry& e) {
  std::string_view p = e.purl;
  if (p.substr(0, 4) != "pkg:") return;
  p.remove_prefix(4);
  size_t slash = p.find('/');
  if (slash == std::string_view::npos) return;
  e.ecosystem = std::string(p.substr(0, slash));
  std::string_view rest = p.substr(slash + 1);
  rest = rest.substr(0, rest.find_first_of("?#"));
  size_t at = rest.rfind('@');
  e.name = percentDecode(rest.substr(0, at));
  if (at != std::string_view::npos) e.version = percentDecode(rest.substr(at + 1));
}

}  // namespace

bool isPlainFileName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

bool isCondaSubdir(std::string_view subdir) {
  if (subdir.empty() || subdir.size() > 32) return false;
  for (char c : subdir) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}

std::string mediaTypeFor(std::string_view ecosystem, std::string_view fileName) {
  if (ecosystem == "conda" || endsWith(fileName, ".conda")) return kCondaMediaType;
  if (ecosystem == "nix" && endsWith(fileName, ".nar")) return kNarMediaType;
  if (ecosystem == "pypi") {
    if (endsWith(fileName, ".whl")) return kWheelMediaType;
    if (endsWith(fileName, ".tar.gz") || endsWith(fileName, ".zip") ||
        endsWith(fileName, ".tar.bz2") || endsWith(fileName, ".tgz"))
      return kSdistMediaType;
  }
  return kFileMediaType;
}

void nameEntry(Entry& e, std::string_view fileName) {
  e.fileName = std::string(fileName);
  e.mediaType = mediaTypeFor(e.ecosystem, fileName);
}

StatusOr<Plan> planMirror(const closure::Closure& c) {
  Plan plan;
  plan.closureHash = c.closureHash;
  plan.format = std::string(closure::formatName(c.format));
  plan.platform = c.platform;
  plan.environment = c.environment;
  for (const closure::LockedFile& f : c.files) {
    Entry e;
    e.ecosystem = f.ecosystem;
    e.name = f.name;
    e.version = f.version;
    e.purl = evidence::packageUrl(closure::Package{f.ecosystem, f.name, f.version, {}});
    e.digest = f.digest;
    e.size = f.size;
    e.url = f.url;
    if (!f.storePath.empty()) {
      if (!closure::splitStorePath(f.storePath)) {
        return invalidArgument("package " + who(e) + ": \"" + f.storePath +
                               "\" is not a Nix store path");
      }
      e.storePath = f.storePath;
      e.references = f.references;
      nameEntry(e, storeBaseName(f.storePath) + ".nar");
      plan.entries.push_back(std::move(e));
      continue;
    }
    auto [last, parent] = lastSegments(f.url);
    std::string name = !f.fileName.empty() ? f.fileName : last;
    if (!name.empty()) {
      if (!isPlainFileName(name)) {
        return invalidArgument("package " + who(e) + ": the file name \"" + name + "\" of " +
                               e.digest + " is not a plain file name");
      }
      nameEntry(e, name);
    }
    if (e.ecosystem == "conda") {
      // A channel URL: <channel>/<subdir>/<file>. Without one, the lock's platform.
      e.subdir = isCondaSubdir(parent) ? parent : c.platform;
      if (!isCondaSubdir(e.subdir)) e.subdir = "noarch";
    }
    plan.entries.push_back(std::move(e));
  }
  std::set<std::string> nars;  // store paths whose NAR is an entry
  for (const Entry& e : plan.entries) {
    if (isNar(e)) nars.insert(e.storePath);
  }
  for (const closure::Package& p : c.packages) {
    const std::string id = p.ecosystem + " " + p.name + (p.version.empty() ? "" : " " + p.version);
    if (p.digests.empty()) plan.notMirrored.push_back(id + ": no digest (unhashed)");
    for (const std::string& d : p.digests) {
      if (d.rfind("sha256:", 0) == 0 || nars.count(d)) continue;
      plan.notMirrored.push_back(id + ": " + d +
                                 (d.rfind("git:", 0) == 0
                                      ? " (a VCS source, not a file)"
                                      : " (a Nix store path without a narHash in the lock)"));
    }
  }
  // A NAR is of no use without the paths it refers to: a binary cache without them fails
  // `nix copy`. The lock lists them when written by `nix path-info --recursive`.
  std::set<std::string> absent;
  for (const Entry& e : plan.entries) {
    for (const std::string& r : e.references) {
      if (!nars.count(r)) absent.insert(r);
    }
  }
  for (const std::string& r : absent) {
    plan.notMirrored.push_back("nix " + r +
                               ": referred to, but not in the lock with a narHash (write the "
                               "lock with nix path-info --json --recursive)");
  }
  return plan;
}

StatusOr<RepositoryRef> parseRepository(std::string_view text) {
  const std::string where = "repository \"" + std::string(text) + "\"";
  size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= text.size()) {
    return invalidArgument(where + ": want host[:port]/path (registry.example:5000/mirror/app)");
  }
  RepositoryRef r{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
  if (r.registry.find_first_of(".:") == std::string::npos && r.registry != "localhost") {
    return invalidArgument(where + ": \"" + r.registry +
                           "\" is not a registry host (no '.' or ':'); name the registry");
  }
  if (text.find('@') != std::string_view::npos || r.repository.find(':') != std::string::npos) {
    return invalidArgument(where + ": a repository, without a tag or digest");
  }
  bool componentStart = true;
  for (char c : r.repository) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '/') {
      if (componentStart) return invalidArgument(where + ": empty path component");
      componentStart = true;
      continue;
    }
    if (!alnum && c != '.' && c != '_' && c != '-') {
      return invalidArgument(where + ": the path may hold lowercase letters, digits and ._-/");
    }
    if (componentStart && !alnum) {
      return invalidArgument(where + ": a path component starts with a letter or digit");
    }
    componentStart = false;
  }
  if (componentStart) return invalidArgument(where + ": ends with '/'");
  return r;
}

std::string mirrorTag(std::string_view closureHash) {
  std::string_view hex = closureHash;
  if (hex.rfind("sha256:", 0) == 0) hex.remove_prefix(7);
  return "closure-" + std::string(hex);
}

Source pickSource(const Entry& e, const DirIndex& dir, std::string_view nixCache) {
  if (dir.given && isNar(e)) {
    // Matched by content: the file name is ours. A file of that name with other bytes is
    // still read, so that the push names both digests.
    if (auto it = dir.byDigest.find(e.digest); it != dir.byDigest.end())
      return {Source::kDirFile, it->second};
    if (auto it = dir.byName.find(e.fileName); it != dir.byName.end())
      return {Source::kDirFile, it->second};
  } else if (dir.given) {
    if (!e.fileName.empty()) {
      if (auto it = dir.byName.find(e.fileName); it != dir.byName.end())
        return {Source::kDirFile, it->second};
    }
    if (auto it = dir.byDigest.find(e.digest); it != dir.byDigest.end())
      return {Source::kDirFile, it->second};
  }
  if (e.url.rfind("https://", 0) == 0) return {Source::kUrl, e.url};
  if (isNar(e) && !nixCache.empty()) {
    auto parts = closure::splitStorePath(e.storePath);
    return {Source::kNixCache,
            std::string(nixCache) + "/" + (parts ? parts->hashPart : "") + ".narinfo"};
  }
  std::string why;
  if (dir.given) {
    why = "not in --from-dir " + dir.dir + " (" +
          (e.fileName.empty() || isNar(e) ? "no file with that digest" : "no file " + e.fileName) +
          ")";
  } else {
    why = "no --from-dir given";
  }
  if (isNar(e)) {
    why += ", and no --nix-cache given";
  } else if (e.url.empty()) {
    why += ", and the lock gives no URL";
  } else {
    why += ", and the lock's URL is not https: " + e.url;
  }
  return {Source::kMissing, why};
}

bool needsDigestLookup(const Entry& e, const DirIndex& dir) {
  return dir.given && (isNar(e) || e.fileName.empty() || dir.byName.count(e.fileName) == 0);
}

StatusOr<std::string> mirrorManifest(const Plan& plan) {
  ordered_json layers = ordered_json::array();
  std::map<std::string, std::string> paths;  // path -> digest
  for (const Entry& e : plan.entries) {
    if (e.fileName.empty() || e.size < 0 || !isDigest(e.digest)) {
      return invalidArgument("mirror manifest: " + who(e) + " " + e.digest +
                             ": no file name or size yet");
    }
    const std::string path = layerKey(e);
    auto [it, fresh] = paths.emplace(path, e.digest);
    if (!fresh && it->second != e.digest) {
      return invalidArgument("mirror manifest: two files would both be " + path + ": " +
                             it->second + " and " + e.digest);
    }
    if (!fresh) continue;
    ordered_json annotations;
    annotations[kTitleAnnotation] = e.fileName;
    annotations[kPurlAnnotation] = e.purl;
    if (!e.subdir.empty()) annotations[kSubdirAnnotation] = e.subdir;
    if (!e.url.empty()) annotations[kUrlAnnotation] = e.url;
    if (isNar(e)) {
      annotations[kStorePathAnnotation] = e.storePath;
      annotations[kReferencesAnnotation] = joinReferences(e.references);
    }
    layers.push_back({{"mediaType", e.mediaType},
                      {"digest", e.digest},
                      {"size", e.size},
                      {"annotations", std::move(annotations)}});
  }
  ordered_json m;
  m["schemaVersion"] = 2;
  m["mediaType"] = registry::kOciManifest;
  m["artifactType"] = kArtifactType;
  m["config"] = {{"mediaType", registry::kEmptyMediaType},
                 {"digest", registry::sha256Digest(registry::kEmptyBlob)},
                 {"size", 2}};
  m["layers"] = std::move(layers);
  ordered_json annotations;
  annotations[kClosureHashAnnotation] = plan.closureHash;
  annotations[kFormatAnnotation] = plan.format;
  if (!plan.platform.empty()) annotations[kPlatformAnnotation] = plan.platform;
  if (!plan.environment.empty()) annotations[kEnvironmentAnnotation] = plan.environment;
  m["annotations"] = std::move(annotations);
  return m.dump();
}

StatusOr<MirrorManifest> parseMirrorManifest(std::string_view bytes, const std::string& origin) {
  ordered_json m = ordered_json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) return invalidArgument(origin + ": not JSON object");
  auto str = [&](const ordered_json& j, const char* key) -> std::string {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (str(m, "artifactType") != kArtifactType) {
    return invalidArgument(origin + ": artifactType: \"" + str(m, "artifactType") +
                           "\" is not a Lockstep mirror (" + kArtifactType + ")");
  }
  MirrorManifest out;
  if (auto a = m.find("annotations"); a != m.end() && a->is_object()) {
    for (const auto& [k, v] : a->items()) {
      if (v.is_string()) out.annotations[k] = v.get<std::string>();
    }
  }
  auto layers = m.find("layers");
  if (layers == m.end() || !layers->is_array()) {
    return invalidArgument(origin + ": layers: missing or not an array");
  }
  for (size_t i = 0; i < layers->size(); ++i) {
    const ordered_json& l = (*layers)[i];
    const std::string at = origin + ": layers[" + std::to_string(i) + "]";
    if (!l.is_object()) return invalidArgument(at + ": not an object");
    Entry e;
    e.mediaType = str(l, "mediaType");
    e.digest = str(l, "digest");
    if (!isDigest(e.digest)) return invalidArgument(at + ".digest: not sha256:<64 hex>");
    auto size = l.find("size");
    if (size == l.end() || !size->is_number_integer() || size->get<int64_t>() < 0) {
      return invalidArgument(at + ".size: not a non-negative integer");
    }
    e.size = size->get<int64_t>();
    auto a = l.find("annotations");
    if (a == l.end() || !a->is_object()) return invalidArgument(at + ".annotations: missing");
    e.fileName = str(*a, kTitleAnnotation);
    if (!isPlainFileName(e.fileName)) {
      return invalidArgument(at + ".annotations[\"" + kTitleAnnotation + "\"]: \"" + e.fileName +
                             "\" is not a plain file name");
    }
    e.purl = str(*a, kPurlAnnotation);
    e.url = str(*a, kUrlAnnotation);
    e.subdir = str(*a, kSubdirAnnotation);
    if (!e.subdir.empty() && !isCondaSubdir(e.subdir)) {
      return invalidArgument(at + ".annotations[\"" + kSubdirAnnotation + "\"]: \"" + e.subdir +
                             "\" is not a conda subdir");
    }
    e.storePath = str(*a, kStorePathAnnotation);
    if (!e.storePath.empty() && !closure::splitStorePath(e.storePath)) {
      return invalidArgument(at + ".annotations[\"" + kStorePathAnnotation + "\"]: \"" +
                             e.storePath + "\" is not a Nix store path");
    }
    fromPurl(e);
    out.entries.push_back(std::move(e));
  }
  return out;
}

FetchSet fetchSet(const Plan& plan, const MirrorManifest& manifest) {
  std::map<std::string, const Entry*> byDigest;
  for (const Entry& e : manifest.entries) byDigest.emplace(e.digest, &e);
  FetchSet out;
  std::set<std::string> taken;
  for (const Entry& want : plan.entries) {
    auto it = byDigest.find(want.digest);
    if (it == byDigest.end()) {
      out.missing.push_back(who(want) + (want.fileName.empty() ? "" : " " + want.fileName) + " " +
                            want.digest);
      continue;
    }
    if (!taken.insert(want.digest).second) continue;
    Entry e = *it->second;
    // The lock says which package it is; the manifest only names the file.
    e.ecosystem = want.ecosystem;
    e.name = want.name;
    e.version = want.version;
    e.purl = want.purl;
    e.storePath = want.storePath;
    e.references = want.references;
    if (e.ecosystem == "conda" && e.subdir.empty()) e.subdir = want.subdir;
    if (e.ecosystem != "conda") e.subdir.clear();
    out.entries.push_back(std::move(e));
  }
  return out;
}

std::string destPath(const Entry& e) {
  if (isNar(e)) {
    auto nix = closure::digestToNixHash(e.digest);  // "sha256:<base-32>"
    return "nar/" + (nix ? nix->substr(7) : e.digest.substr(e.digest.find(':') + 1)) + ".nar";
  }
  if (e.ecosystem == "conda" && !e.subdir.empty()) return e.subdir + "/" + e.fileName;
  return e.fileName;
}

StatusOr<std::vector<CacheFile>> nixBinaryCache(const std::vector<Entry>& entries) {
  std::vector<CacheFile> out;
  std::string storeDir;
  std::map<std::string, std::string> narinfos;  // "<hash>.narinfo" -> text, sorted
  for (const Entry& e : entries) {
    if (!isNar(e)) continue;
    auto parts = closure::splitStorePath(e.storePath);
    if (!parts) return invalidArgument(who(e) + ": not a Nix store path");
    if (storeDir.empty()) storeDir = parts->storeDir;
    if (parts->storeDir != storeDir) {
      return invalidArgument(who(e) + ": not in " + storeDir +
                             " (a binary cache has one store directory)");
    }
    auto hash = closure::digestToNixHash(e.digest);
    if (!hash || e.size < 0) return invalidArgument(who(e) + ": no NAR hash or size");
    const std::string size = std::to_string(e.size);
    // Nix's narinfo (libstore/nar-info.cc): "Key: value" lines; an absent Compression
    // means bzip2, so "none" is written. FileHash/FileSize are of the file as stored.
    std::string text = "StorePath: " + e.storePath + "\n";
    text += "URL: " + destPath(e) + "\n";
    text += "Compression: none\n";
    text += "FileHash: " + *hash + "\n";
    text += "FileSize: " + size + "\n";
    text += "NarHash: " + *hash + "\n";
    text += "NarSize: " + size + "\n";
    text += "References: " + joinReferences(e.references) + "\n";
    narinfos[parts->hashPart + ".narinfo"] = std::move(text);
  }
  if (narinfos.empty()) return out;
  out.push_back({"nix-cache-info", "StoreDir: " + storeDir + "\n"});
  for (auto& [path, text] : narinfos) out.push_back({path, std::move(text)});
  return out;
}

std::string requirementsText(const std::vector<Entry>& entries) {
  std::map<std::pair<std::string, std::string>, std::set<std::string>> pins;
  for (const Entry& e : entries) {
    if (e.ecosystem != "pypi" || e.version.empty()) continue;
    pins[{e.name, e.version}].insert(e.digest);
  }
  std::string out = "# written by lockstep mirror fetch: the lock's PyPI files, by hash\n";
  for (const auto& [nv, digests] : pins) {
    out += nv.first + "==" + nv.second;
    for (const std::string& d : digests) out += " \\\n    --hash=sha256:" + d.substr(7);
    out += "\n";
  }
  return out;
}

std::string humanBytes(uint64_t bytes) {
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return buf;
}

std::string progressLine(size_t done, size_t total, size_t transferred, size_t present,
                         uint64_t bytes, std::string_view verb) {
  const std::string t = std::to_string(total);
  std::string d = std::to_string(done);
  if (d.size() < t.size()) d.insert(0, t.size() - d.size(), ' ');
  return "[" + d + "/" + t + "] " + std::to_string(transferred) + " " + std::string(verb) + ", " +
         std::to_string(present) + " present, " + humanBytes(bytes);
}

}  // namespace lockstep::mirror
