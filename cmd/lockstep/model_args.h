// Command line of `lockstep model …` (and `kubectl lockstep model …`):
//   history MODEL [-o json] | rollback MODEL [--to RELEASE] [--wait [--timeout=5m]] |
//   delete MODEL --yes
// with kubectl's connection flags (--kubeconfig, --context, -n/--namespace).
// Pure: parsing only. Thread-safety: pure functions and values.
#pragma once

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "cmd/lockstep/release_args.h"
#include "common/status.h"

namespace lockstep::cli {

struct ModelCommand {
  enum class Action { kHelp, kHistory, kRollback, kDelete };
  Action action = Action::kHelp;
  std::string model;
  std::string to;     // rollback --to RELEASE ("" = the release prod ran before)
  bool json = false;  // history -o json
  bool wait = false;  // rollback --wait: until prod runs the target
  bool yes = false;   // delete --yes
  std::chrono::seconds timeout{std::chrono::minutes(5)};
  KubeFlags kube;
};

// Parses the arguments after `model`. Errors (kInvalidArgument) name the
// offending argument; `-h`/`--help`/`help` yields Action::kHelp.
StatusOr<ModelCommand> parseModelArgs(const std::vector<std::string>& args);

void modelUsage(std::ostream& os, const std::string& program);

}  // namespace lockstep::cli
