// Runs a parsed `lockstep release …` command against the API server through a
// kube::Client (any Transport: the real one from the CLI's main, a scripted one
// in tests). Reads, decides with the pure functions of release_view.h, then
// writes at most one merge patch, guarded by the resourceVersion it decided on
// (a conflict re-reads and decides again).
// Thread-safety: one command at a time per ReleaseIo.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "cmd/lockstep/release_args.h"
#include "operator/kube/client.h"
#include "operator/kube/clock.h"

namespace lockstep::cli {

struct ReleaseIo {
  kube::Client& client;
  kube::Clock& clock;
  std::ostream& out;
  std::ostream& err;
  std::string program = "lockstep";
  std::chrono::milliseconds pollInterval{1000};  // wait: how often the release is read
};

// Exit code: 0 done, 1 failed (message on err), 2 usage.
int runReleaseCommand(const ReleaseCommand& command, const std::string& ns, ReleaseIo& io);

// The user name the API server authenticates this client as (a SelfSubjectReview,
// authentication.k8s.io/v1).
StatusOr<std::string> whoAmI(kube::Client& client);

}  // namespace lockstep::cli
