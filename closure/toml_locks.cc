// uv.lock and poetry.lock: the TOML adapter. toml++ exceptions stop here.
#include <toml++/toml.h>

#include <map>

#include "closure/lock_parsers.h"

namespace lockstep::closure::internal {
namespace {

int lineOf(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

StatusOr<toml::table> parseToml(std::string_view text, const Ctx& ctx) {
  try {
    return toml::parse(text, ctx.source);
  } catch (const toml::parse_error& e) {
    return ctx.error(static_cast<int>(e.source().begin.line), "toml", std::string(e.description()));
  } catch (const std::exception& e) {
    return ctx.error(0, "toml", e.what());
  }
}

// A string field of a table, or nullopt (absent or not a string).
std::optional<std::string> str(const toml::table& t, std::string_view key) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (auto v = n->value<std::string>()) return *v;
  return std::nullopt;
}

// Adds the sha256 of one {hash = "..."} artifact table; other algorithms are not
// digests of the contract and are skipped.
Status addArtifactHash(const toml::node& artifact, const Ctx& ctx, std::string_view field,
                       std::vector<std::string>& digests) {
  const toml::table* t = artifact.as_table();
  if (!t) return ctx.error(lineOf(artifact), field, "expected an inline table");
  const toml::node* h = t->get("hash");
  if (!h) return Status::ok();
  auto hs = h->value<std::string>();
  if (!hs) return ctx.error(lineOf(*h), std::string(field) + ".hash", "expected a string");
  if (!hasSha256Prefix(*hs)) return Status::ok();
  auto d = canonicalSha256(*hs);
  if (!d) {
    return ctx.error(lineOf(*h), std::string(field) + ".hash",
                     "malformed sha256 \"" + *hs + "\" (want sha256:<64 hex>)");
  }
  digests.push_back(*d);
  return Status::ok();
}

Status addArtifactList(const toml::node* list, const Ctx& ctx, std::string_view field,
                       std::vector<std::string>& digests) {
  if (!list) return Status::ok();
  const toml::array* a = list->as_array();
  if (!a) return ctx.error(lineOf(*list), field, "expected an array of tables");
  for (const toml::node& item : *a) {
    LOCKSTEP_RETURN_IF_ERROR(addArtifactHash(item, ctx, field, digests));
  }
  return Status::ok();
}

StatusOr<const toml::array*> packageArray(const toml::table& root, const Ctx& ctx) {
  const toml::node* pk = root.get("package");
  if (!pk) return static_cast<const toml::array*>(nullptr);  // a lock with no packages
  const toml::array* arr = pk->as_array();
  if (!arr) return ctx.error(lineOf(*pk), "package", "expected [[package]] tables");
  return arr;
}

struct NameVersion {
  std::string name, version;
};

StatusOr<NameVersion> nameVersion(const toml::table& t, const Ctx& ctx, bool versionRequired) {
  auto name = str(t, "name");
  if (!name) return ctx.error(lineOf(t), "package.name", "missing or not a string");
  auto version = str(t, "version");
  if (!version && (versionRequired || t.contains("version"))) {
    return ctx.error(lineOf(t), "package.version", "missing or not a string for \"" + *name + "\"");
  }
  return NameVersion{*name, version.value_or("")};
}

}  // namespace

StatusOr<ParsedLock> parseUvLock(std::string_view text, const Ctx& ctx) {
  auto root = parseToml(text, ctx);
  if (!root.isOk()) return root.status();
  auto arr = packageArray(*root, ctx);
  if (!arr.isOk()) return arr.status();
  ParsedLock out;
  if (!*arr) return out;
  for (const toml::node& node : **arr) {
    const toml::table* t = node.as_table();
    if (!t) return ctx.error(lineOf(node), "package", "expected a table");
    const toml::node* srcNode = t->get("source");
    const toml::table* source = srcNode ? srcNode->as_table() : nullptr;
    if (srcNode && !source)
      return ctx.error(lineOf(*srcNode), "package.source", "expected an inline table");
    // The project itself and other local trees are not part of the runtime.
    if (source && (source->contains("editable") || source->contains("virtual") ||
                   source->contains("directory"))) {
      continue;
    }
    // uv writes dynamic versions of local sources without `version`; those are
    // the local trees skipped above, so a registry/git/url package needs one.
    auto nv = nameVersion(*t, ctx, /*versionRequired=*/true);
    if (!nv.isOk()) return nv.status();
    RawPackage p{"pypi", nv->name, nv->version, {}, ctx.at(lineOf(*t))};
    if (source) {
      if (auto git = str(*source, "git")) {
        auto commit = gitCommitFromUrl(*git);
        if (!commit) {
          return ctx.error(
              lineOf(*srcNode), "package.source.git",
              "git source of \"" + nv->name + "\" is not pinned to a full commit (#<sha>)");
        }
        p.digests.push_back("git:" + *commit);
      }
    }
    LOCKSTEP_RETURN_IF_ERROR(addArtifactList(t->get("wheels"), ctx, "package.wheels", p.digests));
    if (const toml::node* sd = t->get("sdist")) {
      LOCKSTEP_RETURN_IF_ERROR(addArtifactHash(*sd, ctx, "package.sdist", p.digests));
    }
    out.packages.push_back(std::move(p));
  }
  return out;
}

StatusOr<ParsedLock> parsePoetryLock(std::string_view text, const Ctx& ctx) {
  auto root = parseToml(text, ctx);
  if (!root.isOk()) return root.status();
  auto arr = packageArray(*root, ctx);
  if (!arr.isOk()) return arr.status();
  ParsedLock out;
  if (!*arr) return out;

  // lock-version 1.x keeps files in [metadata.files], keyed by (unnormalized) name.
  std::map<std::string, const toml::node*> metadataFiles;
  if (const toml::table* md = root->get_as<toml::table>("metadata")) {
    if (const toml::node* files = md->get("files")) {
      const toml::table* ft = files->as_table();
      if (!ft) return ctx.error(lineOf(*files), "metadata.files", "expected a table");
      for (const auto& [k, v] : *ft) metadataFiles[normalizePypiName(k.str())] = &v;
    }
  }

  for (const toml::node& node : **arr) {
    const toml::table* t = node.as_table();
    if (!t) return ctx.error(lineOf(node), "package", "expected a table");
    auto nv = nameVersion(*t, ctx, /*versionRequired=*/true);
    if (!nv.isOk()) return nv.status();
    if (auto dev = t->get("develop"); dev && dev->value<bool>().value_or(false)) continue;
    RawPackage p{"pypi", nv->name, nv->version, {}, ctx.at(lineOf(*t))};
    if (const toml::node* srcNode = t->get("source")) {
      const toml::table* source = srcNode->as_table();
      if (!source) return ctx.error(lineOf(*srcNode), "package.source", "expected a table");
      std::string type = str(*source, "type").value_or("");
      if (type == "directory") continue;  // a local tree: the project or a path dependency
      if (type == "git") {
        auto ref = str(*source, "resolved_reference");
        if (!ref || !isFullCommit(*ref)) {
          return ctx.error(lineOf(*srcNode), "package.source.resolved_reference",
                           "git source of \"" + nv->name + "\" has no full resolved commit");
        }
        std::string commit = *ref;
        for (char& c : commit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        p.digests.push_back("git:" + commit);
      }
    }
    if (const toml::node* files = t->get("files")) {
      LOCKSTEP_RETURN_IF_ERROR(addArtifactList(files, ctx, "package.files", p.digests));
    } else {
      auto it = metadataFiles.find(normalizePypiName(nv->name));
      if (it != metadataFiles.end()) {
        LOCKSTEP_RETURN_IF_ERROR(addArtifactList(it->second, ctx, "metadata.files", p.digests));
      }
    }
    out.packages.push_back(std::move(p));
  }
  return out;
}

}  // namespace lockstep::closure::internal
