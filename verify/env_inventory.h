// The inventory of an installed environment: what verify-env compares with a closure.
//
// Parsers turn the files a package manager leaves behind into values:
// conda/pixi `conda-meta/*.json` records, Python `*.dist-info` (METADATA,
// INSTALLER, direct_url.json) and legacy `*.egg-info` (PKG-INFO). The collector
// finds them under a prefix through a Tree (no file I/O of its own).
// Errors name the file and the field. Thread-safety: pure functions over values.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "verify/tree.h"

namespace lockstep::verify {

// One conda-meta/<name>-<version>-<build>.json record.
struct CondaRecord {
  std::string name;     // lowercase, as the closure spells conda names
  std::string version;  // as recorded
  std::string build;    // "" when the record has none
  std::string sha256;   // "sha256:<hex>" of the archive, "" when the record has none
  std::string where;    // the record's path
  // dist-info directories the package installed ("lib/python3.12/site-packages/x-1.dist-info"),
  // relative to the prefix: those are conda's, not pip's.
  std::vector<std::string> distInfoDirs;
};

// One installed Python distribution.
struct PythonDist {
  std::string name;           // PEP 503 normalized
  std::string displayName;    // as METADATA spells it
  std::string version;        // METADATA Version
  std::string installer;      // INSTALLER ("pip", "uv", "conda"), "" when absent
  std::string commit;         // direct_url.json vcs_info.commit_id (lowercase), else ""
  std::string archiveSha256;  // "sha256:<hex>" from direct_url.json archive_info, else ""
  bool editable = false;      // direct_url.json dir_info.editable: the project's own source
  std::string url;            // direct_url.json url, else ""
  std::string where;          // the METADATA / PKG-INFO path
};

struct Inventory {
  std::string prefix;
  bool hasCondaMeta = false;               // prefix/conda-meta exists
  std::vector<CondaRecord> conda;          // sorted by name
  std::vector<std::string> sitePackages;   // the directories searched for distributions
  std::vector<PythonDist> python;          // sorted by name (pip-installed and conda-owned)
  std::set<std::string> condaOwnedDists;   // `where` of python dists a conda record installed
  std::map<std::string, bool> storePaths;  // locked Nix store path -> exists
};

// Files larger than this are refused (a conda-meta record lists every installed file;
// the largest real ones are a few MB).
inline constexpr size_t kMaxRecordBytes = size_t{64} << 20;

// Parses one conda-meta JSON record; errors "<where>: <field>: <reason>".
StatusOr<CondaRecord> parseCondaRecord(std::string_view text, const std::string& where);

// Parses METADATA / PKG-INFO (email-header style, Name and Version required).
struct DistMetadata {
  std::string name;
  std::string version;
};
StatusOr<DistMetadata> parseDistMetadata(std::string_view text, const std::string& where);

// Parses direct_url.json (PEP 610) into `dist`'s commit / archiveSha256 / editable / url.
Status parseDirectUrl(std::string_view text, const std::string& where, PythonDist& dist);

// Where Python distributions live under a prefix: lib/python*/site-packages,
// lib64/python*/site-packages, lib/python*/dist-packages, lib/python3/dist-packages,
// Lib/site-packages (Windows layout); the prefix itself when it holds *.dist-info
// (pip --target, a site-packages directory given directly).
StatusOr<std::vector<std::string>> findSitePackages(const Tree& tree, const std::string& prefix);

// Reads conda-meta (when present) and every distribution in the site-packages
// directories. An unreadable prefix or a malformed record is an error naming it.
StatusOr<Inventory> collectEnvInventory(const Tree& tree, const std::string& prefix);

// For each store path: does it exist under `root` ("" or "/" for the real store)?
std::map<std::string, bool> collectStorePaths(const Tree& tree, const std::string& root,
                                              const std::vector<std::string>& storePaths);

}  // namespace lockstep::verify
