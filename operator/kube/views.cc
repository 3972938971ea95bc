#include "operator/kube/views.h"

#include <algorithm>

namespace lockstep::kube {
namespace {

using nlohmann::json;

// The member `key` of `o` when `o` is an object that has it; else nullptr. No
// copy, no JSON pointer parsed: views are built in every reconcile's loops.
const json* member(const json* o, std::string_view key) {
  if (o == nullptr || !o->is_object()) return nullptr;
  auto it = o->find(key);
  return it == o->end() ? nullptr : &*it;
}

// A field path, rendered only when a problem is reported (views are built in
// every reconcile's loops: no string is made for a well-formed object):
// parent.list[index] — "status.containerStatuses[1]", "metadata", "".
struct At {
  At() = default;
  explicit At(std::string_view p) : parent(p) {}
  At(std::string_view p, std::string_view l, size_t i) : parent(p), list(l), index(i) {}
  std::string_view parent, list;
  size_t index = std::string::npos;
  // The path of member `key` under this one ("" for the path itself).
  std::string render(std::string_view key = "") const {
    std::string p(parent);
    auto join = [&p](std::string_view part) {
      if (part.empty()) return;
      if (!p.empty()) p += '.';
      p += part;
    };
    join(list);
    if (index != std::string::npos) p += "[" + std::to_string(index) + "]";
    join(key);
    return p;
  }
};

// Collects the MISTYPED lines of one object: "<Kind> <ns/name>: <field>: <value> <what>".
class Problems {
 public:
  Problems(std::vector<std::string>& out, const char* kind) : out_(out), kind_(kind) {}
  void setName(std::string_view ns, std::string_view name) {
    ns_ = ns;
    name_ = name;
  }
  void add(const At& at, std::string_view key, const json& value, std::string_view what) {
    std::string shown = value.dump();
    if (shown.size() > 64) shown = shown.substr(0, 61) + "...";
    out_.push_back(prefix() + at.render(key) + ": " + shown + " " + std::string(what));
  }
  // "Pod ns/name: "; "" for a Problems of no object (gpuRequestOf's own).
  std::string prefix() const {
    if (kind_ == nullptr) return "";
    std::string key = name_.empty() ? "(no name)" : std::string(name_);
    if (!ns_.empty()) key = std::string(ns_) + "/" + key;
    return std::string(kind_) + " " + key + ": ";
  }

 private:
  std::vector<std::string>& out_;
  const char* kind_;
  std::string_view ns_, name_;
};

// A string member; ABSENT "", MISTYPED "" with a problem when `problems`.
std::string_view strViews(const json* o, std::string_view key, Problems* problems = nullptr,
                          const At& at = {}) {
  const json* m = member(o, key);
  if (m == nullptr || m->is_null()) return {};
  if (!m->is_string()) {
    if (problems != nullptr) problems->add(at, key, *m, "is not a string (read as \"\")");
    return {};
  }
  return m->get_ref<const std::string&>();
}

// A non-negative integer member; ABSENT nullopt, MISTYPED nullopt with a problem.
std::optional<int64_t> count(const json* o, std::string_view key, Problems& problems, const At& at,
                             std::string_view readAs) {
  const json* m = member(o, key);
  if (m == nullptr || m->is_null()) return std::nullopt;
  if (!m->is_number_integer()) {
    problems.add(at, key, *m, "is not an integer (read as " + std::string(readAs) + ")");
    return std::nullopt;
  }
  const int64_t v = m->get<int64_t>();
  if (v < 0) {
    problems.add(at, key, *m, "is negative (read as " + std::string(readAs) + ")");
    return std::nullopt;
  }
  return v;
}

bool flag(const json* o, std::string_view key, Problems& problems, const At& at) {
  const json* m = member(o, key);
  if (m == nullptr || m->is_null()) return false;
  if (!m->is_boolean()) {
    problems.add(at, key, *m, "is not a boolean (read as false)");
    return false;
  }
  return m->get<bool>();
}

// An object member; ABSENT nullptr, MISTYPED nullptr with a problem.
const json* object(const json* o, std::string_view key, Problems& problems, const At& at) {
  const json* m = member(o, key);
  if (m == nullptr || m->is_null()) return nullptr;
  if (!m->is_object()) {
    problems.add(at, key, *m, "is not an object (read as empty)");
    return nullptr;
  }
  return m;
}

// Each object entry of the array `key` of `o`, with its path; a non-object
// entry is a problem.
template <typename F>
void forEachEntry(const json* o, std::string_view key, Problems& problems, std::string_view parent,
                  F&& f) {
  const json* a = member(o, key);
  if (a == nullptr || a->is_null()) return;
  if (!a->is_array()) {
    problems.add(At{parent}, key, *a, "is not an array (read as empty)");
    return;
  }
  for (size_t i = 0; i < a->size(); ++i) {
    const json& e = (*a)[i];
    const At at{parent, key, i};
    if (!e.is_object()) {
      problems.add(at, "", e, "is not an object (skipped)");
      continue;
    }
    f(e, at);
  }
}

MetaView viewMeta(const json& o, Problems& problems) {
  MetaView m;
  const json* meta = member(&o, "metadata");
  if (meta != nullptr && !meta->is_object()) {
    problems.add(At{}, "metadata", *meta, "is not an object (read as empty)");
    meta = nullptr;
  }
  m.name = strViews(meta, "name");
  m.ns = strViews(meta, "namespace");
  problems.setName(m.ns, m.name);
  // name and namespace are reported once the key is known.
  const At at{"metadata"};
  strViews(meta, "name", &problems, at);
  strViews(meta, "namespace", &problems, at);
  m.uid = strViews(meta, "uid", &problems, at);
  m.creationTimestamp = strViews(meta, "creationTimestamp", &problems, at);
  m.deletionTimestamp = strViews(meta, "deletionTimestamp", &problems, at);
  m.generation = count(meta, "generation", problems, at, "0").value_or(0);
  m.labels = StringMapView(object(meta, "labels", problems, at));
  m.annotations = StringMapView(object(meta, "annotations", problems, at));
  forEachEntry(meta, "ownerReferences", problems, "metadata", [&](const json& r, const At& at) {
    OwnerRefView ref;
    ref.apiVersion = strViews(&r, "apiVersion", &problems, at);
    ref.kind = strViews(&r, "kind", &problems, at);
    ref.name = strViews(&r, "name", &problems, at);
    ref.uid = strViews(&r, "uid", &problems, at);
    ref.controller = flag(&r, "controller", problems, at);
    m.ownerReferences.push_back(ref);
  });
  return m;
}

std::vector<ConditionView> viewConditions(const json* status, Problems& problems) {
  std::vector<ConditionView> out;
  forEachEntry(status, "conditions", problems, "status", [&](const json& c, const At& at) {
    out.push_back({strViews(&c, "type", &problems, at), strViews(&c, "status", &problems, at),
                   strViews(&c, "reason", &problems, at), strViews(&c, "message", &problems, at)});
  });
  return out;
}

bool readyIn(const std::vector<ConditionView>& conditions) {
  for (const ConditionView& c : conditions) {
    if (c.type == "Ready") return c.isTrue();
  }
  return false;
}

// The whole-device quantity kGpuResource of `resources` (at.sub: requests,
// limits, allocatable, capacity); nullopt when ABSENT, 0 with a problem when
// malformed.
std::optional<int64_t> gpusAt(const json* resources, Problems& problems, const At& at,
                              std::string_view sub) {
  const json* q = member(resources, kGpuResource);
  if (q == nullptr || q->is_null()) return std::nullopt;
  std::optional<int64_t> n = wholeQuantity(*q);
  if (!n) {
    problems.add(at, std::string(sub) + "[\"" + kGpuResource + "\"]", *q,
                 "is not a whole number of devices (read as 0)");
    return 0;
  }
  return n;
}

int64_t containerGpus(const json& c, Problems& problems, const At& at) {
  const json* res = member(&c, "resources");
  if (auto n = gpusAt(member(res, "requests"), problems, at, "resources.requests")) return *n;
  if (auto n = gpusAt(member(res, "limits"), problems, at, "resources.limits")) return *n;
  return 0;
}

int64_t gpuRequest(const json& spec, Problems& problems, std::string_view where) {
  int64_t sum = 0, init = 0;
  for (const char* field : {"containers", "initContainers"}) {
    const json* cs = member(&spec, field);
    if (cs == nullptr || !cs->is_array()) continue;
    const bool isInit = field[0] == 'i';
    for (size_t i = 0; i < cs->size(); ++i) {
      const int64_t n = containerGpus((*cs)[i], problems, At{where, field, i});
      if (isInit) {
        init = std::max(init, n);
      } else {
        sum += n;
      }
    }
  }
  return std::max(sum, init);
}

}  // namespace

std::optional<std::string_view> StringMapView::find(std::string_view key) const {
  const json* v = member(map_, key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string_view(v->get_ref<const std::string&>());
}

bool StringMapView::empty() const { return map_ == nullptr || map_->empty(); }

std::map<std::string, std::string> StringMapView::copy() const {
  std::map<std::string, std::string> out;
  if (map_ == nullptr) return out;
  for (auto it = map_->begin(); it != map_->end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

const OwnerRefView* MetaView::controller() const {
  for (const OwnerRefView& r : ownerReferences) {
    if (r.controller) return &r;
  }
  return nullptr;
}

std::string MetaView::key() const {
  return ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
}

int64_t PodView::restarts() const {
  int64_t n = 0;
  for (const ContainerStatusView& c : containers) n += c.restartCount;
  return n;
}

std::optional<int64_t> wholeQuantity(const json& q) {
  if (q.is_number_integer()) {
    const int64_t n = q.get<int64_t>();
    return n < 0 ? std::nullopt : std::optional<int64_t>(n);
  }
  if (!q.is_string()) return std::nullopt;
  const auto& t = q.get_ref<const std::string&>();
  if (t.empty() || t.size() > 12) return std::nullopt;
  int64_t n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return std::nullopt;  // "500m", "1k", "1.5", "-1"
    n = n * 10 + (c - '0');
  }
  return n;
}

int64_t gpuRequestOf(const json& spec, std::vector<std::string>* problems, std::string_view where) {
  std::vector<std::string> ignored;  // grows only when a quantity is malformed
  Problems p(problems != nullptr ? *problems : ignored, nullptr);
  return gpuRequest(spec, p, where);
}

PodView viewPod(const Object& pod) {
  PodView v;
  Problems problems(v.problems, "Pod");
  v.meta = viewMeta(pod, problems);
  const json* spec = object(&pod, "spec", problems, At{});
  const json* status = object(&pod, "status", problems, At{});
  v.nodeName = strViews(spec, "nodeName", &problems, At{"spec"});
  v.phase = strViews(status, "phase", &problems, At{"status"});
  v.conditions = viewConditions(status, problems);
  v.ready = readyIn(v.conditions);
  for (const ConditionView& c : v.conditions) {
    if (c.type == "PodScheduled" && c.status == "False") {
      v.unschedulable = true;
      v.scheduleFailureReason = c.reason;
      v.scheduleFailureMessage = c.message;
      break;
    }
  }
  forEachEntry(status, "containerStatuses", problems, "status", [&](const json& c, const At& at) {
    ContainerStatusView cs;
    cs.name = strViews(&c, "name", &problems, at);
    cs.restartCount = count(&c, "restartCount", problems, at, "0").value_or(0);
    cs.ready = flag(&c, "ready", problems, at);
    v.containers.push_back(cs);
  });
  if (spec != nullptr) v.gpuRequest = gpuRequest(*spec, problems, "spec");
  return v;
}

NodeView viewNode(const Object& node) {
  NodeView v;
  Problems problems(v.problems, "Node");
  v.meta = viewMeta(node, problems);
  const json* spec = object(&node, "spec", problems, At{});
  const json* status = object(&node, "status", problems, At{});
  const At inStatus{"status"};
  v.allocatableGpus =
      gpusAt(object(status, "allocatable", problems, inStatus), problems, inStatus, "allocatable")
          .value_or(0);
  v.capacityGpus =
      gpusAt(object(status, "capacity", problems, inStatus), problems, inStatus, "capacity")
          .value_or(0);
  v.unschedulable = flag(spec, "unschedulable", problems, At{"spec"});
  forEachEntry(spec, "taints", problems, "spec", [&](const json& t, const At& at) {
    v.taints.push_back({strViews(&t, "key", &problems, at), strViews(&t, "value", &problems, at),
                        strViews(&t, "effect", &problems, at)});
  });
  v.conditions = viewConditions(status, problems);
  v.ready = readyIn(v.conditions);
  return v;
}

PodGpuView viewPodGpu(const Object& pod) {
  PodGpuView v;
  // A spec or status that is not an object reads as absent, as in viewPod.
  const json* spec = member(&pod, "spec");
  if (spec != nullptr && !spec->is_object()) spec = nullptr;
  v.nodeName = strViews(spec, "nodeName");
  v.phase = strViews(member(&pod, "status"), "phase");
  if (spec != nullptr) v.gpuRequest = gpuRequestOf(*spec);
  return v;
}

NodeGpuView viewNodeGpu(const Object& node) {
  NodeGpuView v;
  const json* meta = member(&node, "metadata");
  v.name = strViews(meta, "name");
  const json* labels = member(meta, "labels");
  if (labels != nullptr && labels->is_object()) v.labels = StringMapView(labels);
  const json* allocatable = member(member(&node, "status"), "allocatable");
  const json* gpus = member(allocatable, kGpuResource);
  if (gpus != nullptr && !gpus->is_null()) v.allocatableGpus = wholeQuantity(*gpus).value_or(0);
  const json* unschedulable = member(member(&node, "spec"), "unschedulable");
  v.unschedulable =
      unschedulable != nullptr && unschedulable->is_boolean() && unschedulable->get<bool>();
  return v;
}

DeploymentView viewDeployment(const Object& deployment) {
  DeploymentView v;
  Problems problems(v.problems, "Deployment");
  v.meta = viewMeta(deployment, problems);
  const json* spec = object(&deployment, "spec", problems, At{});
  const json* status = object(&deployment, "status", problems, At{});
  v.specReplicas = count(spec, "replicas", problems, At{"spec"}, "unset: 1");
  const json* tmpl = object(spec, "template", problems, At{"spec"});
  const json* tmeta = object(tmpl, "metadata", problems, At{"spec.template"});
  const At inTemplateMeta{"spec.template.metadata"};
  v.templateLabels = StringMapView(object(tmeta, "labels", problems, inTemplateMeta));
  v.templateAnnotations = StringMapView(object(tmeta, "annotations", problems, inTemplateMeta));
  const At inStatus{"status"};
  v.observedGeneration = count(status, "observedGeneration", problems, inStatus, "0").value_or(0);
  v.statusReplicas = count(status, "replicas", problems, inStatus, "0").value_or(0);
  v.readyReplicas = count(status, "readyReplicas", problems, inStatus, "0").value_or(0);
  v.updatedReplicas = count(status, "updatedReplicas", problems, inStatus, "0").value_or(0);
  v.availableReplicas = count(status, "availableReplicas", problems, inStatus, "0").value_or(0);
  v.conditions = viewConditions(status, problems);
  return v;
}

}  // namespace lockstep::kube
