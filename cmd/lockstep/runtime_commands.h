// `lockstep runtime …` over a kube::Client (any Transport): reads the
// RuntimeEnv and prints its revisions. Thread-safety: one command at a time.
#pragma once

#include <string>

#include "cmd/lockstep/release_commands.h"
#include "cmd/lockstep/runtime_args.h"

namespace lockstep::cli {

// The exit code of the command (verbs.h); errors go to io.err naming the RuntimeEnv.
int runRuntimeCommand(const RuntimeCommand& cmd, const std::string& ns, ReleaseIo& io);

}  // namespace lockstep::cli
