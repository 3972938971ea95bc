// Flox manifest.lock and `nix path-info --json --recursive`: the JSON adapter.
// nlohmann exceptions stop here. JSON nodes carry no line numbers, so semantic
// errors name the JSON path (packages[3].outputs); syntax errors give the line.
#include <nlohmann/json.hpp>

#include <set>

#include "closure/lock_parsers.h"
#include "closure/nix_hash.h"

namespace lockstep::closure::internal {
namespace {

using nlohmann::json;

// Locks nest a handful of levels. nlohmann's parser keeps its own stack, but a
// value nested millions deep costs memory per level and would overflow the
// stack of anything that recurses over it (dump, comparison): refuse it first.
constexpr int kMaxJsonDepth = 64;

Status checkJsonNesting(std::string_view text, const Ctx& ctx) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return ctx.error(lineOfOffset(text, i), "json",
                         "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::ok();
}

StatusOr<json> parseJson(std::string_view text, const Ctx& ctx) {
  LOCKSTEP_RETURN_IF_ERROR(checkJsonNesting(text, ctx));
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    int line = e.byte > 0 ? lineOfOffset(text, e.byte - 1) : 0;
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> the reason.
    size_t colon = what.find(": ");
    return ctx.error(line, "json", colon == std::string::npos ? what : what.substr(colon + 2));
  } catch (const std::exception& e) {
    return ctx.error(0, "json", e.what());
  }
}

std::optional<std::string> str(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// "/nix/store/<hash>-<name>" -> "<name>"; nullopt when not a store path.
std::optional<std::string> storeName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  std::string_view base = path.substr(slash + 1);
  // The store hash: 32 characters of Nix's base-32 alphabet (no e, o, u, t).
  size_t dash = base.find('-');
  if (dash != 32 || dash + 1 >= base.size()) return std::nullopt;
  for (char c : base.substr(0, 32)) {
    bool digit = c >= '0' && c <= '9';
    bool letter = c >= 'a' && c <= 'z' && c != 'e' && c != 'o' && c != 'u' && c != 't';
    if (!digit && !letter) return std::nullopt;
  }
  return std::string(base.substr(dash + 1));
}

bool isStorePath(std::string_view p) {
  return !p.empty() && p.front() == '/' && storeName(p).has_value();
}

const std::vector<std::string> kNixDefaults = {"x86_64-linux"};

}  // namespace

StatusOr<ParsedLock> parseFloxLock(std::string_view text, const Ctx& ctx) {
  auto rootOr = parseJson(text, ctx);
  if (!rootOr.isOk()) return rootOr.status();
  const json& root = *rootOr;
  if (!root.is_object()) return ctx.error(1, "", "a Flox manifest.lock is a JSON object");
  auto lv = root.find("lockfile-version");
  if (lv != root.end() && !(lv->is_number_integer() && lv->get<long long>() == 1)) {
    return ctx.error(0, "lockfile-version",
                     "unsupported Flox lockfile version " +
                         (lv->is_primitive() ? lv->dump() : "(not a number)"));
  }
  auto pk = root.find("packages");
  if (pk == root.end() || !pk->is_array())
    return ctx.error(0, "packages", "missing or not an array");
  if (pk->size() > ctx.limits().maxEntries) {
    return ctx.tooLarge(0, "packages",
                        std::to_string(pk->size()) + " entries; the limit is " +
                            std::to_string(ctx.limits().maxEntries));
  }

  std::vector<std::string> platforms;  // in lock order
  std::set<std::string> seen;
  auto addPlatform = [&](const std::string& p) {
    if (seen.insert(p).second) platforms.push_back(p);
  };
  for (size_t i = 0; i < pk->size(); ++i) {
    const json& e = (*pk)[i];
    const json& src =
        e.is_object() && e.contains("locked_installable") ? e["locked_installable"] : e;
    const std::string field = "packages[" + std::to_string(i) + "]";
    auto sys = str(src, "system");
    if (!sys) return ctx.error(0, field + ".system", "missing or not a string");
    addPlatform(*sys);
    // Outputs of every system are checked, so damage elsewhere is still an error.
    if (auto o = src.find("outputs"); o != src.end() && o->is_object()) {
      for (const auto& [k, v] : o->items()) {
        if (!v.is_string() || !isStorePath(v.get<std::string>())) {
          return ctx.error(0, field + ".outputs." + k, "expected a store path");
        }
      }
    }
  }
  if (platforms.empty()) {
    // Nothing installed: the manifest's systems still name the platforms.
    const json* systems = nullptr;
    if (auto m = root.find("manifest"); m != root.end() && m->is_object()) {
      if (auto o = m->find("options"); o != m->end() && o->is_object()) {
        if (auto s = o->find("systems"); s != o->end() && s->is_array()) systems = &*s;
      }
    }
    if (systems) {
      for (const auto& s : *systems) {
        if (s.is_string()) addPlatform(s.get<std::string>());
      }
    }
    ParsedLock empty;
    if (!platforms.empty()) {
      auto p = selectPlatform(ctx, ctx.options.platform, platforms, kNixDefaults);
      if (!p.isOk()) return p.status();
      empty.platform = *p;
    } else {
      empty.platform = ctx.options.platform;
    }
    return empty;
  }
  auto platform = selectPlatform(ctx, ctx.options.platform, platforms, kNixDefaults);
  if (!platform.isOk()) return platform.status();

  ParsedLock out;
  out.platform = *platform;
  for (size_t i = 0; i < pk->size(); ++i) {
    const std::string field = "packages[" + std::to_string(i) + "]";
    const json& e = (*pk)[i];
    const json& src = e.contains("locked_installable") ? e["locked_installable"] : e;
    if (*str(src, "system") != out.platform) continue;
    RawPackage p;
    p.ecosystem = "nix";
    p.where = ctx.source + ": " + field;
    auto outputs = src.find("outputs");
    if (outputs != src.end() && !outputs->is_null()) {
      if (!outputs->is_object()) return ctx.error(0, field + ".outputs", "expected an object");
      for (const auto& [k, v] : outputs->items()) {
        if (!v.is_string() || !isStorePath(v.get<std::string>())) {
          return ctx.error(0, field + ".outputs." + k, "expected a store path");
        }
        p.digests.push_back(v.get<std::string>());
      }
    }
    auto storePath = str(src, "store_path");
    if (storePath) {
      if (!isStorePath(*storePath))
        return ctx.error(0, field + ".store_path", "expected a store path");
      if (p.digests.empty()) p.digests.push_back(*storePath);
    }
    std::optional<std::string> name = str(src, "pname");
    if (!name) name = str(e, "install_id");
    if (!name && storePath) name = storeName(*storePath);
    if (!name)
      return ctx.error(0, field + ".pname", "missing (no pname, install_id or store_path)");
    p.name = *name;
    p.version = str(src, "version").value_or("");
    out.packages.push_back(std::move(p));
  }
  return out;
}

StatusOr<ParsedLock> parseNixPathInfo(std::string_view text, const Ctx& ctx) {
  auto rootOr = parseJson(text, ctx);
  if (!rootOr.isOk()) return rootOr.status();
  const json& root = *rootOr;
  ParsedLock out;
  // path-info carries no system: the requested platform is recorded as given.
  out.platform = ctx.options.platform;
  if ((root.is_array() || root.is_object()) && root.size() > ctx.limits().maxEntries) {
    return ctx.tooLarge(0, "paths",
                        std::to_string(root.size()) + " entries; the limit is " +
                            std::to_string(ctx.limits().maxEntries));
  }
  // `info`: the path's narHash, narSize and references, when given, make its NAR a file.
  auto add = [&](const std::string& path, const std::string& field, const json& info,
                 const std::string& infoField) -> Status {
    auto name = storeName(path);
    if (!name || path.front() != '/')
      return ctx.error(0, field, "\"" + path + "\" is not a store path");
    RawPackage p{"nix", *name, "", {path}, ctx.source + ": " + field};
    if (auto narHash = info.find("narHash"); narHash != info.end()) {
      auto digest =
          narHash->is_string() ? narHashToDigest(narHash->get<std::string>()) : std::nullopt;
      if (!digest) {
        return ctx.error(0, infoField + ".narHash",
                         "not a sha256 NAR hash (sha256:<nix base-32 or hex>, sha256-<base64>)");
      }
      RawFile f;
      f.digest = *digest;
      f.storePath = path;
      if (auto size = info.find("narSize"); size != info.end()) {
        if (!size->is_number_integer() || size->get<long long>() < 0)
          return ctx.error(0, infoField + ".narSize", "not a non-negative integer");
        f.size = size->get<int64_t>();
      }
      if (auto refs = info.find("references"); refs != info.end()) {
        if (!refs->is_array())
          return ctx.error(0, infoField + ".references", "expected an array of store paths");
        for (size_t i = 0; i < refs->size(); ++i) {
          const json& r = (*refs)[i];
          if (!r.is_string() || !isStorePath(r.get<std::string>())) {
            return ctx.error(0, infoField + ".references[" + std::to_string(i) + "]",
                             "expected a store path");
          }
          f.references.push_back(r.get<std::string>());
        }
      }
      p.files.push_back(std::move(f));
    }
    out.packages.push_back(std::move(p));
    return Status::ok();
  };
  if (root.is_array()) {  // Nix < 2.19: [{"path": "/nix/store/...", ...}, ...]
    for (size_t i = 0; i < root.size(); ++i) {
      const std::string field = "[" + std::to_string(i) + "].path";
      auto path = str(root[i], "path");
      if (!path) return ctx.error(0, field, "missing or not a string");
      if (root[i].contains("valid") && root[i]["valid"].is_boolean() &&
          !root[i]["valid"].get<bool>()) {
        return ctx.error(0, field, "\"" + *path + "\" is not valid in the store");
      }
      LOCKSTEP_RETURN_IF_ERROR(add(*path, field, root[i], "[" + std::to_string(i) + "]"));
    }
    return out;
  }
  if (root.is_object()) {  // Nix >= 2.19: {"/nix/store/...": {...} | null}
    for (const auto& [path, info] : root.items()) {
      const std::string field = "\"" + path + "\"";
      if (info.is_null()) return ctx.error(0, field, "path is not valid in the store");
      if (!info.is_object()) return ctx.error(0, field, "expected an object");
      LOCKSTEP_RETURN_IF_ERROR(add(path, field, info, field));
    }
    return out;
  }
  return ctx.error(1, "", "nix path-info JSON is an array or an object");
}

}  // namespace lockstep::closure::internal
