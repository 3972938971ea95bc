#include "controllers/common/cached_serving_objects.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "operator/kube/fields.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;

namespace {

// The metadata fields any reader of these caches reads (kube::MetaView's,
// and resourceVersion for the informer's own bookkeeping).
constexpr const char* kKeptMetadata[] = {
    "name",        "namespace",         "uid",    "resourceVersion",
    "generation",  "creationTimestamp", "labels", "deletionTimestamp",
    "annotations", "ownerReferences"};

// `o` with only `keep` of its top-level members; apiVersion and kind too.
json only(json& o, std::initializer_list<const char*> keep) {
  std::vector<const char*> fields = {"apiVersion", "kind"};
  fields.insert(fields.end(), keep);
  return kube::takeFields(o, fields);
}

json slimMetadata(json& o) {
  auto it = o.find("metadata");
  return it == o.end() ? json::object() : kube::takeFields(*it, kKeptMetadata);
}

// Each container's name, image and resources (kube::gpuRequestOf reads the
// resources; messages name the container).
json keptContainers(json& spec, const char* field) {
  auto it = spec.find(field);
  if (it == spec.end() || !it->is_array()) return json();
  json out = json::array();
  for (json& c : *it) {
    if (!c.is_object()) continue;
    out.push_back(only(c, {"name", "image", "resources"}));
  }
  return out;
}

// Each entry of `list` with only `keep` (an entry that is not an object is dropped).
json eachOnly(json& list, std::initializer_list<const char*> keep) {
  json out = json::array();
  if (!list.is_array()) return out;
  for (json& e : list) {
    if (e.is_object()) out.push_back(kube::takeFields(e, keep));
  }
  return out;
}

// status with only `keep`, its conditions as kube::ConditionView reads them
// (type, status, reason, message) and its container statuses as
// kube::ContainerStatusView and containerFailure read them.
json slimStatus(json& o, std::initializer_list<const char*> keep) {
  auto it = o.find("status");
  if (it == o.end() || !it->is_object()) return json();
  json out = json::object();
  for (const char* k : keep) {
    auto f = it->find(k);
    if (f == it->end()) continue;
    const std::string_view key = k;
    if (key == "conditions") {
      out[k] = eachOnly(*f, {"type", "status", "reason", "message"});
    } else if (key == "containerStatuses" || key == "initContainerStatuses") {
      out[k] = eachOnly(*f, {"name", "ready", "restartCount", "state", "lastState"});
    } else {
      out[k] = std::move(*f);
    }
  }
  return out;
}

// The object as `slim` built it: apiVersion, kind and slimmed metadata added.
void replaceWith(kube::Object& o, json slim) {
  json out = only(o, {});
  out["metadata"] = slimMetadata(o);
  for (auto& [k, v] : slim.items()) out[k] = std::move(v);
  o = std::move(out);
}

kube::InformerOptions labelledWith(const kube::Resource& resource, const char* label,
                                   kube::ObjectTransform transform) {
  kube::InformerOptions o;
  o.resource = resource;
  o.labelSelector = label;
  o.transform = std::move(transform);
  return o;
}

}  // namespace

void slimDeployment(kube::Object& d) {
  if (!d.is_object()) return;
  json slim = json::object();
  if (auto spec = d.find("spec"); spec != d.end() && spec->is_object())
    slim["spec"] = only(*spec, {"replicas", "template"});
  json status = slimStatus(d, {"observedGeneration", "replicas", "readyReplicas", "updatedReplicas",
                               "availableReplicas", "conditions"});
  if (!status.is_null()) slim["status"] = std::move(status);
  replaceWith(d, std::move(slim));
}

void slimService(kube::Object& s) {
  if (!s.is_object()) return;
  json slim = json::object();
  if (auto spec = s.find("spec"); spec != s.end() && spec->is_object())
    slim["spec"] = only(*spec, {"type", "selector", "ports"});
  replaceWith(s, std::move(slim));
}

void slimReleasePod(kube::Object& pod) {
  if (!pod.is_object()) return;
  json slim = json::object();
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    json out = json::object();
    if (auto n = spec->find("nodeName"); n != spec->end()) out["nodeName"] = std::move(*n);
    for (const char* list : {"containers", "initContainers"}) {
      json kept = keptContainers(*spec, list);
      if (!kept.is_null()) out[list] = std::move(kept);
    }
    slim["spec"] = std::move(out);
  }
  json status = slimStatus(pod, {"phase", "reason", "message", "conditions", "containerStatuses",
                                 "initContainerStatuses"});
  if (!status.is_null()) slim["status"] = std::move(status);
  replaceWith(pod, std::move(slim));
}

kube::InformerOptions modelDeployments() {
  return labelledWith(v1::kDeployments, v1::kModelLabel, slimDeployment);
}

kube::InformerOptions modelServices() {
  return labelledWith(v1::kServices, v1::kModelLabel, slimService);
}

void trimToOwnership(kube::Object& o) {
  if (!o.is_object()) return;
  json out = only(o, {});
  auto m = o.find("metadata");
  out["metadata"] = m == o.end() || !m->is_object()
                        ? json::object()
                        : kube::takeFields(*m, {"name", "namespace", "uid", "resourceVersion",
                                                "labels", "ownerReferences", "deletionTimestamp"});
  o = std::move(out);
}

kube::InformerOptions unlabelledMetadata(const kube::Resource& resource) {
  kube::InformerOptions o;
  o.resource = resource;
  o.labelSelector = std::string("!") + v1::kModelLabel;
  o.metadataOnly = true;
  o.transform = trimToOwnership;
  return o;
}

kube::InformerOptions releasePods() {
  return labelledWith(v1::kPods, v1::kReleaseLabel, slimReleasePod);
}

}  // namespace lockstep::controllers
