// `lockstep verify-env`: an installed environment (conda/pixi prefix, venv, site-packages,
// Nix store) against the closure it claims. Exit 0 on a match, 1 on a mismatch or bad
// input, 2 on a usage error (docs/verify.md).
#include <cstdlib>
#include <ostream>

#include "cmd/lockstep/verbs.h"
#include "cmd/lockstep/verify_input.h"
#include "common/flags.h"
#include "verify/env_check.h"
#include "verify/env_inventory.h"
#include "verify/fs_tree.h"

namespace lockstep::cli {
namespace {

constexpr const char* kVerb = "verify-env";

size_t countEcosystem(const std::vector<closure::Package>& pkgs, const char* eco) {
  size_t n = 0;
  for (const auto& p : pkgs) n += p.ecosystem == eco ? 1 : 0;
  return n;
}

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

void verifyEnvUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program
     << " verify-env (--lock FILE | --runtime-json FILE | both) [--prefix DIR]\n"
        "                [--format F] [--platform P] [--environment E] [--allow-unhashed]\n"
        "                [--strict] [--ignore NAME,...] [--root DIR] [--json]\n"
        "\n"
        "Compares an installed environment with the closure of a lock (or a runtime.json that\n"
        "lists its packages): conda/pixi prefixes by conda-meta records (version and archive\n"
        "sha256), Python environments by *.dist-info (version, VCS commit, archive hash),\n"
        "Nix/Flox closures by their store paths. With both --lock and --runtime-json the\n"
        "lock must hash to runtime.json's closureHash.\n"
        "  --prefix DIR      the environment: a conda/pixi prefix, a venv, a site-packages\n"
        "                    directory (default: $VIRTUAL_ENV, else $CONDA_PREFIX)\n"
        "  --strict          pip, setuptools and wheel count as extra when the lock lacks them\n"
        "  --ignore NAMES    comma-separated package names neither missing nor extra\n"
        "  --root DIR        where Nix store paths are looked up (default /)\n"
        "  --json            print the report as JSON\n"
        "Exit: 0 match, 1 mismatch (each difference named) or bad input, 2 usage error.\n";
}

int runVerifyEnv(const VerbContext& ctx) {
  Flags flags({
      {"lock", "", "lock file"},
      {"runtime-json", "", "runtime.json"},
      {"prefix", "", "the environment's directory"},
      {"format", "", "lock format (default: detect)"},
      {"platform", "", "per-platform locks: the platform"},
      {"environment", "", "pixi environment"},
      {"allow-unhashed", "false", "accept packages without digests", FlagType::kBool},
      {"strict", "false", "seeded installers count as extra", FlagType::kBool},
      {"ignore", "", "names neither missing nor extra"},
      {"root", "/", "Nix store root"},
      {"json", "false", "print JSON", FlagType::kBool},
  });
  std::vector<const char*> argv{kVerb};
  for (const auto& a : ctx.args) argv.push_back(a.c_str());
  if (Status s = flags.parse(static_cast<int>(argv.size()), argv.data()); !s.isOk()) {
    ctx.err << kVerb << ": " << s.message() << "\n";
    verifyEnvUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (flags.helpRequested()) {
    verifyEnvUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  const bool json = flags.getBool("json");
  VerifyInput in{flags.get("lock"),     flags.get("runtime-json"), flags.get("format"),
                 flags.get("platform"), flags.get("environment"),  flags.getBool("allow-unhashed")};
  if (in.lockPath.empty() && in.runtimeJsonPath.empty()) {
    ctx.err << kVerb << ": give --lock FILE or --runtime-json FILE (or both)\n";
    verifyEnvUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  auto runtime = resolveRuntime(in);
  if (!runtime.isOk())
    return reportError(ctx.out, ctx.err, kVerb, json, runtime.status().message());
  if (!runtime->packages) {
    return reportError(ctx.out, ctx.err, kVerb, json,
                       in.runtimeJsonPath +
                           ": packages: absent (closure-hash --json does not list the entries); "
                           "give --lock LOCK as well, or add the canonical lines as `packages`");
  }
  const std::vector<closure::Package>& locked = *runtime->packages;
  const size_t condaLocked = countEcosystem(locked, "conda");
  const size_t pypiLocked = countEcosystem(locked, "pypi");
  std::string prefix = flags.get("prefix");
  // An activated environment is the default only for closures that install into one: a
  // Nix closure checked from inside a venv is not about the venv.
  if (prefix.empty() && condaLocked + pypiLocked > 0) prefix = envOr("VIRTUAL_ENV");
  if (prefix.empty() && condaLocked + pypiLocked > 0) prefix = envOr("CONDA_PREFIX");
  if (prefix.empty() && condaLocked + pypiLocked > 0) {
    ctx.err << kVerb
            << ": the closure locks conda or PyPI packages: give --prefix DIR "
               "(no $VIRTUAL_ENV or $CONDA_PREFIX is set)\n";
    return kExitUsage;
  }
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();

  verify::FsTree tree;
  verify::Inventory inv;
  if (!prefix.empty()) {
    auto collected = verify::collectEnvInventory(tree, prefix);
    if (!collected.isOk()) {
      return reportError(ctx.out, ctx.err, kVerb, json, collected.status().message());
    }
    inv = std::move(*collected);
    if (condaLocked > 0 && !inv.hasCondaMeta) {
      return reportError(ctx.out, ctx.err, kVerb, json,
                         prefix + ": no conda-meta directory, but the closure locks " +
                             std::to_string(condaLocked) +
                             " conda packages (not a conda/pixi prefix?)");
    }
    if (pypiLocked > 0 && inv.sitePackages.empty()) {
      return reportError(ctx.out, ctx.err, kVerb, json,
                         prefix +
                             ": no site-packages (lib/python*/site-packages, Lib/site-packages "
                             "or *.dist-info in it), but the closure locks " +
                             std::to_string(pypiLocked) + " PyPI packages");
    }
  }
  std::vector<std::string> storePaths;
  for (const auto& p : locked) {
    if (p.ecosystem == "nix")
      storePaths.insert(storePaths.end(), p.digests.begin(), p.digests.end());
  }
  inv.storePaths = verify::collectStorePaths(tree, flags.get("root"), storePaths);

  verify::EnvCheckOptions options;
  options.strict = flags.getBool("strict");
  for (const std::string& n : splitComma(flags.get("ignore"))) {
    options.ignore.insert(n);
    options.ignore.insert(closure::normalizePypiName(n));
  }
  verify::EnvReport report = verify::compareEnv(locked, inv, options);

  if (json) {
    nlohmann::ordered_json j;
    j["result"] = report.match() ? "match" : "mismatch";
    j["closureHash"] = runtime->closureHash;
    j["source"] = runtime->source;
    j["prefix"] = prefix;
    j["checked"] = {
        {"conda", report.condaChecked}, {"pypi", report.pypiChecked}, {"nix", report.nixChecked}};
    j["differences"] = nlohmann::ordered_json::array();
    for (const auto& d : report.differences) j["differences"].push_back(differenceJson(d));
    j["ignored"] = report.ignored;
    ctx.out << j.dump(2) << "\n";
  } else {
    const std::string what = prefix.empty() ? std::string("the Nix store") : prefix;
    const std::string counts = std::to_string(report.condaChecked) + " conda, " +
                               std::to_string(report.pypiChecked) + " PyPI, " +
                               std::to_string(report.nixChecked) + " Nix entries checked";
    if (report.match()) {
      ctx.out << kVerb << ": OK: " << what << " matches " << runtime->closureHash << " (" << counts
              << ")\n";
    } else {
      ctx.out << kVerb << ": MISMATCH: " << what << " differs from " << runtime->closureHash << " ("
              << runtime->source << ") in " << report.differences.size() << " place(s); " << counts
              << "\n";
      for (const auto& d : report.differences) ctx.out << "  " << verify::describe(d) << "\n";
    }
    for (const auto& i : report.ignored) ctx.out << "  not compared: " << i << "\n";
  }
  return report.match() ? kExitOk : kExitFailure;
}

}  // namespace lockstep::cli
