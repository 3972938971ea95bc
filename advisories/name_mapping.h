// Where a closure entry is looked up in OSV: an ecosystem, a name and a version, or
// the reason it cannot be ("not matched", never "clean").
//
// - pypi entries (uv, pip, poetry locks, and conda-lock/pixi pip entries): PyPI, the
//   PEP 503 name, the version.
// - conda entries: conda has no OSV ecosystem. A conda package that is a PyPI project
//   is looked up under its PyPI name when the table below names it (conda-forge and
//   defaults spell most Python projects as PyPI does, but not all: "pytorch" is torch,
//   "python-xxhash" is xxhash while "xxhash" is the C library). Any other conda package
//   is not matched: a name alone cannot tell libyaml's "yaml" from a Python project.
// - nix entries (Nix path-info, Flox): the rule of nixpkgs' buildPythonPackage, whose
//   store paths are named "python<X.Y>-<pname>-<version>": such a path is the PyPI
//   project <pname> at <version>. Any other store path is not matched.
// - anything else: not matched.
// docs/supply-chain.md prints the table and the rule. Pure; thread-safety: free functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "closure/closure.h"

namespace lockstep::advisories {

struct OsvPackageRef {
  std::string ecosystem;  // "PyPI"
  std::string name;       // PEP 503 normalised
  std::string version;    // as the lock spells it (or as the store path does)
  std::string via;        // how the name was found: "pypi", "conda table", "nix python store path"
};

struct PackageMapping {
  bool matched = false;
  OsvPackageRef ref;   // when matched
  std::string reason;  // when not: why
};

PackageMapping osvPackageFor(const closure::Package& p);

// One row of the conda table: a conda package that is the PyPI project `pypi`.
struct CondaPypiName {
  std::string_view conda;
  std::string_view pypi;
};
std::span<const CondaPypiName> condaPypiTable();

}  // namespace lockstep::advisories
