#include "operator/kube/conditions.h"

namespace lockstep::kube {

void setCondition(nlohmann::json& conditions, const Condition& c, int64_t observedGeneration,
                  const std::string& now) {
  if (!conditions.is_array()) conditions = nlohmann::json::array();
  nlohmann::json next = {{"type", c.type},
                         {"status", c.status},
                         {"reason", c.reason},
                         {"message", c.message},
                         {"observedGeneration", observedGeneration},
                         {"lastTransitionTime", now}};
  for (auto& existing : conditions) {
    if (existing.value("type", "") != c.type) continue;
    if (existing.value("status", "") == c.status && existing.contains("lastTransitionTime")) {
      next["lastTransitionTime"] = existing["lastTransitionTime"];
    }
    existing = std::move(next);
    return;
  }
  conditions.push_back(std::move(next));
}

std::optional<nlohmann::json> findCondition(const nlohmann::json& conditions,
                                            const std::string& type) {
  if (!conditions.is_array()) return std::nullopt;
  for (const auto& c : conditions) {
    if (c.is_object() && c.value("type", "") == type) return c;
  }
  return std::nullopt;
}

bool conditionTrue(const nlohmann::json& conditions, const std::string& type) {
  auto c = findCondition(conditions, type);
  return c && c->value("status", "") == "True";
}

}  // namespace lockstep::kube
