#include "cmd/lockstep/release_commands.h"

#include <mutex>

#include "api/v1alpha1/resources.h"
#include "cmd/lockstep/release_view.h"
#include "cmd/lockstep/verbs.h"
#include "webhooks/admission/release_actions.h"

namespace lockstep::cli {
namespace {

using api::v1alpha1::kModelReleases;
using nlohmann::json;

const kube::Resource kSelfSubjectReviews{"authentication.k8s.io", "v1", "selfsubjectreviews",
                                         "SelfSubjectReview", false};
constexpr int kConflictAttempts = 3;

std::string quoteReleaseCommands(const std::string& s) { return "\"" + s + "\""; }

// A failed read or write as one line: what was attempted, and the server's words.
int report(ReleaseIo& io, const std::string& what, const Status& s) {
  io.err << io.program << ": " << what << ": " << s.message();
  if (s.code() == Code::kForbidden && s.message().find("admission webhook") == std::string::npos) {
    // RBAC refused the request itself (not the webhook).
    io.err << "\n(the ClusterRole " << webhooks::kApproverClusterRole
           << " grants get, list, watch, patch, approve, abort, promote and rollback on "
              "modelreleases)";
  }
  io.err << "\n";
  return kExitFailure;
}

StatusOr<json> getRelease(ReleaseIo& io, const std::string& ns, const std::string& name) {
  auto r = io.client.get(kModelReleases, ns, name);
  if (!r.isOk() && r.status().code() == Code::kNotFound) {
    return Status(Code::kNotFound,
                  "release " + quoteReleaseCommands(ns + "/" + name) + " not found");
  }
  return r;
}

int list(const ReleaseCommand& cmd, const std::string& ns, ReleaseIo& io) {
  auto l = io.client.list(kModelReleases, cmd.kube.allNamespaces ? "" : ns);
  if (!l.isOk()) return report(io, "listing ModelReleases", l.status());
  json doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", l->items}};
  if (cmd.json) {
    io.out << doc.dump(2) << "\n";
  } else {
    io.out << renderReleaseList(doc, cmd.kube.allNamespaces, io.clock.wallNow());
  }
  return kExitOk;
}

int status(const ReleaseCommand& cmd, const std::string& ns, ReleaseIo& io) {
  auto r = getRelease(io, ns, cmd.name);
  if (!r.isOk()) return report(io, "status", r.status());
  if (cmd.json) {
    io.out << r->value("status", json::object()).dump(2) << "\n";
  } else {
    io.out << renderReleaseStatus(*r);
  }
  return kExitOk;
}

// approve / abort: read, plan, patch the annotation with the resourceVersion read.
int act(const ReleaseCommand& cmd, const std::string& ns, ReleaseIo& io) {
  const bool approve = cmd.action == ReleaseCommand::Action::kApprove;
  const bool promote = cmd.action == ReleaseCommand::Action::kPromote;
  const std::string verb = approve ? "approve" : promote ? "promote" : "abort";
  auto user = whoAmI(io.client);
  if (!user.isOk()) return report(io, "finding your user name", user.status());
  for (int attempt = 1;; ++attempt) {
    auto release = getRelease(io, ns, cmd.name);
    if (!release.isOk()) return report(io, verb, release.status());
    auto plan = approve   ? planApproval(*release, cmd.stage, *user)
                : promote ? planPromote(*release, cmd.full, *user)
                          : planAbort(*release);
    if (!plan.isOk()) return report(io, "cannot " + verb, plan.status());
    const std::string id = quoteReleaseCommands(releaseId(*release));
    if (!plan->alreadyBy.empty()) {
      if (promote) {
        io.out << "release " << id << " was already promoted (" << plan->annotation << ") by "
               << plan->alreadyBy << "\n";
      } else if (approve) {
        io.out << "stage " << quoteReleaseCommands(plan->stage) << " of release " << id
               << " is already approved by " << plan->alreadyBy << "\n";
      } else {
        io.out << "abort of release " << id << " was already requested by " << plan->alreadyBy
               << "\n";
      }
      return kExitOk;
    }
    json patch = {{"metadata",
                   {{"resourceVersion", kube::resourceVersion(*release)},
                    {"annotations", {{plan->annotation, *user}}}}}};
    auto written = io.client.mergePatch(kModelReleases, ns, cmd.name, patch);
    if (!written.isOk() && written.status().code() == Code::kConflict &&
        attempt < kConflictAttempts) {
      continue;  // the release moved on between read and write: decide again
    }
    if (!written.isOk()) {
      std::string what =
          approve   ? "approving stage " + quoteReleaseCommands(plan->stage) + " of release " + id
          : promote ? "promoting release " + id
                    : "aborting release " + id;
      return report(io, what, written.status());
    }
    if (promote) {
      io.out << "release " << id << ": "
             << (cmd.full ? std::string("every remaining canary step skipped")
                          : "canary step " + plan->stage + " promoted")
             << " by " << *user << "\n";
    } else if (approve) {
      io.out << "stage " << quoteReleaseCommands(plan->stage) << " of release " << id
             << " approved by " << *user << "\n";
    } else {
      io.out << "release " << id << ": abort requested by " << *user
             << " (the controller stops the running gate Job; the release ends Failed)\n";
    }
    return kExitOk;
  }
}

int wait(const ReleaseCommand& cmd, const std::string& ns, ReleaseIo& io) {
  const auto deadline = io.clock.now() + cmd.timeout;
  std::mutex mu;
  std::condition_variable cv;  // never notified: waitUntil just sleeps on the clock
  json last;
  while (true) {
    auto release = getRelease(io, ns, cmd.name);
    if (!release.isOk()) return report(io, "wait", release.status());
    last = *release;
    switch (waitState(last, cmd.forPhase)) {
      case WaitState::kReached:
        io.out << "release " << quoteReleaseCommands(releaseId(last)) << " reached phase "
               << cmd.forPhase << "\n";
        return kExitOk;
      case WaitState::kEndedElsewhere:
        io.err << io.program << ": release " << quoteReleaseCommands(releaseId(last))
               << " ended in " << releaseSummary(last) << "; it will never reach " << cmd.forPhase
               << "\n";
        return kExitFailure;
      case WaitState::kWaiting:
        break;
    }
    if (io.clock.now() >= deadline) {
      io.err << io.program << ": timed out after " << cmd.timeout.count()
             << "s waiting for release " << quoteReleaseCommands(releaseId(last))
             << " to reach phase " << cmd.forPhase << " (now " << releaseSummary(last) << ")\n";
      return kExitFailure;
    }
    std::unique_lock<std::mutex> lock(mu);
    io.clock.waitUntil(lock, cv, std::min(deadline, io.clock.now() + io.pollInterval));
  }
}

}  // namespace

StatusOr<std::string> whoAmI(kube::Client& client) {
  json review = {{"apiVersion", kSelfSubjectReviews.apiVersion()},
                 {"kind", kSelfSubjectReviews.kind}};
  auto r = client.create(kSelfSubjectReviews, review);
  if (!r.isOk()) {
    if (r.status().code() == Code::kNotFound) {
      return Status(Code::kNotFound,
                    "the API server does not serve selfsubjectreviews.authentication.k8s.io/v1 "
                    "(Kubernetes 1.28 or later is needed)");
    }
    return r.status();
  }
  const json* name = nullptr;
  if (auto s = r->find("status"); s != r->end() && s->is_object()) {
    if (auto u = s->find("userInfo"); u != s->end() && u->is_object()) {
      if (auto n = u->find("username"); n != u->end() && n->is_string()) name = &*n;
    }
  }
  if (name == nullptr || name->get<std::string>().empty()) {
    return Status(Code::kInternal,
                  "the SelfSubjectReview answered without status.userInfo.username");
  }
  return name->get<std::string>();
}

int runReleaseCommand(const ReleaseCommand& cmd, const std::string& ns, ReleaseIo& io) {
  using A = ReleaseCommand::Action;
  switch (cmd.action) {
    case A::kList:
      return list(cmd, ns, io);
    case A::kStatus:
      return status(cmd, ns, io);
    case A::kApprove:
    case A::kAbort:
    case A::kPromote:
      return act(cmd, ns, io);
    case A::kWait:
      return wait(cmd, ns, io);
    case A::kHelp:
      releaseUsage(io.out, io.program);
      return kExitOk;
  }
  return kExitUsage;
}

}  // namespace lockstep::cli
