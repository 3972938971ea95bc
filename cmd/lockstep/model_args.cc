#include "cmd/lockstep/model_args.h"

#include <ostream>

namespace lockstep::cli {

StatusOr<ModelCommand> parseModelArgs(const std::vector<std::string>& args) {
  ModelCommand cmd;
  std::vector<std::string> positional;
  bool timeoutSet = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      cmd.action = ModelCommand::Action::kHelp;
      return cmd;
    }
    if (auto common = takeCommonFlag(args, i, cmd.kube, cmd.json)) {
      if (!common->isOk()) return *common;
    } else if (auto to = takeFlagValue(args, i, {"--to"})) {
      if (!to->isOk()) return to->status();
      if (to->value().empty()) return invalidArgument("--to needs a release name");
      cmd.to = **to;
    } else if (auto timeout = takeFlagValue(args, i, {"--timeout"})) {
      if (!timeout->isOk()) return timeout->status();
      auto d = parseCliDuration(**timeout);
      if (!d.isOk()) return d.status().withContext("--timeout");
      cmd.timeout = *d;
      timeoutSet = true;
    } else if (a == "--wait") {
      cmd.wait = true;
    } else if (a == "--yes" || a == "-y") {
      cmd.yes = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return invalidArgument("unknown flag " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) return invalidArgument("missing subcommand (history, rollback, delete)");
  const std::string sub = positional[0];
  using A = ModelCommand::Action;
  if (sub == "help") return cmd;
  if (sub == "history") {
    cmd.action = A::kHistory;
  } else if (sub == "rollback") {
    cmd.action = A::kRollback;
  } else if (sub == "delete") {
    cmd.action = A::kDelete;
  } else {
    return invalidArgument("unknown subcommand \"" + sub + "\" (history, rollback, delete)");
  }
  if (positional.size() != 2)
    return invalidArgument("usage: model " + sub + " MODEL (got " +
                           std::to_string(positional.size() - 1) + " arguments)");
  cmd.model = positional[1];
  if (cmd.json && cmd.action != A::kHistory) return invalidArgument("-o json applies to history");
  if (!cmd.to.empty() && cmd.action != A::kRollback)
    return invalidArgument("--to applies to rollback only");
  if ((cmd.wait || timeoutSet) && cmd.action != A::kRollback)
    return invalidArgument("--wait and --timeout apply to rollback only");
  if (timeoutSet && !cmd.wait) return invalidArgument("--timeout needs --wait");
  if (cmd.yes && cmd.action != A::kDelete) return invalidArgument("--yes applies to delete only");
  if (cmd.action == A::kDelete && !cmd.yes)
    return invalidArgument(
        "delete takes the model's Service and Deployments out of prod; confirm with --yes");
  return cmd;
}

void modelUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program << " model SUBCOMMAND MODEL [flags]\n"
     << "\n"
        "  history MODEL                 the release prod runs, then every promotion and\n"
        "                                rollback with time, package and closure hash\n"
        "                                (-o json: the record as JSON)\n"
        "  rollback MODEL [--to RELEASE] re-point prod's stable track to RELEASE (default: the\n"
        "       [--wait [--timeout=5m]]  release prod ran before) without running any gate;\n"
        "                                refused when its runtime no longer resolves to the\n"
        "                                closure hash it was validated on, or while a canary\n"
        "                                runs (RBAC verb rollback on the Model)\n"
        "  delete MODEL --yes            take the model out of prod: deletes its Model\n"
        "                                (models.lockstep.dev), and garbage collection\n"
        "                                removes its Service and Deployments\n"
        "\n"
        "flags (as kubectl): --kubeconfig FILE, --context NAME, -n/--namespace NS\n";
}

}  // namespace lockstep::cli
