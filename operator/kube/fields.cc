#include "operator/kube/fields.h"

#include <utility>

namespace lockstep::kube {

nlohmann::json takeFields(nlohmann::json& from, std::span<const char* const> fields) {
  nlohmann::json out = nlohmann::json::object();  // find() on a non-object finds nothing
  for (const char* k : fields) {
    if (auto it = from.find(k); it != from.end()) out[k] = std::move(*it);
  }
  return out;
}

}  // namespace lockstep::kube
