#include "controllers/modelrelease/prod/serving_objects.h"

#include "api/v1alpha1/model_anchor.h"

namespace lockstep::controllers {
namespace {

namespace v1 = api::v1alpha1;
using api::v1alpha1::kReleaseLabel;
using nlohmann::json;

json modelOwnerRefs(const ServingObjectsInput& in) {
  if (in.anchorUid.empty()) return json::array();
  // Not `controller`: a ConfigMap has no controller; GC still deletes the
  // serving objects when the anchor goes (`lockstep model delete`).
  return json::array({{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"name", v1::modelAnchorName(in.model)},
                       {"uid", in.anchorUid}}});
}

json servingSelector(const std::string& model) {
  return {{kModelLabel, model}, {"app.kubernetes.io/component", "serving"}};
}

// Every field of `want` is in `have` with the same value (objects: a subset;
// arrays: the same length, element by element).
bool holds(const json& want, const json& have) {
  if (want.is_object()) {
    if (!have.is_object()) return false;
    for (const auto& [k, v] : want.items()) {
      auto it = have.find(k);
      if (it == have.end() || !holds(v, *it)) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i)
      if (!holds(want[i], have[i])) return false;
    return true;
  }
  return want == have;
}

const json& field(const json& o, const char* a, const char* b) {
  static const json kNull;
  if (!o.is_object() || !o.contains(a) || !o[a].is_object() || !o[a].contains(b)) return kNull;
  return o[a][b];
}

}  // namespace

bool serviceHolds(const json& want, const json& current) {
  // No owner reference wanted (no anchor yet) means none at all, not "any".
  const json& refs = field(current, "metadata", "ownerReferences");
  const json& wantRefs = field(want, "metadata", "ownerReferences");
  const bool refsHold = refs.is_null() || refs.empty() ? wantRefs.is_null() || wantRefs.empty()
                                                       : holds(wantRefs, refs);
  return refsHold &&
         holds(field(want, "metadata", "labels"), field(current, "metadata", "labels")) &&
         holds(want.value("spec", json::object()), current.value("spec", json::object()));
}

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
           {{"selector", servingSelector(in.model)},
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
