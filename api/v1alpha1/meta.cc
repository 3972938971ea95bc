#include "api/v1alpha1/meta.h"

#include "api/v1alpha1/conditions.h"

namespace lockstep::api::v1alpha1 {

namespace decode {

const nlohmann::json* member(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string string(const nlohmann::json& j, std::string_view key) {
  return optionalString(j, key).value_or("");
}

std::optional<std::string> optionalString(const nlohmann::json& j, std::string_view key) {
  const nlohmann::json* m = member(j, key);
  if (m == nullptr || !m->is_string()) return std::nullopt;
  return m->get<std::string>();
}

int64_t integer(const nlohmann::json& j, std::string_view key, int64_t fallback) {
  const nlohmann::json* m = member(j, key);
  return m != nullptr && m->is_number_integer() ? m->get<int64_t>() : fallback;
}

std::optional<double> number(const nlohmann::json& j, std::string_view key) {
  const nlohmann::json* m = member(j, key);
  if (m == nullptr || !m->is_number()) return std::nullopt;
  return m->get<double>();
}

bool boolean(const nlohmann::json& j, std::string_view key, bool fallback) {
  const nlohmann::json* m = member(j, key);
  return m != nullptr && m->is_boolean() ? m->get<bool>() : fallback;
}

const nlohmann::json& object(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* m = member(j, key);
  return m != nullptr && m->is_object() ? *m : kEmpty;
}

const nlohmann::json& array(const nlohmann::json& j, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const nlohmann::json* m = member(j, key);
  return m != nullptr && m->is_array() ? *m : kEmpty;
}

}  // namespace decode

bool readyForGeneration(const nlohmann::json& conditions, int64_t observedGeneration,
                        int64_t generation) {
  bool ready = false;
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      if (c.is_object() && decode::string(c, "type") == kConditionReady) {
        ready = decode::string(c, "status") == kStatusTrue;
      }
    }
  }
  return ready && observedGeneration == generation;
}

ObjectMeta decodeMeta(const nlohmann::json& object) {
  const nlohmann::json& m = decode::object(object, "metadata");
  ObjectMeta out;
  out.name = decode::string(m, "name");
  out.ns = decode::string(m, "namespace");
  out.uid = decode::string(m, "uid");
  out.generation = decode::integer(m, "generation", 0);
  return out;
}

}  // namespace lockstep::api::v1alpha1
