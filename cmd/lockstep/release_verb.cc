// `lockstep release …`: connects like kubectl and runs the command
// (release_commands.h). The only file of the CLI that opens a connection.
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>

#include "cmd/lockstep/release_args.h"
#include "cmd/lockstep/release_commands.h"
#include "cmd/lockstep/verbs.h"
#include "operator/kube/connect.h"

namespace lockstep::cli {

int runRelease(const VerbContext& ctx) {
  auto cmd = parseReleaseArgs(ctx.args);
  if (!cmd.isOk()) {
    ctx.err << ctx.programName << " release: " << cmd.status().message() << "\n";
    releaseUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (cmd->action == ReleaseCommand::Action::kHelp) {
    releaseUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  std::string path = kubeconfigPath(cmd->kube, std::getenv("KUBECONFIG"), std::getenv("HOME"),
                                    [](const std::string& p) {
                                      struct stat st {};
                                      return ::stat(p.c_str(), &st) == 0;
                                    });
  StatusOr<kube::KubeConfig> config =
      path.empty() ? kube::loadInClusterConfig() : kube::loadKubeConfig(path, cmd->kube.context);
  if (!config.isOk()) {
    ctx.err << ctx.programName << ": " << config.status().message() << "\n";
    return kExitFailure;
  }
  kube::RestOptions rest;
  rest.threads = 2;
  rest.userAgent = std::string("lockstep-cli/") + LOCKSTEP_VERSION;
  kube::ClientOptions options;
  options.fieldManager = "lockstep-cli";
  auto client = kube::connect(*config, rest, options);
  if (!client.isOk()) {
    ctx.err << ctx.programName << ": " << client.status().message() << "\n";
    return kExitFailure;
  }
  ReleaseIo io{**client, kube::SystemClock::instance(), ctx.out, ctx.err, ctx.programName};
  return runReleaseCommand(*cmd, effectiveNamespace(cmd->kube, config->defaultNamespace), io);
}

}  // namespace lockstep::cli
