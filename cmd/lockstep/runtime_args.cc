#include "cmd/lockstep/runtime_args.h"

#include <ostream>

namespace lockstep::cli {

StatusOr<RuntimeCommand> parseRuntimeArgs(const std::vector<std::string>& args) {
  RuntimeCommand cmd;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      cmd.action = RuntimeCommand::Action::kHelp;
      return cmd;
    }
    if (auto common = takeCommonFlag(args, i, cmd.kube, cmd.json)) {
      if (!common->isOk()) return *common;
    } else if (a == "-A" || a == "--all-namespaces") {
      cmd.kube.allNamespaces = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return invalidArgument("unknown flag " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty()) return invalidArgument("missing subcommand (history, advisories, drift)");
  const std::string& sub = positional[0];
  if (sub == "help") return cmd;
  if (sub == "drift") {
    if (positional.size() > 1) return invalidArgument("unexpected argument " + positional[1]);
    cmd.action = RuntimeCommand::Action::kDrift;
    return cmd;
  }
  if (sub != "history" && sub != "advisories")
    return invalidArgument("unknown subcommand \"" + sub + "\" (history, advisories, drift)");
  cmd.action =
      sub == "history" ? RuntimeCommand::Action::kHistory : RuntimeCommand::Action::kAdvisories;
  if (positional.size() < 2) return invalidArgument(sub + " needs a RuntimeEnv name");
  if (positional.size() > 2) return invalidArgument("unexpected argument " + positional[2]);
  cmd.name = positional[1];
  if (cmd.kube.allNamespaces) return invalidArgument(sub + " reads one RuntimeEnv: use -n NS");
  return cmd;
}

void runtimeUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program << " runtime SUBCOMMAND [NAME] [flags]\n"
     << "\n"
        "  history NAME                  the revisions of RuntimeEnv NAME (image by digest,\n"
        "                                closure hash), the current one, and the releases\n"
        "                                pinning each (-o json: status.revisions as JSON)\n"
        "  advisories NAME               the OSV advisories the operator matched against the\n"
        "                                closure of RuntimeEnv NAME's current and pinned\n"
        "                                revisions (-o json: status.advisories); exit 1 when\n"
        "                                any, or when a match is not known\n"
        "  drift                         the running pods of the namespace (-A: of every\n"
        "                                namespace) that run what their RuntimeEnv does not\n"
        "                                record, as the operator's drift scan reports them\n"
        "                                (-o json: the PolicyReports); exit 1 when any does\n"
        "\n"
        "flags (as kubectl): --kubeconfig FILE, --context NAME, -n/--namespace NS,\n"
        "  -A/--all-namespaces (drift)\n";
}

}  // namespace lockstep::cli
