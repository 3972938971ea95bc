// The object metadata Lockstep's typed views carry, and the tolerant JSON
// reads they are decoded with: a missing or mistyped field reads as empty,
// never throws (objects come from the API server, but admission also decodes
// untrusted input).
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lockstep::api::v1alpha1 {

struct ObjectMeta {
  std::string name;
  std::string ns;
  std::string uid;
  int64_t generation = 0;

  // "ns/name", the informer cache key.
  std::string key() const { return ns.empty() ? name : ns + "/" + name; }
};

ObjectMeta decodeMeta(const nlohmann::json& object);

// Ready=True among `conditions`, written for `generation` (status.observedGeneration):
// a status computed for an older spec does not say the object is ready.
bool readyForGeneration(const nlohmann::json& conditions, int64_t observedGeneration,
                        int64_t generation);

namespace decode {
// The member `key` of `j` when `j` is an object that has it; else nullptr.
const nlohmann::json* member(const nlohmann::json& j, std::string_view key);
std::string string(const nlohmann::json& j, std::string_view key);
std::optional<std::string> optionalString(const nlohmann::json& j, std::string_view key);
int64_t integer(const nlohmann::json& j, std::string_view key, int64_t fallback);
std::optional<double> number(const nlohmann::json& j, std::string_view key);
bool boolean(const nlohmann::json& j, std::string_view key, bool fallback);
// The member when it is an object; else an empty object.
const nlohmann::json& object(const nlohmann::json& j, std::string_view key);
// The member when it is an array; else an empty array.
const nlohmann::json& array(const nlohmann::json& j, std::string_view key);
}  // namespace decode

}  // namespace lockstep::api::v1alpha1
