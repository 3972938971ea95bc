// compareEnv: the closure's entries against an installed environment's inventory.
//
// - conda: every locked conda package installed with its version and exactly one
//   of its locked sha256 digests; every conda record not in the lock is extra.
// - pypi: every locked distribution installed with its version; a git-pinned one
//   at its commit (direct_url.json), an archive hash, where recorded, among the
//   locked digests; every other distribution is extra. Distributions a conda
//   record installed are conda's (checked as conda packages), editable installs
//   are the project's own source (the closure leaves it out) and are not extra.
// - nix: every locked store path exists.
// Pure: no I/O, no clock. Thread-safety: pure functions over values.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "closure/closure.h"
#include "verify/difference.h"
#include "verify/env_inventory.h"

namespace lockstep::verify {

// Installer tools `python -m venv` seeds into every environment; not extra unless
// locked or `strict` (they are compared like any package when the lock has them).
inline const std::set<std::string> kSeededInstallers = {"pip", "setuptools", "wheel"};

struct EnvCheckOptions {
  // Seeded installers that the lock does not list count as extra too.
  bool strict = false;
  // Names (conda lowercase / PEP 503) neither reported missing nor extra: packages a
  // universal lock lists for other platforms, a site's own tooling.
  std::set<std::string> ignore;
};

struct EnvReport {
  std::vector<Difference> differences;  // in ecosystem, then package order
  std::vector<std::string> ignored;     // "pypi pip 24.0 (seeded installer)", ...
  size_t condaChecked = 0;              // locked entries compared, per ecosystem
  size_t pypiChecked = 0;
  size_t nixChecked = 0;
  bool match() const { return differences.empty(); }
};

EnvReport compareEnv(const std::vector<closure::Package>& locked, const Inventory& installed,
                     const EnvCheckOptions& options = {});

}  // namespace lockstep::verify
