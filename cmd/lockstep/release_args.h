// Command line of `lockstep release …` (and `kubectl lockstep release …`):
//   list | status NAME | approve NAME [STAGE] | abort NAME | promote NAME [--full] |
//   wait NAME --for=phase=PHASE [--timeout=5m]
// with kubectl's connection flags (--kubeconfig, --context, -n/--namespace,
// -A/--all-namespaces for list) and -o json. Pure: parsing only.
// Thread-safety: pure functions and values.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace lockstep::cli {

struct KubeFlags {
  std::string kubeconfig;  // --kubeconfig
  std::string context;     // --context
  std::string ns;          // -n/--namespace; "" = the context's namespace, else "default"
  bool allNamespaces = false;
};

struct ReleaseCommand {
  enum class Action { kHelp, kList, kStatus, kApprove, kAbort, kPromote, kWait };
  Action action = Action::kHelp;
  std::string name;      // the release (all but list)
  std::string stage;     // approve: "" = the stage waiting for approval
  bool json = false;     // -o json (list, status)
  bool full = false;     // promote --full: skip the remaining canary steps
  std::string forPhase;  // wait: canonical phase name
  std::chrono::seconds timeout{std::chrono::minutes(5)};  // wait
  KubeFlags kube;
};

// Every ModelRelease phase (docs/modelrelease.md), in lifecycle order.
const std::vector<std::string_view>& releasePhases();

// The value of a valued flag at args[i], "--name value" or "--name=value" for
// any of `names`, moving i past it. nullopt when args[i] is none of `names`;
// an error naming the flag when it ends the line without a value.
std::optional<StatusOr<std::string>> takeFlagValue(const std::vector<std::string>& args, size_t& i,
                                                   std::initializer_list<std::string_view> names);

// The flags `release` and `model` share with kubectl: --kubeconfig, --context,
// -n/--namespace into `kube`, -o/--output json into `json`. nullopt when
// args[i] is none of them.
std::optional<Status> takeCommonFlag(const std::vector<std::string>& args, size_t& i,
                                     KubeFlags& kube, bool& json);

// Parses the arguments after `release`. Errors (kInvalidArgument) name the
// offending argument; `-h`/`--help`/`help` anywhere yields Action::kHelp.
StatusOr<ReleaseCommand> parseReleaseArgs(const std::vector<std::string>& args);

// "90s", "5m", "1h30m", "300" (seconds). Errors on anything else or <= 0.
StatusOr<std::chrono::seconds> parseCliDuration(std::string_view text);

// The kubeconfig file to read, as kubectl picks it: --kubeconfig, else the
// first file of $KUBECONFIG (others are not merged), else ~/.kube/config when
// `exists` says so; "" means the in-cluster service account.
std::string kubeconfigPath(const KubeFlags& flags, const char* kubeconfigEnv, const char* home,
                           const std::function<bool(const std::string&)>& exists);

// -n, else the context's namespace (KubeConfig::defaultNamespace), else "default".
std::string effectiveNamespace(const KubeFlags& flags, const std::string& contextNamespace);

void releaseUsage(std::ostream& os, const std::string& program);

}  // namespace lockstep::cli
