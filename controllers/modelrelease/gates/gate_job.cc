#include "controllers/modelrelease/gates/gate_job.h"

#include <algorithm>

#include "api/v1alpha1/keys.h"
#include "api/v1alpha1/resources.h"
#include "controllers/common/object_names.h"
#include "controllers/modelrelease/release_status.h"
#include "evidence/statement.h"

namespace lockstep::controllers {

namespace v1 = api::v1alpha1;
using nlohmann::json;

std::string gateJobName(const std::string& release, const std::string& stage, int attempt) {
  std::string full = release + "-" + stage + "-" + std::to_string(attempt);
  return dnsLabelName(full);
}

StatusOr<json> buildGateJob(const v1::ModelRelease& r, const v1::Stage& s, const GateJobInput& in) {
  const json& podTemplate = s.gate ? s.gate->podTemplate : json::object();
  json tmpl = podTemplate.is_object() ? podTemplate : json::object();
  const std::string& name = r.meta.name;
  const std::string& model = r.spec.model;
  RuntimePod pod;
  pod.owner = "stage " + quote(s.name);
  pod.runtimeEnv = r.spec.runtimeEnvName;
  pod.runtimeImage = in.runtimeImage;
  pod.closureHash = in.closureHash;
  pod.runtimeRevision = in.runtimeRevision;
  pod.package = r.spec.package;
  pod.labels = {
      {v1::kReleaseLabel, name}, {"lockstep.dev/stage", s.name}, {v1::kModelLabel, model}};
  pod.env = {{"LOCKSTEP_RELEASE", name}, {"LOCKSTEP_STAGE", s.name}, {"LOCKSTEP_MODEL", model}};
  pod.mount = in.mount;
  pod.fetchCommand = in.fetchCommand;
  pod.verify = in.verify;
  if (Status st = prepareRuntimePod(tmpl, pod); !st.isOk()) return st;
  tmpl["spec"]["restartPolicy"] = "Never";

  json jobLabels = {
      {v1::kReleaseLabel, name}, {"lockstep.dev/stage", s.name}, {v1::kModelLabel, model}};
  const int64_t timeout = s.gate ? s.gate->timeoutSeconds() : v1::kDefaultGateTimeoutSeconds;
  json annotations = {{"lockstep.dev/attempt", std::to_string(in.attempt)},
                      {kGateJobGenerationAnnotation, std::to_string(r.meta.generation)}};
  if (!in.stageSpecDigest.empty()) annotations[kGateJobSpecDigestAnnotation] = in.stageSpecDigest;
  return json{
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata",
       {{"name", in.jobName},
        {"namespace", r.meta.ns},
        {"labels", jobLabels},
        {"annotations", annotations},
        {"ownerReferences", json::array({{{"apiVersion", v1::kModelReleases.apiVersion()},
                                          {"kind", v1::kModelReleases.kind},
                                          {"name", name},
                                          {"uid", r.meta.uid},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}})}}},
      {"spec", {{"backoffLimit", 0}, {"activeDeadlineSeconds", timeout}, {"template", tmpl}}}};
}

std::string stageSpecDigestOf(const json& release, const std::string& stage) {
  for (const json& s : v1::decode::array(v1::decode::object(release, "spec"), "stages")) {
    if (s.is_object() && v1::decode::string(s, "name") == stage)
      return evidence::stageSpecDigest(s);
  }
  return "";
}

std::optional<int64_t> jobGeneration(const json& job) {
  const std::string g =
      v1::decode::string(v1::decode::object(v1::decode::object(job, "metadata"), "annotations"),
                         kGateJobGenerationAnnotation);
  if (g.empty() || g.size() > 18 ||
      !std::all_of(g.begin(), g.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(g);
}

std::string jobMount(const json& job) {
  const json& volumes = v1::decode::array(
      v1::decode::object(v1::decode::object(v1::decode::object(job, "spec"), "template"), "spec"),
      "volumes");
  for (const json& v : volumes) {
    const json* image = v1::decode::member(v, "image");
    if (v1::decode::string(v, "name") == kPackageVolume && image != nullptr && image->is_object())
      return "ImageVolume";
  }
  return "InitContainer";
}

}  // namespace lockstep::controllers
