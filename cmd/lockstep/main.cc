// lockstep: the Lockstep command-line tool (also `kubectl lockstep`).
// Wiring only: picks a verb from the table and runs it.
#include <iostream>
#include <string>

#include "cmd/lockstep/model_args.h"
#include "cmd/lockstep/release_args.h"
#include "cmd/lockstep/runtime_args.h"
#include "cmd/lockstep/uninstall_cleanup.h"
#include "cmd/lockstep/verbs.h"

namespace lockstep::cli {
namespace {

int runVersion(const VerbContext& ctx) {
  ctx.out << "lockstep " << LOCKSTEP_VERSION << " (closure hash v1)\n";
  return kExitOk;
}

int runHelp(const VerbContext& ctx);

int runUninstallCleanupVerb(const VerbContext& ctx) {
  return uninstallCleanupMain(ctx.args, ctx.out, ctx.err, ctx.programName);
}

const Verb kVerbs[] = {
    {"closure-hash", "print the closure hash v1 of a lock file (or runtime.json with --json)",
     runClosureHash},
    {"release", "list, inspect, approve, abort, promote and wait for ModelReleases", runRelease},
    {"model", "a model's prod history, rollback to an earlier release, removal from prod",
     runModel},
    {"verify-env", "compare an installed environment (conda, venv, Nix) with its closure",
     runVerifyEnv},
    {"verify-host", "check this node's driver, GPUs, CUDA/NCCL and RDMA against a runtime",
     runVerifyHost},
    {"runtime", "a RuntimeEnv's revisions (image, closure hash) and the releases pinning them",
     runRuntime},
    {"drift", "running pods that run what their RuntimeEnv does not record (runtime drift)",
     runDrift},
    {"evidence", "ML-BOM of a package from its lock; sign and verify statements, offline",
     runEvidence},
    {"fleet", "a package's fleet rollout from its registry: waves, clusters, permits, aborts",
     runFleet},
    {"advisories", "OSV advisories (a local export) that affect a lock's closure", runAdvisories},
    {"mirror", "push a lock's artifact files to an OCI repository; fetch them back offline",
     runMirror},
    {"uninstall-cleanup",
     "after helm uninstall: wait for the operator to go, free Lockstep's finalizers",
     runUninstallCleanupVerb},
    {"version", "print the version", runVersion},
    {"help", "show this help (help VERB for a verb's flags)", runHelp},
};

void usage(std::ostream& os, const std::string& program) {
  os << "usage: " << program << " VERB [flags]\n\nverbs:\n";
  for (const Verb& v : kVerbs) {
    std::string name = v.name;
    name.resize(19, ' ');
    os << "  " << name << v.summary << "\n";
  }
}

int runHelp(const VerbContext& ctx) {
  if (!ctx.args.empty() && ctx.args[0] == "closure-hash") {
    closureHashUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "release") {
    releaseUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "model") {
    modelUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "verify-env") {
    verifyEnvUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "verify-host") {
    verifyHostUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "evidence") {
    evidenceUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && (ctx.args[0] == "runtime" || ctx.args[0] == "drift")) {
    runtimeUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "fleet") {
    fleetUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "advisories") {
    advisoriesUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "mirror") {
    mirrorUsage(ctx.out, ctx.programName);
  } else if (!ctx.args.empty() && ctx.args[0] == "uninstall-cleanup") {
    uninstallCleanupUsage(ctx.out, ctx.programName);
  } else {
    usage(ctx.out, ctx.programName);
  }
  return kExitOk;
}

}  // namespace
}  // namespace lockstep::cli

int main(int argc, char** argv) {
  using namespace lockstep::cli;
  std::string argv0 = argc > 0 ? argv[0] : "lockstep";
  std::string base = argv0.substr(argv0.rfind('/') == std::string::npos ? 0 : argv0.rfind('/') + 1);
  std::string program = base.rfind("kubectl-", 0) == 0 ? "kubectl lockstep" : "lockstep";
  if (argc < 2) {
    usage(std::cerr, program);
    return kExitUsage;
  }
  std::string verb = argv[1];
  if (verb == "-h" || verb == "--help") verb = "help";
  if (verb == "--version") verb = "version";
  for (const Verb& v : kVerbs) {
    if (verb == v.name) {
      VerbContext ctx{std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr,
                      program};
      int rc = v.run(ctx);
      std::cout.flush();
      return rc;
    }
  }
  std::cerr << program << ": unknown verb \"" << verb << "\"\n";
  usage(std::cerr, program);
  return kExitUsage;
}
