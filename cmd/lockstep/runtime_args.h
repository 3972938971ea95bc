// Command line of `lockstep runtime …` (and `kubectl lockstep runtime …`):
//   history NAME [-o json]
//   advisories NAME [-o json]
//   drift [-A] [-o json]      (also `lockstep drift`)
// with kubectl's connection flags (--kubeconfig, --context, -n/--namespace).
// Pure: parsing only. Thread-safety: pure functions and values.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cmd/lockstep/release_args.h"
#include "common/status.h"

namespace lockstep::cli {

struct RuntimeCommand {
  enum class Action { kHelp, kHistory, kAdvisories, kDrift };
  Action action = Action::kHelp;
  std::string name;   // the RuntimeEnv
  bool json = false;  // -o json
  KubeFlags kube;
};

// Parses the arguments after `runtime`. Errors (kInvalidArgument) name the
// offending argument; `-h`/`--help`/`help` yields Action::kHelp.
StatusOr<RuntimeCommand> parseRuntimeArgs(const std::vector<std::string>& args);

void runtimeUsage(std::ostream& os, const std::string& program);

}  // namespace lockstep::cli
