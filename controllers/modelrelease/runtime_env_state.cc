#include "controllers/modelrelease/runtime_env_state.h"

#include "api/v1alpha1/conditions.h"
#include "api/v1alpha1/runtime_env.h"
#include "operator/kube/conditions.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;

RuntimeEnvState runtimeEnvState(const std::optional<nlohmann::json>& rte) {
  RuntimeEnvState s;
  if (!rte) return s;
  s.found = true;
  const v1::RuntimeEnv env = v1::decodeRuntimeEnv(*rte);
  s.closureHash = env.status.closureHash;
  s.image = env.spec.image;
  const int64_t gen = env.meta.generation;
  const int64_t observed = env.status.observedGeneration;
  const bool readyTrue = kube::conditionTrue(env.status.conditions, v1::kConditionReady);
  s.ready = readyTrue && observed == gen && !s.closureHash.empty();
  if (!s.ready) {
    auto ready = kube::findCondition(env.status.conditions, v1::kConditionReady);
    s.notReadyMessage = observed != gen ? "its status is not for generation " + std::to_string(gen)
                        : ready ? ready->value("reason", "") + ": " + ready->value("message", "")
                                : "it has no Ready condition yet";
  }
  return s;
}

}  // namespace lockstep::controllers
