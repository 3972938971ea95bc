#include "cmd/lockstep/release_args.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <ostream>

namespace lockstep::cli {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

StatusOr<std::string> canonicalPhase(std::string_view wanted) {
  std::string known;
  for (std::string_view p : releasePhases()) {
    if (lower(p) == lower(wanted)) return std::string(p);
    known += (known.empty() ? "" : ", ") + std::string(p);
  }
  return invalidArgument("--for=phase=" + std::string(wanted) + ": unknown phase (one of " + known +
                         ")");
}

}  // namespace

const std::vector<std::string_view>& releasePhases() {
  static const std::vector<std::string_view> kPhases = {"Pending",    "Evaluating", "Testing",
                                                        "Validated",  "Canary",     "Promoted",
                                                        "RolledBack", "Superseded", "Failed"};
  return kPhases;
}

StatusOr<std::chrono::seconds> parseCliDuration(std::string_view text) {
  auto bad = [&] {
    return invalidArgument("invalid duration \"" + std::string(text) +
                           "\" (examples: 90s, 5m, 1h30m)");
  };
  if (text.empty()) return bad();
  long long total = 0, number = 0;
  bool digits = false, anyUnit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      number = number * 10 + (c - '0');
      if (number > 1000000000LL) return bad();
      digits = true;
      continue;
    }
    if (!digits) return bad();
    long long unit = c == 's' ? 1 : c == 'm' ? 60 : c == 'h' ? 3600 : 0;
    if (unit == 0) return bad();
    total += number * unit;
    number = 0;
    digits = false;
    anyUnit = true;
  }
  if (digits) {
    if (anyUnit) return bad();  // "1m30": a trailing number without a unit
    total = number;
  }
  if (total <= 0) return bad();
  return std::chrono::seconds(total);
}

std::optional<StatusOr<std::string>> takeFlagValue(const std::vector<std::string>& args, size_t& i,
                                                   std::initializer_list<std::string_view> names) {
  const std::string& a = args[i];
  for (std::string_view n : names) {
    if (a == n) {
      if (i + 1 >= args.size()) return StatusOr<std::string>(invalidArgument(a + " needs a value"));
      return StatusOr<std::string>(args[++i]);
    }
    const std::string prefix = std::string(n) + "=";
    if (a.rfind(prefix, 0) == 0) return StatusOr<std::string>(a.substr(prefix.size()));
  }
  return std::nullopt;
}

std::optional<Status> takeCommonFlag(const std::vector<std::string>& args, size_t& i,
                                     KubeFlags& kube, bool& json) {
  auto valueOr = [](const StatusOr<std::string>& v,
                    const std::function<Status(const std::string&)>& use) {
    return v.isOk() ? use(*v) : v.status();
  };
  if (auto v = takeFlagValue(args, i, {"--kubeconfig"}))
    return valueOr(*v, [&](const std::string& s) {
      kube.kubeconfig = s;
      return Status::ok();
    });
  if (auto v = takeFlagValue(args, i, {"--context"}))
    return valueOr(*v, [&](const std::string& s) {
      kube.context = s;
      return Status::ok();
    });
  if (auto v = takeFlagValue(args, i, {"-n", "--namespace"}))
    return valueOr(*v, [&](const std::string& s) {
      if (s.empty()) return invalidArgument("--namespace needs a value");
      kube.ns = s;
      return Status::ok();
    });
  if (auto v = takeFlagValue(args, i, {"-o", "--output"}))
    return valueOr(*v, [&](const std::string& s) {
      if (s != "json") return invalidArgument("-o " + s + ": only -o json is supported");
      json = true;
      return Status::ok();
    });
  return std::nullopt;
}

StatusOr<ReleaseCommand> parseReleaseArgs(const std::vector<std::string>& args) {
  ReleaseCommand cmd;
  std::vector<std::string> positional;
  bool timeoutSet = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      cmd.action = ReleaseCommand::Action::kHelp;
      return cmd;
    }
    if (auto common = takeCommonFlag(args, i, cmd.kube, cmd.json)) {
      if (!common->isOk()) return *common;
    } else if (auto forValue = takeFlagValue(args, i, {"--for"})) {
      if (!forValue->isOk()) return forValue->status();
      const std::string& value = **forValue;
      if (value.rfind("phase=", 0) != 0) {
        return invalidArgument("--for=" + value + ": expected --for=phase=PHASE");
      }
      auto phase = canonicalPhase(value.substr(6));
      if (!phase.isOk()) return phase.status();
      cmd.forPhase = *phase;
    } else if (auto timeout = takeFlagValue(args, i, {"--timeout"})) {
      if (!timeout->isOk()) return timeout->status();
      auto d = parseCliDuration(**timeout);
      if (!d.isOk()) return d.status().withContext("--timeout");
      cmd.timeout = *d;
      timeoutSet = true;
    } else if (a == "-A" || a == "--all-namespaces") {
      cmd.kube.allNamespaces = true;
    } else if (a == "--full") {
      cmd.full = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return invalidArgument("unknown flag " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.empty())
    return invalidArgument("missing subcommand (list, status, approve, abort, promote, wait)");
  const std::string sub = positional[0];
  positional.erase(positional.begin());
  auto arity = [&](size_t min, size_t max, const std::string& shape) -> Status {
    if (positional.size() < min || positional.size() > max)
      return invalidArgument("usage: release " + shape);
    return Status::ok();
  };
  using A = ReleaseCommand::Action;
  if (sub == "help") {
    cmd.action = A::kHelp;
    return cmd;
  } else if (sub == "list" || sub == "ls") {
    cmd.action = A::kList;
    LOCKSTEP_RETURN_IF_ERROR(arity(0, 0, "list [-n NAMESPACE | -A] [-o json]"));
  } else if (sub == "status") {
    cmd.action = A::kStatus;
    LOCKSTEP_RETURN_IF_ERROR(arity(1, 1, "status NAME [-o json]"));
  } else if (sub == "approve") {
    cmd.action = A::kApprove;
    LOCKSTEP_RETURN_IF_ERROR(arity(1, 2, "approve NAME [STAGE]"));
    if (positional.size() == 2) cmd.stage = positional[1];
  } else if (sub == "abort") {
    cmd.action = A::kAbort;
    LOCKSTEP_RETURN_IF_ERROR(arity(1, 1, "abort NAME"));
  } else if (sub == "promote") {
    cmd.action = A::kPromote;
    LOCKSTEP_RETURN_IF_ERROR(arity(1, 1, "promote NAME [--full]"));
  } else if (sub == "wait") {
    cmd.action = A::kWait;
    LOCKSTEP_RETURN_IF_ERROR(arity(1, 1, "wait NAME --for=phase=PHASE [--timeout=5m]"));
    if (cmd.forPhase.empty()) return invalidArgument("wait needs --for=phase=PHASE");
  } else {
    return invalidArgument("unknown subcommand \"" + sub +
                           "\" (list, status, approve, abort, promote, wait)");
  }
  if (!positional.empty()) cmd.name = positional[0];
  if (cmd.kube.allNamespaces && cmd.action != A::kList)
    return invalidArgument("-A/--all-namespaces applies to list only");
  if (cmd.json && cmd.action != A::kList && cmd.action != A::kStatus)
    return invalidArgument("-o json applies to list and status only");
  if (cmd.action != A::kWait && (!cmd.forPhase.empty() || timeoutSet))
    return invalidArgument("--for and --timeout apply to wait only");
  if (cmd.full && cmd.action != A::kPromote)
    return invalidArgument("--full applies to promote only");
  return cmd;
}

std::string kubeconfigPath(const KubeFlags& flags, const char* kubeconfigEnv, const char* home,
                           const std::function<bool(const std::string&)>& exists) {
  if (!flags.kubeconfig.empty()) return flags.kubeconfig;
  if (kubeconfigEnv != nullptr && *kubeconfigEnv != '\0') {
    std::string first(kubeconfigEnv);
    if (auto colon = first.find(':'); colon != std::string::npos) first.resize(colon);
    if (!first.empty()) return first;
  }
  if (home != nullptr && *home != '\0') {
    std::string path = std::string(home) + "/.kube/config";
    if (exists(path)) return path;
  }
  return "";
}

std::string effectiveNamespace(const KubeFlags& flags, const std::string& contextNamespace) {
  if (!flags.ns.empty()) return flags.ns;
  return contextNamespace.empty() ? "default" : contextNamespace;
}

void releaseUsage(std::ostream& os, const std::string& program) {
  os << "usage: " << program << " release SUBCOMMAND [flags]\n"
     << "\n"
        "  list                          releases of the namespace (-A: all namespaces)\n"
        "  status NAME                   stages, metrics, evidence and conditions (-o json:\n"
        "                                the status as JSON)\n"
        "  approve NAME [STAGE]          approve STAGE, by default the stage waiting for\n"
        "                                approval (RBAC verb approve on modelreleases)\n"
        "  abort NAME                    stop the release: its running gate Job is deleted and\n"
        "                                the release ends Failed; a canary is rolled back\n"
        "                                (RBAC verb abort)\n"
        "  promote NAME [--full]         end the pause of the canary's current step; --full\n"
        "                                skips every remaining step (RBAC verb promote)\n"
        "  wait NAME --for=phase=PHASE   wait until the release reaches PHASE (fails at once\n"
        "       [--timeout=5m]           when it ends in another terminal phase)\n"
        "\n"
        "flags (as kubectl):\n"
        "  --kubeconfig FILE   default $KUBECONFIG (first file), then ~/.kube/config, then\n"
        "                      the in-cluster service account\n"
        "  --context NAME      kubeconfig context (default: current-context)\n"
        "  -n, --namespace NS  default: the context's namespace, else \"default\"\n"
        "  -A, --all-namespaces  (list)\n"
        "  -o json             (list, status)\n";
}

}  // namespace lockstep::cli
