#include "controllers/common/plan.h"

namespace lockstep::controllers {

kube::Object statusApply(const kube::Resource& resource, const std::string& ns,
                         const std::string& name, nlohmann::json status) {
  kube::Object o = kube::newObject(resource, ns, name);
  o["status"] = std::move(status);
  return o;
}

}  // namespace lockstep::controllers
