#include "controllers/common/cached_pods.h"

#include <string>
#include <utility>

#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/resources.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;

namespace {

json slimContainers(const json& spec, const char* field, bool resources) {
  json out = json::array();
  for (const json& c : v1::decode::array(spec, field)) {
    json slim = {{"name", v1::decode::string(c, "name")},
                 {"image", v1::decode::string(c, "image")}};
    if (resources) slim["resources"] = v1::decode::object(c, "resources");
    out.push_back(std::move(slim));
  }
  return out;
}

}  // namespace

void slimPod(kube::Object& pod) {
  const json& meta = v1::decode::object(pod, "metadata");
  const json& spec = v1::decode::object(pod, "spec");
  json annotations = json::object();
  for (const auto& [key, value] : v1::decode::object(meta, "annotations").items()) {
    if (key.rfind("lockstep.dev/", 0) == 0) annotations[key] = value;
  }
  json volumes = json::array();
  for (const json& v : v1::decode::array(spec, "volumes")) {
    const json& image = v1::decode::object(v, "image");
    if (image.empty()) continue;
    volumes.push_back({{"name", v1::decode::string(v, "name")},
                       {"image", {{"reference", v1::decode::string(image, "reference")}}}});
  }
  json slimMeta = {{"name", v1::decode::string(meta, "name")},
                   {"namespace", v1::decode::string(meta, "namespace")},
                   {"uid", v1::decode::string(meta, "uid")},
                   {"resourceVersion", v1::decode::string(meta, "resourceVersion")},
                   {"labels", v1::decode::object(meta, "labels")},
                   {"annotations", std::move(annotations)}};
  if (auto it = meta.find("deletionTimestamp"); it != meta.end() && it->is_string())
    slimMeta["deletionTimestamp"] = *it;
  json slim = {
      {"metadata", std::move(slimMeta)},
      {"spec",
       {{"nodeName", v1::decode::string(spec, "nodeName")},
        {"containers", slimContainers(spec, "containers", true)},
        {"initContainers", slimContainers(spec, "initContainers", true)},
        {"ephemeralContainers", slimContainers(spec, "ephemeralContainers", false)},
        {"volumes", std::move(volumes)}}},
      {"status", {{"phase", v1::decode::string(v1::decode::object(pod, "status"), "phase")}}}};
  pod = std::move(slim);
}

kube::InformerOptions unfinishedPods() {
  kube::InformerOptions o;
  o.resource = v1::kPods;
  o.fieldSelector = "status.phase!=Succeeded,status.phase!=Failed";
  o.transform = slimPod;
  return o;
}

}  // namespace lockstep::controllers
