// Objects are nlohmann::json as the API server sends them; these small
// accessors read and write the common metadata without modelling every type.
// Missing fields read as empty/zero, never throw.
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/resource.h"

namespace lockstep::kube {

using Object = nlohmann::json;
// A cached object: immutable and shared between the cache and its readers,
// so a reconcile reads what the informer holds without a deep copy.
using ObjectPtr = std::shared_ptr<const Object>;

struct OwnerReference {
  std::string apiVersion;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool blockOwnerDeletion = false;
  nlohmann::json toJson() const;
};

std::string name(const Object& o);
std::string namespaceOf(const Object& o);
std::string uid(const Object& o);
std::string resourceVersion(const Object& o);
int64_t generation(const Object& o);
std::string kindOf(const Object& o);
std::string apiVersionOf(const Object& o);
std::map<std::string, std::string> labels(const Object& o);
std::map<std::string, std::string> annotations(const Object& o);
std::optional<std::string> label(const Object& o, const std::string& key);
std::optional<std::string> annotation(const Object& o, const std::string& key);
std::vector<OwnerReference> ownerReferences(const Object& o);
// The owner reference with controller: true, if any.
std::optional<OwnerReference> controllerOf(const Object& o);
std::vector<std::string> finalizers(const Object& o);
bool hasFinalizer(const Object& o, const std::string& f);
bool isBeingDeleted(const Object& o);  // deletionTimestamp set
// "namespace/name", or "name" for cluster-scoped objects: the informer cache key.
std::string objectKey(const Object& o);
std::string objectKey(const std::string& ns, const std::string& name);

// A skeleton object of a resource: apiVersion, kind, metadata.name/namespace.
Object newObject(const Resource& r, const std::string& ns, const std::string& name);
// An owner reference pointing at `owner` (which must carry apiVersion/kind/name/uid).
OwnerReference ownerReferenceTo(const Object& owner, bool controller = true);
void setLabel(Object& o, const std::string& key, const std::string& value);
void setAnnotation(Object& o, const std::string& key, const std::string& value);
// Adds or replaces (by uid) an owner reference.
void setOwnerReference(Object& o, const OwnerReference& ref);
// Drops metadata.managedFields: the default informer transform (the field is
// large and no reader of the cache needs it), as client-go's SetTransform.
void stripManagedFields(Object& o);

}  // namespace lockstep::kube
