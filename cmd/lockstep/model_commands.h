// Runs a parsed `lockstep model …` command against the API server through a
// kube::Client (any Transport: the real one from the CLI's main, a scripted one
// in tests). Reads the model's Model and releases, decides with model_view.h,
// then writes at most one merge patch (rollback: the request annotations on the
// Model, guarded by the resourceVersion read) or one delete.
// Thread-safety: one command at a time per ReleaseIo.
#pragma once

#include <string>

#include "cmd/lockstep/model_args.h"
#include "cmd/lockstep/release_commands.h"

namespace lockstep::cli {

// Exit code: 0 done, 1 failed (message on err), 2 usage.
int runModelCommand(const ModelCommand& command, const std::string& ns, ReleaseIo& io);

}  // namespace lockstep::cli
