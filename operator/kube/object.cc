#include "operator/kube/object.h"

#include <algorithm>

namespace lockstep::kube {
namespace {

const nlohmann::json& metadata(const Object& o) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (!o.is_object()) return kEmpty;
  auto it = o.find("metadata");
  return it != o.end() && it->is_object() ? *it : kEmpty;
}

std::string str(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::map<std::string, std::string> stringMap(const nlohmann::json& m) {
  std::map<std::string, std::string> out;
  if (!m.is_object()) return out;
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

}  // namespace

nlohmann::json OwnerReference::toJson() const {
  nlohmann::json j = {{"apiVersion", apiVersion}, {"kind", kind}, {"name", name}, {"uid", uid}};
  if (controller) j["controller"] = true;
  if (blockOwnerDeletion) j["blockOwnerDeletion"] = true;
  return j;
}

std::string name(const Object& o) { return str(metadata(o), "name"); }
std::string namespaceOf(const Object& o) { return str(metadata(o), "namespace"); }
std::string uid(const Object& o) { return str(metadata(o), "uid"); }
std::string resourceVersion(const Object& o) { return str(metadata(o), "resourceVersion"); }
std::string kindOf(const Object& o) { return str(o, "kind"); }
std::string apiVersionOf(const Object& o) { return str(o, "apiVersion"); }

int64_t generation(const Object& o) {
  const auto& m = metadata(o);
  auto it = m.find("generation");
  return it != m.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::map<std::string, std::string> labels(const Object& o) {
  const auto& m = metadata(o);
  auto it = m.find("labels");
  return it == m.end() ? std::map<std::string, std::string>{} : stringMap(*it);
}

std::map<std::string, std::string> annotations(const Object& o) {
  const auto& m = metadata(o);
  auto it = m.find("annotations");
  return it == m.end() ? std::map<std::string, std::string>{} : stringMap(*it);
}

namespace {

// One entry of metadata.<map>, looked up where it is (not a copy of the whole map):
// a string value, as labels() and annotations() keep only those.
std::optional<std::string> metadataEntry(const Object& o, const char* map, const std::string& key) {
  const auto& m = metadata(o);
  auto it = m.find(map);
  if (it == m.end() || !it->is_object()) return std::nullopt;
  auto v = it->find(key);
  if (v == it->end() || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

}  // namespace

std::optional<std::string> label(const Object& o, const std::string& key) {
  return metadataEntry(o, "labels", key);
}

std::optional<std::string> annotation(const Object& o, const std::string& key) {
  return metadataEntry(o, "annotations", key);
}

std::vector<OwnerReference> ownerReferences(const Object& o) {
  std::vector<OwnerReference> out;
  const auto& m = metadata(o);
  auto it = m.find("ownerReferences");
  if (it == m.end() || !it->is_array()) return out;
  for (const auto& r : *it) {
    OwnerReference ref;
    ref.apiVersion = str(r, "apiVersion");
    ref.kind = str(r, "kind");
    ref.name = str(r, "name");
    ref.uid = str(r, "uid");
    ref.controller = r.is_object() && r.value("controller", false);
    ref.blockOwnerDeletion = r.is_object() && r.value("blockOwnerDeletion", false);
    out.push_back(std::move(ref));
  }
  return out;
}

std::optional<OwnerReference> controllerOf(const Object& o) {
  for (auto& r : ownerReferences(o)) {
    if (r.controller) return r;
  }
  return std::nullopt;
}

std::vector<std::string> finalizers(const Object& o) {
  std::vector<std::string> out;
  const auto& m = metadata(o);
  auto it = m.find("finalizers");
  if (it == m.end() || !it->is_array()) return out;
  for (const auto& f : *it) {
    if (f.is_string()) out.push_back(f.get<std::string>());
  }
  return out;
}

bool hasFinalizer(const Object& o, const std::string& f) {
  auto all = finalizers(o);
  return std::find(all.begin(), all.end(), f) != all.end();
}

bool isBeingDeleted(const Object& o) { return !str(metadata(o), "deletionTimestamp").empty(); }

std::string objectKey(const std::string& ns, const std::string& n) {
  return ns.empty() ? n : ns + "/" + n;
}

std::string objectKey(const Object& o) { return objectKey(namespaceOf(o), name(o)); }

Object newObject(const Resource& r, const std::string& ns, const std::string& n) {
  Object o = {{"apiVersion", r.apiVersion()}, {"kind", r.kind}, {"metadata", {{"name", n}}}};
  if (r.namespaced && !ns.empty()) o["metadata"]["namespace"] = ns;
  return o;
}

OwnerReference ownerReferenceTo(const Object& owner, bool controller) {
  OwnerReference ref;
  ref.apiVersion = apiVersionOf(owner);
  ref.kind = kindOf(owner);
  ref.name = name(owner);
  ref.uid = uid(owner);
  ref.controller = controller;
  ref.blockOwnerDeletion = controller;
  return ref;
}

void setLabel(Object& o, const std::string& key, const std::string& value) {
  o["metadata"]["labels"][key] = value;
}

void setAnnotation(Object& o, const std::string& key, const std::string& value) {
  o["metadata"]["annotations"][key] = value;
}

void setOwnerReference(Object& o, const OwnerReference& ref) {
  auto& refs = o["metadata"]["ownerReferences"];
  if (!refs.is_array()) refs = nlohmann::json::array();
  for (auto& r : refs) {
    if (r.is_object() && r.value("uid", "") == ref.uid) {
      r = ref.toJson();
      return;
    }
  }
  refs.push_back(ref.toJson());
}

void stripManagedFields(Object& o) {
  if (o.is_object() && o.contains("metadata") && o["metadata"].is_object()) {
    o["metadata"].erase("managedFields");
  }
}

}  // namespace lockstep::kube
