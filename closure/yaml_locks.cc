// conda-lock (v1 and v2 layouts) and pixi.lock over a YamlTree (closure/yaml_tree.h),
// which bounds what a document may make us do and keeps libyaml behind it.
#include <array>
#include <map>
#include <set>

#include "closure/lock_parsers.h"
#include "closure/yaml_tree.h"

namespace lockstep::closure::internal {
namespace {

// Locks nest a handful of levels. Bounded before parsing (docs/limits.md): libyaml
// keeps its own stacks, but a deep tree would still cost every reader of it.
constexpr int kMaxFlowDepth = 64;
constexpr size_t kMaxIndentNesting = 200;
// pixi: entries of `packages` that may share one location (source packages
// with variants share theirs); more would make matching quadratic.
constexpr size_t kMaxEntriesPerLocation = 64;

int lineOfYamlLocks(const YamlNode& n) { return n.line(); }

// Bytes that matter after a line's indentation: flow brackets and the line end.
constexpr std::array<bool, 256> kFlowOrLineEnd = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {'[', '{', ']', '}', '\n'}) t[c] = true;
  return t;
}();

Status checkNesting(std::string_view text, const Ctx& ctx) {
  int depth = 0;
  int line = 1;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // The indentation: "- - - -" / "? ? ?" chains on one line nest too.
    const size_t lineStart = i;
    size_t blockRun = 0;
    for (; i < n; ++i) {
      const char c = text[i];
      if (c != ' ' && c != '-' && c != '?' && c != ':' && c != '\t') break;
      if (c != ' ' && c != '\t') ++blockRun;
      if (i - lineStart > kMaxIndentNesting * 2 || blockRun > kMaxIndentNesting / 4) {
        return ctx.error(line, "yaml", "nesting too deep");
      }
    }
    // The rest of the line: only flow brackets count.
    for (; i < n; ++i) {
      const char c = text[i];
      if (!kFlowOrLineEnd[static_cast<unsigned char>(c)]) continue;
      if (c == '\n') break;
      if (c == '[' || c == '{') {
        if (++depth > kMaxFlowDepth) return ctx.error(line, "yaml", "nesting too deep");
      } else if (depth > 0) {
        --depth;
      }
    }
    if (i < n) {  // past the line end
      ++i;
      ++line;
    }
  }
  return Status::ok();
}

StatusOr<YamlTree> parseYaml(std::string_view text, const Ctx& ctx) {
  LOCKSTEP_RETURN_IF_ERROR(checkNesting(text, ctx));
  return YamlTree::parse(text, ctx.source, ctx.limits().maxYamlNodes);
}

// The scalar at key, or nullopt when absent / null / not a scalar.
std::optional<std::string> scalar(const YamlNode& map, std::string_view key) {
  if (!map.IsMap()) return std::nullopt;
  const YamlNode v = map[key];
  if (!v || !v.IsScalar()) return std::nullopt;
  return std::string(v.Scalar());
}

bool isConda(std::string_view url) {
  return url.size() >= 6 && (url.substr(url.size() - 6) == ".conda" ||
                             (url.size() >= 8 && url.substr(url.size() - 8) == ".tar.bz2"));
}

// "name-version-build.conda" -> name, version.
bool splitCondaArchive(std::string_view url, std::string& name, std::string& version) {
  size_t slash = url.rfind('/');
  std::string_view file = slash == std::string_view::npos ? url : url.substr(slash + 1);
  if (file.size() > 6 && file.substr(file.size() - 6) == ".conda")
    file.remove_suffix(6);
  else if (file.size() > 8 && file.substr(file.size() - 8) == ".tar.bz2")
    file.remove_suffix(8);
  else
    return false;
  size_t b = file.rfind('-');
  if (b == std::string_view::npos || b == 0) return false;
  size_t v = file.rfind('-', b - 1);
  if (v == std::string_view::npos || v == 0) return false;
  name = std::string(file.substr(0, v));
  version = std::string(file.substr(v + 1, b - v - 1));
  return !name.empty() && !version.empty();
}

// sha256 from `sha256:` or `hash: {sha256: ...}`; error when present but malformed.
Status sha256Of(const YamlNode& entry, const Ctx& ctx, std::vector<std::string>& digests) {
  auto pick = [&entry]() -> YamlNode {
    if (const YamlNode direct = entry["sha256"]) return direct;
    if (const YamlNode h = entry["hash"]; h && h.IsMap()) {
      if (const YamlNode nested = h["sha256"]) return nested;
    }
    return YamlNode();
  };
  const YamlNode node = pick();
  if (!node || node.IsNull()) return Status::ok();
  if (!node.IsScalar()) return ctx.error(lineOfYamlLocks(node), "sha256", "expected a string");
  const std::string_view raw = node.Scalar();
  if (raw.empty()) return Status::ok();
  auto d = canonicalSha256(raw);
  if (!d)
    return ctx.error(lineOfYamlLocks(node), "sha256",
                     "malformed sha256 \"" + std::string(raw) + "\"");
  digests.push_back(*d);
  return Status::ok();
}

const std::vector<std::string> kCondaDefaults = {"linux-64"};

// A list of package entries longer than the limit is refused before it is read.
Status checkEntryCount(const YamlNode& list, const Ctx& ctx, std::string_view field) {
  if (list.childCount() > ctx.limits().maxEntries) {
    return ctx.tooLarge(lineOfYamlLocks(list), field,
                        std::to_string(list.childCount()) + " entries; the limit is " +
                            std::to_string(ctx.limits().maxEntries));
  }
  return Status::ok();
}

}  // namespace

StatusOr<ParsedLock> parseCondaLock(std::string_view text, const Ctx& ctx) {
  auto tree = parseYaml(text, ctx);
  if (!tree.isOk()) return tree.status();
  const YamlNode root = tree->root();
  if (!root.IsMap()) return ctx.error(1, "", "a conda-lock file is a YAML mapping");
  if (auto v = scalar(root, "version"); v && *v != "1" && *v != "2") {
    return ctx.error(lineOfYamlLocks(root["version"]), "version",
                     "unsupported conda-lock version " + *v);
  }
  const YamlNode pkgs = root["package"];
  if (!pkgs || !pkgs.IsSequence())
    return ctx.error(lineOfYamlLocks(root), "package", "missing or not a list");
  LOCKSTEP_RETURN_IF_ERROR(checkEntryCount(pkgs, ctx, "package"));

  std::vector<std::string> platforms;  // in lock order
  std::set<std::string> seen;
  auto addPlatform = [&](const std::string& p) {
    if (seen.insert(p).second) platforms.push_back(p);
  };
  if (const YamlNode md = root["metadata"]; md && md.IsMap()) {
    if (const YamlNode pl = md["platforms"]; pl && pl.IsSequence()) {
      for (const YamlNode& p : items(pl)) {
        if (p.IsScalar()) addPlatform(std::string(p.Scalar()));
      }
    }
  }
  for (const YamlNode& e : items(pkgs)) {
    if (auto p = scalar(e, "platform")) addPlatform(*p);
  }
  auto platform = selectPlatform(ctx, ctx.options.platform, platforms, kCondaDefaults);
  if (!platform.isOk()) return platform.status();

  ParsedLock out;
  out.platform = *platform;
  for (const YamlNode& e : items(pkgs)) {
    if (!e.IsMap()) return ctx.error(lineOfYamlLocks(e), "package", "expected a mapping");
    // Digests of every platform are checked, so a damaged entry is an error
    // even when another platform is selected.
    std::vector<std::string> digests;
    LOCKSTEP_RETURN_IF_ERROR(sha256Of(e, ctx, digests));
    auto name = scalar(e, "name");
    auto version = scalar(e, "version");
    auto plat = scalar(e, "platform");
    if (!name) return ctx.error(lineOfYamlLocks(e), "package.name", "missing");
    if (!version)
      return ctx.error(lineOfYamlLocks(e), "package.version", "missing for \"" + *name + "\"");
    if (!plat)
      return ctx.error(lineOfYamlLocks(e), "package.platform", "missing for \"" + *name + "\"");
    if (*plat != out.platform) continue;
    std::string manager = scalar(e, "manager").value_or("conda");
    RawPackage p;
    if (manager == "conda") {
      p.ecosystem = "conda";
    } else if (manager == "pip") {
      p.ecosystem = "pypi";
    } else {
      return ctx.error(lineOfYamlLocks(e), "package.manager",
                       "unknown manager \"" + manager + "\"");
    }
    p.name = *name;
    p.version = *version;
    p.where = ctx.at(lineOfYamlLocks(e));
    p.digests = std::move(digests);
    for (const std::string& d : p.digests) {
      RawFile f;
      f.digest = d;
      f.url = scalar(e, "url").value_or("");
      p.files.push_back(std::move(f));
    }
    if (p.digests.empty()) {
      if (auto url = scalar(e, "url")) {
        if (auto c = gitCommitFromUrl(*url); c && url->rfind("git+", 0) == 0)
          p.digests.push_back("git:" + *c);
      }
    }
    out.packages.push_back(std::move(p));
  }
  return out;
}

namespace {

bool isGitUrl(std::string_view loc) { return loc.rfind("git+", 0) == 0; }

}  // namespace

StatusOr<ParsedLock> parsePixiLock(std::string_view text, const Ctx& ctx) {
  auto tree = parseYaml(text, ctx);
  if (!tree.isOk()) return tree.status();
  const YamlNode root = tree->root();
  if (!root.IsMap()) return ctx.error(1, "", "a pixi.lock file is a YAML mapping");
  const YamlNode envs = root["environments"];
  if (!envs || !envs.IsMap())
    return ctx.error(lineOfYamlLocks(root), "environments", "missing or not a mapping");
  std::string envName = ctx.options.environment.empty() ? "default" : ctx.options.environment;
  const YamlNode env = envs[envName];
  if (!env) {
    std::vector<std::string> names;
    for (const auto& [k, v] : entries(envs)) {
      if (k.IsScalar()) names.emplace_back(k.Scalar());
    }
    return ctx.error(lineOfYamlLocks(envs), "environments",
                     "environment \"" + envName +
                         "\" is not in the lock; available: " + joinCommaBounded(names));
  }
  if (!env.IsMap())
    return ctx.error(lineOfYamlLocks(env), "environments." + envName, "expected a mapping");
  const YamlNode byPlatform = env["packages"];
  std::vector<std::string> platforms;
  if (byPlatform && byPlatform.IsMap()) {
    for (const auto& [k, v] : entries(byPlatform)) {
      if (k.IsScalar()) platforms.emplace_back(k.Scalar());
    }
  } else if (byPlatform && !byPlatform.IsNull()) {
    return ctx.error(lineOfYamlLocks(byPlatform), "environments." + envName + ".packages",
                     "expected a mapping");
  }
  if (platforms.empty()) {
    return ctx.error(lineOfYamlLocks(env), "environments." + envName + ".packages",
                     "environment \"" + envName + "\" lists no platforms");
  }
  auto platform = selectPlatform(ctx, ctx.options.platform, platforms, kCondaDefaults);
  if (!platform.isOk()) return platform.status();

  // Index the top-level package list by (kind, location). v6 writes
  // "- conda: <url>" / "- pypi: <url>"; v4/v5 write "kind:" plus "url:".
  std::map<std::pair<std::string, std::string>, std::vector<YamlNode>> index;
  const YamlNode pkgs = root["packages"];
  if (pkgs && !pkgs.IsNull() && !pkgs.IsSequence()) {
    return ctx.error(lineOfYamlLocks(pkgs), "packages", "expected a list");
  }
  LOCKSTEP_RETURN_IF_ERROR(checkEntryCount(pkgs, ctx, "packages"));
  for (const YamlNode& e : items(pkgs)) {
    if (!e.IsMap()) return ctx.error(lineOfYamlLocks(e), "packages", "expected a mapping");
    std::string kind, loc;
    if (auto c = scalar(e, "conda")) {
      kind = "conda";
      loc = *c;
    } else if (auto p = scalar(e, "pypi")) {
      kind = "pypi";
      loc = *p;
    } else if (auto k = scalar(e, "kind")) {
      kind = *k;
      loc = scalar(e, "url").value_or(scalar(e, "path").value_or(""));
    }
    if (kind.empty() || loc.empty()) {
      return ctx.error(lineOfYamlLocks(e), "packages",
                       "entry has neither conda/pypi location nor kind+url");
    }
    std::vector<std::string> unused;
    LOCKSTEP_RETURN_IF_ERROR(sha256Of(e, ctx, unused));
    auto& same = index[{kind, loc}];
    if (same.size() >= kMaxEntriesPerLocation) {
      return ctx.tooLarge(lineOfYamlLocks(e), "packages",
                          "more than " + std::to_string(kMaxEntriesPerLocation) +
                              " entries share the location \"" + loc + "\"");
    }
    same.push_back(e);
  }

  ParsedLock out;
  out.platform = *platform;
  out.environment = envName;
  const YamlNode list = byPlatform[out.platform];
  if (!list.IsSequence()) {
    if (list.IsNull()) return out;
    return ctx.error(lineOfYamlLocks(list), "environments." + envName + ".packages." + out.platform,
                     "expected a list");
  }
  LOCKSTEP_RETURN_IF_ERROR(
      checkEntryCount(list, ctx, "environments." + envName + ".packages." + out.platform));
  for (const YamlNode& ref : items(list)) {
    if (!ref.IsMap())
      return ctx.error(lineOfYamlLocks(ref), "environments." + envName + ".packages",
                       "expected a mapping");
    std::string kind, loc;
    if (auto c = scalar(ref, "conda")) {
      kind = "conda";
      loc = *c;
    } else if (auto p = scalar(ref, "pypi")) {
      kind = "pypi";
      loc = *p;
    } else {
      return ctx.error(lineOfYamlLocks(ref), "environments." + envName + ".packages",
                       "entry is neither conda nor pypi");
    }
    // Match by location, then by any other key the reference gives (e.g. build).
    std::vector<YamlNode> candidates;
    auto found = index.find({kind, loc});
    if (found != index.end()) {
      const auto refEntries = entries(ref);
      for (const YamlNode& candidate : found->second) {
        bool ok = true;
        for (const auto& [k, v] : refEntries) {
          if (!k.IsScalar() || !v.IsScalar()) continue;
          const std::string_view key = k.Scalar();
          if (key == kind) continue;
          auto have = scalar(candidate, key);
          if (!have || *have != v.Scalar()) ok = false;
        }
        if (ok) candidates.push_back(candidate);
      }
    }
    if (candidates.empty()) {
      return ctx.error(lineOfYamlLocks(ref), "environments." + envName + ".packages",
                       "\"" + loc + "\" has no matching entry in packages");
    }
    if (candidates.size() > 1) {
      return ctx.error(lineOfYamlLocks(ref), "environments." + envName + ".packages",
                       "\"" + loc + "\" matches several entries in packages; give its build");
    }
    const YamlNode& e = candidates.front();
    RawPackage p;
    p.ecosystem = kind;
    p.where = ctx.at(lineOfYamlLocks(e));
    if (kind == "pypi" && scalar(e, "editable").value_or("false") == "true") continue;
    LOCKSTEP_RETURN_IF_ERROR(sha256Of(e, ctx, p.digests));
    const bool remote = loc.find("://") != std::string::npos;
    for (const std::string& d : p.digests) {
      RawFile f;
      f.digest = d;
      if (remote) {
        f.url = loc;
      } else {
        f.fileName = loc.substr(loc.rfind('/') == std::string::npos ? 0 : loc.rfind('/') + 1);
      }
      p.files.push_back(std::move(f));
    }
    // A local source tree without a digest is the workspace itself (or a path
    // dependency built from the same tree): not part of the runtime. A local
    // archive (.conda, .whl, .tar.gz) is an artifact and needs its sha256.
    if (!remote && p.digests.empty() && !isConda(loc) && loc.find(".whl") == std::string::npos &&
        loc.find(".tar.gz") == std::string::npos) {
      continue;
    }
    auto name = scalar(e, "name");
    auto version = scalar(e, "version");
    if (kind == "conda" && (!name || !version)) {
      std::string n, v;
      if (!splitCondaArchive(loc, n, v)) {
        return ctx.error(lineOfYamlLocks(e), "packages",
                         "cannot read name-version-build from \"" + loc + "\"");
      }
      if (!name) name = n;
      if (!version) version = v;
    }
    if (!name) return ctx.error(lineOfYamlLocks(e), "packages.name", "missing for \"" + loc + "\"");
    if (!version)
      return ctx.error(lineOfYamlLocks(e), "packages.version", "missing for \"" + loc + "\"");
    p.name = *name;
    p.version = *version;
    if (p.digests.empty() && isGitUrl(loc)) {
      // Built from a git source (a conda source package or a pypi package): the
      // commit pinned in the location's fragment is its digest. Unpinned, it has
      // none and counts as unhashed.
      if (auto c = gitCommitFromUrl(loc)) p.digests.push_back("git:" + *c);
    }
    out.packages.push_back(std::move(p));
  }
  return out;
}

}  // namespace lockstep::closure::internal
