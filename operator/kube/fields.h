// Keeping chosen members of a JSON object: the slimming transforms of the
// informer caches (controllers/common/cached_serving_objects.h,
// api/v1alpha1/serving_pod.h slimReplicaSet) own the object they slim and keep
// the fields their readers read, moved rather than copied.
// Thread-safety: pure functions over values.
#pragma once

#include <initializer_list>
#include <span>

#include <nlohmann/json.hpp>

namespace lockstep::kube {

// A new object of the members `fields` of `from` that it has, moved out of it
// (`from` keeps the keys, their values left null); an empty object when `from` is
// not an object.
nlohmann::json takeFields(nlohmann::json& from, std::span<const char* const> fields);
inline nlohmann::json takeFields(nlohmann::json& from, std::initializer_list<const char*> fields) {
  return takeFields(from, std::span(fields.begin(), fields.size()));
}

}  // namespace lockstep::kube
