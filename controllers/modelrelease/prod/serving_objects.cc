#include "controllers/modelrelease/prod/serving_objects.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "api/v1alpha1/meta.h"
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

// The pod template without what the operator's own settings add (the
// verification init containers and their volumes, the package fetch init
// container, the package volume, whose form the mount mode decides): what an
// operator upgrade never changes by itself for a release.
json lockstepPart(const json& tmpl) {
  json t = tmpl;
  if (!t.is_object() || !t.contains("spec") || !t["spec"].is_object()) return t;
  json& spec = t["spec"];
  auto drop = [&](const char* list, std::initializer_list<std::string_view> names) {
    if (!spec.contains(list) || !spec[list].is_array()) return;
    json kept = json::array();
    for (const json& item : spec[list]) {
      const std::string name = item.is_object() ? item.value("name", "") : "";
      if (std::find(names.begin(), names.end(), name) == names.end()) kept.push_back(item);
    }
    if (kept.empty()) {
      spec.erase(list);
    } else {
      spec[list] = std::move(kept);
    }
  };
  drop("initContainers", {kVerifyEnvContainer, kVerifyHostContainer, kFetchPackageContainer});
  drop("volumes", {kClosureVolume, kRuntimeVolume, kPackageVolume});
  return t;
}

}  // namespace

std::string templateHash(const json& tmpl) {
  return v1::canonicalDigest("lockstep serving template\n", lockstepPart(tmpl));
}

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
        {"annotations", {{kTemplateHashAnnotation, templateHash(tmpl)}}},
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

// At most 160 characters of `v`'s JSON (a whole container in an Event is noise).
std::string brief(const json& v) {
  std::string s = shown(v);
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

// A value the API server omits when it is set (omitempty): Lockstep setting
// it is no drift when the live object lacks the key.
bool zeroValue(const json& v) {
  if (v.is_null()) return true;
  if (v.is_string()) return v.get_ref<const std::string&>().empty();
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number()) return v.get<double>() == 0;
  return v.empty();  // [] or {}
}

// Fields of the pod spec never compared: the API server rewrites quantities
// (0.5 is 500m, 1024Mi is 1Gi), so what Lockstep set reads back otherwise.
bool notCompared(const std::string& key) { return key == "resources" || key == "sizeLimit"; }

// The key a list item is matched by in the live list (as server-side apply
// merges it): mountPath (volumeMounts), name (containers, env, volumes,
// ports), containerPort; nullopt: the list is compared whole, in order.
std::optional<std::string> mergeKey(const json& item) {
  if (!item.is_object()) return std::nullopt;
  for (const char* k : {"mountPath", "name", "containerPort"}) {
    if (item.contains(k) && item[k].is_primitive()) return std::string(k);
  }
  return std::nullopt;
}

bool sameValue(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

// Where `have` (the live value) does not contain `want` (what Lockstep set):
// every key of an object (but notCompared ones; a zero value may be absent),
// every item of a list of named items under its merge key, a list of values
// whole, a value equal. "" when it does; else "<path> is <live>, not <want>".
std::string containsDrift(const json& want, const json& have, const std::string& path) {
  if (want.is_object()) {
    if (!have.is_object()) return path + " is " + brief(have) + ", not " + brief(want);
    for (const auto& [k, v] : want.items()) {
      if (notCompared(k)) continue;
      const std::string where = path + "." + k;
      auto it = have.find(k);
      if (it == have.end()) {
        if (zeroValue(v)) continue;
        return where + " is unset, not " + brief(v);
      }
      if (std::string d = containsDrift(v, *it, where); !d.empty()) return d;
    }
    return "";
  }
  if (want.is_array()) {
    if (want.empty()) return "";
    if (!have.is_array()) return path + " is " + brief(have) + ", not " + brief(want);
    const std::optional<std::string> key = mergeKey(want[0]);
    bool keyed = key.has_value();
    for (const json& w : want) keyed = keyed && mergeKey(w) == key;
    if (!keyed) {
      // A list of values (command, args) is one value: named whole.
      const bool values =
          std::none_of(want.begin(), want.end(), [](const json& w) { return w.is_structured(); });
      if (have.size() != want.size() ||
          (values && !std::equal(want.begin(), want.end(), have.begin(), sameValue)))
        return path + " is " + brief(have) + ", not " + brief(want);
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::string d = containsDrift(want[i], have[i], path + "[" + std::to_string(i) + "]");
            !d.empty())
          return d;
      }
      return "";
    }
    for (const json& w : want) {
      const json& id = w[*key];
      const std::string where = path + "[" + id.dump() + "]";
      auto it = std::find_if(have.begin(), have.end(), [&](const json& h) {
        return h.is_object() && h.contains(*key) && sameValue(h[*key], id);
      });
      if (it == have.end()) return where + " is unset, not " + brief(w);
      if (std::string d = containsDrift(w, *it, where); !d.empty()) return d;
    }
    return "";
  }
  if (sameValue(want, have)) return "";
  return path + " is " + brief(have) + ", not " + brief(want);
}

const json* named(const json& list, std::string_view name) {
  if (!list.is_array()) return nullptr;
  for (const json& item : list) {
    if (item.is_object() && item.value("name", "") == name) return &item;
  }
  return nullptr;
}

// The package the live pods mount, where the operator's settings put it: the
// image volume's reference (ImageVolume mode), the fetch init container's
// LOCKSTEP_PACKAGE (InitContainer mode). Either form is the package's; a
// switch of the mount mode alone is not drift (no restart on an upgrade). The
// fetch form is the package's only as the operator builds it: an emptyDir
// filled by kFetchPackageContainer on the runtime image with the operator's
// fetch command and no args. An emptyDir swapped in for the image volume and
// filled by a command of someone's own (the pod webhook checks images, never
// commands), or a volume that keeps its content (a PVC, a hostPath), or
// another container that mounts the volume writable, would mount another
// model under the package's name.
std::string packageDrift(const json& desired, const json& current,
                         const std::vector<std::string>& fetchCommand) {
  const json& wantPackage =
      at(desired, "/spec/template/metadata/annotations/lockstep.dev~1package"_json_pointer);
  if (!wantPackage.is_string()) return "";
  const json& spec = at(current, "/spec/template/spec"_json_pointer);
  const std::string volumes = "spec.template.spec.volumes[\"" + std::string(kPackageVolume) + "\"]";
  const json* volume = named(v1::decode::array(spec, "volumes"), kPackageVolume);
  if (volume == nullptr) return volumes + " is unset";
  if (volume->contains("image")) {
    const json ref =
        volume->at("image").is_object() ? volume->at("image").value("reference", json()) : json();
    if (ref != wantPackage)
      return volumes + ".image.reference is " + shown(ref) + ", not " + wantPackage.dump();
    return "";
  }
  const json* fetch = named(v1::decode::array(spec, "initContainers"), kFetchPackageContainer);
  if (fetch == nullptr) {
    return volumes + " is neither the package's image volume nor filled by init container " +
           kFetchPackageContainer;
  }
  for (const auto& [key, value] : volume->items()) {
    if (key != "name" && key != "emptyDir")
      return volumes + " is a " + key + " volume, not the package's image volume or an emptyDir";
  }
  if (!volume->contains("emptyDir"))
    return volumes + " is neither the package's image volume nor an emptyDir";
  const std::string fetchAt =
      "spec.template.spec.initContainers[\"" + std::string(kFetchPackageContainer) + "\"]";
  // The fetch container as the operator builds it: desired's own (InitContainer
  // mode), else the runtime image the serving containers run and the
  // operator's fetch command.
  const json& desiredSpec = at(desired, "/spec/template/spec"_json_pointer);
  const json* wantFetch =
      named(v1::decode::array(desiredSpec, "initContainers"), kFetchPackageContainer);
  const json& containers = v1::decode::array(desiredSpec, "containers");
  const json wantImage = wantFetch != nullptr ? wantFetch->value("image", json())
                         : containers.empty() ? json()
                                              : containers.front().value("image", json());
  const json wantCommand =
      wantFetch != nullptr ? wantFetch->value("command", json()) : json(fetchCommand);
  const json image = fetch->value("image", json());
  if (wantImage.is_string() && image != wantImage)
    return fetchAt + ".image is " + shown(image) + ", not " + wantImage.dump();
  const json command = fetch->value("command", json());
  if (wantCommand.is_array() && !wantCommand.empty() && command != wantCommand)
    return fetchAt + ".command is " + shown(command) + ", not " + wantCommand.dump();
  if (const json args = fetch->value("args", json()); args.is_array() && !args.empty())
    return fetchAt + ".args is " + args.dump() + ", not unset";
  // Only the fetch writes the package: any other container or init container
  // mounting the volume (a sidecar, an init container after the fetch) reads it.
  for (const char* list : {"initContainers", "containers"}) {
    for (const json& c : v1::decode::array(spec, list)) {
      if (&c == fetch) continue;
      for (const json& m : v1::decode::array(c, "volumeMounts")) {
        if (m.value("name", "") != kPackageVolume || m.value("readOnly", false)) continue;
        return "spec.template.spec." + std::string(list) + "[\"" + c.value("name", "") +
               "\"].volumeMounts[\"" + m.value("mountPath", "") +
               "\"] mounts the package volume writable: only " + kFetchPackageContainer +
               " writes it";
      }
    }
  }
  const json* env = named(v1::decode::array(*fetch, "env"), "LOCKSTEP_PACKAGE");
  const json value = env != nullptr ? env->value("value", json()) : json();
  if (value != wantPackage) {
    return fetchAt + ".env[\"LOCKSTEP_PACKAGE\"].value is " + shown(value) + ", not " +
           wantPackage.dump();
  }
  return "";
}

}  // namespace

std::string deploymentDrift(const json& desired, const json& current,
                            const std::vector<std::string>& fetchCommand) {
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
  d = containersDrift(at(desired, ptr), at(current, ptr), "spec.template.spec.containers");
  if (d.empty()) d = packageDrift(desired, current, fetchCommand);
  if (!d.empty()) return d;
  // Every other field Lockstep sets in the pod spec, in the live one.
  const json::json_pointer tmpl("/spec/template");
  return containsDrift(at(lockstepPart(at(desired, tmpl)), "/spec"_json_pointer),
                       at(current, "/spec/template/spec"_json_pointer), "spec.template.spec");
}

std::optional<json> templateHashPatch(const json& desired, const json& current) {
  const kube::StringMapView want(&field(desired, "metadata", "annotations"));
  const kube::StringMapView have(&field(current, "metadata", "annotations"));
  const std::optional<std::string_view> hash = want.find(kTemplateHashAnnotation);
  if (!hash || have.find(kTemplateHashAnnotation) == hash) return std::nullopt;
  return json{{"metadata", {{"annotations", {{kTemplateHashAnnotation, std::string(*hash)}}}}}};
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
