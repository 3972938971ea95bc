// `uninstall-cleanup`: what the chart's post-delete hook runs after `helm uninstall`
// (templates/uninstall-cleanup.yaml, as `lockstep-operator uninstall-cleanup`; also
// `lockstep uninstall-cleanup` by hand after `helm uninstall --no-hooks`):
//   1. wait, bounded, until no pod of the operator is left (a terminating
//      operator could add a finalizer back);
//   2. remove Lockstep's own finalizers (lockstep.dev/runtimeenv-in-use,
//      lockstep.dev/release-cleanup) from every RuntimeEnv, ModelRelease and
//      Model, keeping every other finalizer: a JSON merge patch of
//      metadata.finalizers guarded by the object's resourceVersion, re-read
//      and retried on Conflict.
// Idempotent: a second run finds nothing to free. docs/install.md "Uninstalling".
// Thread-safety: pure functions and values; the run uses its ReleaseIo alone.
#pragma once

#include <chrono>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cmd/lockstep/release_args.h"
#include "cmd/lockstep/release_commands.h"
#include "common/status.h"

namespace lockstep::cli {

struct UninstallCleanupCommand {
  bool help = false;
  std::string operatorNamespace;          // --operator-namespace (required)
  std::string operatorSelector;           // --operator-selector: label selector of its pods
  std::vector<std::string> namespaces;    // --namespaces a,b; empty = every namespace
  std::chrono::seconds waitTimeout{120};  // --wait-timeout: for the operator's pods to go
  KubeFlags kube;                         // --kubeconfig, --context
};

// Parses the arguments after `uninstall-cleanup`. Errors (kInvalidArgument) name the
// offending argument; `-h`/`--help`/`help` yields help.
StatusOr<UninstallCleanupCommand> parseUninstallCleanupArgs(const std::vector<std::string>& args);
void uninstallCleanupUsage(std::ostream& os, const std::string& program);

// The finalizers Lockstep's operator adds (and alone removes).
bool isLockstepFinalizer(std::string_view finalizer);

// The finalizers `object` keeps once Lockstep's are gone, in their order;
// nullopt when it carries none of Lockstep's (nothing to do).
std::optional<std::vector<std::string>> finalizersKept(const nlohmann::json& object);

// The merge patch that sets metadata.finalizers to `kept`, guarded by the
// object's metadata.resourceVersion (the API server answers Conflict if the
// object changed since it was read, so a finalizer added meanwhile is never dropped).
nlohmann::json finalizersPatch(const nlohmann::json& object, const std::vector<std::string>& kept);

// "ns/name" of each pod in `pods` (a list's items) that may still run, with
// " (terminating)" when it is being deleted. Succeeded and Failed pods run nothing.
std::vector<std::string> podsStillThere(const std::vector<nlohmann::json>& pods);

// Runs the command over io.client; prints each object freed ("freed KIND ns/name: FINALIZERS")
// and a summary on io.out, errors on io.err naming the object and the API error.
// kExitOk when nothing of Lockstep's is left, else kExitFailure.
int runUninstallCleanup(const UninstallCleanupCommand& cmd, ReleaseIo& io);

// Parse, connect (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config) and run:
// the whole verb, for the `lockstep` CLI and `lockstep-operator uninstall-cleanup`.
int uninstallCleanupMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                         const std::string& program);

}  // namespace lockstep::cli
