#include "controllers/modelrelease/prod/serving_objects.h"

#include "api/v1alpha1/model.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using api::v1alpha1::kReleaseLabel;
using nlohmann::json;

json modelOwnerRefs(const ServingObjectsInput& in) {
  if (in.modelUid.empty()) return json::array();
  // The Model is the controller: deleting it (lockstep model delete) lets
  // garbage collection remove the serving objects.
  return json::array({v1::modelOwnerReference(in.model, in.modelUid)});
}

json servingSelector(const std::string& model) {
  return {{kModelLabel, model}, {"app.kubernetes.io/component", "serving"}};
}

}  // namespace

std::string servingDeploymentName(const std::string& model, const std::string& track) {
  return model + "-" + track;
}

json buildModelService(const ServingObjectsInput& in) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", in.model},
            {"namespace", in.ns},
            {"labels", {{kModelLabel, in.model}, {"app.kubernetes.io/managed-by", "lockstep"}}},
            {"ownerReferences", modelOwnerRefs(in)}}},
          {"spec",
           {{"type", in.serviceType},
            {"selector", servingSelector(in.model)},
            {"ports", json::array({{{"name", "http"},
                                    {"port", in.port},
                                    {"targetPort", in.port},
                                    {"protocol", "TCP"}}})}}}};
}

StatusOr<json> buildServingDeployment(const ServingObjectsInput& in, const std::string& track,
                                      const ServingRelease& r, int replicas) {
  json tmpl = r.podTemplate.is_object() ? r.podTemplate : json::object();
  RuntimePod pod;
  pod.owner = "the serving template of release " + r.release;
  pod.runtimeEnv = r.runtimeEnv;
  pod.runtimeImage = r.runtimeImage;
  pod.closureHash = r.closureHash;
  pod.runtimeRevision = r.runtimeRevision;
  pod.package = r.package;
  const json selectorLabels = servingSelector(in.model);
  for (const auto& [k, v] : selectorLabels.items()) pod.labels[k] = v.get<std::string>();
  pod.labels[kTrackLabel] = track;
  pod.labels[kReleaseLabel] = r.release;
  pod.env = {
      {"LOCKSTEP_RELEASE", r.release}, {"LOCKSTEP_MODEL", in.model}, {"LOCKSTEP_TRACK", track}};
  pod.mount = in.mount;
  pod.fetchCommand = in.fetchCommand;
  pod.verify = r.verify;
  if (Status s = prepareRuntimePod(tmpl, pod); !s.isOk()) return s;
  bool surge = in.capacity == CapacityMode::kSurge;
  json selector = servingSelector(in.model);
  selector[kTrackLabel] = track;
  return json{
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata",
       {{"name", servingDeploymentName(in.model, track)},
        {"namespace", in.ns},
        {"labels",
         {{kModelLabel, in.model},
          {kTrackLabel, track},
          {kReleaseLabel, r.release},
          {"app.kubernetes.io/managed-by", "lockstep"}}},
        {"ownerReferences", modelOwnerRefs(in)}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", selector}}},
        // The Deployment's own rolling update follows the same capacity rule.
        {"strategy",
         {{"type", "RollingUpdate"},
          {"rollingUpdate", {{"maxSurge", surge ? 1 : 0}, {"maxUnavailable", surge ? 0 : 1}}}}},
        {"template", tmpl}}}};
}
}  // namespace lockstep::controllers
