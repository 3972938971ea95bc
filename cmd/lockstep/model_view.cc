#include "cmd/lockstep/model_view.h"

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/model.h"
#include "api/v1alpha1/model_release.h"
#include "api/v1alpha1/runtime_env.h"
#include "cmd/lockstep/release_view.h"

namespace lockstep::cli {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

std::string quoteModelView(const std::string& s) { return "\"" + s + "\""; }

std::string shortHash(const std::string& h) {
  auto colon = h.find(':');
  std::string hex = colon == std::string::npos ? h : h.substr(colon + 1);
  return hex.substr(0, 12);
}

std::string shortPackage(const std::string& p) {
  auto at = p.find("@sha256:");
  return at == std::string::npos ? p : p.substr(0, at + 8) + p.substr(at + 8, 12);
}

}  // namespace

StatusOr<json> modelHistory(const json& model) {
  return v1::decode::array(v1::decode::object(model, "status"), "history");
}

std::string renderModelHistory(const json& model, const json& history, kube::Clock::WallTime now) {
  std::string out;
  const v1::Model m = v1::decodeModel(model);
  const std::string promoted = m.promoted();
  out += "prod runs: " + (promoted.empty() ? std::string("-") : promoted);
  if (m.status.prod) {
    out += " (" + shortPackage(m.status.prod->package) + ", closure " +
           shortHash(m.status.prod->runtime.closureHash);
    if (m.status.prod->runtime.revision > 0)
      out += ", runtime revision " + std::to_string(m.status.prod->runtime.revision);
    if (!m.status.prod->contentDigest.empty())
      out += ", content " + shortHash(m.status.prod->contentDigest);
    out += ")";
  }
  if (!m.canaryHolder().empty()) out += "; in canary: " + m.canaryHolder();
  out += "\n";
  std::vector<std::vector<std::string>> rows = {
      {"AGE", "TIME", "ACTION", "RELEASE", "PACKAGE", "CLOSURE-HASH", "DETAIL"}};
  for (const json& e : history) {
    if (!e.is_object()) continue;
    const std::string action = e.value("action", "");
    std::string detail;
    if (action == v1::kModelActionRolledBack) {
      detail = e.value("reason", "");
      if (!e.value("stable", "").empty()) detail += "; stable stayed on " + e.value("stable", "");
    } else if (action == v1::kModelActionRollback) {
      detail = "from " + e.value("from", "") + " by " + e.value("by", "");
    } else if (action == v1::kModelActionAdopted) {
      detail = e.value("reason", "");
    }
    const std::string closure = v1::decode::string(v1::decode::object(e, "runtime"), "closureHash");
    rows.push_back({formatAge(e.value("at", ""), now), e.value("at", ""), action,
                    e.value("release", ""), shortPackage(e.value("package", "")),
                    shortHash(closure), detail});
  }
  if (rows.size() == 1) return out + "no promotions or rollbacks recorded\n";
  return out + renderTable(rows);
}

StatusOr<ModelRollbackPlan> planModelRollback(const json& modelObject,
                                              const std::map<std::string, json>& releases,
                                              const std::map<std::string, json>& runtimeEnvs,
                                              const std::string& to, const std::string& user) {
  ModelRollbackPlan plan;
  const v1::Model m = v1::decodeModel(modelObject);
  const std::string& model = m.meta.name;
  plan.from = m.promoted();
  plan.revision = m.prodRevision();
  if (plan.from.empty())
    return Status(Code::kInvalidArgument, "model " + quoteModelView(model) +
                                              " runs no promoted release; nothing to roll back");
  if (const std::string canary = m.canaryHolder(); !canary.empty())
    return Status(Code::kInvalidArgument, "release " + quoteModelView(canary) +
                                              " is in canary on model " + quoteModelView(model) +
                                              "; abort it first (lockstep release abort " + canary +
                                              ")");
  // A history that cannot be read is said, never read as "no earlier release".
  if (auto parsed = modelHistory(modelObject); !parsed.isOk()) return parsed.status();

  plan.target = to;
  if (plan.target.empty()) {
    // The newest release prod ran before the current one, that still exists
    // (the controller's default for a request that names no target).
    plan.target = v1::previousProdRelease(m, [&](const std::string& r) {
      auto it = releases.find(r);
      return it != releases.end() && v1::takesRollbackRequests(v1::decodeModelRelease(it->second));
    });
    if (plan.target.empty())
      return Status(Code::kInvalidArgument, "model " + quoteModelView(model) +
                                                " has no earlier promoted release to go back to " +
                                                "(lockstep model history " + model + ")");
  }
  if (plan.target == plan.from)
    return Status(Code::kInvalidArgument,
                  "release " + quoteModelView(plan.target) + " is what prod runs already");
  auto it = releases.find(plan.target);
  if (it == releases.end())
    return Status(Code::kNotFound, "release " + quoteModelView(plan.target) + " of model " +
                                       quoteModelView(model) + " does not exist");
  const v1::ModelRelease target = v1::decodeModelRelease(it->second);
  // Whether prod ran it is what its status.canary records: an unreadable one
  // is said, never read as "never promoted".
  if (!target.status.canary.error.empty())
    return Status(Code::kInvalidArgument,
                  "release " + quoteModelView(plan.target) + ": status.canary cannot be read (" +
                      target.status.canary.error +
                      "): whether prod ran it is unknown; repair its status first");
  if (target.status.canary.orEmpty().phase != "Promoted")
    return Status(
        Code::kInvalidArgument,
        "release " + quoteModelView(plan.target) + " was never promoted (phase " +
            quoteModelView(target.status.phase ? std::string(v1::phaseName(*target.status.phase))
                                               : std::string()) +
            "); only a release prod ran before can take prod back without its gates");
  // Exactly the pair it pinned; refused only when that revision was pruned.
  std::optional<v1::RuntimeEnv> env;
  if (auto rte = runtimeEnvs.find(target.spec.runtimeEnvName); rte != runtimeEnvs.end())
    env = v1::decodeRuntimeEnv(rte->second);
  const v1::RollbackRuntime runtime = v1::rollbackRuntime(target, env ? &*env : nullptr);
  if (!runtime.refusal.empty()) return Status(Code::kInvalidArgument, runtime.refusal);
  plan.runtimeMovedOn = runtime.movedOnMessage;
  plan.annotation = std::string(api::v1alpha1::kRollbackAnnotationPrefix) + plan.revision;
  plan.targetAnnotation = std::string(api::v1alpha1::kRollbackToAnnotationPrefix) + plan.revision;
  auto by = m.annotations.find(plan.annotation);
  auto named = m.annotations.find(plan.targetAnnotation);
  if (by != m.annotations.end() && by->second == user && named != m.annotations.end() &&
      named->second == plan.target)
    plan.alreadyBy = user;
  return plan;
}

}  // namespace lockstep::cli
