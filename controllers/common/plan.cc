#include "controllers/common/plan.h"

namespace lockstep::controllers {

kube::Object statusApply(const kube::Resource& resource, const std::string& ns,
                         const std::string& name, nlohmann::json status) {
  kube::Object o = kube::newObject(resource, ns, name);
  o["status"] = std::move(status);
  return o;
}

PlannedApply plannedApply(const kube::Resource& resource, kube::Object object, std::string what) {
  PlannedApply a;
  a.resource = resource;
  a.object = std::move(object);
  a.what = std::move(what);
  return a;
}

PlannedApply plannedCreate(const kube::Resource& resource, kube::Object object, std::string what) {
  PlannedApply a = plannedApply(resource, std::move(object), std::move(what));
  a.verb = WriteVerb::kCreate;
  return a;
}

PlannedApply plannedUpdate(const kube::Resource& resource, kube::Object object, std::string what) {
  PlannedApply a = plannedApply(resource, std::move(object), std::move(what));
  a.verb = WriteVerb::kUpdate;
  a.resourceVersion = kube::resourceVersion(a.object);
  return a;
}

PlannedApply plannedMergePatch(const kube::Resource& resource, const std::string& ns,
                               const std::string& name, nlohmann::json patch, std::string what) {
  PlannedApply a = plannedApply(resource, std::move(patch), std::move(what));
  a.verb = WriteVerb::kMergePatch;
  a.ns = ns;
  a.name = name;
  return a;
}

}  // namespace lockstep::controllers
