#include "controllers/modelrelease/runtime_pod.h"

#include <algorithm>
#include <cstdlib>

#include "api/image_ref.h"
#include "api/v1alpha1/meta.h"
#include "api/v1alpha1/runtime_env.h"
#include "api/v1alpha1/runtime_revision.h"
#include "api/v1alpha1/runtime_verify.h"
#include "controllers/modelrelease/release_status.h"

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

Status prepareContainer(json& c, const RuntimePod& pod) {
  std::string image =
      c.contains("image") && c["image"].is_string() ? c["image"].get<std::string>() : std::string();
  if (image.empty() || api::sameImage(image, pod.runtimeImage)) {
    // The pinned reference as the release recorded it (admission normalises
    // both, so "foo@sha256:…" and "docker.io/library/foo@sha256:…" are one image).
    c["image"] = pod.runtimeImage;
  } else {
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

// The GPUs the pod's main containers ask for (nvidia.com/gpu limits, summed):
// an init container asking as many adds none to the pod's request.
int64_t gpusOf(const json& containers) {
  int64_t n = 0;
  for (const json& c : containers) {
    const json* limits =
        api::v1alpha1::decode::member(api::v1alpha1::decode::object(c, "resources"), "limits");
    const json* gpu = limits ? api::v1alpha1::decode::member(*limits, "nvidia.com/gpu") : nullptr;
    if (gpu == nullptr) continue;
    if (gpu->is_number_integer()) n += gpu->get<int64_t>();
    if (gpu->is_string()) n += std::strtoll(gpu->get<std::string>().c_str(), nullptr, 10);
  }
  return n;
}

}  // namespace

StatusOr<std::optional<VerifyContainers>> onStartVerification(const json& runtimeEnv,
                                                              const std::string& runtimeImage,
                                                              int64_t revision,
                                                              const std::string& cliImage) {
  auto onStart = api::v1alpha1::decodeOnStart(runtimeEnv);
  if (!onStart.isOk()) return onStart.status();
  if (!*onStart) return std::optional<VerifyContainers>();
  const api::v1alpha1::RuntimeEnv env = api::v1alpha1::decodeRuntimeEnv(runtimeEnv);
  const std::string& name = env.meta.name;
  if (cliImage.empty()) {
    return Status(Code::kUnavailable,
                  "RuntimeEnv " + quote(name) +
                      " asks for spec.verify.onStart, but the operator runs without --cli-image "
                      "(chart value cliImage): the verification init containers need the "
                      "lockstep CLI image");
  }
  if (revision <= 0) revision = env.status.currentRevision;  // a release from before pins
  // status.closureRevisions (the RuntimeEnv controller's): a pinned revision it
  // cannot write the closure of (resolved from another lock) has none.
  const auto& closures = env.status.closureRevisions;
  if (closures && std::find(closures->begin(), closures->end(), revision) == closures->end()) {
    return Status(Code::kUnavailable,
                  "RuntimeEnv " + quote(name) + " has no closure of revision " +
                      std::to_string(revision) + " (no ConfigMap " +
                      closureConfigMapName(name, revision) +
                      ": that revision was resolved from another lock, and the operator keeps the "
                      "closure only of revisions current while spec.verify was set): the "
                      "verification init containers cannot start on it");
  }
  VerifyContainers v;
  v.cliImage = cliImage;
  v.runtimeImage = runtimeImage;
  v.closureConfigMap = closureConfigMapName(name, revision);
  v.prefix = (*onStart)->prefix;
  v.checkGpuCount = true;
  return std::optional<VerifyContainers>(std::move(v));
}

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
  annotations[kPackageAnnotation] = pod.package;
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
  if (pod.verify) {
    // First of the init containers: nothing of the release runs on a runtime that failed.
    VerifyContainers v = *pod.verify;
    v.gpus = gpusOf(containers);
    json& inits = arrayAt(spec, "initContainers");
    inits.insert(inits.begin(), verifyHostContainer(v));
    inits.insert(inits.begin(), verifyEnvContainer(v));
    for (json& vol : verifyVolumes(v)) volumes.push_back(std::move(vol));
  }
  if (pod.mount == PackageMount::kImageVolume) {
    volumes.push_back({{"name", kPackageVolume},
                       {"image", {{"reference", pod.package}, {"pullPolicy", "IfNotPresent"}}}});
    return Status::ok();
  }
  volumes.push_back({{"name", kPackageVolume}, {"emptyDir", json::object()}});
  json fetch = {
      {"name", kFetchPackageContainer},
      {"image", pod.runtimeImage},
      {"command", pod.fetchCommand},
      {"env", json::array({envVar("LOCKSTEP_PACKAGE", pod.package),
                           envVar("LOCKSTEP_MODEL_DIR", kModelDir)})},
      {"volumeMounts", json::array({{{"name", kPackageVolume}, {"mountPath", kModelDir}}})}};
  json& inits = arrayAt(spec, "initContainers");
  // After the verification init containers, before the template's own.
  inits.insert(inits.begin() + (pod.verify ? 2 : 0), fetch);
  return Status::ok();
}

}  // namespace lockstep::controllers
