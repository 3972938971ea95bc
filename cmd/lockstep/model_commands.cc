#include "cmd/lockstep/model_commands.h"

#include <condition_variable>
#include <map>
#include <mutex>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/resources.h"
#include "cmd/lockstep/model_view.h"
#include "cmd/lockstep/verbs.h"
#include "operator/kube/resource.h"

namespace lockstep::cli {
namespace {

using api::v1alpha1::kModelReleases;
using api::v1alpha1::kRuntimeEnvs;
using nlohmann::json;

std::string quoteModelCommands(const std::string& s) { return "\"" + s + "\""; }

int reportModelCommands(ReleaseIo& io, const std::string& what, const Status& s) {
  io.err << io.program << ": " << what << ": " << s.message() << "\n";
  return kExitFailure;
}

StatusOr<json> getModel(ReleaseIo& io, const std::string& ns, const std::string& model) {
  auto a = io.client.get(api::v1alpha1::kModels, ns, model);
  if (!a.isOk() && a.status().code() == Code::kNotFound)
    return Status(Code::kNotFound,
                  "model " + quoteModelCommands(model) + " has never reached prod in namespace " +
                      quoteModelCommands(ns) + " (no Model " + quoteModelCommands(model) + ")");
  return a;
}

int history(const ModelCommand& cmd, const std::string& ns, ReleaseIo& io) {
  auto model = getModel(io, ns, cmd.model);
  if (!model.isOk()) return reportModelCommands(io, "history", model.status());
  auto h = modelHistory(*model);
  if (!h.isOk()) return reportModelCommands(io, "history", h.status());
  if (cmd.json) {
    json doc = {{"model", cmd.model},
                {"promoted", api::v1alpha1::decodeModel(*model).promoted()},
                {"canary", api::v1alpha1::decodeModel(*model).canaryHolder()},
                {"prod", api::v1alpha1::decode::object(
                             api::v1alpha1::decode::object(*model, "status"), "prod")},
                {"history", *h}};
    io.out << doc.dump(2) << "\n";
  } else {
    io.out << renderModelHistory(*model, *h, io.clock.wallNow());
  }
  return kExitOk;
}

int rollback(const ModelCommand& cmd, const std::string& ns, ReleaseIo& io) {
  auto user = whoAmI(io.client);
  if (!user.isOk()) return reportModelCommands(io, "finding your user name", user.status());
  constexpr int kConflictAttempts = 3;
  ModelRollbackPlan plan;
  for (int attempt = 1;; ++attempt) {
    auto model = getModel(io, ns, cmd.model);
    if (!model.isOk()) return reportModelCommands(io, "rollback", model.status());
    auto listed = io.client.list(kModelReleases, ns);
    if (!listed.isOk()) return reportModelCommands(io, "listing ModelReleases", listed.status());
    std::map<std::string, json> releases;
    for (const json& r : listed->items) {
      const api::v1alpha1::ModelRelease view = api::v1alpha1::decodeModelRelease(r);
      if (view.spec.model == cmd.model) releases[view.meta.name] = r;
    }
    std::map<std::string, json> envs;
    for (const auto& [name, r] : releases) {
      std::string env = api::v1alpha1::decodeModelRelease(r).spec.runtimeEnvName;
      if (env.empty() || envs.count(env)) continue;
      auto e = io.client.get(kRuntimeEnvs, ns, env);
      if (e.isOk()) {
        envs[env] = *e;
      } else if (e.status().code() != Code::kNotFound) {
        return reportModelCommands(io, "reading RuntimeEnv " + quoteModelCommands(env), e.status());
      }
    }
    auto planned = planModelRollback(*model, releases, envs, cmd.to, *user);
    if (!planned.isOk())
      return reportModelCommands(io, "cannot roll back model " + quoteModelCommands(cmd.model),
                                 planned.status());
    plan = *planned;
    if (!plan.runtimeMovedOn.empty())
      io.err << io.program << ": warning: " << plan.runtimeMovedOn << "\n";
    if (!plan.alreadyBy.empty()) {
      io.out << "rollback of model " << quoteModelCommands(cmd.model) << " to release "
             << quoteModelCommands(plan.target) << " was already requested by " << plan.alreadyBy
             << "\n";
      break;
    }
    // On the Model, guarded by its resourceVersion: the request is for prod as
    // read here (the chart's model-rollback policy checks the revision, the
    // user's name and verb rollback on the Model).
    json patch = {
        {"metadata",
         {{"resourceVersion", kube::resourceVersion(*model)},
          {"annotations", {{plan.annotation, *user}, {plan.targetAnnotation, plan.target}}}}}};
    auto written = io.client.mergePatch(api::v1alpha1::kModels, ns, cmd.model, patch);
    if (!written.isOk() && written.status().code() == Code::kConflict &&
        attempt < kConflictAttempts)
      continue;
    if (!written.isOk())
      return reportModelCommands(
          io, "requesting the rollback on Model " + quoteModelCommands(ns + "/" + cmd.model),
          written.status());
    io.out << "model " << quoteModelCommands(cmd.model) << ": rollback from "
           << quoteModelCommands(plan.from) << " to " << quoteModelCommands(plan.target)
           << " requested by " << *user << " (prod revision " << plan.revision
           << "); no gate runs again\n";
    break;
  }
  if (!cmd.wait) return kExitOk;

  const auto deadline = io.clock.now() + cmd.timeout;
  std::mutex mu;
  std::condition_variable cv;  // never notified: waitUntil sleeps on the clock
  while (true) {
    auto model = getModel(io, ns, cmd.model);
    if (!model.isOk()) return reportModelCommands(io, "wait", model.status());
    const bool recorded = api::v1alpha1::decodeModel(*model).promoted() == plan.target;
    auto target = io.client.get(kModelReleases, ns, plan.target);
    // Deleted while the request waited: nothing will act on it (the Model
    // controller says so in a RollbackRefused Event on the Model).
    if (!target.isOk() && target.status().code() == Code::kNotFound && !recorded) {
      io.err << io.program << ": release " << quoteModelCommands(plan.target)
             << " was deleted before prod went back to it; the rollback will not run\n";
      return kExitFailure;
    }
    if (target.isOk()) {
      const auto release = api::v1alpha1::decodeModelRelease(*target);
      const json& rb = release.status.rollback;
      const std::string refused = api::v1alpha1::decode::string(rb, "refused");
      if (!refused.empty() && api::v1alpha1::decode::string(rb, "revision") == plan.revision) {
        io.err << io.program << ": the controller refused the rollback: " << refused << "\n";
        return kExitFailure;
      }
      // Done once prod serves it: the Model records it and its Ready says N
      // stable pods are Ready on its pair; failed past the Model's deadline.
      const json* ready = nullptr;
      if (release.status.conditions.is_array()) {
        for (const json& c : release.status.conditions)
          if (api::v1alpha1::decode::string(c, "type") == "Ready") ready = &c;
      }
      const std::string reason = ready ? api::v1alpha1::decode::string(*ready, "reason") : "";
      const std::string message = ready ? api::v1alpha1::decode::string(*ready, "message") : "";
      if (recorded && ready && api::v1alpha1::decode::string(*ready, "status") == "True") {
        io.out << "model " << quoteModelCommands(cmd.model) << ": prod runs release "
               << quoteModelCommands(plan.target) << " (" << message << ")\n";
        return kExitOk;
      }
      if (recorded && reason == api::v1alpha1::kReasonRollbackDeadlineExceeded) {
        io.err << io.program << ": the rollback failed: " << message << "\n";
        return kExitFailure;
      }
    }
    if (io.clock.now() >= deadline) {
      io.err << io.program << ": timed out after " << cmd.timeout.count()
             << "s waiting for prod of model " << quoteModelCommands(cmd.model)
             << " to run release " << quoteModelCommands(plan.target) << "\n";
      return kExitFailure;
    }
    std::unique_lock<std::mutex> lock(mu);
    io.clock.waitUntil(lock, cv, std::min(deadline, io.clock.now() + io.pollInterval));
  }
}

int remove(const ModelCommand& cmd, const std::string& ns, ReleaseIo& io) {
  kube::DeleteOptions del;
  del.propagationPolicy = "Background";
  Status s = io.client.remove(api::v1alpha1::kModels, ns, cmd.model, del);
  if (!s.isOk() && s.code() == Code::kNotFound)
    return reportModelCommands(
        io, "delete",
        Status(Code::kNotFound, "model " + quoteModelCommands(cmd.model) +
                                    " is not in prod in namespace " + quoteModelCommands(ns)));
  if (!s.isOk())
    return reportModelCommands(io, "deleting Model " + quoteModelCommands(cmd.model), s);
  io.out << "model " << quoteModelCommands(cmd.model) << " taken out of prod: Model "
         << quoteModelCommands(cmd.model)
         << " deleted; garbage collection removes its Service and Deployments\n";
  return kExitOk;
}

}  // namespace

int runModelCommand(const ModelCommand& cmd, const std::string& ns, ReleaseIo& io) {
  using A = ModelCommand::Action;
  switch (cmd.action) {
    case A::kHistory:
      return history(cmd, ns, io);
    case A::kRollback:
      return rollback(cmd, ns, io);
    case A::kDelete:
      return remove(cmd, ns, io);
    case A::kHelp:
      modelUsage(io.out, io.program);
      return kExitOk;
  }
  return kExitUsage;
}

}  // namespace lockstep::cli
