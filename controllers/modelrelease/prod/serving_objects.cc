#include "controllers/modelrelease/prod/serving_objects.h"

#include <optional>
#include <string_view>

#include "api/v1alpha1/model.h"
#include "operator/kube/views.h"

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

// The Deployments' selector (immutable: the serving label is not in it) and,
// once every pod of the model carries it, the serving label.
json serviceSelector(const ServingObjectsInput& in) {
  json s = servingSelector(in.model);
  if (in.selectServingLabel) s[v1::kServingLabel] = v1::kServingLabelValue;
  return s;
}

}  // namespace

bool serviceHolds(const json& want, const json& current) {
  // No owner reference wanted (no anchor yet) means none at all, not "any".
  const json& refs = field(current, "metadata", "ownerReferences");
  const json& wantRefs = field(want, "metadata", "ownerReferences");
  const bool refsHold = refs.is_null() || refs.empty() ? wantRefs.is_null() || wantRefs.empty()
                                                       : holds(wantRefs, refs);
  // The selector exactly: a key too many selects too few pods (the serving
  // label is dropped again while a pod an earlier version built serves).
  const json& wantSelector = field(want, "spec", "selector");
  if (!wantSelector.is_null() && wantSelector != field(current, "spec", "selector")) return false;
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
           {{"type", in.serviceType},
            {"selector", serviceSelector(in)},
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
  pod.labels[v1::kServingLabel] = v1::kServingLabelValue;
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

namespace {

const json& at(const json& o, const json::json_pointer& ptr) {
  static const json kNull;
  return o.contains(ptr) ? o.at(ptr) : kNull;
}

std::string shown(const json& v) { return v.is_null() ? "unset" : v.dump(); }

// Each key of `want` with the same value in `have` (a value that is not a
// string reads as unset: kube::StringMapView); `skip` is not compared.
std::string mapDrift(const kube::StringMapView& want, const kube::StringMapView& have,
                     const std::string& field, std::string_view skip) {
  for (const auto& [k, v] : want.copy()) {
    if (k == skip) continue;
    const std::optional<std::string_view> got = have.find(k);
    if (got != v) {
      return field + "[\"" + k + "\"] is " + (got ? json(*got).dump() : "unset") + ", not " +
             json(v).dump();
    }
  }
  return "";
}

std::string containersDrift(const json& want, const json& have, const std::string& field) {
  const json w = want.is_array() ? want : json::array();
  const json h = have.is_array() ? have : json::array();
  if (w.size() != h.size()) {
    return field + " has " + std::to_string(h.size()) + " containers, not " +
           std::to_string(w.size());
  }
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string name = w[i].value("name", "");
    if (h[i].value("name", "") != name) {
      return field + "[" + std::to_string(i) + "] is " + shown(h[i].value("name", json())) +
             ", not " + json(name).dump();
    }
    if (h[i].value("image", json()) != w[i].value("image", json())) {
      return "container " + name + " runs image " + shown(h[i].value("image", json())) + ", not " +
             shown(w[i].value("image", json()));
    }
  }
  return "";
}

}  // namespace

std::string deploymentDrift(const json& desired, const json& current) {
  const kube::DeploymentView want = kube::viewDeployment(desired);
  const kube::DeploymentView have = kube::viewDeployment(current);
  // An unset spec.replicas is 1 (the API server's default).
  if (have.replicas() != want.replicas()) {
    return "spec.replicas is " +
           (have.specReplicas ? std::to_string(*have.specReplicas) : std::string("unset")) +
           ", not " + std::to_string(want.replicas());
  }
  // Not re-templated for the serving label alone: no pod restarts on an
  // operator upgrade (the Service keeps the earlier selector meanwhile).
  const std::string_view serving = v1::kServingLabel;
  std::string d =
      mapDrift(want.templateLabels, have.templateLabels, "spec.template.metadata.labels",
               have.templateLabels.contains(serving) ? "" : serving);
  if (d.empty()) {
    d = mapDrift(want.templateAnnotations, have.templateAnnotations,
                 "spec.template.metadata.annotations",
                 have.templateAnnotations.contains(serving) ? "" : serving);
  }
  if (!d.empty()) return d;
  // The containers the release's template and runtime pair make; not the init
  // containers the operator's own settings add (verify on start, package
  // fetch), which an operator upgrade may change without prod being touched.
  const json::json_pointer ptr("/spec/template/spec/containers");
  return containersDrift(at(desired, ptr), at(current, ptr), "spec.template.spec.containers");
}

std::string serviceDrift(const json& desired, const json& current) {
  if (serviceHolds(desired, current)) return "";
  const json& want = at(desired, "/spec/selector"_json_pointer);
  const json& have = at(current, "/spec/selector"_json_pointer);
  if (want != have) return "spec.selector is " + shown(have) + ", not " + want.dump();
  const json& wp = at(desired, "/spec/ports"_json_pointer);
  const json& hp = at(current, "/spec/ports"_json_pointer);
  if (!hp.is_array() || hp.size() != wp.size())
    return "spec.ports is " + shown(hp) + ", not " + wp.dump();
  for (size_t i = 0; i < wp.size(); ++i) {
    for (const char* f : {"port", "targetPort"}) {
      if (hp[i].value(f, json()) != wp[i].value(f, json())) {
        return "spec.ports[" + std::to_string(i) + "]." + f + " is " +
               shown(hp[i].value(f, json())) + ", not " + wp[i].value(f, json()).dump();
      }
    }
  }
  return "has other labels, type or owner references than Lockstep's";
}

}  // namespace lockstep::controllers
