#include "verify/env_inventory.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "closure/closure.h"

namespace lockstep::verify {
namespace {

using nlohmann::json;

std::string lowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool startsWithEnvInventory(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

Status fieldError(const std::string& where, std::string_view field, std::string_view reason) {
  return invalidArgument(where + ": " + std::string(field) + ": " + std::string(reason));
}

// A lowercase 64-hex sha256 as "sha256:<hex>", from "<hex>", "sha256:<hex>" or "sha256=<hex>".
std::optional<std::string> sha256Of(std::string_view raw) {
  if (startsWithEnvInventory(lowerAscii(raw.substr(0, 7)), "sha256:") ||
      startsWithEnvInventory(lowerAscii(raw.substr(0, 7)), "sha256=")) {
    raw.remove_prefix(7);
  }
  if (raw.size() != 64) return std::nullopt;
  std::string hex = lowerAscii(raw);
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return "sha256:" + hex;
}

// Reads one distribution directory (*.dist-info or *.egg-info).
StatusOr<PythonDist> readDist(const Tree& tree, const std::string& dir, bool eggInfo) {
  const std::string metaPath = joinPath(dir, eggInfo ? "PKG-INFO" : "METADATA");
  auto meta = tree.read(metaPath, kMaxRecordBytes);
  if (!meta.isOk()) return meta.status().withContext(metaPath);
  auto parsed = parseDistMetadata(*meta, metaPath);
  if (!parsed.isOk()) return parsed.status();
  PythonDist d;
  d.displayName = parsed->name;
  d.name = closure::normalizePypiName(parsed->name);
  d.version = parsed->version;
  d.where = metaPath;
  if (!eggInfo) {
    if (auto inst = tree.read(joinPath(dir, "INSTALLER"), 4096); inst.isOk()) {
      d.installer = std::string(trim(std::string_view(*inst).substr(0, inst->find('\n'))));
    }
    const std::string du = joinPath(dir, "direct_url.json");
    if (tree.exists(du)) {
      auto text = tree.read(du, kMaxRecordBytes);
      if (!text.isOk()) return text.status().withContext(du);
      if (Status s = parseDirectUrl(*text, du, d); !s.isOk()) return s;
    }
  }
  return d;
}

}  // namespace

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + (startsWithEnvInventory(name, "/") ? name.substr(1) : name);
  return dir + (startsWithEnvInventory(name, "/") ? "" : "/") + name;
}

StatusOr<CondaRecord> parseCondaRecord(std::string_view text, const std::string& where) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(where + ": not valid JSON");
  if (!j.is_object()) return invalidArgument(where + ": not a JSON object");
  auto str = [&](const char* key, bool required) -> StatusOr<std::string> {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) return fieldError(where, key, "missing");
      return std::string();
    }
    if (!it->is_string()) return fieldError(where, key, "not a string");
    return it->get<std::string>();
  };
  CondaRecord r;
  r.where = where;
  auto name = str("name", true);
  if (!name.isOk()) return name.status();
  if (name->empty()) return fieldError(where, "name", "empty");
  r.name = lowerAscii(*name);
  auto version = str("version", true);
  if (!version.isOk()) return version.status();
  r.version = *version;
  auto build = str("build", false);
  if (!build.isOk()) return build.status();
  r.build = *build;
  auto sha = str("sha256", false);
  if (!sha.isOk()) return sha.status();
  if (!sha->empty()) {
    auto canonical = sha256Of(*sha);
    if (!canonical) return fieldError(where, "sha256", "\"" + *sha + "\" is not a sha256");
    r.sha256 = *canonical;
  }
  if (auto files = j.find("files"); files != j.end() && files->is_array()) {
    std::set<std::string> dirs;
    for (const auto& f : *files) {
      if (!f.is_string()) continue;
      const auto& p = f.get_ref<const std::string&>();
      size_t at = p.find(".dist-info/");
      if (at == std::string::npos) at = p.find(".egg-info/");
      if (at == std::string::npos) continue;
      dirs.insert(p.substr(0, p.find('/', at)));
    }
    r.distInfoDirs.assign(dirs.begin(), dirs.end());
  }
  return r;
}

StatusOr<DistMetadata> parseDistMetadata(std::string_view text, const std::string& where) {
  DistMetadata m;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the headers end; the description follows
    if (line.front() == ' ' || line.front() == '\t') continue;  // a folded header
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key = lowerAscii(line.substr(0, colon));
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "name" && m.name.empty()) m.name = std::string(value);
    if (key == "version" && m.version.empty()) m.version = std::string(value);
  }
  if (m.name.empty()) return fieldError(where, "Name", "missing");
  if (m.version.empty()) return fieldError(where, "Version", "missing");
  return m;
}

Status parseDirectUrl(std::string_view text, const std::string& where, PythonDist& dist) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalidArgument(where + ": not valid JSON");
  if (!j.is_object()) return invalidArgument(where + ": not a JSON object");
  if (auto url = j.find("url"); url != j.end() && url->is_string())
    dist.url = url->get<std::string>();
  if (auto vcs = j.find("vcs_info"); vcs != j.end()) {
    if (!vcs->is_object()) return fieldError(where, "vcs_info", "not an object");
    auto commit = vcs->find("commit_id");
    if (commit == vcs->end() || !commit->is_string()) {
      return fieldError(where, "vcs_info.commit_id", "missing");
    }
    dist.commit = lowerAscii(commit->get<std::string>());
  }
  if (auto archive = j.find("archive_info"); archive != j.end()) {
    if (!archive->is_object()) return fieldError(where, "archive_info", "not an object");
    // PEP 610: "hashes": {"sha256": ...} (current), "hash": "sha256=..." (deprecated).
    std::string raw;
    if (auto hashes = archive->find("hashes"); hashes != archive->end() && hashes->is_object()) {
      if (auto s = hashes->find("sha256"); s != hashes->end() && s->is_string()) raw = *s;
    }
    if (raw.empty()) {
      if (auto h = archive->find("hash"); h != archive->end() && h->is_string()) {
        const auto& v = h->get_ref<const std::string&>();
        if (startsWithEnvInventory(lowerAscii(v), "sha256")) raw = v;
      }
    }
    if (!raw.empty()) {
      auto canonical = sha256Of(raw);
      if (!canonical) {
        return fieldError(where, "archive_info.hashes.sha256", "\"" + raw + "\" is not a sha256");
      }
      dist.archiveSha256 = *canonical;
    }
  }
  if (auto dir = j.find("dir_info"); dir != j.end() && dir->is_object()) {
    if (auto e = dir->find("editable"); e != dir->end() && e->is_boolean()) dist.editable = *e;
  }
  return Status::ok();
}

StatusOr<std::vector<std::string>> findSitePackages(const Tree& tree, const std::string& prefix) {
  std::vector<std::string> out;
  auto top = tree.list(prefix);
  if (!top.isOk()) return top.status();
  for (const DirEntry& e : *top) {
    if (e.isDir && (endsWith(e.name, ".dist-info") || endsWith(e.name, ".egg-info"))) {
      out.push_back(prefix);
      return out;
    }
  }
  for (const char* lib : {"lib", "lib64"}) {
    const std::string libDir = joinPath(prefix, lib);
    auto entries = tree.list(libDir);
    if (!entries.isOk()) continue;
    for (const DirEntry& e : *entries) {
      if (!e.isDir || !startsWithEnvInventory(e.name, "python")) continue;
      for (const char* sub : {"site-packages", "dist-packages"}) {
        const std::string dir = joinPath(joinPath(libDir, e.name), sub);
        if (tree.exists(dir)) out.push_back(dir);
      }
    }
  }
  const std::string win = joinPath(prefix, "Lib/site-packages");
  if (tree.exists(win)) out.push_back(win);
  // lib64 is often a link to lib (venv makes one): one directory read under two names
  // would list every distribution twice. The first name found is kept.
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& dir : out) {
    if (seen.insert(tree.canonical(dir)).second) unique.push_back(dir);
  }
  return unique;
}

StatusOr<Inventory> collectEnvInventory(const Tree& tree, const std::string& prefix) {
  Inventory inv;
  inv.prefix = prefix;
  auto top = tree.list(prefix);
  if (!top.isOk()) return top.status().withContext("prefix");
  const std::string metaDir = joinPath(prefix, "conda-meta");
  std::set<std::string> condaDistDirs;  // absolute paths
  if (tree.exists(metaDir)) {
    inv.hasCondaMeta = true;
    auto entries = tree.list(metaDir);
    if (!entries.isOk()) return entries.status();
    for (const DirEntry& e : *entries) {
      if (e.isDir || !endsWith(e.name, ".json")) continue;
      const std::string path = joinPath(metaDir, e.name);
      auto text = tree.read(path, kMaxRecordBytes);
      if (!text.isOk()) return text.status().withContext(path);
      auto rec = parseCondaRecord(*text, path);
      if (!rec.isOk()) return rec.status();
      for (const auto& d : rec->distInfoDirs) condaDistDirs.insert(joinPath(prefix, d));
      inv.conda.push_back(std::move(*rec));
    }
    std::sort(inv.conda.begin(), inv.conda.end(),
              [](const CondaRecord& a, const CondaRecord& b) { return a.name < b.name; });
  }
  auto sites = findSitePackages(tree, prefix);
  if (!sites.isOk()) return sites.status();
  inv.sitePackages = *sites;
  for (const std::string& site : inv.sitePackages) {
    auto entries = tree.list(site);
    if (!entries.isOk()) return entries.status();
    for (const DirEntry& e : *entries) {
      const bool distInfo = endsWith(e.name, ".dist-info");
      const bool eggInfo = endsWith(e.name, ".egg-info");
      if (!e.isDir || (!distInfo && !eggInfo)) continue;
      const std::string dir = joinPath(site, e.name);
      auto dist = readDist(tree, dir, eggInfo);
      if (!dist.isOk()) return dist.status();
      if (dist->installer == "conda" || condaDistDirs.count(dir)) {
        inv.condaOwnedDists.insert(dist->where);
      }
      inv.python.push_back(std::move(*dist));
    }
  }
  std::stable_sort(inv.python.begin(), inv.python.end(),
                   [](const PythonDist& a, const PythonDist& b) { return a.name < b.name; });
  return inv;
}

std::map<std::string, bool> collectStorePaths(const Tree& tree, const std::string& root,
                                              const std::vector<std::string>& storePaths) {
  std::map<std::string, bool> out;
  const std::string base = (root.empty() || root == "/") ? "" : root;
  for (const std::string& p : storePaths)
    out[p] = tree.exists(base.empty() ? p : joinPath(base, p));
  return out;
}

}  // namespace lockstep::verify
