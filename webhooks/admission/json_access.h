// Non-throwing accessors for reading Kubernetes objects as JSON.
// Admission input is untrusted: every accessor tolerates a wrong type or a
// missing key and answers "absent" instead of throwing.
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace lockstep::webhooks::json_access {

// The member `key` of `obj`, or nullptr when obj is not an object or lacks it.
inline const nlohmann::json* child(const nlohmann::json* obj, std::string_view key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

// Follows a path of keys: at(pod, {"metadata", "labels"}).
inline const nlohmann::json* at(const nlohmann::json* obj,
                                std::initializer_list<std::string_view> path) {
  for (std::string_view k : path) obj = child(obj, k);
  return obj;
}

// The string at `obj`, or nullptr when it is absent or not a string.
inline const std::string* str(const nlohmann::json* obj) {
  return obj != nullptr && obj->is_string() ? &obj->get_ref<const std::string&>() : nullptr;
}

inline std::string strOr(const nlohmann::json* obj, std::string_view fallback = "") {
  const std::string* s = str(obj);
  return s != nullptr ? *s : std::string(fallback);
}

inline bool isArray(const nlohmann::json* obj) { return obj != nullptr && obj->is_array(); }

}  // namespace lockstep::webhooks::json_access
