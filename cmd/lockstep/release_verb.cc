// `lockstep release …`, `lockstep model …` and `lockstep runtime …`: connect like kubectl and run
// the command (release_commands.h, model_commands.h). The only file of the CLI that opens a
// connection.
#include <sys/stat.h>

#include <cstdlib>
#include <iostream>

#include "cmd/lockstep/model_args.h"
#include "cmd/lockstep/model_commands.h"
#include "cmd/lockstep/release_args.h"
#include "cmd/lockstep/release_commands.h"
#include "cmd/lockstep/runtime_args.h"
#include "cmd/lockstep/runtime_commands.h"
#include "cmd/lockstep/verbs.h"
#include "operator/kube/connect.h"

namespace lockstep::cli {

namespace {

// Connects as kubectl would with `flags` and runs `body` with the client and
// the effective namespace. Connection failures are reported here.
template <typename Body>
int withClient(const VerbContext& ctx, const KubeFlags& flags, Body body) {
  std::string path = kubeconfigPath(flags, std::getenv("KUBECONFIG"), std::getenv("HOME"),
                                    [](const std::string& p) {
                                      struct stat st {};
                                      return ::stat(p.c_str(), &st) == 0;
                                    });
  StatusOr<kube::KubeConfig> config =
      path.empty() ? kube::loadInClusterConfig() : kube::loadKubeConfig(path, flags.context);
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
  return body(io, effectiveNamespace(flags, config->defaultNamespace));
}

}  // namespace

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
  return withClient(ctx, cmd->kube, [&](ReleaseIo& io, const std::string& ns) {
    return runReleaseCommand(*cmd, ns, io);
  });
}

int runModel(const VerbContext& ctx) {
  auto cmd = parseModelArgs(ctx.args);
  if (!cmd.isOk()) {
    ctx.err << ctx.programName << " model: " << cmd.status().message() << "\n";
    modelUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (cmd->action == ModelCommand::Action::kHelp) {
    modelUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  return withClient(ctx, cmd->kube, [&](ReleaseIo& io, const std::string& ns) {
    return runModelCommand(*cmd, ns, io);
  });
}

int runRuntime(const VerbContext& ctx) {
  auto cmd = parseRuntimeArgs(ctx.args);
  if (!cmd.isOk()) {
    ctx.err << ctx.programName << " runtime: " << cmd.status().message() << "\n";
    runtimeUsage(ctx.err, ctx.programName);
    return kExitUsage;
  }
  if (cmd->action == RuntimeCommand::Action::kHelp) {
    runtimeUsage(ctx.out, ctx.programName);
    return kExitOk;
  }
  return withClient(ctx, cmd->kube, [&](ReleaseIo& io, const std::string& ns) {
    return runRuntimeCommand(*cmd, ns, io);
  });
}

// `lockstep drift …` is `lockstep runtime drift …`.
int runDrift(const VerbContext& ctx) {
  std::vector<std::string> args = {"drift"};
  args.insert(args.end(), ctx.args.begin(), ctx.args.end());
  return runRuntime(VerbContext{std::move(args), ctx.out, ctx.err, ctx.programName});
}

}  // namespace lockstep::cli
