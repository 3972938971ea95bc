#include "controllers/modelrelease/runtime_pod.h"

#include "api/v1alpha1/runtime_revision.h"

namespace lockstep::controllers {
namespace {

using nlohmann::json;

json& objectAt(json& parent, const char* key) {
  json& v = parent[key];
  if (!v.is_object()) v = json::object();
  return v;
}

json& arrayAt(json& parent, const char* key) {
  json& v = parent[key];
  if (!v.is_array()) v = json::array();
  return v;
}

json envVar(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

std::string quote(const std::string& s) { return "\"" + s + "\""; }

Status prepareContainer(json& c, const RuntimePod& pod) {
  std::string image =
      c.contains("image") && c["image"].is_string() ? c["image"].get<std::string>() : std::string();
  if (image.empty()) {
    c["image"] = pod.runtimeImage;
  } else if (image != pod.runtimeImage) {
    std::string name =
        c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : std::string();
    return Status(Code::kInvalidArgument,
                  "container " + quote(name) + " of " + pod.owner + " names image " + quote(image) +
                      "; Lockstep runs it on the release's pinned runtime image " +
                      quote(pod.runtimeImage) + " (leave image empty)");
  }
  json& envs = arrayAt(c, "env");
  envs.push_back(envVar("LOCKSTEP_PACKAGE", pod.package));
  envs.push_back(envVar("LOCKSTEP_CLOSURE_HASH", pod.closureHash));
  for (const auto& [k, v] : pod.env) envs.push_back(envVar(k, v));
  envs.push_back(envVar("LOCKSTEP_MODEL_DIR", kModelDir));
  arrayAt(c, "volumeMounts")
      .push_back({{"name", kPackageVolume}, {"mountPath", kModelDir}, {"readOnly", true}});
  return Status::ok();
}

}  // namespace

const char* packageMountName(PackageMount m) {
  return m == PackageMount::kImageVolume ? "ImageVolume" : "InitContainer";
}

Status prepareRuntimePod(json& tmpl, const RuntimePod& pod) {
  if (!tmpl.is_object()) tmpl = json::object();
  json& meta = objectAt(tmpl, "metadata");
  json& labels = objectAt(meta, "labels");
  for (const auto& [k, v] : pod.labels) labels[k] = v;
  labels["lockstep.dev/runtime-env"] = pod.runtimeEnv;
  json& annotations = objectAt(meta, "annotations");
  annotations["lockstep.dev/closure-hash"] = pod.closureHash;
  annotations["lockstep.dev/package"] = pod.package;
  if (pod.runtimeRevision > 0)
    annotations[api::v1alpha1::kRuntimeRevisionAnnotation] = std::to_string(pod.runtimeRevision);

  json& spec = objectAt(tmpl, "spec");
  json& containers = spec["containers"];
  if (!containers.is_array() || containers.empty())
    return Status(Code::kInvalidArgument,
                  "the pod template of " + pod.owner + " has no containers");
  for (json& c : containers) {
    if (Status s = prepareContainer(c, pod); !s.isOk()) return s;
  }
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (json& c : spec["initContainers"]) {
      if (Status s = prepareContainer(c, pod); !s.isOk()) return s;
    }
  }
  json& volumes = arrayAt(spec, "volumes");
  if (pod.mount == PackageMount::kImageVolume) {
    volumes.push_back({{"name", kPackageVolume},
                       {"image", {{"reference", pod.package}, {"pullPolicy", "IfNotPresent"}}}});
    return Status::ok();
  }
  volumes.push_back({{"name", kPackageVolume}, {"emptyDir", json::object()}});
  json fetch = {
      {"name", "lockstep-fetch-package"},
      {"image", pod.runtimeImage},
      {"command", pod.fetchCommand},
      {"env", json::array({envVar("LOCKSTEP_PACKAGE", pod.package),
                           envVar("LOCKSTEP_MODEL_DIR", kModelDir)})},
      {"volumeMounts", json::array({{{"name", kPackageVolume}, {"mountPath", kModelDir}}})}};
  json& inits = arrayAt(spec, "initContainers");
  inits.insert(inits.begin(), fetch);
  return Status::ok();
}

}  // namespace lockstep::controllers
