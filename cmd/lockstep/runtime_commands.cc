#include "cmd/lockstep/runtime_commands.h"

#include "api/v1alpha1/resources.h"
#include "cmd/lockstep/runtime_view.h"
#include "cmd/lockstep/verbs.h"

namespace lockstep::cli {

int runRuntimeCommand(const RuntimeCommand& cmd, const std::string& ns, ReleaseIo& io) {
  if (cmd.action == RuntimeCommand::Action::kHelp) {
    runtimeUsage(io.out, io.program);
    return kExitOk;
  }
  auto rte = io.client.get(api::v1alpha1::kRuntimeEnvs, ns, cmd.name);
  if (!rte.isOk()) {
    std::string why = rte.status().code() == Code::kNotFound
                          ? "no RuntimeEnv \"" + cmd.name + "\" in namespace \"" + ns + "\""
                          : rte.status().message();
    io.err << io.program << ": runtime history: " << why << "\n";
    return kExitFailure;
  }
  if (cmd.json) {
    nlohmann::json doc = {
        {"runtimeEnv", cmd.name},
        {"namespace", ns},
        {"currentRevision", rte->value("/status/currentRevision"_json_pointer, 0)},
        {"revisions", rte->value("/status/revisions"_json_pointer, nlohmann::json::array())}};
    io.out << doc.dump(2) << "\n";
  } else {
    io.out << renderRuntimeHistory(*rte, io.clock.wallNow());
  }
  return kExitOk;
}

}  // namespace lockstep::cli
