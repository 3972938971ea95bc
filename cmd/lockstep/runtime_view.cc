#include "cmd/lockstep/runtime_view.h"

#include <vector>

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_env.h"
#include "cmd/lockstep/release_view.h"
#include "operator/kube/conditions.h"

namespace lockstep::cli {

namespace v1 = api::v1alpha1;

std::string renderRuntimeHistory(const nlohmann::json& object, kube::Clock::WallTime now) {
  const v1::RuntimeEnv rte = v1::decodeRuntimeEnv(object);
  std::string out = "RuntimeEnv " + rte.meta.key() + ": current revision ";
  out += rte.status.currentRevision > 0 ? std::to_string(rte.status.currentRevision) : "-";
  if (auto ready = kube::findCondition(rte.status.conditions, v1::kConditionReady)) {
    out += " (Ready=" + v1::decode::string(*ready, "status") + ", " +
           v1::decode::string(*ready, "reason") + ")";
  }
  out += "; history limit " + std::to_string(rte.spec.revisionHistoryLimit) + "\n";
  if (rte.status.revisions.empty()) return out + "no revisions recorded\n";
  std::vector<std::vector<std::string>> rows = {{"REVISION", "CURRENT", "IMAGE", "CLOSURE-HASH",
                                                 "CUDA", "FIRST-RESOLVED", "LAST-RESOLVED",
                                                 "PINNED-BY"}};
  for (auto it = rte.status.revisions.rbegin(); it != rte.status.revisions.rend(); ++it) {
    std::string pinned;
    for (const std::string& p : it->pinnedBy) pinned += (pinned.empty() ? "" : ",") + p;
    rows.push_back({std::to_string(it->number), it->number == rte.status.currentRevision ? "*" : "",
                    it->image, it->closureHash, it->cuda,
                    it->firstResolved.empty()
                        ? ""
                        : it->firstResolved + " (" + formatAge(it->firstResolved, now) + ")",
                    it->lastResolved, pinned});
  }
  return out + renderTable(rows);
}

}  // namespace lockstep::cli
