#include "controllers/modelrelease/watch_filters.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/model_release.h"
#include "controllers/modelrelease/prod/canary_observe.h"
#include "controllers/modelrelease/prod/model_conditions.h"
#include "operator/kube/views.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using nlohmann::json;

// `o` without metadata.resourceVersion and managedFields, and without the
// members `dropped` of its status.
json comparable(const kube::Object& o, std::initializer_list<const char*> dropped = {}) {
  json c = o;
  if (auto m = c.find("metadata"); m != c.end() && m->is_object()) {
    m->erase("resourceVersion");
    m->erase("managedFields");
  }
  if (auto s = c.find("status"); s != c.end() && s->is_object()) {
    for (const char* member : dropped) s->erase(member);
  }
  return c;
}

}  // namespace

bool deploymentChangeConcernsModel(const kube::Object& oldObj, const kube::Object& newObj) {
  if (stableRollingOut(kube::viewDeployment(oldObj)) !=
      stableRollingOut(kube::viewDeployment(newObj)))
    return true;
  // The rest of what it reads: the template, spec.replicas, the serving
  // rule's links (name, uid, labels, owner references), deletion.
  auto rest = [](const kube::Object& d) {
    json c = comparable(d);
    c.erase("status");
    if (auto m = c.find("metadata"); m != c.end() && m->is_object()) {
      m->erase("generation");
      m->erase("annotations");
    }
    return c;
  };
  return rest(oldObj) != rest(newObj);
}

bool serviceChangeConcernsModel(const kube::Object& oldObj, const kube::Object& newObj) {
  const json& a = v1::decode::object(oldObj, "metadata");
  const json& b = v1::decode::object(newObj, "metadata");
  const json* x = v1::decode::member(a, "ownerReferences");
  const json* y = v1::decode::member(b, "ownerReferences");
  return (x == nullptr) != (y == nullptr) || (x != nullptr && *x != *y);
}

bool deploymentChangeConcernsReleases(const kube::Object& oldObj, const kube::Object& newObj) {
  if (admissionRefusalsOf(&oldObj) != admissionRefusalsOf(&newObj)) return true;
  // The rest of what they read: metadata, spec (the template, replicas).
  auto rest = [](const kube::Object& d) {
    json c = comparable(d);
    c.erase("status");
    return c;
  };
  return rest(oldObj) != rest(newObj);
}

bool modelChangeConcernsReleases(const kube::Object& oldObj, const kube::Object& newObj) {
  const auto drop = {"conditions", "observedGeneration"};
  return comparable(oldObj, drop) != comparable(newObj, drop);
}

bool changedBeyondResourceVersion(const kube::Object& oldObj, const kube::Object& newObj) {
  return comparable(oldObj) != comparable(newObj);
}

bool releaseReadsModelObjects(const kube::Object& release, const kube::Object* model) {
  const std::string phase = v1::decode::string(v1::decode::object(release, "status"), "phase");
  if (phase != v1::kPhaseFailed && phase != v1::kPhaseRolledBack && phase != v1::kPhaseValidated)
    return true;
  if (kube::isBeingDeleted(release) || kube::hasFinalizer(release, v1::kReleaseCleanupFinalizer))
    return true;
  if (model == nullptr) return false;
  const std::string name = kube::name(release);
  const json& status = v1::decode::object(*model, "status");
  return v1::decode::string(v1::decode::object(status, "prod"), "release") == name ||
         v1::decode::string(v1::decode::object(status, "canary"), "release") == name;
}

std::vector<std::string> releasesWokenByPod(const kube::Object& pod, const kube::Object* model) {
  std::vector<std::string> out;
  const std::optional<std::string> own = kube::label(pod, v1::kReleaseLabel);
  if (own && !own->empty()) out.push_back(*own);
  if (model == nullptr || !kube::label(pod, v1::kTrackLabel)) return out;
  const std::string holder = v1::decode::string(
      v1::decode::object(v1::decode::object(*model, "status"), "canary"), "release");
  if (!holder.empty() && holder != own.value_or("")) out.push_back(holder);
  return out;
}

}  // namespace lockstep::controllers
